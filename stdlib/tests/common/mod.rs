//! Helpers shared by the jit tests: a deterministic generator and random
//! elementwise programs.

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
