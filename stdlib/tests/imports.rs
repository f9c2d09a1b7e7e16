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
print(jax.numpy is jnp, jnp.sum is sum, lax.fori_loop is fori_loop, P is PartitionSpec)
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
            True True True True
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
            ImportError: No module named 'torch' at test.arr:3:8
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
