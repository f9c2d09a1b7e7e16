//! `import` and `from ... import` over the built-in namespaces (`jax`,
//! `jax.numpy`, `numpy`, `functools`, ...), and the list of JAX and NumPy
//! names those namespaces still lack (`tests/missing_names.txt`), which only shrinks.

use arr_testkit::check_output as check;
use arr_testkit::session;
use expect_test::expect;

#[test]
fn imports_bind_modules_and_members() {
    check(
        r#"
import jax
import jax.numpy as jnp
from jax import grad, jit as compile, lax, random
from jax.sharding import NamedSharding, PartitionSpec as P
import numpy as np, math
from functools import partial
print(jax.numpy is jnp, jnp.arange is arange, lax.fori_loop is fori_loop, P is PartitionSpec)
print(jnp.array([1.0, 2.0]) * 2, compile(grad(lambda x: x ** 3))(2.0))
print(jax.random.normal(random.key(0), (2,)).shape, jax.tree.leaves({"b": 1, "a": (2, 3)}))
print(math.sqrt(2.0), math.floor(-2.5), math.pi == np.pi, math.gcd(12, 18))
def f():
    import jax.lax
    from jax.nn import relu as r
    return float(jax.lax.abs(-2.0)), float(r(-1.0))
print(f())
"#,
        expect![[r#"
            True False True True
            [2. 4.] 12.0
            (2,) [2, 3, 1]
            1.4142135623730951 -3 True 6
            (2.0, 0.0)
        "#]],
    );
}

#[test]
fn a_missing_module_or_name_is_an_import_error_at_its_line() {
    check(
        r#"
x = 1
import torch
"#,
        expect![[r#"
            ModuleNotFoundError: No module named 'torch' at test.arr:3:8
              |
            3 | import torch
              |        ^^^^^
        "#]],
    );
    check(
        "from jax import nosuch\n",
        expect![[r#"
            ImportError: cannot import name 'nosuch' from 'jax' at test.arr:1:17
              |
            1 | from jax import nosuch
              |                 ^^^^^^
        "#]],
    );
    check(
        "def f():\n    from jax import *\n",
        expect![[r#"
            SyntaxError: import * only allowed at module level at test.arr:2:5
              |
            2 |     from jax import *
              |     ^^^^^^^^^^^^^^^^^
        "#]],
    );
}

#[test]
fn star_imports_and_shadowing() {
    check(
        r#"
from jax.numpy import *
print(sum(arange(4.0)), pi > 3)
import jax
def step(w):
    grad = jax.grad(lambda v: (v ** 2).sum())(w)   # a local named like jax.grad
    jit = "text"
    return w - 0.1 * grad, len(jit)
print(step(ones(2)))
"#,
        expect![[r#"
            6.0 True
            (Array([0.8, 0.8], dtype=float32), 4)
        "#]],
    );
}

#[test]
fn partial_binds_arguments_as_functools_does() {
    check(
        r#"
from functools import partial, reduce
import jax
def power(x, n, scale=1.0):
    return scale * x ** n
cube = partial(power, n=3)
print(cube(2.0), cube(2.0, scale=0.5), cube.func is power, cube.args, cube.keywords)
twice = partial(partial(power, 3.0), scale=2.0)
print(twice(2), reduce(lambda a, b: a * b, [1, 2, 3, 4]), reduce(lambda a, b: a + b, [], 7))
@partial(jax.jit, static_argnums=(1,))
def poly(x, degree):
    return sum(x ** k for k in range(degree + 1))
print(poly(jax.numpy.array([2.0]), 3), poly(jax.numpy.array([2.0]), degree=2))
"#,
        expect![[r#"
            8.0 4.0 True () {'n': 3}
            18.0 24 7
            [15.] [7.]
        "#]],
    );
}

#[test]
fn static_argnames_and_argnums_follow_the_signature() {
    check(
        r#"
import jax
calls = [0]
def poly(x, degree, scale=1.0):
    calls[0] += 1
    return scale * x ** degree
by_pos = jax.jit(poly, static_argnums=(1,))
print(by_pos(2.0, 2), by_pos(2.0, degree=2), calls[0])
by_name = jax.jit(poly, static_argnames="degree")
print(by_name(2.0, 3), by_name(2.0, degree=3), calls[0])
"#,
        expect![[r#"
            4.0 4.0 2
            8.0 8.0 4
        "#]],
    );
}

#[test]
fn or_and_and_return_the_last_operand_without_asking_its_truth() {
    check(
        r#"
import jax.numpy as jnp
x = None or jnp.ones(2)
print(x, 1 and jnp.zeros(1))
"#,
        expect![[r#"
            [1. 1.] [0.]
        "#]],
    );
}

/// The JAX and NumPy names of the namespace table that arr does not have yet.
/// The file lists them; a name that arrives must leave the file, and no name
/// may join it.
#[test]
fn missing_names_only_shrink() {
    let mut s = session();
    let missing = arr_stdlib::modules::missing_members(&mut s.interp);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/missing_names.txt");
    let listed = std::fs::read_to_string(path).unwrap_or_default();
    let listed: Vec<&str> = listed
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let new: Vec<&String> = missing
        .iter()
        .filter(|m| !listed.contains(&m.as_str()))
        .collect();
    let arrived: Vec<&&str> = listed
        .iter()
        .filter(|l| !missing.iter().any(|m| m == *l))
        .collect();
    assert!(
        new.is_empty() && arrived.is_empty(),
        "tests/missing_names.txt is out of date.\nMissing but not listed: {new:?}\nListed but present now (remove them): {arrived:?}"
    );
}

#[test]
fn numpy_gives_ndarrays_and_jax_arrays_stay_jax_arrays() {
    // As in NumPy and JAX: numpy's functions, and operators and methods of
    // ndarrays among themselves and Python numbers, give ndarrays; a JAX
    // array in the mix, or a jnp function, gives a JAX array.
    check(
        r#"
import numpy as np
import jax
import jax.numpy as jnp
n = np.ones(3, dtype=np.float32)
x = jnp.arange(3.0)
names = lambda *vs: [type(v).__name__ for v in vs]
print(names(n + 1, n * n, n + x, -n, n.sum(), n[1:], n.T, np.sin(x), jnp.sin(n), jnp.asarray(n)))
print(isinstance(n, np.ndarray), isinstance(n, jax.Array), isinstance(x, np.ndarray), isinstance(x, jnp.ndarray))
print([n], [x], [np.arange(2) == 0], names(*np.split(np.arange(4.0), 2)))
print(jnp.asarray(np.arange(3, dtype=np.int64)).dtype, np.arange(3, dtype=np.int64).dtype)
"#,
        expect![[r#"
            ['ndarray', 'ndarray', 'ArrayImpl', 'ndarray', 'ndarray', 'ndarray', 'ndarray', 'ndarray', 'ArrayImpl', 'ArrayImpl']
            True False False True
            [array([1., 1., 1.], dtype=float32)] [Array([0., 1., 2.], dtype=float32)] [array([ True, False])] ['ndarray', 'ndarray']
            int32 int64
        "#]],
    );
}

#[test]
fn a_view_of_a_jax_array_is_read_only_and_a_copy_is_not() {
    check(
        r#"
import numpy as np
import jax.numpy as jnp
x = jnp.arange(3.0)
c = np.array(x)
c[0] = 5.0
print(c, type(c).__name__, c.flags.writeable, x)
v = np.asarray(x)
print(v.flags.writeable)
v[0] = 1.0
"#,
        expect![[r#"
            [5. 1. 2.] ndarray True [0. 1. 2.]
            False
            ValueError: assignment destination is read-only at test.arr:10:1
               |
            10 | v[0] = 1.0
               | ^^^^
        "#]],
    );
}

#[test]
fn a_program_that_imports_jax_clamps_indices_as_jax_does() {
    // arr's own rule (no import of jax) is an IndexError; NumPy's arrays
    // keep NumPy's IndexError under JAX's rules too.
    check(
        "x = arange(3)\nprint(x[1])\nx[5]\n",
        expect![[r#"
            1
            IndexError: index 5 is out of bounds for axis 0 with size 3 at test.arr:3:1
              |
            3 | x[5]
              | ^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
import numpy as np
x = jnp.arange(10, 60, 10)
print(x[10], x[-10], x[jnp.array([0, 9, -9])], x[1, None] if False else x[4])
print(x.at[9].get(), x.at[9].set(0), x.at[9].get(mode="fill", fill_value=-1))
np.arange(3)[3]
"#,
        expect![[r#"
            50 10 [10 50 10] 50
            50 [10 20 30 40 50] -1
            IndexError: index 3 is out of bounds for axis 0 with size 3 at test.arr:7:1
              |
            7 | np.arange(3)[3]
              | ^^^^^^^^^^^^^^^
        "#]],
    );
}

#[test]
fn a_jax_program_sees_jax_devices_and_reprs() {
    // Expected: JAX 0.10.2's output (8 CPU devices) for the same program.
    check(
        r#"
import jax
import jax.numpy as jnp
import numpy as np
x = jnp.arange(4)
print(x.device, repr(x.device), x.devices(), str(jax.devices()[1]), [jax.devices()[0]], x.device == jax.devices()[0])
print(repr(jnp.float32(1)), repr(jnp.arange(3)), repr(np.ones(2, dtype=np.float32)))
"#,
        expect![[r#"
            cpu:0 CpuDevice(id=0) {CpuDevice(id=0)} cpu:1 [CpuDevice(id=0)] True
            Array(1., dtype=float32) Array([0, 1, 2], dtype=int32) array([1., 1.], dtype=float32)
        "#]],
    );
}

#[test]
fn types_compare_with_the_builtins_and_print_as_python_in_a_jax_program() {
    // Expected: Python's and JAX 0.10.2's output for the same program; an arr
    // script (no import of jax) keeps arr's type strings.
    check(
        r#"
import jax.numpy as jnp
import numpy as np
print(type(1), type(2.0), type("s"), type([1]), type({}), type(None), type((1,)))
print(type(jnp.arange(3)), type(np.ones(2)))
print(type(jnp.arange(3)) == type(jnp.ones(2)), type(1) == int, type(1) is int)
print(type(True) == int, type(3) != float, type([]) is list, isinstance(1, type(2)))
"#,
        expect![[r#"
            <class 'int'> <class 'float'> <class 'str'> <class 'list'> <class 'dict'> <class 'NoneType'> <class 'tuple'>
            <class 'jaxlib._jax.ArrayImpl'> <class 'numpy.ndarray'>
            True True True
            False True True True
        "#]],
    );
    check(
        "print(type(1), type(ones(3)), type(1) == int, isinstance(ones(2), type(zeros(3))))\n",
        expect![[r#"
            int f32[3] True True
        "#]],
    );
}
