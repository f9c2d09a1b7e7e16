//! Tests of the `random` module: the Threefry plumbing recomputed by hand,
//! known answers, counter-based invariance, and statistical sanity.

use arr_kernels::reference::{erf_inv_f32, threefry_block};
use arr_kernels::{Array, Buffer, DType};
use arr_runtime::{ErrorKind, Session, Value};

use arr_testkit::session;
use expect_test::expect;

/// Evaluate an expression and return its array value.
fn eval(s: &mut Session, src: &str) -> Array {
    arr_testkit::array(s, src)
}

fn u32s(a: &Array) -> Vec<u32> {
    match &*a.buffer().unwrap() {
        Buffer::U32(v) => v.clone(),
        _ => panic!("expected u32, got {:?}", a.dtype()),
    }
}

fn f32s(a: &Array) -> Vec<f32> {
    match &*a.buffer().unwrap() {
        Buffer::F32(v) => v.clone(),
        _ => panic!("expected f32, got {:?}", a.dtype()),
    }
}

fn i64s(a: &Array) -> Vec<i64> {
    (0..a.len())
        .map(|i| a.buffer().unwrap().get_i64(i))
        .collect()
}

fn err_kind_msg(s: &mut Session, src: &str) -> (ErrorKind, String) {
    match s.run_entry(src) {
        Ok(v) => panic!("{src} should fail, gave {v:?}"),
        Err(e) => (e.kind, e.message.clone()),
    }
}

/// The bits JAX draws for element i: threefry(key, hi(i), lo(i)), b0 ^ b1.
fn bits_ref(k: [u32; 2], n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| {
            let (a, b) = threefry_block(k[0], k[1], (i as u64 >> 32) as u32, i as u32);
            a ^ b
        })
        .collect()
}

fn split_ref(k: [u32; 2], n: usize) -> Vec<[u32; 2]> {
    (0..n)
        .map(|i| {
            let (a, b) = threefry_block(k[0], k[1], 0, i as u32);
            [a, b]
        })
        .collect()
}

#[test]
fn keys_from_seeds() {
    let mut s = session();
    for (src, want) in [
        ("random.key(0)", [0, 0]),
        ("random.key(42)", [0, 42]),
        ("random.PRNGKey(42)", [0, 42]),
        // JAX without 64-bit mode (arr's mode): the seed modulo 2**32 in
        // the low word, the high word 0 (x64 would give [1, 5] and [MAX, MAX]).
        ("random.key(2**32 + 5)", [0, 5]),
        ("random.key(-1)", [0, u32::MAX]),
    ] {
        let k = eval(&mut s, src);
        assert_eq!(k.shape(), &[2]);
        assert_eq!(u32s(&k), want, "{src}");
    }
}

#[test]
fn threefry_known_answers() {
    // Random123's / JAX's Threefry-2x32 (20 rounds) known-answer vectors, reached
    // through fold_in (counter [0, data]) and split (counter [0, i]).
    let mut s = session();
    assert_eq!(
        u32s(&eval(&mut s, "random.fold_in(random.key(0), 0)")),
        [0x6b20_0159, 0x99ba_4efe]
    );
    assert_eq!(
        u32s(&eval(&mut s, "random.split(random.key(0), 1)")),
        [0x6b20_0159, 0x99ba_4efe]
    );
    // And the kernel itself on the other two vectors.
    assert_eq!(
        threefry_block(u32::MAX, u32::MAX, u32::MAX, u32::MAX),
        (0x1cb9_96fc, 0xbb00_2be7)
    );
    assert_eq!(
        threefry_block(0x1319_8a2e, 0x0370_7344, 0x243f_6a88, 0x85a3_08d3),
        (0xc492_3a9c, 0x483d_f7a0)
    );
}

#[test]
fn split_and_fold_in_match_threefry() {
    let mut s = session();
    let keys = eval(&mut s, "random.split(random.key(42), 5)");
    assert_eq!(keys.shape(), &[5, 2]);
    assert_eq!(keys.dtype(), DType::U32);
    let want: Vec<u32> = split_ref([0, 42], 5).concat();
    assert_eq!(u32s(&keys), want);

    let two = eval(&mut s, "random.split(random.key(42))");
    assert_eq!(u32s(&two), split_ref([0, 42], 2).concat());

    // A shape tuple: keys of shape + (2,), numbered by row-major flat index.
    let grid = eval(&mut s, "random.split(random.key(42), (2, 3))");
    assert_eq!(grid.shape(), &[2, 3, 2]);
    assert_eq!(u32s(&grid), split_ref([0, 42], 6).concat());

    let f = eval(&mut s, "random.fold_in(random.key(7), 123)");
    let (a, b) = threefry_block(0, 7, 0, 123);
    assert_eq!(u32s(&f), [a, b]);
}

#[test]
fn bits_match_threefry() {
    let mut s = session();
    let b = eval(&mut s, "random.bits(random.key(3), (4, 5))");
    assert_eq!(b.shape(), &[4, 5]);
    assert_eq!(u32s(&b), bits_ref([0, 3], 20));
    let scalar = eval(&mut s, "random.bits(random.key(3))");
    assert_eq!(scalar.shape(), &[] as &[usize]);
    assert_eq!(u32s(&scalar), bits_ref([0, 3], 1));
}

#[test]
fn uniform_is_mantissa_bits() {
    let mut s = session();
    let u = eval(&mut s, "random.uniform(random.key(1), (1000,))");
    assert_eq!(u.dtype(), DType::F32);
    let want: Vec<f32> = bits_ref([0, 1], 1000)
        .iter()
        .map(|&b| f32::from_bits((b >> 9) | 0x3F80_0000) - 1.0)
        .collect();
    assert_eq!(f32s(&u), want);

    let scaled = eval(
        &mut s,
        "random.uniform(random.key(1), (1000,), minval=-2.0, maxval=3.0)",
    );
    // One rounding of f * 5 - 2, as JAX's CPU compiler's fused multiply-add.
    let want: Vec<f32> = want
        .iter()
        .map(|&f| ((f as f64 * 5.0 + -2.0) as f32).max(-2.0))
        .collect();
    assert_eq!(f32s(&scaled), want);

    // float64: 64 random bits (b0 << 32 | b1), mantissa = top 52 bits.
    let d = eval(
        &mut s,
        "random.uniform(random.key(1), (100,), dtype='float64')",
    );
    assert_eq!(d.dtype(), DType::F64);
    for i in 0..100 {
        let (b0, b1) = threefry_block(0, 1, 0, i as u32);
        let bits = ((b0 as u64) << 32) | b1 as u64;
        let want = f64::from_bits((bits >> 12) | 0x3FF0_0000_0000_0000) - 1.0;
        assert_eq!(d.get_f64(i).unwrap(), want, "element {i}");
    }
}

#[test]
fn uniform_statistics() {
    let mut s = session();
    let u = f32s(&eval(&mut s, "random.uniform(random.key(0), (100000,))"));
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    let mean = u.iter().map(|&x| x as f64).sum::<f64>() / u.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    let arr = eval(
        &mut s,
        "random.uniform(random.key(0), (2, 3), minval=(0.0, 10.0, 20.0), maxval=(1.0, 11.0, 21.0))",
    );
    for (i, x) in f32s(&arr).iter().enumerate() {
        let lo = (i % 3) as f32 * 10.0;
        assert!(*x >= lo && *x < lo + 1.0, "{x} at {i}");
    }
}

#[test]
fn normal_matches_erfinv_of_uniform() {
    let mut s = session();
    let n = f32s(&eval(&mut s, "random.normal(random.key(5), (500,))"));
    let lo = -(1.0 - f32::EPSILON / 2.0); // nextafter(-1, 0) in f32
    assert_eq!(lo, -0.99999994f32);
    let want: Vec<f32> = bits_ref([0, 5], 500)
        .iter()
        .map(|&b| {
            let f = f32::from_bits((b >> 9) | 0x3F80_0000) - 1.0;
            let u = (f * (1.0 - lo) + lo).max(lo);
            std::f32::consts::SQRT_2 * erf_inv_f32(u)
        })
        .collect();
    assert_eq!(n, want);
}

#[test]
fn normal_statistics() {
    let mut s = session();
    let n = f32s(&eval(&mut s, "random.normal(random.key(0), (100000,))"));
    let len = n.len() as f64;
    let mean = n.iter().map(|&x| x as f64).sum::<f64>() / len;
    let var = n.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / len;
    assert!(mean.abs() < 0.02, "mean {mean}");
    assert!((var.sqrt() - 1.0).abs() < 0.02, "std {}", var.sqrt());
    assert!(n.iter().all(|x| x.is_finite()));
    let d = eval(
        &mut s,
        "random.normal(random.key(0), (1000,), dtype='float64')",
    );
    assert_eq!(d.dtype(), DType::F64);
    assert!(d.to_f64_vec().unwrap().iter().all(|x| x.is_finite()));
}

#[test]
fn counter_based_invariance() {
    // Values depend only on the key and each element's flat index.
    let mut s = session();
    let flat = f32s(&eval(&mut s, "random.normal(random.key(9), (1000,))"));
    let grid = eval(&mut s, "random.normal(random.key(9), (10, 100))");
    assert_eq!(grid.shape(), &[10, 100]);
    assert_eq!(f32s(&grid), flat);
    let cube = f32s(&eval(&mut s, "random.normal(random.key(9), (10, 10, 10))"));
    assert_eq!(cube, flat);
    // A shorter draw is a prefix of a longer one.
    let short = f32s(&eval(&mut s, "random.normal(random.key(9), (10,))"));
    assert_eq!(short, flat[..10]);
}

#[test]
fn randint_matches_jax_algorithm() {
    let mut s = session();
    let r = eval(&mut s, "random.randint(random.key(11), (200,), 3, 10)");
    assert_eq!(r.dtype(), DType::I32);
    let [k1, k2] = split_ref([0, 11], 2)[..] else {
        unreachable!()
    };
    let (hi, lo) = (bits_ref(k1, 200), bits_ref(k2, 200));
    let span = 7u32;
    let mult = ((1u32 << 16) % span).wrapping_mul((1u32 << 16) % span) % span;
    let want: Vec<i64> = (0..200)
        .map(|i| 3 + ((hi[i] % span).wrapping_mul(mult).wrapping_add(lo[i] % span) % span) as i64)
        .collect();
    assert_eq!(i64s(&r), want);
}

#[test]
fn randint_bounds_and_coverage() {
    let mut s = session();
    let r = i64s(&eval(
        &mut s,
        "random.randint(random.key(0), (10000,), -5, 5)",
    ));
    assert!(r.iter().all(|&x| (-5..5).contains(&x)));
    for v in -5..5 {
        assert!(r.contains(&v), "{v} never drawn");
    }
    // Empty range gives minval.
    let e = i64s(&eval(&mut s, "random.randint(random.key(0), (10,), 4, 4)"));
    assert!(e.iter().all(|&x| x == 4));
    // Array bounds broadcast to the shape.
    let a = eval(
        &mut s,
        "random.randint(random.key(0), (1000, 2), (0, 100), (10, 110))",
    );
    assert_eq!(a.shape(), &[1000, 2]);
    for (i, x) in i64s(&a).iter().enumerate() {
        let lo = if i % 2 == 0 { 0 } else { 100 };
        assert!((lo..lo + 10).contains(x));
    }
    // The full int32 range, uint32 and int64 dtypes.
    let full = i64s(&eval(
        &mut s,
        "random.randint(random.key(0), (1000,), -2**31, 2**31 - 1)",
    ));
    assert!(full.iter().any(|&x| x < 0) && full.iter().any(|&x| x > 0));
    let u = eval(
        &mut s,
        "random.randint(random.key(0), (100,), 0, 2**31 - 1, dtype='uint32')",
    );
    assert_eq!(u.dtype(), DType::U32);
    // As JAX (x32): a Python-int bound is parsed as int32 whatever the dtype.
    let e = arr_testkit::error_of(
        &mut s,
        "random.randint(random.key(0), (100,), 0, 2**32, dtype='uint32')",
    );
    assert!(e.starts_with("OverflowError"), "{e}");
    let big = eval(
        &mut s,
        "random.randint(random.key(0), (100,), 2**40, 2**40 + 3, dtype='int64')",
    );
    assert_eq!(big.dtype(), DType::I64);
    assert!(i64s(&big)
        .iter()
        .all(|&x| (1 << 40..(1 << 40) + 3).contains(&x)));
}

#[test]
fn permutation_is_a_permutation() {
    let mut s = session();
    for n in [0usize, 1, 2, 10, 1000, 3000] {
        let p = eval(&mut s, &format!("random.permutation(random.key(4), {n})"));
        assert_eq!(p.dtype(), DType::I32);
        let mut v = i64s(&p);
        if n > 10 {
            assert_ne!(
                v,
                (0..n as i64).collect::<Vec<_>>(),
                "n = {n} was not shuffled"
            );
        }
        v.sort_unstable();
        assert_eq!(v, (0..n as i64).collect::<Vec<_>>());
    }
}

#[test]
fn permutation_matches_jax_shuffle() {
    // n = 100 takes one round: key, subkey = split(key); argsort(bits(subkey, (n,))).
    let mut s = session();
    let p = i64s(&eval(&mut s, "random.permutation(random.key(4), 100)"));
    let sub = split_ref([0, 4], 2)[1];
    let keys = bits_ref(sub, 100);
    let mut order: Vec<usize> = (0..100).collect();
    order.sort_by_key(|&i| keys[i]);
    assert_eq!(p, order.iter().map(|&i| i as i64).collect::<Vec<_>>());

    // An array's first axis is shuffled the same way.
    s.set(
        "x",
        Value::Array(Array::new(&[100, 2], Buffer::I32((0..200).collect())).into()),
    );
    let px = eval(&mut s, "random.permutation(random.key(4), x)");
    assert_eq!(px.shape(), &[100, 2]);
    let rows: Vec<i64> = i64s(&px).chunks(2).map(|r| r[0] / 2).collect();
    assert_eq!(rows, p);
}

#[test]
fn bernoulli_and_choice() {
    let mut s = session();
    let b = eval(&mut s, "random.bernoulli(random.key(2), 0.3, (10000,))");
    assert_eq!(b.dtype(), DType::Bool);
    let frac = b.to_f64_vec().unwrap().iter().sum::<f64>() / 10000.0;
    assert!((frac - 0.3).abs() < 0.02, "{frac}");
    let scalar = eval(&mut s, "random.bernoulli(random.key(2))");
    assert_eq!(scalar.shape(), &[] as &[usize]);

    let c = i64s(&eval(&mut s, "random.choice(random.key(2), 5, (1000,))"));
    assert!(c.iter().all(|&x| (0..5).contains(&x)));
    let mut u = i64s(&eval(
        &mut s,
        "random.choice(random.key(2), 10, (10,), replace=False)",
    ));
    u.sort_unstable();
    assert_eq!(u, (0..10).collect::<Vec<_>>());
    s.set(
        "pop",
        Value::Array(Array::new(&[4], Buffer::F32(vec![1.5, 2.5, 3.5, 4.5])).into()),
    );
    let picks = eval(&mut s, "random.choice(random.key(2), pop, (3, 2))");
    assert_eq!(picks.shape(), &[3, 2]);
    assert!(f32s(&picks)
        .iter()
        .all(|x| [1.5, 2.5, 3.5, 4.5].contains(x)));
    let (kind, msg) = err_kind_msg(
        &mut s,
        "random.choice(random.key(2), 3, (4,), replace=False)",
    );
    assert_eq!(kind, ErrorKind::ValueError);
    assert!(msg.contains("without replacement"), "{msg}");
}

#[test]
fn clear_errors() {
    let mut s = session();
    s.set(
        "bad",
        Value::Array(Array::new(&[3], Buffer::F32(vec![0.0; 3])).into()),
    );
    let (kind, msg) = err_kind_msg(&mut s, "random.normal(bad, (2,))");
    assert_eq!(kind, ErrorKind::TypeError);
    assert_eq!(
        msg,
        "random.normal: key must be a u32[2] key array (from random.key(seed)), got f32[3]"
    );
    let (kind, msg) = err_kind_msg(&mut s, "random.uniform(3)");
    assert_eq!(kind, ErrorKind::TypeError);
    assert!(msg.contains("got int"), "{msg}");
    let (kind, msg) = err_kind_msg(&mut s, "random.normal(random.key(0), (2,), dtype='int32')");
    assert_eq!(kind, ErrorKind::TypeError);
    assert!(msg.contains("float dtype"), "{msg}");
    let (kind, msg) = err_kind_msg(
        &mut s,
        "random.uniform(random.key(0), (2,), minval=(1.0, 2.0, 3.0))",
    );
    assert_eq!(kind, ErrorKind::ShapeError);
    assert!(msg.contains("minval"), "{msg}");
    let (kind, _) = err_kind_msg(&mut s, "random.normal(random.key(0), (-1,))");
    assert_eq!(kind, ErrorKind::ValueError);
    let (kind, msg) = err_kind_msg(
        &mut s,
        "random.randint(random.key(0), (2,), 0, 5, dtype='float32')",
    );
    assert_eq!(kind, ErrorKind::TypeError);
    assert!(msg.contains("integer dtype"), "{msg}");
}

#[test]
fn every_function_has_a_docstring() {
    let mut s = session();
    for name in [
        "key",
        "PRNGKey",
        "split",
        "fold_in",
        "bits",
        "uniform",
        "normal",
        "randint",
        "permutation",
        "bernoulli",
        "choice",
    ] {
        let help = s
            .help_text(&format!("random.{name}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let doc = help.split("\n\n").nth(1).unwrap_or("");
        assert!(doc.len() > 20, "random.{name} has no docstring: {help}");
    }
}

/// Keys split and folded inside `vmap`, and random numbers inside traced
/// loops, give exactly what the same calls give one at a time.
#[test]
fn random_under_transformations_matches_one_at_a_time() {
    let mut s = session();
    s.run_entry("key = random.key(7); keys = random.split(key, 5)")
        .unwrap();
    let pairs = [
        (
            "vmap(lambda k: random.normal(k, (3,)))(keys)",
            "stack([random.normal(k, (3,)) for k in keys])",
        ),
        (
            "vmap(lambda i: random.uniform(random.fold_in(key, i), (2,)))(arange(4))",
            "stack([random.uniform(random.fold_in(key, i), (2,)) for i in range(4)])",
        ),
        (
            "vmap(lambda k: random.split(k, 3))(keys)",
            "stack([random.split(k, 3) for k in keys])",
        ),
        (
            "scan(lambda c, k: (c + random.normal(k, ()), None), 0.0, keys)[0]",
            "sum(stack([random.normal(k, ()) for k in keys]))",
        ),
        (
            "fori_loop(0, 5, lambda i, c: c + random.uniform(random.fold_in(key, i), ()), 0.0)",
            "sum(stack([random.uniform(random.fold_in(key, i), ()) for i in range(5)]))",
        ),
    ];
    for (transformed, direct) in pairs {
        let (a, b) = (eval(&mut s, transformed), eval(&mut s, direct));
        assert_eq!(a.shape(), b.shape(), "{transformed}");
        let (a, b) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-5 * y.abs().max(1.0),
                "{transformed}: {a:?} vs {b:?}"
            );
        }
    }
}

/// 16-bit floats are drawn as JAX draws them (16 random bits for float16, 8
/// for bfloat16, then their top mantissa bits), so they are JAX's values
/// exactly: the expected numbers are JAX 0.10.2's for the same keys.
#[test]
fn sixteen_bit_samples_are_jaxs() {
    let mut s = session();
    let cases: [(&str, &[f32]); 4] = [
        (
            "random.normal(random.key(11), (6,), dtype=float16)",
            &[
                -0.44702148,
                0.1505127,
                -0.1616211,
                0.6123047,
                -0.6044922,
                -1.5986328,
            ],
        ),
        (
            "random.uniform(random.key(11), (6,), dtype=float16, minval=-2.0, maxval=3.0)",
            &[
                -0.3642578, 0.796875, 0.17773438, 1.6484375, -0.6376953, -1.7265625,
            ],
        ),
        (
            "random.uniform(random.key(11), (6,), dtype=bfloat16, minval=-2.0, maxval=3.0)",
            &[2.6875, 0.0625, 1.359375, 2.65625, 2.34375, -0.9453125],
        ),
        (
            "random.truncated_normal(random.key(11), -1.0, 1.0, (4,), dtype=bfloat16)",
            &[0.83984375, -0.14746094, 0.29882812, 0.82421875],
        ),
    ];
    for (src, want) in cases {
        let a = eval(&mut s, &format!("({src}).astype(float32)"));
        assert_eq!(f32s(&a), want, "{src}");
    }
    let a = eval(
        &mut s,
        "random.normal(random.key(11), (3,), dtype=bfloat16)",
    );
    assert_eq!(a.dtype(), DType::BF16);
}

#[test]
fn typed_keys_show_as_jax_shows_them_and_keep_their_type() {
    // Expected: JAX 0.10.2's output for the same program.
    arr_testkit::check_output(
        r#"
import jax
import jax.numpy as jnp
from jax import random
key = random.key(0)
print(key)
print(repr(random.split(key, 2)))
print([key], key.shape, key.ndim, key.size, key.dtype)
keys = random.split(key, 3)
print(len(keys), keys[1], keys[-1].shape)
for k in random.split(key, 2):
    print(random.normal(k, (2,)))
print(jax.vmap(lambda k: random.uniform(k, (2,)))(random.split(key, 3)))
print(random.split(key, (2, 3)).shape, random.key_data(random.split(key, (2, 3))).shape)
k1, k2 = random.split(random.PRNGKey(0))
print(k1.shape, k2)
print(jax.random.bernoulli(random.fold_in(key, 3), 0.5, (4,)))
print(random.key_data(jax.random.wrap_key_data(random.key_data(key))))
print(jnp.issubdtype(key.dtype, jax.dtypes.prng_key), jnp.issubdtype(jnp.float32, jax.dtypes.prng_key))
print(jax.tree.leaves({"k": key})[0].shape)
f = jax.jit(lambda k: random.normal(k, (3,)))
print(f(key))
"#,
        expect![[r#"
            Array((), dtype=key<fry>) overlaying:
            [0 0]
            Array((2,), dtype=key<fry>) overlaying:
            [[1797259609 2579123966]
             [ 928981903 3453687069]]
            [Array((), dtype=key<fry>) overlaying:
            [0 0]] () 0 1 key<fry>
            3 Array((), dtype=key<fry>) overlaying:
            [ 928981903 3453687069] ()
            [ 1.0040143 -0.9063372]
            [-2.4424558 -2.0356805]
            [[0.8423141  0.18237865]
             [0.00729382 0.02089119]
             [0.9024495  0.91229284]]
            (2, 3) (2, 3, 2)
            (2,) [ 928981903 3453687069]
            [ True False False  True]
            [0 0]
            True False
            ()
            [ 1.6226422   2.0252647  -0.43359444]
        "#]],
    );
}
