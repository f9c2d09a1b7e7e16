//! `gather` (take along an axis) and its transpose `scatter`.
//!
//! Both see `a` as `[outer, len, inner]` around the axis and move whole
//! `inner`-element rows, so the work per index is a memcpy or an add loop.

use super::elem::{alloc, alloc_overwrite, elems, par_chunk, split_at_axis, Elem};
use super::scalar::Arith;
use crate::complex::C64;
use crate::{Array, DType, ScatterMode, Shape};
// 16-bit floats compute in f32 through `Dispatch` (its methods are the trait's).
use crate::Backend as _;
use rayon::prelude::*;

/// Index values as i64, whatever their integer dtype.
fn index_values(indices: &Array) -> Vec<i64> {
    match indices.dtype() {
        DType::I32 => elems::<i32>(indices).iter().map(|&i| i as i64).collect(),
        DType::I64 => elems::<i64>(indices).to_vec(),
        DType::U32 => elems::<u32>(indices).iter().map(|&i| i as i64).collect(),
        other => panic!("indices must be integers, got {other}"),
    }
}

/// `a.shape[:axis] + indices.shape + a.shape[axis+1:]`.
fn taken_shape(a: &Array, indices: &Array, axis: usize) -> Shape {
    a.shape()[..axis]
        .iter()
        .chain(indices.shape())
        .chain(&a.shape()[axis + 1..])
        .copied()
        .collect()
}

fn gather_typed<T: Elem>(a: &Array, idx: &[usize], axis: usize, shape: &[usize]) -> Array {
    let (outer, len, inner) = split_at_axis(a.shape(), axis);
    let src = &*elems::<T>(a);
    let j = idx.len();
    if len == 0 {
        return Array::new(shape, T::into_buffer(alloc::<T>(outer * j * inner)));
    }
    let mut out = alloc_overwrite::<T>(outer * j * inner);
    if out.is_empty() {
        // Nothing to take from: an empty source axis leaves zeros.
        return Array::new(shape, T::into_buffer(out));
    }
    // Output row r (of `inner` elements) is row (o, idx[r % j]) of the source.
    let fill = |first_row: usize, part: &mut [T]| {
        for (i, row) in part.chunks_mut(inner).enumerate() {
            let r = first_row + i;
            let (o, jj) = (r / j, r % j);
            let s = (o * len + idx[jj]) * inner;
            row.copy_from_slice(&src[s..s + inner]);
        }
    };
    match par_chunk(out.len()) {
        None => fill(0, &mut out),
        Some(chunk) => {
            let rows = chunk.div_ceil(inner);
            out.par_chunks_mut(rows * inner)
                .enumerate()
                .for_each(|(ci, part)| fill(ci * rows, part));
        }
    }
    Array::new(shape, T::into_buffer(out))
}

/// Out-of-range indices clamp to the axis; an empty source axis gives zeros.
pub fn gather(a: &Array, indices: &Array, axis: usize) -> Array {
    assert!(
        axis < a.ndim(),
        "gather axis {axis} out of range for {:?}",
        a.shape()
    );
    let len = a.shape()[axis];
    let idx: Vec<usize> = index_values(indices)
        .iter()
        .map(|&i| i.clamp(0, len.max(1) as i64 - 1) as usize)
        .collect();
    let shape = taken_shape(a, indices, axis);
    crate::with_dtype!(a.dtype(), T => gather_typed::<T>(a, &idx, axis, &shape))
}

fn scatter_typed<T: Elem>(
    a: &Array,
    idx: &[i64],
    updates: &Array,
    axis: usize,
    add: impl Fn(T, T) -> T + Sync,
) -> Array {
    let (outer, len, inner) = split_at_axis(a.shape(), axis);
    let upd = &*elems::<T>(updates);
    let mut out = elems::<T>(a).to_vec();
    let j = idx.len();
    let block = len * inner;
    if block > 0 {
        // Each outer block is independent; within one, updates apply in order
        // so the last of repeated indices wins for `Set`.
        let do_block = |o: usize, dst: &mut [T]| {
            for (jj, &i) in idx.iter().enumerate() {
                if i < 0 || i as usize >= len {
                    continue;
                }
                let s = (o * j + jj) * inner;
                let d = &mut dst[i as usize * inner..(i as usize + 1) * inner];
                for (d, &u) in d.iter_mut().zip(&upd[s..s + inner]) {
                    *d = add(*d, u);
                }
            }
        };
        if outer > 1 && upd.len() >= super::elem::PAR_MIN_LEN && super::elem::threads() > 1 {
            out.par_chunks_mut(block)
                .enumerate()
                .for_each(|(o, dst)| do_block(o, dst));
        } else {
            for (o, dst) in out.chunks_mut(block).enumerate() {
                do_block(o, dst);
            }
        }
    }
    Array::new(a.shape(), T::into_buffer(out))
}

fn scatter_num<T: Elem + Arith>(
    a: &Array,
    idx: &[i64],
    updates: &Array,
    axis: usize,
    mode: ScatterMode,
) -> Array {
    match mode {
        ScatterMode::Set => scatter_typed(a, idx, updates, axis, |_: T, u: T| u),
        ScatterMode::Add => scatter_typed(a, idx, updates, axis, T::add),
    }
}

/// Out-of-range (and negative) indices are dropped; `Add` on bool is `or`.
pub fn scatter(
    a: &Array,
    indices: &Array,
    updates: &Array,
    axis: usize,
    mode: ScatterMode,
) -> Array {
    assert!(
        axis < a.ndim(),
        "scatter axis {axis} out of range for {:?}",
        a.shape()
    );
    assert_eq!(a.dtype(), updates.dtype(), "scatter updates dtype differs");
    let shape = taken_shape(a, indices, axis);
    assert_eq!(
        updates.shape(),
        &shape[..],
        "scatter updates shape for {:?} {:?}",
        a.shape(),
        indices.shape()
    );
    let idx = index_values(indices);
    match a.dtype() {
        DType::BF16 | DType::F16 | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
            crate::backend::Dispatch(&super::Cpu).scatter(a, indices, updates, axis, mode)
        }
        DType::Bool => match mode {
            ScatterMode::Set => scatter_typed(a, &idx, updates, axis, |_: bool, u: bool| u),
            ScatterMode::Add => scatter_typed(a, &idx, updates, axis, |x: bool, u: bool| x | u),
        },
        DType::I32 => scatter_num::<i32>(a, &idx, updates, axis, mode),
        DType::I64 => scatter_num::<i64>(a, &idx, updates, axis, mode),
        DType::U32 => scatter_num::<u32>(a, &idx, updates, axis, mode),
        DType::F32 => scatter_num::<f32>(a, &idx, updates, axis, mode),
        DType::F64 => scatter_num::<f64>(a, &idx, updates, axis, mode),
        DType::C64 => match mode {
            ScatterMode::Set => scatter_typed(a, &idx, updates, axis, |_: C64, u: C64| u),
            ScatterMode::Add => scatter_typed(a, &idx, updates, axis, |x: C64, u: C64| {
                C64::new(x.re + u.re, x.im + u.im)
            }),
        },
    }
}
