//! Helpers shared by the jit tests: a deterministic generator and random
//! elementwise programs (sessions and entries come from `arr_testkit`).

pub use arr_testkit::{run, session};

/// A small deterministic generator (the tests must reproduce exactly).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random elementwise expression over the variables x, y, z.
pub fn expr(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(4) == 0 {
        return match rng.below(5) {
            0 => "x".into(),
            1 => "y".into(),
            2 => "z".into(),
            3 => format!("{}.5", rng.below(3)),
            _ => "x".into(),
        };
    }
    let a = expr(rng, depth - 1);
    let b = expr(rng, depth - 1);
    match rng.below(13) {
        0 => format!("({a} + {b})"),
        1 => format!("({a} - {b})"),
        2 => format!("({a} * {b})"),
        3 => format!("({a} / ({b} * {b} + 1.0))"),
        4 => format!("sin({a})"),
        5 => format!("cos({a})"),
        6 => format!("exp(-abs({a}))"),
        7 => format!("tanh({a})"),
        8 => format!("maximum({a}, {b})"),
        9 => format!("minimum({a}, {b})"),
        10 => format!("where({a} > {b}, {a}, {b} * 0.5)"),
        11 => format!("abs({a})"),
        _ => format!("sqrt(abs({a}) + 1.0)"),
    }
}

/// A random program: inputs `x`, `y`, `z` (shapes that broadcast into
/// `[a, b]`, float32 or float64; one case in five with `large` sizes, enough
/// for several blocks and threads) and an expression over them whose
/// results are pytrees of arrays, reductions included. Returns the code that
/// defines the inputs and the expression.
pub fn random_program(rng: &mut Rng, case: u64, large: (u64, u64)) -> (String, String) {
    let (a, b) = if case.is_multiple_of(5) {
        (large.0 + rng.below(50), large.1 + rng.below(50))
    } else {
        (1 + rng.below(9), 1 + rng.below(40))
    };
    let shapes = [
        format!("({a}, {b})"),
        format!("({b},)"),
        format!("({a}, 1)"),
        "()".to_string(),
    ];
    let dtype = if rng.below(3) == 0 {
        "float64"
    } else {
        "float32"
    };
    let pick = |rng: &mut Rng| shapes[rng.below(4) as usize].clone();
    let (sx, sy, sz) = (shapes[0].clone(), pick(rng), pick(rng));
    // `+ x` gives every program the full shape [a, b].
    let body = format!("{} + x", expr(rng, 4));
    let wrapped = match rng.below(11) {
        0 => format!("sum({body})"),
        1 => format!("sum({body}, axis=-1)"),
        2 => format!("max({body}, axis=-1)"),
        // Several outputs and reductions over different axes.
        3 => format!("(sum({body}, axis=0), sqrt(var(x)) * y, minimum({body}, 0.0))"),
        4 => format!("[{body}, {{'s': sum({body} * {body})}}]"),
        5 => format!("mean({body}, axis=-1)"),
        // Normalisations: reductions read back along their rows.
        6 => format!("softmax({body}, axis=-1)"),
        7 => format!(
            "(lambda t: (t - mean(t, axis=-1, keepdims=True)) \
             / sqrt(var(t, axis=-1, keepdims=True) + 1.0) * y)({body})"
        ),
        8 => format!("log_softmax({body}, axis=-1) + max({body}, axis=-1, keepdims=True)"),
        _ => body,
    };
    let setup = format!(
        "k = random.split(random.key({case}), 3)\n\
         x = random.normal(k[0], {sx}, dtype={dtype})\n\
         y = random.normal(k[1], {sy}, dtype={dtype})\n\
         z = random.normal(k[2], {sz}, dtype={dtype})\n"
    );
    (setup, wrapped)
}
