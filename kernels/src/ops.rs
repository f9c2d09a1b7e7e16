//! The closed set of operations kernels are made of, as data: the
//! elementwise ops (rows of `optable.rs`), reductions, scans, scatter modes
//! and dot dimension numbers. An op is a name, never a closure, so the eager
//! kernels, the fused kernel IR and code generators share it.

pub use crate::optable::{BinaryFn, BinaryKernels, Builtin, UnaryFn, UnaryKernels};
pub use crate::optable::{BinaryOp, UnaryOp};

/// An op enum with `ALL`, every variant in declaration order, from the
/// one list of variants: tables that must cover every op iterate `ALL`,
/// and a new op cannot be left out of it.
macro_rules! listed_ops {
    ($(#[$meta:meta])* pub enum $Op:ident { $($(#[$vmeta:meta])* $V:ident,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $Op {
            $($(#[$vmeta])* $V,)*
        }

        impl $Op {
            /// Every op, in declaration order.
            pub const ALL: &'static [$Op] = &[$($Op::$V),*];
        }
    };
}

listed_ops! {
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
}

listed_ops! {
    pub enum ArgReduceOp {
        ArgMax,
        ArgMin,
    }
}

listed_ops! {
    /// Inclusive scans along one axis.
    pub enum ScanOp {
        Sum,
        Prod,
        Max,
        Min,
    }
}

listed_ops! {
    /// How `scatter` combines an update with the value already there.
    pub enum ScatterMode {
        Set,
        Add,
    }
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
