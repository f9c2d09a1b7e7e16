//! The op table is the one source of what an elementwise op accepts: for
//! every op and every dtype, the shape rule accepts the operands exactly
//! when the op's row does, the kernel then runs (no panic) and gives the
//! row's result dtype, and a rejection is a TypeError naming the op as
//! users write it.

use arr_kernels::{Array, BinaryOp, Buffer, DType, UnaryOp};
use arr_runtime::prim::{bind1, Prim};
use arr_runtime::{ErrorKind, Tensor};

/// A small array of `dtype` with values every op is defined at (no zero
/// divisors, in the domain of acosh and friends after conversion).
fn sample(dtype: DType) -> Tensor {
    let a = match dtype {
        DType::Bool => Array::new(&[3], Buffer::Bool(vec![true, false, true])),
        DType::I8 => Array::new(&[3], Buffer::I8(vec![1, 2, 3])),
        DType::I16 => Array::new(&[3], Buffer::I16(vec![1, 2, 3])),
        DType::U8 => Array::new(&[3], Buffer::U8(vec![1, 2, 3])),
        DType::U16 => Array::new(&[3], Buffer::U16(vec![1, 2, 3])),
        DType::C64 => Array::new(
            &[3],
            Buffer::C64(vec![
                arr_kernels::complex::C64::new(0.5, 0.25),
                arr_kernels::complex::C64::new(0.25, -0.5),
                arr_kernels::complex::C64::new(0.75, 0.0),
            ]),
        ),
        DType::I32 => Array::new(&[3], Buffer::I32(vec![1, 2, 3])),
        DType::I64 => Array::new(&[3], Buffer::I64(vec![1, 2, 3])),
        DType::U32 => Array::new(&[3], Buffer::U32(vec![1, 2, 3])),
        DType::F32 => Array::new(&[3], Buffer::F32(vec![0.5, 0.25, 0.75])),
        DType::F64 => Array::new(&[3], Buffer::F64(vec![0.5, 0.25, 0.75])),
        DType::BF16 => Array::new(
            &[3],
            Buffer::BF16([0.5, 0.25, 0.75].map(arr_kernels::bf16::from_f32).to_vec()),
        ),
        DType::F16 => Array::new(
            &[3],
            Buffer::F16([0.5, 0.25, 0.75].map(arr_kernels::f16::from_f32).to_vec()),
        ),
    };
    Tensor::Concrete(a)
}

/// One op on one dtype: the row accepts it and the kernel gives the row's
/// result dtype, or the row refuses it and the shape rule says so.
fn check(
    name: &str,
    symbol: &str,
    accepts: bool,
    gives: DType,
    dtype: DType,
    prim: Prim,
    n: usize,
) {
    let operands: Vec<Tensor> = (0..n).map(|_| sample(dtype)).collect();
    match (accepts, bind1(&prim, operands)) {
        (true, Ok(t)) => {
            assert_eq!(t.dtype(), gives, "{name} on {dtype}");
            assert_eq!(t.shape(), &[3], "{name} on {dtype}");
        }
        (false, Err(e)) => {
            assert_eq!(e.kind, ErrorKind::TypeError, "{name} on {dtype}");
            assert!(
                e.message.starts_with(symbol),
                "{name} on {dtype}: {}",
                e.message
            );
        }
        (true, Err(e)) => panic!("{name} on {dtype} is in its row but fails: {e:?}"),
        (false, Ok(_)) => panic!("{name} on {dtype} is not in its row but runs"),
    }
}

#[test]
fn unary_ops_run_on_exactly_the_dtypes_their_row_accepts() {
    for &op in UnaryOp::ALL {
        for dtype in DType::ALL {
            let gives = op.result_dtype(dtype);
            let prim = Prim::Unary(op);
            check(
                op.name(),
                op.symbol(),
                op.accepts(dtype),
                gives,
                dtype,
                prim,
                1,
            );
        }
    }
}

#[test]
fn binary_ops_run_on_exactly_the_dtypes_their_row_accepts() {
    for &op in BinaryOp::ALL {
        for dtype in DType::ALL {
            let gives = op.result_dtype(dtype);
            let prim = Prim::Binary(op);
            check(
                op.name(),
                op.symbol(),
                op.accepts(dtype),
                gives,
                dtype,
                prim,
                2,
            );
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
