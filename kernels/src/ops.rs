//! The closed set of scalar operations kernels are made of, as data.
//!
//! These enums are shared by the eager CPU kernels today and by the fused
//! kernel IR (CPU and CUDA renderers) later: an op is a name, never a closure.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    /// Logical not on bool, bitwise not on integers.
    Not,
    Abs,
    Sign,
    Floor,
    Ceil,
    /// Round half to even, as NumPy.
    Round,
    Exp,
    Expm1,
    Log,
    Log1p,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    /// 1 / (1 + exp(-x))
    Logistic,
    Erf,
    ErfInv,
    /// Result dtype bool.
    IsFinite,
    /// Result dtype bool.
    IsNan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// True division on floats; on integers, Python's floor division is `FloorDiv`
    /// and `Div` truncates toward zero (C semantics, as XLA).
    Div,
    /// Python `//`: floor(a / b) on floats, floor division on integers.
    FloorDiv,
    /// Python `%`: the result has the sign of the divisor.
    Mod,
    Pow,
    Max,
    Min,
    Atan2,
    /// Logical on bool, bitwise on integers.
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRight,
    /// Comparisons: result dtype bool.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

impl UnaryOp {
    pub fn is_predicate(self) -> bool {
        matches!(self, UnaryOp::IsFinite | UnaryOp::IsNan)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    /// Logical and over bool.
    All,
    /// Logical or over bool.
    Any,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgReduceOp {
    ArgMax,
    ArgMin,
}

/// Inclusive scans along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    Sum,
    Prod,
    Max,
    Min,
}

/// How `scatter` combines an update with the value already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterMode {
    Set,
    Add,
}

/// Dimension numbers of a generalised dot product (XLA's `DotGeneral`).
/// The result's axes are: batch axes, then lhs free axes, then rhs free axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DotDims {
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
    pub lhs_contract: Vec<usize>,
    pub rhs_contract: Vec<usize>,
}

/// An operation's name in text forms (IR, kernels): `ReduceSum` → `reduce_sum`.
pub fn snake_name(debug_name: &str) -> String {
    let mut out = String::new();
    for (i, c) in debug_name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
