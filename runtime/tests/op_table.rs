//! The op table is the one source of what an elementwise op accepts: for
//! every op and every dtype, the shape rule accepts the operands exactly
//! when the op's row does, the kernel then runs (no panic) and gives the
//! row's result dtype, and a rejection is a TypeError naming the op as
//! users write it.

use arr_kernels::{Array, BinaryOp, Buffer, DType, UnaryOp};
use arr_runtime::prim::{bind1, Prim};
use arr_runtime::{ErrorKind, Tensor};

const DTYPES: [DType; 6] = [
    DType::Bool,
    DType::I32,
    DType::I64,
    DType::U32,
    DType::F32,
    DType::F64,
];

/// A small array of `dtype` with values every op is defined at (no zero
/// divisors, in the domain of acosh and friends after conversion).
fn sample(dtype: DType) -> Tensor {
    let a = match dtype {
        DType::Bool => Array::new(&[3], Buffer::Bool(vec![true, false, true])),
        DType::I32 => Array::new(&[3], Buffer::I32(vec![1, 2, 3])),
        DType::I64 => Array::new(&[3], Buffer::I64(vec![1, 2, 3])),
        DType::U32 => Array::new(&[3], Buffer::U32(vec![1, 2, 3])),
        DType::F32 => Array::new(&[3], Buffer::F32(vec![0.5, 0.25, 0.75])),
        DType::F64 => Array::new(&[3], Buffer::F64(vec![0.5, 0.25, 0.75])),
    };
    Tensor::Concrete(a)
}

#[test]
fn unary_ops_run_on_exactly_the_dtypes_their_row_accepts() {
    for &op in UnaryOp::ALL {
        for dtype in DTYPES {
            let got = bind1(&Prim::Unary(op), vec![sample(dtype)]);
            match (op.accepts(dtype), got) {
                (true, Ok(t)) => {
                    let want = if op.is_predicate() {
                        DType::Bool
                    } else {
                        dtype
                    };
                    assert_eq!(t.dtype(), want, "{} on {dtype}", op.name());
                    assert_eq!(t.shape(), &[3], "{} on {dtype}", op.name());
                }
                (false, Err(e)) => {
                    assert_eq!(e.kind, ErrorKind::TypeError, "{} on {dtype}", op.name());
                    assert!(
                        e.message.starts_with(op.symbol()),
                        "{} on {dtype}: {}",
                        op.name(),
                        e.message
                    );
                }
                (true, Err(e)) => panic!("{} on {dtype} is in its row but fails: {e:?}", op.name()),
                (false, Ok(_)) => panic!("{} on {dtype} is not in its row but runs", op.name()),
            }
        }
    }
}

#[test]
fn binary_ops_run_on_exactly_the_dtypes_their_row_accepts() {
    for &op in BinaryOp::ALL {
        for dtype in DTYPES {
            let got = bind1(&Prim::Binary(op), vec![sample(dtype), sample(dtype)]);
            match (op.accepts(dtype), got) {
                (true, Ok(t)) => {
                    let want = if op.is_comparison() {
                        DType::Bool
                    } else {
                        dtype
                    };
                    assert_eq!(t.dtype(), want, "{} on {dtype}", op.name());
                }
                (false, Err(e)) => {
                    assert_eq!(e.kind, ErrorKind::TypeError, "{} on {dtype}", op.name());
                    assert!(
                        e.message.starts_with(op.symbol()),
                        "{} on {dtype}: {}",
                        op.name(),
                        e.message
                    );
                }
                (true, Err(e)) => panic!("{} on {dtype} is in its row but fails: {e:?}", op.name()),
                (false, Ok(_)) => panic!("{} on {dtype} is not in its row but runs", op.name()),
            }
        }
    }
}

#[test]
fn names_are_unique_and_snake_case() {
    let mut seen = std::collections::HashSet::new();
    let names = UnaryOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(BinaryOp::ALL.iter().map(|o| o.name()));
    for name in names {
        assert!(seen.insert(name), "two ops are named {name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name} is not an IR name"
        );
    }
}
