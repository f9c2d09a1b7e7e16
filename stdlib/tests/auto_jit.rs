//! Automatic JIT: hot functions and loops are compiled by themselves, the
//! results are bit for bit those of the interpreter, impure code stays
//! interpreted with its reason, guards follow changes to globals and
//! closures, and Ctrl-C in a compiled loop keeps the work done.

mod common;

use arr_runtime::{Session, Tensor, Value};
use common::{random_program, run, session, Rng};
use std::sync::atomic::Ordering;

/// Every array of a value, flattened, as (dtype name, shape, bits).
fn bits(v: &Value) -> Vec<(String, Vec<usize>, Vec<u64>)> {
    let mut out = Vec::new();
    collect(v, &mut out);
    out
}

fn collect(v: &Value, out: &mut Vec<(String, Vec<usize>, Vec<u64>)>) {
    match v {
        Value::Array(Tensor::Concrete(a)) => out.push((
            a.dtype().name().to_string(),
            a.shape().to_vec(),
            (0..a.len())
                .map(|i| a.get_f64(i).unwrap().to_bits())
                .collect(),
        )),
        Value::Tuple(t) => t.iter().for_each(|x| collect(x, out)),
        Value::List(l) => l.borrow().iter().for_each(|x| collect(x, out)),
        Value::Dict(d) => d.borrow().values().for_each(|x| collect(x, out)),
        Value::Array(_) => panic!("a tracer escaped"),
        _ => {}
    }
}

fn report(s: &mut Session) -> String {
    s.auto_jit_report()
}

#[test]
fn random_programs_give_the_same_bits_compiled_and_interpreted() {
    let mut s = session();
    let mut rng = Rng(777);
    let mut compiled = 0;
    let cases = 40;
    for case in 0..cases {
        let (setup, wrap) = random_program(&mut rng, case, (200, 100));
        let src = format!("{setup}def f{case}(x, y, z):\n    return {wrap}\n");
        run(&mut s, &src);
        run(&mut s, "set_auto_jit(False)");
        let want = run(&mut s, &format!("f{case}(x, y, z)"));
        run(&mut s, "set_auto_jit(True)");
        let got: Vec<Value> = (0..7)
            .map(|_| run(&mut s, &format!("f{case}(x, y, z)")))
            .collect();
        for (i, g) in got.iter().enumerate() {
            assert_eq!(
                bits(g),
                bits(&want),
                "case {case}, call {}: compiled and interpreted results differ for\n{src}",
                i + 1
            );
        }
        if report(&mut s).contains(&format!("compiled     function f{case} ")) {
            compiled += 1;
        }
    }
    assert_eq!(
        compiled,
        cases,
        "every program compiles:\n{}",
        report(&mut s)
    );
}

#[test]
fn impure_functions_and_loops_stay_interpreted_and_say_why() {
    let mut s = session();
    let out = run(
        &mut s,
        "x = arange(3.0)\n\
         def shows(x):\n    print(x)\n    return x + 1\n\
         total = 0\n\
         def counts(x):\n    global total\n    total = total + 1\n    return x\n\
         log = []\n\
         def logs(x):\n    log.append(x)\n    return x * 2\n\
         def branches(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\
         def builds(x):\n    d = {}\n    d['a'] = x + 1\n    out = []\n    out.append(d['a'])\n    return out\n\
         for i in range(8):\n    a = shows(x)\n\
         for i in range(8):\n    b = counts(x)\n\
         for i in range(8):\n    c = logs(x)\n\
         for i in range(8):\n    d = branches(x)\n\
         for i in range(8):\n    e = builds(x)\n\
         (total, len(log))",
    );
    assert_eq!(arr_runtime::display::repr(&out), "(8, 8)");
    let r = report(&mut s);
    for line in [
        "function shows (<entry 1>:2:1) after 5 calls for (f32[3]): line 3: calls print, which has an effect",
        "function counts (<entry 1>:6:1) after 5 calls for (f32[3]): assigns the global 'total'",
        "function logs (<entry 1>:11:1) after 5 calls for (f32[3]): line 12: calls append on a list that existed before the call",
        "function branches (<entry 1>:14:1) after 5 calls for (f32[3]): line 15: this needs a concrete value",
    ] {
        assert!(r.contains(&format!("interpreted  {line}")), "missing {line:?} in\n{r}");
    }
    // Building new lists and dicts inside is fine.
    assert!(r.contains("compiled     function builds"), "{r}");
}

#[test]
fn regions_that_call_jit_functions_run_them_compiled() {
    // Traced through, `f`'s body would be compiled by the exact pipeline:
    // slower than jit's program, and its sum's bits could differ.
    let src = "x = random.normal(random.key(0), (100_003,))\n\
               f = jit(lambda x: sum(x * x) + max(x))\n\
               for i in range(8):\n    y = f(x)\n\
               def g(x):\n    return f(x) * 2\n\
               for i in range(8):\n    z = g(x)\n\
               (y, z)";
    let mut want = None;
    for auto in [false, true] {
        let mut s = session();
        s.set_auto_jit(auto);
        let out = run(&mut s, src);
        let got = bits(&out);
        match &want {
            None => want = Some(got),
            Some(w) => assert_eq!(&got, w, "auto-JIT changed the bits"),
        }
        if auto {
            let r = report(&mut s);
            assert!(
                r.contains("line 4: calls jit(<lambda>), which runs its own compiled program"),
                "{r}"
            );
            assert!(r.contains("interpreted  function g"), "{r}");
        }
    }
}

#[test]
fn value_dependent_errors_are_kept() {
    // The interpreter checks the bounds of index arrays; compiled code would
    // clamp them, so such a function stays interpreted and still raises.
    let mut s = session();
    run(
        &mut s,
        "def pick(x, i):\n    return x[i] * 2.0\n\
         x = arange(3.0)\n\
         for k in range(8):\n    r = pick(x, array(k % 2))\n",
    );
    let err = s.run_entry("pick(x, array(5))").unwrap_err().render();
    assert!(
        err.contains("IndexError: index 5 is out of bounds"),
        "{err}"
    );
    let r = report(&mut s);
    assert!(
        r.contains("interpreted  function pick (<entry 1>:1:1) after 5 calls for (f32[3], i32[]): line 2: indexes with an array of indices"),
        "{r}"
    );
}

#[test]
fn guards_follow_globals_and_closures() {
    let mut s = session();
    let out = run(
        &mut s,
        "w = ones(3)\n\
         def scaled(x):\n    return x * w\n\
         x = arange(3.0)\n\
         seen = []\n\
         for i in range(8):\n    seen.append(scaled(x))\n    w = w + 1.0\n\
         def make(k):\n    def times(x):\n        return x * k\n    return times\n\
         fs = [make(float(i)) for i in range(3)]\n\
         outs = []\n\
         for f in fs:\n    for j in range(7):\n        r = f(x)\n    outs.append(r)\n\
         (stack(seen)[:, 2].tolist(), stack(outs)[:, 2].tolist())",
    );
    assert_eq!(
        arr_runtime::display::repr(&out),
        "([2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0], [0.0, 2.0, 4.0])"
    );
    let r = report(&mut s);
    assert!(r.contains("compiled     function scaled"), "{r}");
    assert!(r.contains("compiled     function times"), "{r}");
}

/// Loops carrying an array and a pytree, and one that reads its variable.
const LOOPS: &str = "b = ones(4)\n\
     v = zeros(4)\n\
     p = {'w': ones(3), 'n': [zeros(2)]}\n\
     for _ in range(1000):\n    v = v * 0.99 + b\n\
     for _ in range(50):\n    p = {'w': p['w'] * 0.5, 'n': [p['n'][0] + 1.0]}\n\
     for i in range(20):\n    u = v * i\n";

#[test]
fn hot_loops_compile_and_carry_pytrees() {
    let mut s = session();
    run(&mut s, LOOPS);
    let compiled = (run(&mut s, "v"), run(&mut s, "p"), run(&mut s, "(u, i)"));
    let mut plain = session();
    run(&mut plain, "set_auto_jit(False)");
    run(&mut plain, LOOPS);
    let interpreted = (
        run(&mut plain, "v"),
        run(&mut plain, "p"),
        run(&mut plain, "(u, i)"),
    );
    assert_eq!(bits(&compiled.0), bits(&interpreted.0));
    assert_eq!(bits(&compiled.1), bits(&interpreted.1));
    assert_eq!(bits(&compiled.2), bits(&interpreted.2));
    assert_eq!(
        arr_runtime::display::repr(&run(&mut s, "i")),
        "19",
        "the loop variable ends at the last item"
    );
    let r = report(&mut s);
    assert!(
        r.contains("compiled     loop (<entry 1>:4:1) after 5 iterations for (f32[4])"),
        "{r}"
    );
    assert!(
        r.contains("compiled     loop (<entry 1>:6:1) after 5 iterations for (f32[3], f32[2])"),
        "{r}"
    );
    assert!(
        r.contains("interpreted  loop (<entry 1>:8:1) after 5 iterations for (): the body reads the loop variable"),
        "{r}"
    );
    assert!(plain.auto_jit_report().contains("nothing compiled"));
}

#[test]
fn ctrl_c_in_a_compiled_loop_keeps_the_iterations_done() {
    let mut s = session();
    let flag = s.interrupt_handle();
    let stop = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let r =
        s.run_entry("n = zeros(()).astype(int32)\nfor _ in range(2_000_000_000):\n    n = n + 1\n");
    stop.join().unwrap();
    let err = r.expect_err("interrupted");
    assert!(
        err.render().contains("KeyboardInterrupt"),
        "{}",
        err.render()
    );
    let n = match run(&mut s, "int(n)") {
        Value::Int(n) => n,
        other => panic!("{other:?}"),
    };
    assert!(n > 5 && n < 2_000_000_000, "n = {n}");
    assert!(report(&mut s).contains("compiled     loop"));
}

#[test]
fn turning_it_off_compiles_nothing() {
    let mut s = session();
    run(&mut s, "set_auto_jit(False)");
    run(
        &mut s,
        "def f(x):\n    return x + 1\nx = ones(3)\nfor i in range(10):\n    x = f(x)\n",
    );
    let r = report(&mut s);
    assert!(r.starts_with("automatic JIT is off"), "{r}");
    assert!(r.contains("nothing compiled"), "{r}");
    let err = s.run_entry("set_auto_jit(True, threshold=0)").unwrap_err();
    assert!(err.render().contains("threshold must be at least 1"));
}

/// Layouts are results too: a hot function over arrays laid out on a mesh
/// returns what the interpreter returns, laid out the same (a `zeros_like`
/// whose compiled form would no longer read its operand kept its layout
/// only while interpreted).
#[test]
fn laid_out_arrays_keep_their_layouts_in_hot_functions() {
    let mut s = session();
    run(
        &mut s,
        "set_devices(2)\nm = mesh((2,), ('d',))\n\
         x = device_put(ones((4, 2)), NamedSharding(m, P('d')))\n\
         f = lambda x: zeros_like(x)\ng = lambda x: x * 2.0\n\
         ys = [f(x) for i in range(10)]\nzs = [g(x) for i in range(10)]\n",
    );
    for v in ["ys", "zs"] {
        let same = run(
            &mut s,
            &format!("all([y.sharding == x.sharding for y in {v}])"),
        );
        assert!(matches!(same, Value::Bool(true)), "{v}: {}", report(&mut s));
    }
}

#[test]
fn typed_keys_keep_their_type_in_hot_functions() {
    let mut s = session();
    run(
        &mut s,
        "k = random.key(0)\nshape_of = lambda k: k.shape\n\
         split_of = lambda k: random.split(k)\n\
         shapes = [shape_of(k) for i in range(10)]\nsplits = [split_of(k) for i in range(10)]\n",
    );
    let same = run(
        &mut s,
        "all([s == () for s in shapes]) and all([str(t.dtype) == 'key<fry>' for t in splits])",
    );
    assert!(matches!(same, Value::Bool(true)), "{}", report(&mut s));
}

/// Automatic JIT fuses epilogues into products too (the exact pipeline),
/// and the results stay bit for bit the interpreter's: the product's values
/// are computed by the same gemm calls either way.
#[test]
fn matmul_epilogues_compile_to_the_same_bits() {
    let mut s = session();
    for (case, (m, k, n, dtype)) in [
        (300, 200, 100, "float32"),
        (517, 64, 700, "float32"),
        (200, 33, 129, "float64"),
        (1000, 300, 50, "float64"),
    ]
    .into_iter()
    .enumerate()
    {
        let src = format!(
            "k = random.split(random.key({case}), 3)\n\
             x = random.normal(k[0], ({m}, {k}), dtype={dtype})\n\
             w = random.normal(k[1], ({k}, {n}), dtype={dtype}) * 0.1\n\
             b = random.normal(k[2], ({n},), dtype={dtype})\n\
             def mlp{case}(x, w, b):\n    return tanh(x @ w + b)\n"
        );
        run(&mut s, &src);
        run(&mut s, "set_auto_jit(False)");
        let want = run(&mut s, &format!("mlp{case}(x, w, b)"));
        run(&mut s, "set_auto_jit(True)");
        for call in 0..7 {
            let got = run(&mut s, &format!("mlp{case}(x, w, b)"));
            assert_eq!(
                bits(&got),
                bits(&want),
                "case {case}, call {}: compiled and interpreted results differ",
                call + 1
            );
        }
        let r = report(&mut s);
        let line = r
            .lines()
            .find(|l| l.contains(&format!("compiled     function mlp{case} ")))
            .unwrap_or_else(|| panic!("mlp{case} was not compiled:\n{r}"));
        assert!(line.contains("3 equations -> 1 (1 fused kernels)"), "{r}");
    }
}

/// What automatic JIT compiles has no dead code: the unused
/// `cos(x) + exp(x)` is traced but not kept, and the results are the
/// interpreter's.
#[test]
fn dead_code_is_removed_from_compiled_functions() {
    let mut s = session();
    run(
        &mut s,
        "def f(x):\n    unused = cos(x) + exp(x)\n    return sin(x) * 2.0\nx = arange(8.0)\n",
    );
    run(&mut s, "set_auto_jit(False)");
    let want = run(&mut s, "f(x)");
    run(&mut s, "set_auto_jit(True)");
    for _ in 0..7 {
        assert_eq!(bits(&run(&mut s, "f(x)")), bits(&want));
    }
    let r = report(&mut s);
    let line = r
        .lines()
        .find(|l| l.contains("compiled     function f "))
        .unwrap_or_else(|| panic!("f was not compiled:\n{r}"));
    assert!(line.contains("5 equations -> 2 (0 fused kernels)"), "{r}");
}
