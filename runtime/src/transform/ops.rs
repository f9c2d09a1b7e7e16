//! Small tensor operations over `bind`, for writing rules: every rule is
//! ordinary array code, so it is itself traceable and differentiable
//! (which is what makes `grad(grad(f))` and `vmap(grad(f))` work).

use crate::error::Result;
use crate::numpy;
use crate::prim::{bind, bind1, Prim};
use crate::tensor::Tensor;
use arr_kernels::Backend as _;
use arr_kernels::{Array, BinaryOp, DType, ReduceOp, UnaryOp};

pub fn scalar(x: f64, dtype: DType) -> Tensor {
    Tensor::Concrete(numpy::scalar_array(x, dtype))
}

/// A 0-d constant of `like`'s dtype.
pub fn lit(x: f64, like: &Tensor) -> Tensor {
    scalar(x, like.dtype())
}

/// The complex64 scalar `re + im i`.
pub fn complex_scalar(re: f32, im: f32) -> Tensor {
    let z = arr_kernels::complex::C64::new(re, im);
    Tensor::Concrete(arr_kernels::Array::new(
        &[],
        arr_kernels::Buffer::C64(vec![z]),
    ))
}

pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    full(shape, 0.0, dtype)
}

pub fn full(shape: &[usize], x: f64, dtype: DType) -> Result<Tensor> {
    if shape.is_empty() {
        return Ok(scalar(x, dtype));
    }
    let big = shape.iter().product::<usize>();
    crate::prim::check_alloc(shape, dtype)?;
    // Concrete and materialised: consumers may write into it, and the eager
    // path is then free of a broadcast.
    let a = numpy::scalar_array(x, dtype);
    let b = arr_kernels::backend::of([&a]).broadcast_in_dim(&a, shape, &[]);
    debug_assert_eq!(b.len(), big);
    Ok(Tensor::Concrete(b))
}

pub fn ones_like(t: &Tensor) -> Result<Tensor> {
    full(t.shape(), 1.0, t.dtype())
}

pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
    zeros(t.shape(), t.dtype())
}

pub fn unary(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    bind1(&Prim::Unary(op), [a.clone()])
}

pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    bind1(&Prim::Binary(op), [a.clone(), b.clone()])
}

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Add, a, b)
}

pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Sub, a, b)
}

pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Mul, a, b)
}

pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Div, a, b)
}

pub fn neg(a: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Neg, a)
}

pub fn mul_scalar(a: &Tensor, x: f64) -> Result<Tensor> {
    mul(a, &lit(x, a))
}

pub fn select(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    bind1(&Prim::Select, [c.clone(), a.clone(), b.clone()])
}

pub fn convert(a: &Tensor, dtype: DType) -> Result<Tensor> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    bind1(&Prim::Convert(dtype), [a.clone()])
}

pub fn reshape(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    bind1(&Prim::Reshape(shape.to_vec()), [a.clone()])
}

pub fn transpose(a: &Tensor, perm: &[usize]) -> Result<Tensor> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(a.clone());
    }
    bind1(&Prim::Transpose(perm.to_vec()), [a.clone()])
}

pub fn reduce_sum(a: &Tensor, axes: &[usize]) -> Result<Tensor> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    bind1(
        &Prim::Reduce {
            op: ReduceOp::Sum,
            axes: axes.to_vec(),
        },
        [a.clone()],
    )
}

/// `a` broadcast (NumPy rules: trailing axes align) to `shape`.
pub fn broadcast_to(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    let offset = shape.len() - a.ndim();
    let dims = (offset..shape.len()).collect();
    bind1(
        &Prim::BroadcastInDim {
            shape: shape.to_vec(),
            dims,
        },
        [a.clone()],
    )
}

/// The transpose of NumPy broadcasting: sum `ct` down to `shape`.
pub fn unbroadcast(ct: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if ct.shape() == shape {
        return Ok(ct.clone());
    }
    let offset = ct.ndim() - shape.len();
    let axes: Vec<usize> = (0..ct.ndim())
        .filter(|&i| i < offset || (shape[i - offset] == 1 && ct.shape()[i] != 1))
        .collect();
    let summed = reduce_sum(ct, &axes)?;
    reshape(&summed, shape)
}

/// Move axis `from` to position `to`.
pub fn moveaxis(a: &Tensor, from: usize, to: usize) -> Result<Tensor> {
    if from == to {
        return Ok(a.clone());
    }
    let mut perm: Vec<usize> = (0..a.ndim()).filter(|&i| i != from).collect();
    perm.insert(to, from);
    transpose(a, &perm)
}

/// Insert an axis of length 1 at `axis`.
/// `x[..., i, ...]` along axis `d` (one example of a batch).
pub fn index_along(x: &Tensor, d: usize, i: usize) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let mut start = vec![0; shape.len()];
    let mut limit = shape.clone();
    start[d] = i;
    limit[d] = i + 1;
    let slice = Prim::Slice {
        start,
        limit,
        stride: vec![1; shape.len()],
    };
    let mut out_shape = shape;
    out_shape.remove(d);
    reshape(&crate::prim::bind1(&slice, [x.clone()])?, &out_shape)
}

pub fn expand_dims(a: &Tensor, axis: usize) -> Result<Tensor> {
    let mut shape = a.shape().to_vec();
    shape.insert(axis, 1);
    reshape(a, &shape)
}

pub fn iota(dtype: DType, shape: &[usize], dim: usize) -> Result<Tensor> {
    bind1(
        &Prim::Iota {
            dtype,
            shape: shape.to_vec(),
            dim,
        },
        Vec::<Tensor>::new(),
    )
}

/// Run a primitive with many outputs.
pub fn bind_n(prim: &Prim, args: Vec<Tensor>) -> Result<Vec<Tensor>> {
    Ok(bind(prim, args)?.into_vec())
}

pub fn concrete(a: Array) -> Tensor {
    Tensor::Concrete(a)
}
