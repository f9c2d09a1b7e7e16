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
    // Output row r (of `inner` elements) is row (o, idx[r % j]) of the
    // source. Runs of consecutive indices are one copy each: a window of
    // the last axis (a dynamic slice, the partitioner's realignment) copies
    // whole rows instead of one element at a time.
    let runs = index_runs(idx);
    let fill = |first_row: usize, part: &mut [T]| {
        let (mut r, mut pos) = (first_row, 0);
        while pos < part.len() {
            let (o, jj) = (r / j, r % j);
            let (start, first, n) = runs[runs.partition_point(|run| run.0 <= jj) - 1];
            let take = (start + n - jj).min((part.len() - pos) / inner);
            let s = (o * len + first + (jj - start)) * inner;
            part[pos..pos + take * inner].copy_from_slice(&src[s..s + take * inner]);
            pos += take * inner;
            r += take;
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

/// The runs of consecutive values of `idx`: (position in `idx`, first
/// value, length), in order.
fn index_runs(idx: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &v) in idx.iter().enumerate() {
        match runs.last_mut() {
            Some((_, first, n)) if *first + *n == v => *n += 1,
            _ => runs.push((i, v, 1)),
        }
    }
    runs
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Array, Buffer};

    #[test]
    fn gathers_copy_runs_of_consecutive_indices() {
        assert_eq!(
            index_runs(&[3, 4, 5, 0, 0, 1, 7]),
            vec![(0, 3, 3), (3, 0, 1), (4, 0, 2), (6, 7, 1)]
        );
        // Every axis of a [3, 4, 5] array, with runs, repeats and jumps.
        let a = Array::new(&[3, 4, 5], Buffer::I32((0..60).collect()));
        let take = [1i32, 2, 3, 3, 0, 1];
        for axis in 0..3 {
            let len = a.shape()[axis] as i32;
            let ids: Vec<i32> = take.iter().map(|&i| i % len).collect();
            let idx = Array::new(&[ids.len()], Buffer::I32(ids.clone()));
            let got = gather(&a, &idx, axis).to_f64_vec().unwrap();
            // Walk the output's positions; the gathered axis reads ids.
            let mut dims = [3, 4, 5];
            dims[axis] = ids.len();
            let mut want = Vec::new();
            for i in 0..dims[0] {
                for j in 0..dims[1] {
                    for k in 0..dims[2] {
                        let mut at = [i, j, k];
                        at[axis] = ids[at[axis]] as usize;
                        want.push((at[0] * 20 + at[1] * 5 + at[2]) as f64);
                    }
                }
            }
            assert_eq!(got, want, "axis {axis}");
            assert_eq!(got.len(), 60 / a.shape()[axis] * ids.len());
        }
        // Large enough to be cut into parallel chunks mid-run.
        let (rows, cols) = (3, 70_001);
        let a = Array::new(
            &[rows, cols],
            Buffer::I32((0..(rows * cols) as i32).collect()),
        );
        let ids: Vec<i32> = (0..cols as i32)
            .map(|i| (i * 7 / 8 + i % 3) % cols as i32)
            .collect();
        let idx = Array::new(&[cols], Buffer::I32(ids.clone()));
        let got = gather(&a, &idx, 1).to_f64_vec().unwrap();
        let want: Vec<f64> = (0..rows)
            .flat_map(|r| ids.iter().map(move |&c| (r * cols) as f64 + c as f64))
            .collect();
        assert_eq!(got, want);
    }
}
