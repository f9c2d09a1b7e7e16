//! The language end to end through `Session`: scoping and closures, calls,
//! assignment forms, control flow, containers, NumPy semantics and display,
//! and the exact text of error messages (with their line:col).

use arr_runtime::Session;
use expect_test::expect;

use arr_testkit::check_output as check;
use arr_testkit::{run, session, text_of};

/// The REPL echo of the last expression of `src`.
fn echo(src: &str) -> String {
    let mut s: Session = arr_stdlib::session();
    match s.run_entry(src) {
        Ok(Some(v)) => s.repr(&v),
        Ok(None) => "None".into(),
        Err(e) => e.render(),
    }
}

#[test]
fn closures_and_scopes() {
    check(
        r#"
def counter():
    n = 0
    def inc(by=1):
        nonlocal n
        n += by
        return n
    return inc
c = counter()
c(); c(); print(c(10))
total = 0
def add(x):
    global total
    total = total + x
add(5); add(6); print(total)
fs = [lambda x, i=i: x + i for i in range(3)]
print([f(10) for f in fs])
i = 100
squares = [i * i for i in range(4)]
print(i, squares)
def outer():
    x = 1
    def mid():
        def inner():
            return x + 1
        return inner()
    return mid()
print(outer())
"#,
        expect![[r#"
            12
            11
            [10, 11, 12]
            100 [0, 1, 4, 9]
            2
        "#]],
    );
}

#[test]
fn calls_and_arguments() {
    check(
        r#"
def f(a, b=2, *rest, c=3, **kw):
    """Doc of f."""
    return (a, b, rest, c, sorted(kw.items()))
print(f(1))
print(f(1, 5, 6, 7, c=0, z=9, y=8))
print(f(*[1, 2, 3], **{"c": 4}))
def deco(fn):
    return lambda *a: fn(*a) * 10
@deco
def g(x):
    return x + 1
print(g(1), f.__doc__)
def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)
print(fact(20))
"#,
        expect![[r#"
            (1, 2, (), 3, [])
            (1, 5, (6, 7), 0, [('y', 8), ('z', 9)])
            (1, 2, (3,), 4, [])
            20 Doc of f.
            2432902008176640000
        "#]],
    );
}

#[test]
fn assignment_forms_and_control_flow() {
    check(
        r#"
a, (b, c) = 1, (2, 3)
first, *middle, last = range(6)
print(a, b, c, first, middle, last)
x = [1, 2, 3]
y = x
y.append(4)
x[0] = 10
print(x, y)
d = {"b": 1, "a": 2}
d["c"] = 3
print(d, list(d), d.get("z", 0))
n = 0
while True:
    n += 1
    if n < 3:
        continue
    if n == 5:
        break
print(n, 1 < 2 < 3, 1 < 2 > 3, not [], 0 or "x", 2 and 3)
for i, v in enumerate("ab"):
    print(i, v, end="; ")
print()
for i in range(5):
    if i == 3:
        break
else:
    print("not reached")
for j in range(3):
    pass
else:
    print("loop else", i, j)
while n < 7:
    n += 1
else:
    print("while else", n)
s = "pi is about"
print(f"{s} {3.14159:.2f} {42:>5} {'left':<6}| {1234567:,} {0.5:%} {2.5e-5}")
"#,
        expect![[r#"
            1 2 3 0 [1, 2, 3, 4] 5
            [10, 2, 3, 4] [10, 2, 3, 4]
            {'b': 1, 'a': 2, 'c': 3} ['b', 'a', 'c'] 0
            5 True False True x 3
            0 a; 1 b; 
            loop else 3 2
            while else 7
            pi is about 3.14    42 left  | 1,234,567 50.000000% 2.5e-05
        "#]],
    );
}

/// The str methods and integer bases a Python program uses, with CPython's output.
#[test]
fn str_methods_and_integer_bases_as_python() {
    check(
        r#"
for t in ["a b  c", " x ", "a,b,,c", "", "Hi There", "AB", "a\tb", "x_1"]:
    print(repr(t), t.split(None, 1), t.rsplit(None, 1), t.rsplit(",", 1), t.isalpha(), t.isalnum(),
          t.isspace(), t.isupper(), t.islower(), t.isidentifier(), t.partition(" "), t.rpartition(" "),
          t.removeprefix("a"), t.removesuffix("c"), t.expandtabs(4), t.swapcase())
print("abcabc".rindex("b"), "a,b".split(",", maxsplit=0), hex(255), oct(-8), bin(5))
"#,
        expect![[r#"
            'a b  c' ['a', 'b  c'] ['a b', 'c'] ['a b  c'] False False False False True False ('a', ' ', 'b  c') ('a b ', ' ', 'c')  b  c a b   a b  c A B  C
            ' x ' ['x'] ['x'] [' x '] False False False False True False ('', ' ', 'x ') (' x', ' ', '')  x   x   x   X 
            'a,b,,c' ['a,b,,c'] ['a,b,,c'] ['a,b,', 'c'] False False False False True False ('a,b,,c', '', '') ('', '', 'a,b,,c') ,b,,c a,b,, a,b,,c A,B,,C
            '' [] [] [''] False False False False False False ('', '', '') ('', '', '')    
            'Hi There' ['Hi', 'There'] ['Hi', 'There'] ['Hi There'] False False False False False False ('Hi', ' ', 'There') ('Hi', ' ', 'There') Hi There Hi There Hi There hI tHERE
            'AB' ['AB'] ['AB'] ['AB'] True True False True False True ('AB', '', '') ('', '', 'AB') AB AB AB ab
            'a\tb' ['a', 'b'] ['a', 'b'] ['a\tb'] False False False False True False ('a\tb', '', '') ('', '', 'a\tb') 	b a	b a   b A	B
            'x_1' ['x_1'] ['x_1'] ['x_1'] False False False False True True ('x_1', '', '') ('', '', 'x_1') x_1 x_1 x_1 X_1
            4 ['a,b'] 0xff -0o10 0b101
        "#]],
    );
}

/// `__setattr__` (with object.__setattr__ and super()), dataclasses with
/// keyword-only fields, `hash`: CPython's output.
#[test]
fn setattr_hooks_kw_only_fields_and_hash_as_python() {
    check(
        r#"
import dataclasses
class Frozen:
    def __init__(self, x):
        object.__setattr__(self, "x", x)
    def __setattr__(self, name, value):
        raise AttributeError(f"frozen: {name}")
f = Frozen(3)
try:
    f.x = 4
except AttributeError as e:
    print("AttributeError", e, f.x)
class Doubled:
    def __setattr__(self, name, value):
        super().__setattr__(name, value * 2)
@dataclasses.dataclass
class Point(Doubled):
    x: int
    y: int = 1
    label: str = dataclasses.field(default="p", kw_only=True)
p = Point(2, label="q")
setattr(p, "y", 5)
print(p.x, p.y, p.label)
print(hash(7), hash(-1), hash(3.0), hash((1, "a")) == hash((1, "a")))
try:
    hash({})
except TypeError as e:
    print("TypeError", e)
"#,
        expect![[r#"
            AttributeError frozen: x 3
            4 10 qq
            7 -2 3 True
            TypeError unhashable type: 'dict'
        "#]],
    );
}

/// The dict and set methods that change them in place: CPython's output.
#[test]
fn dict_and_set_updates_as_python() {
    check(
        r#"
d = {"a": 1, "b": 2, "c": 3}
print(d.popitem(), d)
d.clear(); print(d)
try:
    d.popitem()
except KeyError as e:
    print("KeyError", e)
s = {1, 2, 3}
s.difference_update([2]); print(s)
s.intersection_update({1, 5}); print(s)
s.symmetric_difference_update({1, 7}); print(s)
print(s.isdisjoint({8}), s.isdisjoint([7]), s.pop(), s)
try:
    s.pop()
except KeyError as e:
    print("KeyError", e)
"#,
        expect![[r#"
            ('c', 3) {'a': 1, 'b': 2}
            {}
            KeyError 'popitem(): dictionary is empty'
            {1, 3}
            {1}
            {7}
            True False 7 set()
            KeyError 'pop from an empty set'
        "#]],
    );
}

/// `del obj.attr` and `delattr`: CPython's output.
#[test]
fn attribute_deletion_as_python() {
    check(
        r#"
class A:
    pass
a = A()
a.x = 1; a.y = 2
del a.x
print(vars(a), hasattr(a, "x"))
delattr(a, "y")
print(vars(a))
try:
    del a.z
except AttributeError as e:
    print("AttributeError", e)
"#,
        expect![[r#"
            {'y': 2} False
            {}
            AttributeError 'A' object has no attribute 'z'
        "#]],
    );
}

/// Classes, functions and plain objects as dict keys and set items (by
/// identity), objects with `__eq__` unhashable: CPython's output.
#[test]
fn identity_keys_as_python() {
    check(
        r#"
class A: pass
def f(): pass
a, b = A(), A()
d = {A: 1, int: 2, f: 3, a: 4, b: 5}
print(d[A], d[int], d[f], d[a], d[b], len(d), A in d, list(d)[0] is A)
s = {a, a, b}
print(len(s), a in s)
class E:
    def __eq__(self, o): return True
try:
    {E(): 1}
except TypeError as e:
    print("TypeError", e)
"#,
        expect![[r#"
            1 2 3 4 5 5 True True
            2 True
            TypeError unhashable type: 'E'
        "#]],
    );
}

/// open(): text files written, appended, read whole, by line and by
/// iteration, closed, missing; str.find with bounds: CPython's output.
#[test]
fn text_files_as_python() {
    check(
        r#"
import os, tempfile
d = tempfile.mkdtemp()
path = os.path.join(d, "notes.txt")
with open(path, "w") as f:
    f.write("alpha 1\n")
    f.writelines(["beta 2\n", "gamma 3"])
with open(path, "a") as f:
    print(f.write("\ndelta 4\n"))
with open(path) as f:
    print(repr(f.readline()))
    print([line.split() for line in f])
f = open(path)
print(f.read(5), f.read(), f.closed)
f.close()
print(f.closed)
try:
    f.read()
except ValueError as e:
    print("ValueError", e)
try:
    open(os.path.join(d, "missing.txt"))
except FileNotFoundError as e:
    print("FileNotFoundError", type(e).__name__, isinstance(e, OSError))
try:
    open(path, "x")
except FileExistsError as e:
    print("FileExistsError")
print(open(path).readlines())
print('abcabc'.find('b', 2), 'abcabc'.rfind('b', 0, 3), 'abcabc'.find('c', -2), 'abc'.find('a', 5), 'abcabc'.index('c', 3))
"#,
        expect![[r#"
            9
            'alpha 1\n'
            [['beta', '2'], ['gamma', '3'], ['delta', '4']]
            alpha  1
            beta 2
            gamma 3
            delta 4
             False
            True
            ValueError I/O operation on closed file.
            FileNotFoundError FileNotFoundError True
            FileExistsError
            ['alpha 1\n', 'beta 2\n', 'gamma 3\n', 'delta 4\n']
            4 1 5 -1 5
        "#]],
    );
}

/// The finite itertools (as lists) and pow: CPython's output.
#[test]
fn itertools_and_pow_as_python() {
    check(
        r#"
import itertools as it
print(list(it.islice(range(10), 3)), list(it.islice("abcdefg", 1, 6, 2)))
print(list(it.zip_longest([1, 2, 3], "ab", fillvalue="-")))
print(list(it.repeat("x", 3)), list(it.starmap(pow, [(2, 3), (3, 2)])))
print(list(it.takewhile(lambda x: x < 3, [1, 2, 5, 1])), list(it.dropwhile(lambda x: x < 3, [1, 2, 5, 1])))
print(list(it.combinations_with_replacement("ab", 2)), list(it.pairwise([1, 2, 3, 4])))
print(list(it.compress("abcdef", [1, 0, 1, 0, 1, 1])))
print(list(it.filterfalse(lambda x: x % 2, range(6))))
print([(k, list(g)) for k, g in it.groupby("aaabccaa")])
print([(k, len(list(g))) for k, g in it.groupby([1, 2, 3, 4, 5], key=lambda x: x > 2)])
a, b = it.tee([1, 2, 3])
print(list(a), list(b))
print(pow(2, 10), pow(3, 4, 5), pow(-7, 3, 5), pow(7, 3, -5), pow(2, -1))
"#,
        expect![[r#"
            [0, 1, 2] ['b', 'd', 'f']
            [(1, 'a'), (2, 'b'), (3, '-')]
            ['x', 'x', 'x'] [8, 9]
            [1, 2] [5, 1]
            [('a', 'a'), ('a', 'b'), ('b', 'b')] [(1, 2), (2, 3), (3, 4)]
            ['a', 'c', 'e', 'f']
            [0, 2, 4]
            [('a', ['a', 'a', 'a']), ('b', ['b']), ('c', ['c', 'c']), ('a', ['a', 'a'])]
            [(False, 2), (True, 3)]
            [1, 2, 3] [1, 2, 3]
            1024 1 2 -2 0.5
        "#]],
    );
}

#[test]
fn python_numbers() {
    check(
        r#"
print(7 // 2, -7 // 2, 7 % -3, -7 % 3, 2 ** 10, 2 ** -1, 7 / 2, 0.1 + 0.2, 1e16, 1e-5, 1 / 3)
print(int(3.9), int(-3.9), float("inf"), round(2.5), round(3.5), round(2.675, 2), abs(-3), True + True)
"#,
        expect![[r#"
            3 -4 -2 2 1024 0.5 3.5 0.30000000000000004 1e+16 1e-05 0.3333333333333333
            3 -3 inf 2 4 2.67 3 2
        "#]],
    );
}

#[test]
fn arrays_are_values_and_update_functionally() {
    check(
        r#"
x = zeros((2, 3))
y = x
x[0, 1:] = 5.0
x[1] += arange(3.0)
print(x)
print(y)
m = arange(6).reshape(2, 3)
m[m > 2] = 0
print(m, m.dtype)
"#,
        expect![[r#"
            [[0. 5. 5.]
             [0. 1. 2.]]
            [[0. 0. 0.]
             [0. 0. 0.]]
            [[0 1 2]
             [0 0 0]] int32
        "#]],
    );
}

#[test]
fn promotion_follows_jax() {
    check(
        r#"
f = ones(2)
i = arange(2)
print((f * 2).dtype, (f * 2.5).dtype, (i * 2).dtype, (i * 2.5).dtype, (i / 2).dtype)
print((i + arange(2, dtype=int64)).dtype, (f + ones(2, dtype=float64)).dtype, (i + f).dtype)
print((array([True]) + 1).dtype, (array([True]) & array([False])).dtype, (i > 0).dtype)
print(array([1, 2]).dtype, array([1.0, 2]).dtype, array([[True, False]]).dtype, array(3).dtype)
"#,
        expect![[r#"
            float32 float32 int32 float32 float32
            int64 float64 float32
            int32 bool bool
            int32 float32 bool int32
        "#]],
    );
}

#[test]
fn indexing_matches_numpy() {
    check(
        r#"
x = arange(24).reshape(2, 3, 4)
print(x[1, -1], x[:, 1, ::-2], x[..., 0].shape, x[None, :, None].shape)
print(x[0, [0, 2], 1], x[:, [0, 2], :].shape, x[[0, 1], :, [1, 2]].shape, x[:, [[0], [1]], [1, 2]].shape)
print(x[x % 5 == 0], x[1:, 1:, 1:].sum(), x[::-1, ::-1, ::-1][0, 0, 0])
print(take(x, array([3, -1]), axis=2).shape, take_along_axis(x, argmax(x, axis=2, keepdims=True), axis=2).ravel())
"#,
        expect![[r#"
            [20 21 22 23] [[ 7  5]
             [19 17]] (2, 3) (1, 2, 1, 3, 4)
            [1 9] (2, 2, 4) (2, 3) (2, 2, 2)
            [ 0  5 10 15 20] 120 23
            (2, 3, 2) [ 3  7 11 15 19 23]
        "#]],
    );
}

#[test]
fn array_display() {
    expect![[r#"
        f32[2,3]
        [[ 5.00e-01 -1.00e+00  3.25e+00]
         [ 1.00e+03  0.00e+00  0.00e+00]]"#]]
    .assert_eq(&echo("array([[0.5, -1.0, 3.25], [1000.0, 0, 0]])"));
    expect![[r#"
        f32[3]
        [1.e-05 1.e+00 1.e+05]"#]]
    .assert_eq(&echo("array([1e-5, 1.0, 1e5])"));
    expect![[r#"
        bool[2,2]
        [[ True False]
         [False  True]]"#]]
    .assert_eq(&echo("eye(2) > 0"));
    expect!["f32[] 0.5"].assert_eq(&echo("mean(array([0.0, 1.0]))"));
    expect!["42"].assert_eq(&echo("6 * 7"));
    expect![[r#""it's""#]].assert_eq(&echo("'it' + \"'s\""));
    expect![[r#"
        i32[2,1000]
        [[   0    1    2 ...  997  998  999]
         [1000 1001 1002 ... 1997 1998 1999]]"#]]
    .assert_eq(&echo("arange(2000).reshape(2, 1000)"));
}

#[test]
fn nan_and_inf_align_as_numpy_prints_them() {
    // The same text as NumPy 2's str() of these arrays.
    check(
        r#"
print(array([2.25, 4.0, 0.0, nan, inf]))
print(array([1.0, nan]), array([1.0, -inf]), array([nan, inf]), array([1e-9, nan]))
print(array([[1.5, nan], [-inf, 100.25]]))
"#,
        expect![[r#"
            [2.25 4.   0.    nan  inf]
            [ 1. nan] [  1. -inf] [nan inf] [1.e-09    nan]
            [[  1.5     nan]
             [  -inf 100.25]]
        "#]],
    );
}

#[test]
fn sixteen_bit_floats_print_promote_and_round_as_jax() {
    // float16 as NumPy prints it (shortest digits of the float16 value);
    // bfloat16 as JAX's arrays print it (ml_dtypes: six significant digits).
    check(
        r#"
h = array([0.1, 0.2, 0.3], dtype=float16)
print(h * 3, (h * 3).dtype, array([1.5, 2.25, 0.1, 1000.5], dtype=float16), array(0.1, float16))
b = ones(3, dtype=bfloat16)
print(b, b * 0.1, array([1e-5, 1.0, 1e6], bfloat16), array(0.1, bfloat16), repr(b[0]))
print((b + h).dtype, (b + 1).dtype, (b + arange(3)).dtype, (b + ones(3)).dtype, (h + 2.5).dtype)
print(sum(ones(1000, bfloat16)), (arange(12.0).reshape(3, 4).astype(bfloat16) @ ones((4, 2), bfloat16)).dtype)
print(grad(lambda v: sum(tanh(v) ** 2))(array([0.5, 1.0], bfloat16)))
"#,
        expect![[r#"
            [0.2998 0.5996 0.9004] float16 [1.5000e+00 2.2500e+00 9.9976e-02 1.0005e+03] 0.1
            [1 1 1] [0.100098 0.100098 0.100098] [1.00136e-05 1 999424] 0.100098 bf16[] 1
            float32 bfloat16 bfloat16 float32 float16
            1000 bfloat16
            [0.726562 0.636719]
        "#]],
    );
}

/// Inputs that JAX or NumPy reject and that once gave a wrong answer:
/// each is now the error JAX gives, on its line, and the session keeps
/// what it had.
#[test]
fn inputs_jax_rejects_are_errors_not_wrong_answers() {
    use arr_runtime::ErrorKind::*;
    let cases: &[(&str, arr_runtime::ErrorKind, &str)] = &[
        (
            "array([1, [2]])",
            ValueError,
            "inhomogeneous shape after 1 dimension",
        ),
        ("array([[1], 2])", ValueError, "inhomogeneous shape"),
        (
            "array([[1, 2], [3, [4]]])",
            ValueError,
            "inhomogeneous shape after 2 dimensions",
        ),
        (
            "arange(3, dtype=int32) + 2**31",
            OverflowError,
            "Python int 2147483648 too large to convert to int32",
        ),
        (
            "array([1, 2], dtype=int32) * -2**40",
            OverflowError,
            "too large to convert to int32",
        ),
        (
            "ones(3)[array([True, False])]",
            IndexError,
            "boolean index did not match indexed array along axis 0",
        ),
        (
            "ones((2, 3))[:, array([True, False])]",
            IndexError,
            "along axis 1",
        ),
        (
            "ones((2, 3, 4))[..., array([True, False, True])]",
            IndexError,
            "along axis 2",
        ),
        (
            "tree_map(lambda a, b: a + b, {'a': 1}, {'b': 1})",
            ValueError,
            "different structures",
        ),
        (
            "zeros((0, 3)).max(axis=0)",
            ValueError,
            "zero-size array f32[0,3] to reduction operation max",
        ),
        (
            "min(zeros((2, 0)), axis=1)",
            ValueError,
            "operation min which has no identity",
        ),
        (
            "zeros((2, 0), dtype=bool).max(axis=1)",
            ValueError,
            "which has no identity (axis 1 is empty)",
        ),
    ];
    let mut s = session();
    run(&mut s, "kept = arange(3)");
    for (code, kind, needle) in cases {
        let e = s
            .run_script("hostile.arr", code)
            .expect_err(&format!("{code} must fail"));
        assert_eq!(e.kind, *kind, "{code}: {}", e.render());
        assert!(e.message.contains(needle), "{code}: {}", e.message);
        assert!(
            e.render().contains("hostile.arr:1"),
            "{code}: the line: {}",
            e.render()
        );
        assert_eq!(
            text_of(&mut s, "str(kept.tolist())"),
            "[0, 1, 2]",
            "after {code}"
        );
    }
    // What is right stays right: big ints make int64 lists, masks of the
    // right shape select, empty kept axes reduce to empty arrays.
    assert_eq!(text_of(&mut s, "str(array([2**40, 1]).dtype)"), "int64");
    assert_eq!(
        text_of(&mut s, "str(array([2**40, 1]).tolist())"),
        "[1099511627776, 1]"
    );
    assert_eq!(
        text_of(
            &mut s,
            "str(ones((2, 3))[:, array([True, False, True])].shape)"
        ),
        "(2, 2)"
    );
    assert_eq!(
        text_of(&mut s, "str(zeros((0, 3)).max(axis=1).shape)"),
        "(0,)"
    );
    assert_eq!(
        text_of(&mut s, "str(zeros((0, 3)).sum(axis=0).tolist())"),
        "[0.0, 0.0, 0.0]"
    );
}

#[test]
fn errors_name_shapes_and_lines() {
    check(
        "x = ones((3, 4))\ny = ones(5)\nz = 1 + (x + y)\n",
        expect![[r#"
            ValueError: cannot broadcast f32[3,4] with f32[5] at test.arr:3:10
              |
            3 | z = 1 + (x + y)
              |          ^^^^^
        "#]],
    );
    check(
        "def inner(a):\n    return a @ ones((2, 2))\ndef outer():\n    return inner(ones((3, 3)))\nouter()\n",
        expect![[r#"
            Traceback (most recent call last):
              test.arr:5:1 in <module>
                outer()
              test.arr:4:12 in outer
                return inner(ones((3, 3)))
              test.arr:2:12 in inner
                return a @ ones((2, 2))
            ShapeError: matmul: contraction dimensions differ (3 vs 2) in f32[3,3] @ f32[2,2] at test.arr:2:12
              |
            2 |     return a @ ones((2, 2))
              |            ^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        "print(1)\nprint(undefined + 1)\n",
        expect![[r#"
            1
            NameError: name 'undefined' is not defined at test.arr:2:7
              |
            2 | print(undefined + 1)
              |       ^^^^^^^^^
        "#]],
    );
    check(
        "x = ones(3)\nif x > 0:\n    pass\n",
        expect![[r#"
            ValueError: the truth value of an array with 3 elements is ambiguous: use any() or all(), or where(...) to select elementwise at test.arr:2:4
              |
            2 | if x > 0:
              |    ^^^^^
        "#]],
    );
    check(
        "sum(ones(3), axis=2)\n",
        expect![[r#"
            ValueError: axis 2 is out of bounds for an array of rank 1 at test.arr:1:1
              |
            1 | sum(ones(3), axis=2)
              | ^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        "zeros(2)[5]\n",
        expect![[r#"
            IndexError: index 5 is out of bounds for axis 0 with size 2 at test.arr:1:1
              |
            1 | zeros(2)[5]
              | ^^^^^^^^^^^
        "#]],
    );
    check(
        "x = (1 +\n",
        expect![[r#"
            SyntaxError: '(' was never closed at test.arr:1:5
              |
            1 | x = (1 +
              |     ^
        "#]],
    );
    check(
        "f(1, 2 3)\n",
        expect![[r#"
            SyntaxError: expected ')' to close the '(' opened at 1:2 at test.arr:1:8
              |
            1 | f(1, 2 3)
              |        ^
        "#]],
    );
    check(
        "def f():\n    return f()\nf()\n",
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                f()
              test.arr:2:12 in f
                return f()
              test.arr:2:12 in f
                return f()
              test.arr:2:12 in f
                return f()
              [previous frame repeated 1997 more times]
            RecursionError: maximum recursion depth exceeded at test.arr:2:12
              |
            2 |     return f()
              |            ^^^
        "#]],
    );
    check(
        "1 // 0\n",
        expect![[r#"
            ZeroDivisionError: integer division by zero at test.arr:1:1
              |
            1 | 1 // 0
              | ^^^^^^
        "#]],
    );
}

#[test]
fn numpy_and_jax_module_aliases() {
    check(
        "print(jnp.sum(jnp.ones(3)), np.zeros((2,)).dtype, jnp.float32, jnp.arange is arange)\n",
        expect![[r#"
            3.0 float64 float32 False
        "#]],
    );
}

#[test]
fn self_referential_containers_do_not_crash() {
    check(
        "l = [1]\nl.append(l)\nprint(len(str(l)) > 0, l == l)\n",
        expect![[r#"
            True True
        "#]],
    );
}

#[test]
fn impossible_allocations_are_errors_not_aborts() {
    check(
        "x = 1\ny = ones(10**12)\n",
        expect![[r#"
            MemoryError: cannot allocate f32[1000000000000] (4.0e12 bytes) at test.arr:2:5
              |
            2 | y = ones(10**12)
              |     ^^^^^^^^^^^^
        "#]],
    );
}

#[test]
fn transformation_errors_point_into_the_users_function() {
    check(
        "def loss(w):\n    y = w * 2.0\n    return y\n\ng = grad(loss)(ones(3))\n",
        expect![[r#"
            Traceback (most recent call last):
              test.arr:5:5 in <module>
                g = grad(loss)(ones(3))
              test.arr:3:12 in loss
                return y
            TypeError: grad requires fun to return a float scalar (use vjp or jacrev otherwise), got f32[3] at test.arr:3:12
              |
            3 |     return y
              |            ^
        "#]],
    );
    check(
        "def f(x):\n    if x > 0:\n        return x\n    return -x\n\nvmap(f)(ones(3))\n",
        expect![[r#"
            Traceback (most recent call last):
              test.arr:6:1 in <module>
                vmap(f)(ones(3))
              test.arr:2:8 in f
                if x > 0:
            TracerBoolConversionError: this needs a concrete value, but the bool[] value here is traced inside vmap. Use where(cond, x, y) to select values, and cond(...), while_loop(...) or fori_loop(...) for control flow that depends on traced values at test.arr:2:8
              |
            2 |     if x > 0:
              |        ^^^^^
        "#]],
    );
    check(
        "def f(x):\n    return while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)\n\ngrad(f)(2.0)\n",
        expect![[r#"
            Traceback (most recent call last):
              test.arr:4:1 in <module>
                grad(f)(2.0)
              test.arr:2:12 in f
                return while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
            TransformError: reverse-mode differentiation does not work through while_loop: its trip count is not known in advance. Use scan, or fori_loop with Python int bounds at test.arr:2:12
              |
            2 |     return while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
              |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        "grad(lambda n: n * 2)(3)\n",
        expect![[r#"
        TypeError: grad requires float inputs, but argument 0 has a leaf of type i32[] (differentiate with respect to float arrays; convert with x.astype(float32)) at test.arr:1:1
          |
        1 | grad(lambda n: n * 2)(3)
          | ^^^^^^^^^^^^^^^^^^^^^^^^
    "#]],
    );
    check(
        "vmap(lambda a, b: a + b)(ones(3), ones(4))\n",
        expect![[r#"
        ValueError: vmap got inconsistent sizes for the mapped axis: argument leaf 0 (f32[3]) has size 3 at axis 0, but argument leaf 1 (f32[4]) has size 4 at axis 0 at test.arr:1:1
          |
        1 | vmap(lambda a, b: a + b)(ones(3), ones(4))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    "#]],
    );
    check(
        "leak = []\ndef f(x):\n    leak.append(x)\n    return x\nvmap(f)(ones(2))\nleak[0] + 1\n",
        expect![[r#"
            TransformError: a traced value (f32[]) was used after the transformation that created it ended; it escaped from the transformed function (through a global or a closure?). Return it from the function instead at test.arr:6:1
              |
            6 | leak[0] + 1
              | ^^^^^^^^^^^
        "#]],
    );
}
