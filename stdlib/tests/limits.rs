//! Sizes computed from user input are checked before anything is
//! allocated: an array shape, a string or list repetition, a format width
//! or precision, a range made into a list. An impossible one is Python's
//! MemoryError (or ValueError, as Python says for format specs) naming
//! what was asked for, with the line it was asked on — never an aborted
//! process, and never a product that wraps around — and the session keeps
//! everything it had.

use arr_runtime::{Session, Value};
use arr_testkit::{attempt, run, session};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Each input and the error it must give (kind and message). Every size is
/// beyond the 1 TiB any one allocation may take, so the errors do not
/// depend on how much memory the machine has.
const REFUSED: &[(&str, &str)] = &[
    // Strings, lists and tuples repeated.
    (
        "'ab' * 10**18",
        "MemoryError: cannot allocate a str of 2000000000000000000 characters (2.0e18 bytes)",
    ),
    (
        "'ab' * 2**62",
        "MemoryError: cannot allocate a str of 9223372036854775808 characters (9.2e18 bytes)",
    ),
    (
        "[0] * 10**12",
        "MemoryError: cannot allocate a list of 1000000000000 items (1.6e13 bytes)",
    ),
    (
        "[0, 1] * 2**62",
        "MemoryError: cannot allocate a list of 9223372036854775808 items (1.5e20 bytes)",
    ),
    (
        "(1, 2) * 10**12",
        "MemoryError: cannot allocate a tuple of 2000000000000 items (3.2e13 bytes)",
    ),
    (
        "'x'.ljust(10**15)",
        "MemoryError: cannot allocate a str of 1000000000000000 characters (1.0e15 bytes)",
    ),
    (
        "'x'.rjust(10**15, '-')",
        "MemoryError: cannot allocate a str of 1000000000000000 characters (1.0e15 bytes)",
    ),
    (
        "'x'.center(10**15)",
        "MemoryError: cannot allocate a str of 1000000000000000 characters (1.0e15 bytes)",
    ),
    (
        "'7'.zfill(10**15)",
        "MemoryError: cannot allocate a str of 1000000000000000 characters (1.0e15 bytes)",
    ),
    (
        "('a' * 10**6).replace('a', 'b' * 10**7)",
        "MemoryError: cannot allocate a str of 10000001000000 characters (1.0e13 bytes)",
    ),
    (
        "('x' * 10**7).join([''] * 10**6)",
        "MemoryError: cannot allocate a str of 9999990000000 characters (1.0e13 bytes)",
    ),
    // Ranges made into lists.
    (
        "list(range(10**13))",
        "MemoryError: cannot allocate a list of 10000000000000 items (1.6e14 bytes)",
    ),
    (
        "sorted(range(10**13))",
        "MemoryError: cannot allocate a list of 10000000000000 items (1.6e14 bytes)",
    ),
    (
        "[i for i in zip(range(10**13), range(3))]",
        "MemoryError: cannot allocate a list of 10000000000000 items (1.6e14 bytes)",
    ),
    // Format specs: Python's ValueErrors, then the size of what is asked.
    (
        "f'{1:99999999999999999999}'",
        "ValueError: Too many decimal digits in format string",
    ),
    (
        "'{:.99999999999999999999f}'.format(1.0)",
        "ValueError: Too many decimal digits in format string",
    ),
    (
        "format(1.0, '.9999999999f')",
        "ValueError: precision too big",
    ),
    (
        "f'{1:,>999999999999999}'",
        "MemoryError: cannot allocate a str of 999999999999999 characters (1.0e15 bytes)",
    ),
    (
        "f'{2.5:.999999999999e}'",
        "ValueError: precision too big",
    ),
    // Arrays: the type asked for and its bytes.
    (
        "zeros((10**12, 10**12))",
        "MemoryError: cannot allocate f32[1000000000000,1000000000000] (4.0e24 bytes)",
    ),
    (
        "ones(10**15)",
        "MemoryError: cannot allocate f32[1000000000000000] (4.0e15 bytes)",
    ),
    (
        "full((10**12,), 7, dtype=int32)",
        "MemoryError: cannot allocate i32[1000000000000] (4.0e12 bytes)",
    ),
    (
        "arange(10**13)",
        "MemoryError: cannot allocate i32[10000000000000] (4.0e13 bytes)",
    ),
    (
        "arange(0.0, 1.0, 1e-14)",
        "MemoryError: cannot allocate f32[100000000000000] (4.0e14 bytes)",
    ),
    (
        "eye(10**7)",
        "MemoryError: cannot allocate f32[10000000,10000000] (4.0e14 bytes)",
    ),
    (
        "diag(ones(3), k=10**12)",
        "MemoryError: cannot allocate f32[1000000000003,1000000000003] (4.0e24 bytes)",
    ),
    (
        "linspace(0, 1, 10**13)",
        "MemoryError: cannot allocate f32[10000000000000] (4.0e13 bytes)",
    ),
    (
        "random.normal(random.key(0), (10**9, 10**9))",
        "MemoryError: cannot allocate f32[1000000000,1000000000] (4.0e18 bytes)",
    ),
    (
        "broadcast_to(ones(3), (10**9, 10**9, 3))",
        "MemoryError: cannot allocate f32[1000000000,1000000000,3] (1.2e19 bytes)",
    ),
    (
        "tile(ones(4), 10**12)",
        "MemoryError: cannot allocate f32[4000000000000] (1.6e13 bytes)",
    ),
    (
        "tile(ones(4), (10**10, 10**10))",
        "MemoryError: cannot allocate f32[10000000000,40000000000] (1.6e21 bytes)",
    ),
    (
        "repeat(ones(4), 10**12)",
        "MemoryError: cannot allocate f32[4000000000000] (1.6e13 bytes)",
    ),
    (
        "ones((3, 1)).repeat(10**13, axis=1)",
        "MemoryError: cannot allocate f32[3,10000000000000] (1.2e14 bytes)",
    ),
    (
        "ones(10**6)[:, None] * ones(10**6)",
        "MemoryError: cannot allocate f32[1000000,1000000] (4.0e12 bytes)",
    ),
    // Shape products never wrap around: 2**32 * 2**32 is not 0.
    (
        "zeros((2**32, 2**32))",
        "MemoryError: cannot allocate f32[4294967296,4294967296] (7.4e19 bytes)",
    ),
    (
        "zeros((0, 2**62, 2**62))",
        "ValueError: array is too big: f32[0,4611686018427387904,4611686018427387904] \
         cannot exist, even empty (its dimensions multiply past the address space)",
    ),
    (
        "ones(0).reshape(2**32, 2**32)",
        "ShapeError: cannot reshape f32[0] into shape [4294967296, 4294967296]",
    ),
    (
        "reshape(ones(4), (-1, 2**62, 2**62))",
        "ShapeError: cannot reshape f32[4] into shape [-1, 4611686018427387904, 4611686018427387904]",
    ),
    // Traced and transformed code is checked too.
    (
        "jit(lambda x: x.reshape(2**32, 2**32))(ones(0))",
        "ShapeError: cannot reshape f32[0] into shape [4294967296, 4294967296]",
    ),
    (
        "jit(lambda x: broadcast_to(x, (2**40, 2**40)))(ones(1))",
        "MemoryError: cannot allocate f32[1099511627776,1099511627776] (4.8e24 bytes)",
    ),
    (
        "jit(lambda x: broadcast_to(x, (10**9, 10**9)))(ones(1))",
        "MemoryError: cannot allocate f32[1000000000,1000000000] (4.0e18 bytes)",
    ),
    (
        "vmap(lambda x: broadcast_to(x, (10**9, 10**9)))(ones(3))",
        "MemoryError: cannot allocate f32[3,1000000000,1000000000] (1.2e19 bytes)",
    ),
    (
        "grad(lambda x: sum(broadcast_to(x, (10**9, 10**9))))(1.0)",
        "MemoryError: cannot allocate f32[1000000000,1000000000] (4.0e18 bytes)",
    ),
    (
        "scan(lambda c, x: (c, c), 0.0, length=10**12)",
        "MemoryError: cannot allocate f32[1000000000000] (4.0e12 bytes)",
    ),
    // A mesh larger than the devices is refused before its device list is made.
    (
        "mesh((10**6, 10**6), ('a', 'b'))",
        "ValueError: mesh: device 8 does not exist (there are 8; set_devices(n) gives more)",
    ),
];

/// Run `src` as the second line of t.arr (the first assigns `v`).
fn attempt_v(s: &mut Session, src: &str) -> arr_runtime::Result<Option<Value>> {
    attempt(s, "t.arr", &format!("v = 0\nv = {src}\n"))
}

#[test]
fn impossible_sizes_are_python_errors_with_their_line_and_the_session_survives() {
    let mut s = session();
    run(&mut s, "keep = [41]\nw = ones(3)");
    for (src, want) in REFUSED {
        let e = match attempt_v(&mut s, src) {
            Err(e) => e,
            Ok(_) => panic!("{src}: succeeded"),
        };
        assert_eq!(&format!("{}: {}", e.kind.name(), e.message), want, "{src}");
        assert!(
            e.render().contains("t.arr:2:"),
            "{src}: the error carries its line: {}",
            e.render()
        );
        // The line before ran; everything from before is still there.
        assert!(matches!(run(&mut s, "v"), Value::Int(0)), "{src}");
        assert!(
            run(&mut s, "keep == [41] and bool(all(w == 1.0))")
                .truthy()
                .unwrap(),
            "{src}"
        );
    }
    // And the session computes on as before.
    assert!(run(&mut s, "sum(w * 2.0) == 6.0 and 'ab' * 2 == 'abab'")
        .truthy()
        .unwrap());
}

/// What Python allows stays allowed: counts of zero or below, sizes that
/// fit, precisions past what a float has, ndigits past every digit.
#[test]
fn sizes_that_fit_still_work() {
    let mut s = session();
    let cases = [
        ("'x' * -5", "''"),
        ("[1, 2] * -1", "[]"),
        ("[] * 2**62", "[]"),
        ("() * 10**18", "()"),
        ("'' * 10**18", "''"),
        ("'ab'.center(7, '*')", "'***ab**'"),
        ("'-42'.zfill(6)", "'-00042'"),
        ("'ab'.ljust(1)", "'ab'"),
        ("len(f'{1.0:.70000f}')", "70002"),
        ("f'{1.0:.70000f}'[-3:]", "'000'"),
        (
            "f'{1.5:.2000e}'[:7] + f'{1.5:.2000e}'[-4:]",
            "'1.50000e+00'",
        ),
        ("f'{1.5:.1200g}'", "'1.5'"),
        (
            "f'{float(\"inf\"):e} {float(\"nan\"):.2f} {-float(\"inf\"):E}'",
            "'inf nan -INF'",
        ),
        ("round(1.5, 10**12)", "1.5"),
        ("round(123.456, -10**12)", "0.0"),
        ("tile(ones(0), 10**15).shape", "(0,)"),
        (
            "tile(arange(3), (2, 2)).tolist()",
            "[[0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2]]",
        ),
        (
            "tile(arange(4).reshape(2, 2), 2).tolist()",
            "[[0, 1, 0, 1], [2, 3, 2, 3]]",
        ),
        ("zeros((0, 2**40)).shape", "(0, 1099511627776)"),
        ("ones(0).reshape(0, 2**40).shape", "(0, 1099511627776)"),
    ];
    for (src, want) in cases {
        let got = match catch_unwind(AssertUnwindSafe(|| s.run_entry(src))) {
            Ok(Ok(Some(v))) => s.repr(&v),
            Ok(Ok(None)) => "None".into(),
            Ok(Err(e)) => panic!("{src}: {}", e.render()),
            Err(_) => panic!("{src}: panicked"),
        };
        assert_eq!(got, want, "{src}");
    }
}
