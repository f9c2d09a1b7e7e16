//! Classes and the object model, checked against what Python and JAX print:
//! class statements (methods, class attributes, inheritance and `super`,
//! properties, class and static methods, operator methods), dataclasses and
//! named tuples, annotations, classes as pytree nodes through `grad`, `jit`,
//! `vmap` and `tree_map`, and the errors of each.

use expect_test::expect;

use arr_testkit::check_output as check;

#[test]
fn classes_methods_inheritance_and_operators() {
    check(
        r#"
class Vec:
    """A 2-d vector."""
    dims = 2
    def __init__(self, x, y=0.0):
        self.x = x
        self.y = y
    def __repr__(self):
        return f"Vec({self.x}, {self.y})"
    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(self.x + other.x, self.y + other.y)
        return Vec(self.x + other, self.y + other)
    def __radd__(self, other):
        return Vec(other + self.x, other + self.y)
    def __neg__(self):
        return Vec(-self.x, -self.y)
    def __mul__(self, k):
        return Vec(self.x * k, self.y * k)
    def __eq__(self, other):
        return isinstance(other, Vec) and self.x == other.x and self.y == other.y
    def __len__(self):
        return 2
    def __getitem__(self, i):
        return [self.x, self.y][i]
    @property
    def norm2(self):
        return self.x * self.x + self.y * self.y
    @classmethod
    def unit(cls):
        return cls(1.0, 0.0)
    @staticmethod
    def origin():
        return Vec(0.0, 0.0)

v = Vec(3.0, 4.0)
w = v + Vec(1.0, 1.0)
print(v, w, 1 + v, v + 1, -v, v * 2)
print(v == Vec(3.0, 4.0), v != w, len(v), v[0], v[-1], list(v))
print(v.norm2, Vec.unit(), Vec.origin(), v.unit(), Vec.dims, v.dims)
print(type(v).__name__, type(v) is Vec, v.__class__.__name__, Vec.__name__, Vec.__doc__)
print(isinstance(v, Vec), isinstance(v, (int, Vec)), isinstance(3, Vec), callable(Vec), callable(v))
print(getattr(v, "x"), getattr(v, "z", "none"), hasattr(v, "norm2"), hasattr(v, "z"))
setattr(v, "z", 5)
print(v.z, f"{v}", f"{v!r}", str(v), repr([v, w]), {"k": v})

class Shape:
    sides = 0
    def __init__(self, name):
        self.name = name
    def describe(self):
        return f"{self.name} with {self.sides} sides, area {self.area()}"
    def area(self):
        return 0

class Rect(Shape):
    sides = 4
    def __init__(self, w, h):
        super().__init__("rect")
        self.w, self.h = w, h
    def area(self):
        return self.w * self.h

class Square(Rect):
    def __init__(self, s):
        super().__init__(s, s)
        self.name = "square"
    def describe(self):
        return "a " + super().describe()

s = Square(3)
print(s.describe(), Rect(2, 5).describe())
print(isinstance(s, Shape), issubclass(Square, Shape), issubclass(Shape, Square), [c.__name__ for c in Square.__mro__])

class Counter:
    count = 0
    def __init__(self):
        Counter.count += 1
        self._value = 0
    @property
    def value(self):
        return self._value
    @value.setter
    def value(self, v):
        self._value = max(v, 0)
    def __call__(self, k):
        self._value += k
        return self._value

c = Counter(); Counter()
c.value = -3
print(c.value, c(5), c(2), Counter.count)
c.value = 10
print(c.value)

def make(scale):
    class Scaled:
        scale = 100
        def __init__(self, v):
            self.v = v
        def get(self):
            return self.v * scale
    return Scaled
print(make(3)(2).get(), make(3).scale)

class A:
    def who(self):
        return "A"
class B(A):
    def who(self):
        return "B" + super().who()
class C(A):
    def who(self):
        return "C" + super().who()
class D(B, C):
    def who(self):
        return "D" + super().who()
print(D().who(), [k.__name__ for k in D.__mro__])
"#,
        expect![[r#"
            Vec(3.0, 4.0) Vec(4.0, 5.0) Vec(4.0, 5.0) Vec(4.0, 5.0) Vec(-3.0, -4.0) Vec(6.0, 8.0)
            True True 2 3.0 4.0 [3.0, 4.0]
            25.0 Vec(1.0, 0.0) Vec(0.0, 0.0) Vec(1.0, 0.0) 2 2
            Vec True Vec Vec A 2-d vector.
            True True False True False
            3.0 none True False
            5 Vec(3.0, 4.0) Vec(3.0, 4.0) Vec(3.0, 4.0) [Vec(3.0, 4.0), Vec(4.0, 5.0)] {'k': Vec(3.0, 4.0)}
            a square with 4 sides, area 9 rect with 4 sides, area 10
            True True False ['Square', 'Rect', 'Shape', 'object']
            0 5 7 2
            10
            6 100
            DBCA ['D', 'B', 'C', 'A', 'object']
        "#]],
    );
}

#[test]
fn dataclasses_and_named_tuples() {
    check(
        r#"
@dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list = field(default_factory=list)

p = Point(1.5)
q = Point(1.5, tags=["a"])
print(p, q, p == Point(1.5, 0.0), p == q)
p.tags.append("t")
print(p.tags, Point(2.0).tags, [f.name for f in fields(Point)], asdict(q))
r = replace(q, y=3.0)
print(r, q.y, list(Point.__annotations__))

@dataclass(frozen=True)
class Config:
    lr: float = 0.1
    name: str = "adam"
cfg = Config(name="sgd")
print(cfg, cfg == Config(0.1, "sgd"), replace(cfg, lr=0.5).lr)

class State(NamedTuple):
    position: float
    count: int = 0

s = State(1.0)
a, b = s
print(s, s[0], s[-1], len(s), a, b, s == (1.0, 0), s.position, State._fields)
print(s._replace(count=3), s._asdict(), tuple(s), list(s), isinstance(s, tuple), isinstance(s, State))
P = namedtuple("P", "x y")
Q = namedtuple("Q", ["u", "v"], defaults=[9])
print(P(1, 2), P(x=3, y=4).y, Q(1), Q(1, 2) == (1, 2), P(1, 2) + (3,))
"#,
        expect![[r#"
            Point(x=1.5, y=0.0, tags=[]) Point(x=1.5, y=0.0, tags=['a']) True False
            ['t'] [] ['x', 'y', 'tags'] {'x': 1.5, 'y': 0.0, 'tags': ['a']}
            Point(x=1.5, y=3.0, tags=['a']) 0.0 ['x', 'y', 'tags']
            Config(lr=0.1, name='sgd') True 0.5
            State(position=1.0, count=0) 1.0 0 2 1.0 0 True 1.0 ('position', 'count')
            State(position=1.0, count=3) {'position': 1.0, 'count': 0} (1.0, 0) [1.0, 0] True True
            P(x=1, y=2) 4 Q(u=1, v=9) True (1, 2, 3)
        "#]],
    );
}

#[test]
fn classes_as_pytree_nodes_through_transformations() {
    check(
        r#"
@register_pytree_node_class
class Linear:
    def __init__(self, w, b, act="tanh"):
        self.w, self.b, self.act = w, b, act
    def __call__(self, x):
        return x @ self.w + self.b
    def tree_flatten(self):
        return (self.w, self.b), self.act
    @classmethod
    def tree_unflatten(cls, act, children):
        return cls(*children, act=act)

layer = Linear(array([[1.0, 2.0], [3.0, 4.0]]), array([0.5, -0.5]))
x = array([1.0, -1.0])
g = grad(lambda m: (m(x) ** 2).sum())(layer)
print(type(g).__name__, g.act, g.w, g.b)
moved = tree_map(lambda p, d: p - 0.1 * d, layer, g)
print(moved.act, moved(x), len(tree_leaves(layer)))

@register_dataclass
@dataclass
class Opt:
    lr: jax.Array
    steps: int = field(default=1, metadata=dict(static=True))

traces = []
@jit
def apply(o, v):
    traces.append(o.steps)
    return v * o.lr * o.steps
print(apply(Opt(array(0.5)), array(2.0)), apply(Opt(array(0.25)), array(2.0)), apply(Opt(array(0.5), 3), array(2.0)), traces)
print(tree_leaves(Opt(array(1.0), 5)), tree_map(lambda v: v + 1, Opt(array(1.0), 5)))

class State(NamedTuple):
    pos: jax.Array
    vel: jax.Array

st = State(array([1.0, 2.0]), array([0.5, 0.5]))
print(tree_map(lambda v: v * 2, st))
print(vmap(lambda s: s.pos * s.vel)(st))
print(jit(lambda s: State(s.vel, s.pos))(st))
e = grad(lambda s: (s.pos * s.vel).sum())(st)
print(type(e).__name__, e.pos, e.vel)
"#,
        expect![[r#"
            Linear tanh [[-3. -5.]
             [ 3.  5.]] [-3. -5.]
            tanh [-0.6000001 -1.       ] 2
            1.0 0.5 3.0 [1, 3]
            [Array(1., dtype=float32, weak_type=True)] Opt(lr=Array(2., dtype=float32, weak_type=True), steps=5)
            State(pos=Array([2., 4.], dtype=float32), vel=Array([1., 1.], dtype=float32))
            [0.5 1. ]
            State(pos=Array([0.5, 0.5], dtype=float32), vel=Array([1., 2.], dtype=float32))
            State [0.5 0.5] [1. 2.]
        "#]],
    );
}

#[test]
fn annotations_are_kept_in_class_bodies_and_never_evaluated() {
    check(
        r#"
x: int = 3
y: float
def f(a: int, b: "Undefined" = 2, *args: int, c: float = 1.0, **kw: str) -> "Nope":
    z: int = a + b
    w: list
    return z * c
class H:
    n: int = 1
    m: str
    def get(self) -> int:
        return self.n
print(x, f(1), f(1, 3, c=2.0), H().get(), list(H.__annotations__), hasattr(H, "m"))
"#,
        expect![[r#"
            3 3.0 8.0 1 ['n', 'm'] False
        "#]],
    );
}

#[test]
fn errors_name_the_method_the_class_and_the_attribute() {
    let mut s = arr_testkit::session();
    arr_testkit::run(
        &mut s,
        "class K:\n    def __init__(self, a):\n        self.a = a\n    def m(self, x):\n        return x\nk = K(1)\nclass Plain:\n    pass\n",
    );
    let cases = [
        "k.m(1, 2)",
        "K()",
        "k.nosuch",
        "[].nosuch",
        "K.nosuch",
        "k(1)",
        "k + 1",
        "len(k)",
        "k[0]",
        "grad(lambda p: p.a)(k)",
        "jit(lambda p: p)(Plain())",
        "class Bad(3):\n    pass",
        "super()",
    ];
    let got: Vec<String> = cases
        .iter()
        .map(|c| arr_testkit::error_of(&mut s, c))
        .collect();
    expect![[r#"
        TypeError: K.m() takes 2 positional arguments but 3 were given
        TypeError: K.__init__() missing required argument 'a'
        AttributeError: 'K' object has no attribute 'nosuch'
        AttributeError: 'list' object has no attribute 'nosuch'
        AttributeError: type object 'K' has no attribute 'nosuch'
        TypeError: 'K' object is not callable
        TypeError: unsupported operand type(s) for +: 'K' and 'int'
        TypeError: object of type 'K' has no len()
        TypeError: 'K' object is not subscriptable
        TypeError: cannot convert K to an array
        TypeError: cannot convert Plain to an array
        TypeError: class Bad: a base must be a class, not int
        RuntimeError: super(): no arguments (a bare super() works only in a method of a class)"#]]
    .assert_eq(&got.join("\n"));
}

#[test]
fn registered_functions_function_annotations_and_scan_carries() {
    check(
        r#"
class Box:
    def __init__(self, a, tag):
        self.a, self.tag = a, tag
register_pytree_node(Box, lambda b: ((b.a,), b.tag), lambda tag, ch: Box(ch[0], tag))
b = Box(array([1.0, 2.0]), "t")
leaves, tdef = tree_flatten(b)
print(leaves, tree_unflatten(tdef, [array([5.0, 6.0])]).a, tree_unflatten(tdef, [1]).tag)
print(vmap(lambda bx: bx.a * 2)(b))
class C(NamedTuple):
    x: float
    n: int
def step(c, v):
    return C(c.x + v, c.n + 1), c.x
final, xs = scan(step, C(array(0.0), 0), array([1.0, 2.0, 3.0]))
print(type(final).__name__, final.x, final.n, xs)
Number = float
def scale(m: Number, *, clip: float | None = None) -> Number:
    return m
def later(x: "Later", y: Undefined.thing = 1) -> list:
    return x
print(scale.__annotations__["return"] is Number, later.__annotations__["x"], later(5))
"#,
        expect![[r#"
            [Array([1., 2.], dtype=float32)] [5. 6.] t
            [2. 4.]
            C 6.0 3 [0. 1. 3.]
            True Later 5
        "#]],
    );
}
