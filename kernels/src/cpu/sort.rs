//! Stable sorting and argsort along an axis, NaNs ordered last.

use super::elem::{elems, split_at_axis, Elem, PAR_MIN_LEN};
use crate::{Array, Buffer};
use rayon::prelude::*;
use std::cmp::Ordering;

/// Total order for sorting: NumPy's, with every NaN after every number.
#[inline]
fn cmp_nan_last<T: Elem>(a: &T, b: &T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

/// Apply `f(values, out)` to every 1-D lane along `axis`: `values` is the
/// lane's elements and `out` the lane's slot in the result (both contiguous;
/// lanes with `inner > 1` are gathered into and scattered from buffers).
fn for_each_lane<T: Elem, O: Elem>(
    a: &Array,
    axis: usize,
    f: impl Fn(&[T], &mut [O]) + Sync,
) -> Vec<O> {
    let (outer, len, inner) = split_at_axis(a.shape(), axis);
    let src = &*elems::<T>(a);
    let mut out = vec![O::default(); src.len()];
    if src.is_empty() {
        return out;
    }
    let block = len * inner;
    // At an interrupt the remaining lanes are skipped (the caller discards
    // the unfinished result).
    let stop = crate::interrupt::Poll::here();
    let do_block = |o: usize, dst: &mut [O]| {
        if stop.requested() {
            return;
        }
        let blk = &src[o * block..(o + 1) * block];
        if inner == 1 {
            f(blk, dst);
            return;
        }
        let mut lane: Vec<T> = Vec::with_capacity(len);
        let mut res: Vec<O> = vec![O::default(); len];
        for i in 0..inner {
            if stop.requested() {
                return;
            }
            lane.clear();
            lane.extend((0..len).map(|r| blk[r * inner + i]));
            f(&lane, &mut res);
            for (r, &v) in res.iter().enumerate() {
                dst[r * inner + i] = v;
            }
        }
    };
    if outer > 1 && src.len() >= PAR_MIN_LEN {
        out.par_chunks_mut(block)
            .enumerate()
            .for_each(|(o, dst)| do_block(o, dst));
    } else {
        out.chunks_mut(block)
            .enumerate()
            .for_each(|(o, dst)| do_block(o, dst));
    }
    out
}

fn sort_typed<T: Elem>(a: &Array, axis: usize) -> Array {
    let out = for_each_lane::<T, T>(a, axis, |vals, dst| {
        dst.copy_from_slice(vals);
        // Stable, so equal keys (0.0 and -0.0) keep their order.
        dst.sort_by(cmp_nan_last);
    });
    Array::new(a.shape(), T::into_buffer(out))
}

fn argsort_typed<T: Elem>(a: &Array, axis: usize) -> Array {
    assert!(
        a.shape()[axis] <= i32::MAX as usize,
        "argsort axis too long for i32 indices"
    );
    let out = for_each_lane::<T, i32>(a, axis, |vals, dst| {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = i as i32;
        }
        dst.sort_by(|&i, &j| cmp_nan_last(&vals[i as usize], &vals[j as usize]));
    });
    Array::new(a.shape(), Buffer::I32(out))
}

pub fn sort(a: &Array, axis: usize) -> Array {
    assert!(
        axis < a.ndim(),
        "sort axis {axis} out of range for {:?}",
        a.shape()
    );
    crate::with_dtype!(a.dtype(), T => sort_typed::<T>(a, axis))
}

pub fn argsort(a: &Array, axis: usize) -> Array {
    assert!(
        axis < a.ndim(),
        "argsort axis {axis} out of range for {:?}",
        a.shape()
    );
    crate::with_dtype!(a.dtype(), T => argsort_typed::<T>(a, axis))
}
