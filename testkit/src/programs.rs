//! Random arr programs for the evaluator fuzzers, decoded from bytes (a
//! fuzzer's input, or a seeded generator's output): statements and
//! expressions from a grammar of arr's constructs — literals with edge
//! values, arrays, calls of builtins with random arguments, lambdas,
//! `grad`/`vmap`/`jit` of small functions, containers, indexing, small
//! loops — so that every input parses and reaches the evaluator.

/// Bytes read as choices; once they run out every choice is the first one,
/// which ends the program quickly (the first alternative is always a leaf).
pub struct Choices<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Choices<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes, at: 0 }
    }

    /// A number below `n`.
    fn below(&mut self, n: usize) -> usize {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b as usize % n.max(1)
    }

    fn pick<'s>(&mut self, items: &[&'s str]) -> &'s str {
        items[self.below(items.len())]
    }

    fn exhausted(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// A small deterministic generator of fuzz bytes (xorshift), for the
/// seeded runs that need no fuzzing engine.
pub struct Rng(pub u64);

impl Rng {
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 24) as u8
            })
            .collect()
    }
}

// Integer and float literals, edge values included.
const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "5",
    "-7",
    "100",
    "2147483647",
    "-2147483648",
    "2**31",
    "2**63 - 1",
    "10**6",
    "-(2**40)",
    "65536",
];
const FLOATS: &[&str] = &[
    "0.5", "-0.0", "1.5", "nan", "inf", "-inf", "1e30", "1e-45", "3.4e38", "-2.5", "1e300",
];
const DTYPES: &[&str] = &[
    "float32", "int32", "bool", "float64", "int64", "float16", "bfloat16", "uint32",
];
// Builtins called with random arguments. Nothing here writes files or
// blocks (no save, load, open, input, plot).
const CALLS: &[&str] = &[
    "array",
    "asarray",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "eye",
    "sum",
    "prod",
    "mean",
    "max",
    "min",
    "argmax",
    "argmin",
    "any",
    "all",
    "cumsum",
    "cumprod",
    "sort",
    "argsort",
    "reshape",
    "transpose",
    "swapaxes",
    "expand_dims",
    "squeeze",
    "concatenate",
    "stack",
    "where",
    "clip",
    "exp",
    "log",
    "sqrt",
    "sin",
    "tanh",
    "abs",
    "sign",
    "floor",
    "round",
    "dot",
    "matmul",
    "outer",
    "tile",
    "repeat",
    "roll",
    "flip",
    "diag",
    "tril",
    "take",
    "var",
    "std",
    "logsumexp",
    "softmax",
    "len",
    "range",
    "list",
    "tuple",
    "dict",
    "str",
    "repr",
    "int",
    "float",
    "bool",
    "sorted",
    "enumerate",
    "zip",
    "isinstance",
    "broadcast_to",
    "einsum",
    "maximum",
    "minimum",
    "power",
    "floor_divide",
    "remainder",
    "nonzero",
    "unique",
    "searchsorted",
    "moveaxis",
    "ravel",
    "split",
    "pad",
    "meshgrid",
    "tree_map",
    "tree_leaves",
    "stop_gradient",
];
const METHODS: &[&str] = &[
    "sum",
    "reshape",
    "astype",
    "T",
    "shape",
    "dtype",
    "ndim",
    "size",
    "tolist",
    "item",
    "max",
    "mean",
    "argmax",
    "transpose",
    "flatten",
    "copy",
    "at",
    "cumsum",
    "sort",
    "squeeze",
    "swapaxes",
    "clip",
    "any",
    "nbytes",
    "append",
    "keys",
    "items",
    "get",
    "index",
    "count",
    "split",
    "upper",
];
const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "@", "==", "<", ">=", "!=", "&", "|", "^", "<<", ">>",
    "and", "or",
];

/// A program of a few statements; every name it reads is bound first or
/// is a builtin, so most of it runs rather than stopping at a NameError.
pub fn program(bytes: &[u8]) -> String {
    let mut c = Choices::new(bytes);
    let mut out = String::from("x = arange(6.0).reshape(2, 3)\ny = 2\nz = [1, 2.5]\n");
    for _ in 0..6 {
        if c.exhausted() {
            break;
        }
        statement(&mut c, &mut out, 0);
    }
    out
}

fn statement(c: &mut Choices, out: &mut String, depth: usize) {
    let pad = "    ".repeat(depth);
    let var = c.pick(&["x", "y", "z"]);
    match c.below(9) {
        0 | 1 => out.push_str(&format!("{pad}{var} = {}\n", expr(c, 3))),
        2 => out.push_str(&format!("{pad}print({})\n", expr(c, 3))),
        3 if depth < 2 => {
            let n = c.pick(&["0", "1", "3", "5"]);
            out.push_str(&format!("{pad}for i in range({n}):\n"));
            statement(c, out, depth + 1);
        }
        4 if depth == 0 => {
            out.push_str(&format!("def f(a, b=2):\n    return {}\n", expr(c, 3)));
            let call = c.pick(&[
                "f",
                "jit(f)",
                "grad(f)",
                "vmap(f)",
                "value_and_grad(f)",
                "jacobian(f)",
            ]);
            out.push_str(&format!("{var} = {call}({})\n", expr(c, 2)));
        }
        5 if depth < 2 => {
            out.push_str(&format!(
                "{pad}n = 0\n{pad}while n < 3:\n{pad}    n = n + 1\n"
            ));
            statement(c, out, depth + 1);
        }
        6 => out.push_str(&format!(
            "{pad}{var} = {}(lambda a: {})({})\n",
            c.pick(&["jit", "vmap", "grad", "checkpoint", "jvp_of"]),
            expr(c, 2),
            expr(c, 2)
        )),
        7 => out.push_str(&format!(
            "{pad}{var} = fori_loop(0, {}, lambda i, a: {}, {})\n",
            c.pick(&["0", "2", "4"]),
            expr(c, 2),
            expr(c, 2)
        )),
        _ => out.push_str(&format!("{pad}{}\n", expr(c, 3))),
    }
}

fn expr(c: &mut Choices, depth: usize) -> String {
    if depth == 0 || c.exhausted() {
        return leaf(c);
    }
    let d = depth - 1;
    match c.below(14) {
        0 => leaf(c),
        1 | 2 => format!("({} {} {})", expr(c, d), c.pick(BINOPS), expr(c, d)),
        3 | 4 => {
            let n = c.below(4);
            let args: Vec<String> = (0..n).map(|_| argument(c, d)).collect();
            format!("{}({})", c.pick(CALLS), args.join(", "))
        }
        5 => {
            let m = c.pick(METHODS);
            match c.below(3) {
                0 => format!("{}.{m}", expr(c, d)),
                _ => format!("{}.{m}({})", expr(c, d), argument(c, d)),
            }
        }
        6 => format!("{}[{}]", expr(c, d), index(c, d)),
        7 => format!("[{}, {}]", expr(c, d), expr(c, d)),
        8 => format!("({}, {})", expr(c, d), expr(c, d)),
        9 => format!("{{'k': {}, 'v': {}}}", expr(c, d), expr(c, d)),
        10 => format!(
            "[{} for a in range({})]",
            expr(c, d),
            c.pick(&["0", "2", "3"])
        ),
        11 => format!("({} if {} else {})", expr(c, d), expr(c, d), expr(c, d)),
        12 => format!(
            "{}(lambda a: sum({}))({})",
            c.pick(&["grad", "vmap", "jit", "jacfwd", "hessian"]),
            expr(c, d).replace('x', "a"),
            expr(c, d)
        ),
        _ => format!(
            "{}({})",
            c.pick(&["-", "not ", "~", "abs", "len", "float"]),
            expr(c, d)
        ),
    }
}

fn argument(c: &mut Choices, depth: usize) -> String {
    match c.below(6) {
        0 => format!("axis={}", c.pick(&["0", "1", "-1", "None", "(0, 1)", "5"])),
        1 => format!("dtype={}", c.pick(DTYPES)),
        2 => format!("keepdims={}", c.pick(&["True", "False"])),
        _ => expr(c, depth),
    }
}

fn index(c: &mut Choices, depth: usize) -> String {
    match c.below(7) {
        0 => c.pick(&["0", "-1", "1", "5"]).to_string(),
        1 => format!(
            "{}:{}",
            c.pick(&["", "1", "-2"]),
            c.pick(&["", "2", "-1", "10"])
        ),
        2 => "::-1".into(),
        3 => "..., None".into(),
        4 => "0, 1:".into(),
        5 => format!("{} > 0", expr(c, depth)),
        _ => expr(c, depth),
    }
}

fn leaf(c: &mut Choices) -> String {
    match c.below(10) {
        0 => c.pick(&["x", "y", "z"]).to_string(),
        1 | 2 => c.pick(INTS).to_string(),
        3 => c.pick(FLOATS).to_string(),
        4 => format!(
            "array([{}, {}], dtype={})",
            c.pick(INTS),
            c.pick(FLOATS),
            c.pick(DTYPES)
        ),
        5 => format!("arange({})", c.pick(&["0", "1", "4", "12"])),
        6 => format!(
            "{}({}, dtype={})",
            c.pick(&["zeros", "ones", "empty"]),
            c.pick(&["()", "(0,)", "(2, 0)", "(1, 3)", "(2, 3)", "3", "(2, 1, 2)"]),
            c.pick(DTYPES)
        ),
        7 => c
            .pick(&["None", "True", "'ab'", "[]", "()", "{}", "[[1, 2], [3, 4]]"])
            .to_string(),
        8 => format!("random.normal(random.key({}), (2, 3))", c.pick(INTS)),
        _ => c.pick(&["a", "i", "n", "b"]).to_string(),
    }
}
