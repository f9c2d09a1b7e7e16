//! `jit`: compiled functions agree with eager evaluation (fused kernels on
//! random programs, shapes, broadcasts and dtypes), the cache recompiles
//! exactly when the signature changes and says why, and static arguments.

mod common;

use arr_kernels::Backend as _;
use arr_runtime::Value;
use arr_testkit::{error_of, truthy};
use common::{random_program, run, session, Rng};

#[test]
fn fused_programs_match_eager_evaluation() {
    let mut s = session();
    let mut rng = Rng(12345);
    let mut fused = 0;
    for case in 0..60 {
        let (setup, wrap) = random_program(&mut rng, case, (300, 150));
        let src = format!(
            "{setup}\
             f = lambda x, y, z: {wrap}\n\
             g = jit(f)\n\
             want = f(x, y, z)\n\
             got = g(x, y, z)\n"
        );
        run(&mut s, &src);
        let ok = truthy(
            &mut s,
            "all([asarray(g).shape == asarray(w).shape and \
             (not isinstance(w, array) or g.dtype == w.dtype) and \
             bool(allclose(g, w, rtol=1e-4, atol=1e-4)) \
             for g, w in zip(tree_leaves(got), tree_leaves(want))])",
        );
        assert!(ok, "case {case}: jit differs from eager for\n{src}");
        if truthy(&mut s, "'fused' in g.ir(x, y, z)") {
            fused += 1;
        }
    }
    // Most random programs have runs of two or more elementwise operations.
    assert!(fused >= 40, "only {fused} of 60 programs were fused");
}

/// Softmax and layer norm, forward and backward, compile to kernels that
/// read their reductions back (`reduced out..`) and agree with eager
/// evaluation: rows of one element, rows longer than a block, rows too
/// long to keep in registers, few rows and many, infinities in a row.
#[test]
fn normalisations_read_their_reductions_back_and_match_eager() {
    let mut s = session();
    run(
        &mut s,
        "def ln(x, g):\n\
         \x20   m = mean(x, axis=-1, keepdims=True)\n\
         \x20   v = mean((x - m) ** 2, axis=-1, keepdims=True)\n\
         \x20   return (x - m) / sqrt(v + 1e-5) * g\n\
         def loss(x, g):\n\
         \x20   p = softmax(ln(x, g) * 3.0, axis=-1)\n\
         \x20   return sum(p * p * arange(x.shape[-1])) + sum(log_softmax(x, axis=-1)[:, :1])\n\
         masked = lambda x: where(arange(x.shape[-1]) == 0, -inf, x)\n\
         both = lambda x, g: (ln(x, g), softmax(masked(x), axis=-1), grad(loss, argnums=(0, 1))(x, g))\n\
         jboth = jit(both)\n",
    );
    for (rows, cols) in [(64, 16), (3, 1), (1, 300), (5, 3000), (2, 40000), (4096, 8)] {
        run(
            &mut s,
            &format!(
                "x = random.normal(random.key(0), ({rows}, {cols})) * 4.0\n\
                 g = random.normal(random.key(1), ({cols},))\n\
                 want = both(x, g)\n\
                 got = jboth(x, g)\n"
            ),
        );
        let ok = truthy(
            &mut s,
            "all([bool(allclose(a, b, rtol=2e-4, atol=2e-4, equal_nan=True)) \
             for a, b in zip(tree_leaves(got), tree_leaves(want))])",
        );
        assert!(ok, "({rows}, {cols}): jit differs from eager");
    }
    run(&mut s, "x = ones((64, 16))\ng = ones(16)\n");
    assert!(truthy(&mut s, "'reduced out' in jit(ln).kernels(x, g)"));
    assert!(truthy(
        &mut s,
        "'reduced out' in jit(lambda x: softmax(x, axis=-1)).kernels(x)"
    ));
    // One kernel for the forward layer norm.
    assert!(truthy(&mut s, "jit(ln).ir(x, g).count('fused') == 1"));
}

#[test]
fn the_cache_recompiles_when_the_signature_changes_and_says_why() {
    let mut s = session();
    run(
        &mut s,
        "f = jit(lambda x, n: x * n, static_argnums=1)\n\
         a = f(ones(3), 2)\nb = f(ones(3), 2)\nc = f(ones(4), 2)\nd = f(ones(4), 3)\n\
         e = f(ones(4, dtype=float64), 3)\n",
    );
    let why = match run(&mut s, "f.why()") {
        Value::Str(w) => w.to_string(),
        other => panic!("{other:?}"),
    };
    let lines: Vec<&str> = why.lines().collect();
    assert_eq!(lines.len(), 4, "{why}");
    assert!(lines[0].contains("compile 1: first call"), "{why}");
    assert!(
        lines[1].contains("array argument 0 changed type: f32[3] -> f32[4]"),
        "{why}"
    );
    assert!(
        lines[2].contains("static argument 1 changed: 2 -> 3"),
        "{why}"
    );
    assert!(
        lines[3].contains("array argument 0 changed type: f32[4] -> f64[4]"),
        "{why}"
    );
    assert!(truthy(&mut s, "len(jit_stats()) >= 4"));
}

#[test]
fn jit_composes_with_transformations_and_python_control_on_statics() {
    let mut s = session();
    let checks = [
        "allclose(jit(grad(lambda x: sum(sin(x) * x)))(ones(3)), grad(lambda x: sum(sin(x) * x))(ones(3)))",
        "allclose(grad(jit(lambda x: sum(sin(x) * x)))(ones(3)), grad(lambda x: sum(sin(x) * x))(ones(3)))",
        "allclose(vmap(jit(lambda v: v @ v))(ones((4, 3))), full(4, 3.0))",
        "allclose(jit(vmap(lambda v: sum(v * 2.0)))(ones((4, 3))), full(4, 6.0))",
        "allclose(jit(lambda x, n: x * 2 if n > 1 else x, static_argnames='n')(ones(2), n=3), full(2, 2.0))",
        "jit(lambda: arange(3) + 1)().tolist() == [1, 2, 3]",
        "allclose(jit(lambda t: scan(lambda c, v: (c + v, c), 0.0, t))(arange(4.0))[1], array([0.0, 0.0, 1.0, 3.0]))",
        "jit(lambda d: d['a'] + d['b'])({'a': 1.0, 'b': ones(2)}).shape == (2,)",
    ];
    for c in checks {
        assert!(truthy(&mut s, c), "{c}");
    }
    // Python control flow on a traced value under jit names the fix.
    let err = s
        .run_entry("jit(lambda x: x if x > 0 else -x)(1.0)")
        .unwrap_err();
    assert!(
        err.render().contains("TracerBoolConversionError"),
        "{}",
        err.render()
    );
}

/// Products with an elementwise epilogue (`fused_matmul`) give eager
/// evaluation's bits: random shapes (not multiples of the panel size, some
/// large enough for BLAS and for several panels on all threads), float32
/// and float64, biases broadcast along rows or columns or scalar, batched
/// and transposed operands.
#[test]
fn matmul_epilogues_match_eager_bit_for_bit() {
    let mut s = session();
    let mut rng = Rng(2024);
    let epilogues = [
        "tanh(x @ w + b)",
        "maximum(x @ w + b, 0.0) * 2.0",
        "(x @ w) * b - 1.0",
        "where(x @ w > b, x @ w, b * 0.5)",
        "exp(-abs(x @ w)) + b",
    ];
    for case in 0..30u64 {
        let big = case % 3 == 0;
        let (m, k, n) = if big {
            (
                100 + rng.below(600),
                1 + rng.below(300),
                100 + rng.below(400),
            )
        } else {
            (1 + rng.below(40), 1 + rng.below(40), 1 + rng.below(40))
        };
        let dtype = if rng.below(3) == 0 {
            "float64"
        } else {
            "float32"
        };
        let bias = match rng.below(3) {
            0 => format!("({n},)"),
            1 => format!("({m}, 1)"),
            _ => "()".to_string(),
        };
        // One case in four is a batch of products.
        let lead = if rng.below(4) == 0 { "3, " } else { "" };
        let body = epilogues[rng.below(epilogues.len() as u64) as usize];
        let src = format!(
            "k = random.split(random.key({case}), 3)\n\
             x = random.normal(k[0], ({lead}{m}, {k}), dtype={dtype})\n\
             w = random.normal(k[1], ({lead}{k}, {n}), dtype={dtype}) * 0.1\n\
             b = random.normal(k[2], {bias}, dtype={dtype})\n\
             f = lambda x, w, b: {body}\n\
             g = jit(f)\n\
             was = set_auto_jit(False)\n\
             want = f(x, w, b)\n\
             set_auto_jit(was)\n\
             got = g(x, w, b)\n"
        );
        run(&mut s, &src);
        assert!(
            truthy(
                &mut s,
                "got.shape == want.shape and got.dtype == want.dtype and bool(all(got == want))"
            ),
            "case {case}: jit differs from eager for\n{src}"
        );
        assert!(
            truthy(&mut s, "'fused_matmul' in g.ir(x, w, b)"),
            "case {case}: no epilogue was fused for\n{src}{}",
            match run(&mut s, "g.ir(x, w, b)") {
                Value::Str(t) => t.to_string(),
                _ => String::new(),
            }
        );
    }
}

/// pmap compiles with jit's pipeline and runs on device workers (one
/// thread each, no BLAS there): its fused products match eager ones.
#[test]
fn matmul_epilogues_run_on_device_workers() {
    let mut s = session();
    run(
        &mut s,
        "k = random.split(random.key(9), 3)\n\
         xs = random.normal(k[0], (4, 300, 70))\n\
         w = random.normal(k[1], (70, 130)) * 0.1\n\
         b = random.normal(k[2], (130,))\n\
         f = lambda x, w, b: maximum(tanh(x @ w + b), 0.0)\n\
         got = pmap(f, in_axes=(0, None, None))(xs, w, b)\n\
         was = set_auto_jit(False)\n\
         want = stack([f(xs[i], w, b) for i in range(4)])\n\
         set_auto_jit(was)\n",
    );
    // Device workers never call the system BLAS (one shared thread pool
    // would serialise them); the interpreter does for products this large.
    // With the same gemm on both sides the fused epilogue must reproduce
    // the eager bits; with two gemm implementations only the summation
    // order differs, so the results agree to float32 rounding.
    let same_gemm = arr_kernels::backend::default()
        .matmul_library()
        .starts_with("matrixmultiply");
    let check = if same_gemm {
        "got.shape == want.shape and bool(all(got == want))"
    } else {
        "got.shape == want.shape and bool(allclose(got, want, rtol=1e-5, atol=1e-6))"
    };
    assert!(
        truthy(&mut s, check),
        "{check} (gemm: {})",
        arr_kernels::backend::default().matmul_library()
    );
}

#[test]
fn donated_arguments_are_deleted_and_their_buffers_hold_the_results() {
    let mut s = session();
    // Small and large (fused over blocks on all cores) arrays alike.
    for n in [4, 100_000] {
        run(
            &mut s,
            &format!(
                "f = jit(lambda p, g: p - 0.5 * g, donate_argnums=0)\n\
                 p = arange({n}, dtype=float32)\ng = ones({n})\nalias = p\n\
                 at = p.unsafe_buffer_pointer()\nq = f(p, g)\n"
            ),
        );
        assert!(truthy(&mut s, "p.is_deleted() and alias.is_deleted()"));
        assert!(truthy(&mut s, "not g.is_deleted() and not q.is_deleted()"));
        assert!(
            truthy(&mut s, "q.unsafe_buffer_pointer() == at"),
            "n={n}: the result was not written into the donated buffer"
        );
        assert!(truthy(
            &mut s,
            &format!("bool(all(q == arange({n}, dtype=float32) - 0.5))")
        ));
        // The next step donates the result of the last one: a training loop
        // keeps one buffer per parameter.
        run(&mut s, "r = f(q, g)\n");
        assert!(truthy(
            &mut s,
            "q.is_deleted() and r.unsafe_buffer_pointer() == at"
        ));
        let msg = error_of(&mut s, "p + 1");
        assert!(
            msg.starts_with(&format!(
                "RuntimeError: Array has been deleted with shape=f32[{n}]: it was donated to jit(<lambda>)"
            )),
            "{msg}"
        );
        let msg = error_of(&mut s, "f(p, g)");
        assert!(msg.contains("Array has been deleted"), "{msg}");
        // The type is still known, and printing says what happened.
        assert!(truthy(&mut s, &format!("alias.shape == ({n},)")));
        assert!(truthy(&mut s, "'deleted' in str(alias)"));
    }
}

#[test]
fn donated_pytrees_keywords_and_misuse() {
    let mut s = session();
    run(
        &mut s,
        "def sgd(params, grads, lr):\n    \
             return {k: params[k] - lr * grads[k] for k in params}\n\
         step = jit(sgd, donate_argnames='params')\n\
         params = {'w': ones((64, 32)), 'b': zeros(32)}\n\
         grads = {'w': ones((64, 32)), 'b': ones(32)}\n\
         at = {k: v.unsafe_buffer_pointer() for k, v in params.items()}\n\
         new = step(params=params, grads=grads, lr=0.1)\n",
    );
    assert!(truthy(
        &mut s,
        "all([params[k].is_deleted() and not grads[k].is_deleted() for k in params])"
    ));
    assert!(truthy(
        &mut s,
        "all([new[k].unsafe_buffer_pointer() == at[k] for k in new])"
    ));
    assert!(truthy(&mut s, "bool(all(new['b'] == -0.1))"));
    // The same array passed twice cannot be donated: nothing is deleted.
    run(
        &mut s,
        "h = jit(lambda x, y: x + y, donate_argnums=0)\na = ones(3)\n",
    );
    let msg = error_of(&mut s, "h(a, a)");
    assert!(
        msg.contains("array argument 0 is donated, and the same array is also array argument 1"),
        "{msg}"
    );
    assert!(truthy(&mut s, "not a.is_deleted()"));
    let msg = error_of(
        &mut s,
        "jit(lambda x, n: x, static_argnums=1, donate_argnums=1)",
    );
    assert!(
        msg.contains("both static_argnums and donate_argnums"),
        "{msg}"
    );
    // Under a transformation the jitted function is traced through, and
    // nothing is donated (as in JAX).
    run(
        &mut s,
        "sq = jit(lambda x: (x * x).sum(), donate_argnums=0)\nx = ones(3)\n\
         dx = grad(sq)(x)\nv = vmap(jit(lambda t: t * 2, donate_argnums=0))(x)\n",
    );
    assert!(truthy(&mut s, "not x.is_deleted()"));
    // Values the runtime shares are never deleted through one holder: a
    // cached scalar, a 0-d array that became a compiled literal, and a
    // literal a compiled function returns.
    run(
        &mut s,
        "two = float32(2.0)\nd2 = jit(lambda x: x * 2, donate_argnums=0)(two)\n\
         c = array(3.0)\ntimes_c = jit(lambda x: x * c)\nfirst = times_c(ones(2))\n\
         c.delete()\nwith_lit = jit(lambda x: (x, 5.0))\nlit = with_lit(ones(1))[1]\n\
         lit.delete()\n",
    );
    assert!(truthy(
        &mut s,
        "not two.is_deleted() and bool(all(ones(2) * 2.0 == 2.0))"
    ));
    assert!(truthy(
        &mut s,
        "c.is_deleted() and bool(all(times_c(ones(2)) == 3.0))"
    ));
    assert!(truthy(&mut s, "float(with_lit(ones(1))[1]) == 5.0"));
    // A copy is an array of its own: donating the original leaves it.
    run(
        &mut s,
        "orig = ones(5)\nkept = orig.copy()\nout = jit(lambda v: v + 1, donate_argnums=0)(orig)\n",
    );
    assert!(truthy(
        &mut s,
        "orig.is_deleted() and not kept.is_deleted() and bool(all(kept == 1.0))"
    ));
    // delete() frees an array by hand.
    run(&mut s, "z = ones(3)\nz.delete()\n");
    assert!(truthy(&mut s, "z.is_deleted()"));
    assert!(error_of(&mut s, "z.sum()").contains("freed with delete()"));
}

#[test]
fn a_donation_no_output_can_use_is_reported_once_per_compile() {
    let mut s = session();
    let warnings = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = warnings.clone();
    s.set_rich_output(Box::new(move |o| {
        if let arr_runtime::RichOutput::Stderr(t) = o {
            log.borrow_mut().push(t);
        }
    }));
    run(
        &mut s,
        "total = jit(lambda x: x.sum(), donate_argnums=0)\n\
         a = total(ones(5))\nb = total(ones(5))\nc = total(ones(6))\n\
         same = jit(lambda x: x * 2, donate_argnums=0)\nd = same(ones(5))\n",
    );
    let w = warnings.borrow();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("jit(<lambda>): some donated buffers were not usable: f32[5]"),
        "{w:?}"
    );
    assert!(w[1].contains("f32[6]"), "{w:?}");
}

#[test]
fn automatic_jit_leaves_loops_that_donate_interpreted() {
    // A compiled loop would keep the arrays the interpreter deletes.
    let src = "f = jit(lambda p, g: p - 0.1 * g, donate_argnums=0)\n\
               p = ones(4)\ng = ones(4)\nfirst = p\n\
               for i in range(20):\n    p = f(p, g)\n";
    for auto in [true, false] {
        let mut s = session();
        s.set_auto_jit(auto);
        run(&mut s, src);
        assert!(truthy(&mut s, "first.is_deleted()"), "auto-JIT {auto}");
        assert!(truthy(&mut s, "bool(allclose(p, -1.0))"), "auto-JIT {auto}");
    }
}

#[test]
fn a_donated_training_step_writes_every_parameter_in_place() {
    let mut s = session();
    run(
        &mut s,
        "k = random.split(random.key(3), 4)\n\
         params = {'w1': random.normal(k[0], (96, 64)) * 0.05, 'b1': zeros(64),\n\
                   'w2': random.normal(k[1], (64, 10)) * 0.05, 'b2': zeros(10)}\n\
         xb = random.normal(k[2], (32, 96))\nyb = random.randint(k[3], (32,), 0, 10)\n\
         def loss(p, x, y):\n    \
             h = tanh(x @ p['w1'] + p['b1'])\n    \
             logp = log_softmax(h @ p['w2'] + p['b2'], axis=-1)\n    \
             return -mean(take_along_axis(logp, y[:, None], axis=1))\n\
         def step(p, x, y):\n    \
             g = grad(loss)(p, x, y)\n    \
             return tree_map(lambda a, b: a - 0.1 * b, p, g)\n\
         want = jit(step)(jit(step)(params, xb, yb), xb, yb)\n\
         dstep = jit(step, donate_argnums=0)\n\
         p = tree_map(lambda a: a + 0.0, params)\n\
         at = {k: v.unsafe_buffer_pointer() for k, v in p.items()}\n\
         p = dstep(dstep(p, xb, yb), xb, yb)\n",
    );
    assert!(truthy(
        &mut s,
        "all([p[k].unsafe_buffer_pointer() == at[k] for k in p])"
    ));
    assert!(truthy(
        &mut s,
        "all([bool(all(p[k] == want[k])) for k in p])"
    ));
}
