//! NumPy's Generator (`np.random.default_rng`): printed values and errors
//! (as NumPy 2.4 prints them), and a differential run against the real NumPy
//! over many seeds, sizes and methods when a Python with numpy is at hand.

use arr_testkit::check_output as check;
use expect_test::expect;

#[test]
fn default_rng_draws_numpys_numbers() {
    check(
        r#"
import numpy as np
rng = np.random.default_rng(0)
print(rng.normal(size=3), rng.random(), rng)
print(rng.integers(0, 10, size=5), rng.integers(5), rng.integers(0, 2**32, size=2), rng.integers(1, 3, size=3, dtype=np.int32).dtype)
print(rng.uniform(-1.0, 1.0, size=(2, 2)), rng.exponential(2.0, size=3))
print(rng.permutation(6), rng.permutation(np.arange(6).reshape(3, 2)).tolist(), rng.permutation(-2))
print(rng.choice([10, 20, 30], size=4), rng.choice(5, size=3, replace=False), rng.choice(4, size=5, p=[0.1, 0.0, 0.6, 0.3]))
items = ["a", "b", "c", "d"]
rng.shuffle(items)
print(items, np.random.default_rng(rng) is rng, np.random.default_rng([1, 2, 2**40]).standard_normal())
print(np.array_equal(np.random.default_rng(3).random(4), np.random.default_rng(3).random(4)))
np.random.seed(3)
legacy = [1, 2, 3, 4, 5]
np.random.shuffle(legacy)
print(legacy, np.random.rand())
"#,
        expect![[r#"
            [ 0.12573022 -0.13210486  0.64042265] 0.016527635528529094 Generator(PCG64)
            [1 8 6 9 5] 3 [4169308741 3133163871] int32
            [[ 0.63170711 -0.994523  ]
             [ 0.71480855 -0.93282885]] [2.1388006  1.69786606 6.29981731]
            [3 2 5 4 0 1] [[4, 5], [2, 3], [0, 1]] []
            [10 10 10 30] [1 4 2] [3 3 2 2 2]
            ['b', 'c', 'a', 'd'] True -0.7800918815553556
            True
            [4, 5, 2, 1, 3] 0.2909047389129443
        "#]],
    );
}

#[test]
fn bad_arguments_are_python_errors_with_the_line() {
    check(
        r#"
import numpy as np
rng = np.random.default_rng(7)
for f in [lambda: np.random.default_rng(-1), lambda: np.random.default_rng(1.5), lambda: rng.integers(5, 5),
          lambda: rng.integers(5, 4, endpoint=True), lambda: rng.integers(0, 2**31 + 1, dtype=np.int32), lambda: rng.normal(0.0, -1.0),
          lambda: rng.choice(3, size=4, replace=False), lambda: rng.choice(3, p=[0.5, 0.6, 0.1]), lambda: rng.choice(3, p=[0.5, 0.5]),
          lambda: rng.choice(3, p=[1.5, -0.5, 0.0]), lambda: rng.choice([], size=2), lambda: rng.integers(3, dtype=np.float32),
          lambda: rng.shuffle(np.arange(3)), lambda: np.random.shuffle(np.arange(3))]:
    try:
        print(f())
    except Exception as e:
        print(type(e).__name__, e)
rng.random(size=(2, -1))
"#,
        expect![[r#"
            ValueError expected non-negative integer, got -1
            TypeError SeedSequence expects int or sequence of ints for entropy not a float
            ValueError low >= high
            ValueError low > high
            ValueError high is out of bounds for int32
            ValueError scale < 0
            ValueError Cannot take a larger sample than population when replace is False
            ValueError Probabilities do not sum to 1
            ValueError a and p must have same size
            ValueError probabilities are not non-negative
            ValueError a cannot be empty unless no samples are taken
            TypeError integers: dtype float32 is not supported (int64 or int32)
            TypeError shuffle: x must be a list, shuffled in place (arrays are immutable: rng.permutation(x) is a shuffled copy)
            TypeError shuffle: x must be a list, shuffled in place (arrays are immutable: np.random.permutation(x) is a shuffled copy)
            ValueError: size: negative dimension -1 in shape at test.arr:13:1
               |
            13 | rng.random(size=(2, -1))
               | ^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

/// The legacy RandomState: a stream of its own beside the global one
/// (NumPy prints the same).
#[test]
fn random_state_is_a_stream_of_its_own() {
    check(
        r#"
import numpy as np
np.random.seed(1)
rs = np.random.RandomState(42)
print(rs.randn(2, 3), np.random.rand(2), rs.randint(0, 10, size=4), rs.uniform(size=2))
rs.seed(0)
items = [1, 2, 3, 4, 5, 6]
rs.shuffle(items)
print(rs.random_sample(), items, rs.choice(5, 3, replace=False), rs.permutation(5), np.random.random(), rs)
print(np.random.RandomState(7).normal(2.0, 0.5, size=3))
"#,
        expect![[r#"
            [[ 0.49671415 -0.1382643   0.64768854]
             [ 1.52302986 -0.23415337 -0.23413696]] [0.417022   0.72032449] [7 4 3 7] [0.70807258 0.02058449]
            0.6458941130666561 [6, 3, 2, 4, 1, 5] [1 0 2] [3 1 2 4 0] 0.00011437481734488664 RandomState(MT19937)
            [2.84526285 1.76703131 2.01641008]
        "#]],
    );
}

/// Every method over many seeds: plain ints, ints past 32 bits, lists of
/// ints; ziggurat tails, every bounded-integer path, Floyd's and the tail
/// shuffle of choice without replacement.
const DIFFERENTIAL: &str = r#"
import numpy as np
for seed in [0, 1, 42, 12345, 2**32 - 1, 2**32, 9223372036854775807, [1, 2, 3], [0, 0, 0, 0, 0, 0], [2**40, 7, 0]]:
    rng = np.random.default_rng(seed)
    print(rng.random(), rng.integers(7), rng.random(3).tolist(), rng.integers(-3, 3, size=4).tolist())
    print(rng.standard_normal(2500).tolist())
    print(rng.normal(1.5, 0.25, size=(2, 3)).tolist(), rng.uniform(-2.0, 5.0, size=3).tolist())
    print(rng.standard_exponential(1500).tolist(), rng.exponential(3.0, size=2).tolist())
    print(rng.integers(0, 2**32 - 1, size=3, endpoint=True).tolist(), rng.integers(0, 2**32, size=3).tolist())
    print(rng.integers(-2**62, 2**62, size=3).tolist(), rng.integers(-9223372036854775807 - 1, 9223372036854775807, size=2, endpoint=True).tolist())
    print(rng.integers(5, 1000, size=6, dtype=np.int32).tolist(), rng.integers(10, size=3, endpoint=True).tolist())
    print(rng.permutation(12).tolist(), rng.permutation(np.arange(12).reshape(4, 3)).tolist())
    print(rng.choice(9, size=5).tolist(), rng.choice([1.5, 2.5, 3.5], size=(2, 2)).tolist(), rng.choice(5))
    print(rng.choice(4, size=8, p=[0.1, 0.0, 0.6, 0.3]).tolist(), rng.choice(3, p=[0.5, 0.25, 0.25]))
    print(rng.choice(50, size=10, replace=False).tolist(), rng.choice(30, size=30, replace=False, shuffle=False).tolist())
    print(rng.choice(20000, size=600, replace=False).tolist()[-5:], rng.choice(20000, size=100, replace=False).tolist()[:5])
    items = list(range(10))
    rng.shuffle(items)
    print(items, rng.random())
"#;

/// The same program under the real NumPy prints the same text.
#[test]
fn default_rng_against_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the Generator differential test") else {
        return;
    };
    let out = std::process::Command::new(python)
        .args(["-c", DIFFERENTIAL])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = arr_testkit::script_output(DIFFERENTIAL);
    let theirs = String::from_utf8_lossy(&out.stdout);
    let first_difference = ours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
    assert!(
        ours == theirs,
        "arr and NumPy differ first at line {first_difference:?}"
    );
}
