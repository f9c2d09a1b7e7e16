//! `jax.debug.print` and `jax.debug.callback`: runtime values printed from
//! inside `jit` (every call), `vmap` (once per example), `grad` (primal
//! values, in program order), loops and branches (every iteration), device
//! programs (once per device; a sharded jit once), and kept by every jit
//! pass. Expected outputs are what JAX prints for the same programs.

use arr_testkit::check_output as check;
use expect_test::expect;

#[test]
fn jit_prints_runtime_values_on_every_call() {
    check(
        r#"
import jax
import jax.numpy as jnp
@jax.jit
def decay(x, rate):
    jax.debug.print("start {x}", x=x)
    y = x * rate
    jax.debug.print("after one step: {y:.3f} (rate {r})", y=y[0], r=rate)
    return y
print("calling")
print("result", decay(jnp.array([1.0, 2.0]), 0.5))
print("result", decay(jnp.array([3.0, 4.0]), 0.25))
jax.debug.print("eager {a} {b}", a=jnp.arange(2), b=3)
"#,
        expect![[r#"
            calling
            start [1. 2.]
            after one step: 0.500 (rate 0.5)
            result [0.5 1. ]
            start [3. 4.]
            after one step: 0.750 (rate 0.25)
            result [0.75 1.  ]
            eager [0 1] 3
        "#]],
    );
}

#[test]
fn vmap_calls_back_once_per_example() {
    check(
        r#"
import jax
import jax.numpy as jnp
def f(x, y):
    jax.debug.print("x={x} y={y}", x=x, y=y)
    return x * y
r = jax.vmap(f, in_axes=(0, None))(jnp.arange(3.0), 2.0)
r = jax.vmap(f, in_axes=(1, None))(jnp.arange(6.0).reshape(2, 3), 2.0)
print(jax.jit(jax.vmap(lambda x: f(x, 1.0)))(jnp.arange(2.0)))
"#,
        expect![[r#"
            x=0.0 y=2.0
            x=1.0 y=2.0
            x=2.0 y=2.0
            x=[0. 3.] y=2.0
            x=[1. 4.] y=2.0
            x=[2. 5.] y=2.0
            x=0.0 y=1.0
            x=1.0 y=1.0
            [0. 1.]
        "#]],
    );
}

#[test]
fn grad_prints_primal_values_in_program_order() {
    check(
        r#"
import jax
import jax.numpy as jnp
def g(x):
    print("a")
    jax.debug.print("v {}", x)
    print("b")
    return x * x
print(jax.grad(g)(1.5))
def h(x):
    jax.debug.print("p {}", x)
    return x * x
print(jax.jit(jax.grad(h))(3.0))
print(jax.vmap(jax.grad(h))(jnp.array([1.0, 2.0])))
"#,
        expect![[r#"
            a
            v 1.5
            b
            3.0
            p 3.0
            6.0
            p 1.0
            p 2.0
            [2. 4.]
        "#]],
    );
}

#[test]
fn loops_and_branches_print_every_iteration() {
    check(
        r#"
import jax
import jax.numpy as jnp
from jax import lax
def body(i, acc):
    jax.debug.print("i={} acc={}", i, acc)
    return acc * 2 + i
print(jax.jit(lambda a: lax.fori_loop(0, 3, body, a))(1))
def step(c, x):
    jax.debug.print("c={} x={}", c, x)
    return c + x, c
print(lax.scan(step, 0, jnp.arange(3)))
def w(i):
    jax.debug.print("w {}", i)
    return i + 1
print(lax.while_loop(lambda i: i < 2, w, 0))
f = jax.jit(lambda x: lax.cond(x > 0, lambda: jax.debug.print("pos {}", x), lambda: jax.debug.print("neg {}", x)))
f(-2)
f(5)
"#,
        expect![[r#"
            i=0 acc=1
            i=1 acc=2
            i=2 acc=5
            12
            c=0 x=0
            c=0 x=1
            c=1 x=2
            (Array(3, dtype=int32), Array([0, 0, 1], dtype=int32))
            w 0
            w 1
            2
            neg -2
            pos 5
        "#]],
    );
}

#[test]
fn jit_passes_keep_every_callback() {
    check(
        r#"
import jax
@jax.jit
def twice(x):
    jax.debug.print("constant {}", 7)
    jax.debug.print("seen {}", x)
    jax.debug.print("seen {}", x)
    y = x + 1
    jax.debug.print("unused {}", y * 2)
    return x
twice(1.0)
def f(x, y):
    jax.debug.print("x={x} y={y}", x=x, y=y)
    return x * y
print(jax.make_jaxpr(f)(1.0, 2.0))
"#,
        expect![[r#"
            constant 7
            seen 1.0
            seen 1.0
            unused 4.0
            { lambda ; a:f32[] b:f32[]. let
                debug_print[ordered=False] a b
                c:f32[] = mul a b
              in (c,) }
        "#]],
    );
}

#[test]
fn automatic_jit_keeps_printing_in_hot_code() {
    check(
        r#"
import jax
def hot(x):
    jax.debug.print("hot {}", x)
    return x + 1
t = 0.0
for i in range(40):
    t = hot(t)
print(t)
"#,
        expect![[r#"
            hot 0.0
            hot 1.0
            hot 2.0
            hot 3.0
            hot 4.0
            hot 5.0
            hot 6.0
            hot 7.0
            hot 8.0
            hot 9.0
            hot 10.0
            hot 11.0
            hot 12.0
            hot 13.0
            hot 14.0
            hot 15.0
            hot 16.0
            hot 17.0
            hot 18.0
            hot 19.0
            hot 20.0
            hot 21.0
            hot 22.0
            hot 23.0
            hot 24.0
            hot 25.0
            hot 26.0
            hot 27.0
            hot 28.0
            hot 29.0
            hot 30.0
            hot 31.0
            hot 32.0
            hot 33.0
            hot 34.0
            hot 35.0
            hot 36.0
            hot 37.0
            hot 38.0
            hot 39.0
            40.0
        "#]],
    );
}

#[test]
fn callback_calls_a_function_with_runtime_values() {
    check(
        r#"
import jax
import jax.numpy as jnp
jax.debug.callback(lambda a, b: print("cb", a, b), jnp.ones(2), 4)
jax.jit(lambda a: jax.debug.callback(lambda z, k=None: print("cbj", z, k), a, k=a[0]))(jnp.arange(2))
jax.debug.print("{} {:.2f}", jnp.float32(1.5), 2.0)
jax.debug.print("{x}", x={"k": jnp.arange(2)})
jax.debug.print("plain", ordered=True)
def bad(x):
    jax.debug.callback(lambda v: 1 / 0, x)
    return x
try:
    jax.jit(bad)(1.0)
except ZeroDivisionError as e:
    print("caught", e)
jax.jit(lambda x: jax.debug.print("{:.2f}", x))(jax.numpy.arange(2.0))
"#,
        expect![[r#"
            cb [1. 1.] 4
            cbj [0 1] 0
            1.5 2.00
            {'k': Array([0, 1], dtype=int32)}
            plain
            caught division by zero
            TypeError: unsupported format string '.2f' passed to f32[2]: only one-element arrays take a format spec at test.arr:16:1
               |
            16 | jax.jit(lambda x: jax.debug.print("{:.2f}", x))(jax.numpy.arange(2.0))
               | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

#[test]
fn device_programs_call_back_per_device() {
    check(
        r#"
import jax
import jax.numpy as jnp
m = mesh((2,), ("i",))
def f(x):
    jax.debug.print("block {}", x)
    return x * 2
x = shard(jnp.arange(4.0), m, P("i"))
print(shard_map(f, m, P("i"), P("i"))(x))
print(jax.jit(f)(x))
print(jax.pmap(lambda v: (jax.debug.print("dev {}", v), v)[1])(jnp.arange(4)))
"#,
        expect![[r#"
            block [0. 1.]
            block [2. 3.]
            [0. 2. 4. 6.]
            block [0. 1. 2. 3.]
            [0. 2. 4. 6.]
            dev 0
            dev 1
            dev 2
            dev 3
            [0 1 2 3]
        "#]],
    );
}
