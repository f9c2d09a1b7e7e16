//! Reductions (sum, max, all, ...), arg-reductions and inclusive scans.
//!
//! Every reduction is brought to the layout `[outer, red, inner]`: with
//! `inner == 1` each output folds one contiguous row (with many independent
//! accumulators so it vectorises); otherwise whole rows of `inner` elements are
//! combined into an accumulator row, so leading-axis reductions stream memory
//! instead of gathering strided elements.

use super::elem::{alloc, elems, par_chunk, split_at_axis, Elem, PAR_MIN_CHUNK, PAR_MIN_LEN};
use super::scalar::Arith;
use crate::{ArgReduceOp, Array, DType, ReduceOp, ScanOp, Shape};
// 16-bit floats compute in f32 through `Dispatch` (its methods are the trait's).
use crate::Backend as _;
use rayon::prelude::*;
use smallvec::SmallVec;

/// Independent accumulators per contiguous fold: enough for two AVX registers
/// of f32 and to hide add latency.
const LANES: usize = 16;

/// Fold `x` with `f` from `init` using `LANES` interleaved accumulators.
#[inline(always)]
fn fold_lanes<T: Copy, F: Fn(T, T) -> T>(x: &[T], init: T, f: &F) -> T {
    let mut acc = [init; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = f(acc[i], c[i]);
        }
    }
    // Pairwise combination of the lanes.
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] = f(acc[i], acc[i + width]);
        }
    }
    rest.iter().fold(acc[0], |r, &v| f(r, v))
}

/// Accurate f32 sum: blocks are summed in f32 lanes (each lane adds at most
/// BLOCK / LANES values) and block sums accumulate in f64. The error is far
/// below NumPy's pairwise summation, at the same speed.
fn sum_f32(x: &[f32]) -> f32 {
    const BLOCK: usize = 1024;
    let add = |a: f32, b: f32| a + b;
    let mut total = 0.0f64;
    for block in x.chunks(BLOCK) {
        total += fold_lanes(block, 0.0, &add) as f64;
    }
    total as f32
}

/// A reduction as data: identity, combining function and contiguous fold.
struct Reducer<T, F, G> {
    init: T,
    f: F,
    fold: G,
}

impl<T: Elem, F: Fn(T, T) -> T + Sync, G: Fn(&[T]) -> T + Sync> Reducer<T, F, G> {
    /// Fold one contiguous run, in parallel if long.
    fn fold_par(&self, x: &[T]) -> T {
        match par_chunk(x.len()) {
            None => (self.fold)(x),
            Some(chunk) => {
                // At an interrupt the remaining chunks are skipped (the
                // caller discards the unfinished result).
                let stop = crate::interrupt::Poll::here();
                let partials: Vec<T> = x
                    .par_chunks(chunk)
                    .map(|c| {
                        if stop.requested() {
                            self.init
                        } else {
                            (self.fold)(c)
                        }
                    })
                    .collect();
                partials.iter().fold(self.init, |r, &v| (self.f)(r, v))
            }
        }
    }

    /// `acc[j] = f(acc[j], data[o, r, j0 + j])` for every `r`.
    #[inline]
    fn accumulate_rows(&self, acc: &mut [T], block: &[T], red: usize, inner: usize, j0: usize) {
        let f = &self.f;
        for r in 0..red {
            let row = &block[r * inner + j0..r * inner + j0 + acc.len()];
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = f(*a, x);
            }
        }
    }

    fn run(&self, data: &[T], outer: usize, red: usize, inner: usize) -> Vec<T> {
        let mut out = alloc::<T>(outer * inner);
        if out.is_empty() {
            return out;
        }
        let total = outer * red * inner;
        let threads = super::elem::threads();
        if inner == 1 {
            let row_fold = |o: usize| (self.fold)(&data[o * red..(o + 1) * red]);
            if total < PAR_MIN_LEN || threads == 1 {
                for (o, v) in out.iter_mut().enumerate() {
                    *v = row_fold(o);
                }
            } else if outer >= 2 * threads {
                let rows_per = (PAR_MIN_CHUNK / red.max(1))
                    .max(1)
                    .max(outer / (threads * 4));
                out.par_chunks_mut(rows_per)
                    .enumerate()
                    .for_each(|(ci, part)| {
                        for (i, v) in part.iter_mut().enumerate() {
                            *v = row_fold(ci * rows_per + i);
                        }
                    });
            } else {
                for (o, v) in out.iter_mut().enumerate() {
                    *v = self.fold_par(&data[o * red..(o + 1) * red]);
                }
            }
            return out;
        }
        out.fill(self.init);
        let block = red * inner;
        if total < PAR_MIN_LEN || threads == 1 {
            for (o, acc) in out.chunks_mut(inner).enumerate() {
                self.accumulate_rows(acc, &data[o * block..(o + 1) * block], red, inner, 0);
            }
        } else if outer >= 2 * threads {
            out.par_chunks_mut(inner).enumerate().for_each(|(o, acc)| {
                self.accumulate_rows(acc, &data[o * block..(o + 1) * block], red, inner, 0);
            });
        } else {
            // Few outer blocks: split the columns instead.
            let cols = inner.div_ceil(threads * 4).max(256).min(inner);
            for (o, acc) in out.chunks_mut(inner).enumerate() {
                let blk = &data[o * block..(o + 1) * block];
                acc.par_chunks_mut(cols).enumerate().for_each(|(ci, part)| {
                    self.accumulate_rows(part, blk, red, inner, ci * cols);
                });
            }
        }
        out
    }
}

/// Group the axes of `shape` as `[outer, red, inner]` if the reduced axes
/// (ignoring size-1 axes) form one contiguous run; `None` otherwise.
fn as_three_groups(shape: &[usize], axes: &[usize]) -> Option<(usize, usize, usize)> {
    let mut groups: SmallVec<[(bool, usize); 6]> = SmallVec::new();
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let reduced = axes.contains(&d);
        match groups.last_mut() {
            Some((r, s)) if *r == reduced => *s *= size,
            _ => groups.push((reduced, size)),
        }
    }
    if groups.iter().filter(|g| g.0).count() > 1 {
        return None;
    }
    let red_pos = groups.iter().position(|g| g.0);
    let outer: usize = groups
        .iter()
        .take(red_pos.unwrap_or(groups.len()))
        .map(|g| g.1)
        .product();
    let inner: usize = match red_pos {
        Some(p) => groups[p + 1..].iter().map(|g| g.1).product(),
        None => 1,
    };
    let red = red_pos.map_or(1, |p| groups[p].1);
    Some((outer, red, inner))
}

fn reduce_with<T: Elem, F, G>(a: &Array, axes: &[usize], r: Reducer<T, F, G>) -> Array
where
    F: Fn(T, T) -> T + Sync,
    G: Fn(&[T]) -> T + Sync,
{
    let out_shape: Shape = (0..a.ndim())
        .filter(|d| !axes.contains(d))
        .map(|d| a.shape()[d])
        .collect();
    let red_len: usize = axes.iter().map(|&d| a.shape()[d]).product();
    let out_len: usize = out_shape.iter().product();
    if a.is_empty() {
        return Array::new(&out_shape, T::into_buffer(vec![r.init; out_len]));
    }
    let out = match as_three_groups(a.shape(), axes) {
        Some((outer, red, inner)) => r.run(&elems::<T>(a), outer, red, inner),
        None => {
            // Move the reduced axes last, then fold contiguous rows.
            let perm: Vec<usize> = (0..a.ndim())
                .filter(|d| !axes.contains(d))
                .chain(axes.iter().copied())
                .collect();
            let t = super::shape::transpose(a, &perm);
            r.run(&elems::<T>(&t), out_len, red_len, 1)
        }
    };
    Array::new(&out_shape, T::into_buffer(out))
}

macro_rules! reducer {
    ($init:expr, $f:expr) => {{
        let f = $f;
        Reducer {
            init: $init,
            f,
            fold: move |x: &[_]| fold_lanes(x, $init, &f),
        }
    }};
}

/// Float max/min fold: plain compares vectorise (like maxps), and NaNs are
/// tracked on the side so that any NaN makes the result NaN.
#[inline(always)]
fn fold_minmax_float<T: Elem + Arith>(x: &[T], max: bool) -> T {
    let init = if max { T::LOWEST } else { T::HIGHEST };
    let mut acc = [init; LANES];
    let mut nan = [false; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            let v = c[i];
            let better = if max { v > acc[i] } else { v < acc[i] };
            acc[i] = if better { v } else { acc[i] };
            // `v != v` is the NaN test in a form LLVM vectorises.
            #[allow(clippy::eq_op)]
            let is_nan = v != v;
            nan[i] |= is_nan;
        }
    }
    let f = if max { T::max } else { T::min };
    let mut r = rest.iter().fold(init, |r, &v| f(r, v));
    for i in 0..LANES {
        if nan[i] {
            return T::nan();
        }
        r = f(r, acc[i]);
    }
    r
}

fn reduce_num<T: Elem + Arith>(op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
    match op {
        ReduceOp::Sum => reduce_with(a, axes, reducer!(T::ZERO, T::add)),
        ReduceOp::Prod => reduce_with(a, axes, reducer!(T::ONE, T::mul)),
        ReduceOp::Max if T::DTYPE.is_float() => reduce_with(
            a,
            axes,
            Reducer {
                init: T::LOWEST,
                f: T::max,
                fold: |x: &[T]| fold_minmax_float(x, true),
            },
        ),
        ReduceOp::Min if T::DTYPE.is_float() => reduce_with(
            a,
            axes,
            Reducer {
                init: T::HIGHEST,
                f: T::min,
                fold: |x: &[T]| fold_minmax_float(x, false),
            },
        ),
        ReduceOp::Max => reduce_with(a, axes, reducer!(T::LOWEST, T::max)),
        ReduceOp::Min => reduce_with(a, axes, reducer!(T::HIGHEST, T::min)),
        ReduceOp::All | ReduceOp::Any => {
            reduce_bool(op, &super::elementwise::convert(a, DType::Bool), axes)
        }
    }
}

fn reduce_bool(op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
    match op {
        ReduceOp::All | ReduceOp::Min | ReduceOp::Prod => {
            reduce_with(a, axes, reducer!(true, |x: bool, y: bool| x & y))
        }
        ReduceOp::Any | ReduceOp::Max | ReduceOp::Sum => {
            reduce_with(a, axes, reducer!(false, |x: bool, y: bool| x | y))
        }
    }
}

pub fn reduce(op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
    for w in axes.windows(2) {
        assert!(
            w[0] < w[1],
            "reduce axes {axes:?} must be sorted and unique"
        );
    }
    if let Some(&last) = axes.last() {
        assert!(
            last < a.ndim(),
            "reduce axis {last} out of range for {:?}",
            a.shape()
        );
    }
    match a.dtype() {
        DType::BF16 | DType::F16 | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
            crate::backend::Dispatch(&super::Cpu).reduce(op, a, axes)
        }
        DType::C64 => crate::complex::reduce(op, a, axes),
        DType::Bool => reduce_bool(op, a, axes),
        DType::I32 => reduce_num::<i32>(op, a, axes),
        DType::I64 => reduce_num::<i64>(op, a, axes),
        DType::U32 => reduce_num::<u32>(op, a, axes),
        DType::F64 => reduce_num::<f64>(op, a, axes),
        DType::F32 => match op {
            ReduceOp::Sum => reduce_with(
                a,
                axes,
                Reducer {
                    init: 0.0f32,
                    f: |x: f32, y: f32| x + y,
                    fold: sum_f32,
                },
            ),
            _ => reduce_num::<f32>(op, a, axes),
        },
    }
}

/// Whether `x` should replace the current best `best` (strictly better, or
/// the first NaN, which NumPy treats as both the max and the min).
#[inline(always)]
fn arg_better<T: Elem>(max: bool, x: T, best: T) -> bool {
    if best.is_nan() {
        return false;
    }
    x.is_nan() || if max { x > best } else { x < best }
}

fn arg_reduce_typed<T: Elem>(max: bool, a: &Array, axis: usize) -> Array {
    let (outer, len, inner) = split_at_axis(a.shape(), axis);
    let data = &*elems::<T>(a);
    let mut out = alloc::<i32>(outer * inner);
    if len > 0 && !out.is_empty() {
        let block = len * inner;
        let do_block = |o: usize, idx: &mut [i32]| {
            let blk = &data[o * block..(o + 1) * block];
            if inner == 1 {
                let mut best = blk[0];
                let mut at = 0;
                for (i, &x) in blk.iter().enumerate().skip(1) {
                    if arg_better(max, x, best) {
                        best = x;
                        at = i;
                    }
                }
                idx[0] = at as i32;
            } else {
                let mut best: Vec<T> = blk[..inner].to_vec();
                for r in 1..len {
                    let row = &blk[r * inner..(r + 1) * inner];
                    for ((b, i), &x) in best.iter_mut().zip(idx.iter_mut()).zip(row) {
                        if arg_better(max, x, *b) {
                            *b = x;
                            *i = r as i32;
                        }
                    }
                }
            }
        };
        if outer * block >= PAR_MIN_LEN && outer > 1 {
            out.par_chunks_mut(inner)
                .enumerate()
                .for_each(|(o, idx)| do_block(o, idx));
        } else {
            for (o, idx) in out.chunks_mut(inner).enumerate() {
                do_block(o, idx);
            }
        }
    }
    let mut shape: Shape = a.shape().into();
    shape.remove(axis);
    Array::new(&shape, crate::Buffer::I32(out))
}

/// Index of the first max/min along `axis`; an empty axis gives index 0.
pub fn arg_reduce(op: ArgReduceOp, a: &Array, axis: usize) -> Array {
    assert!(
        axis < a.ndim(),
        "arg_reduce axis {axis} out of range for {:?}",
        a.shape()
    );
    let max = op == ArgReduceOp::ArgMax;
    crate::with_dtype!(a.dtype(), T => arg_reduce_typed::<T>(max, a, axis))
}

fn scan_with<T: Elem>(
    a: &Array,
    axis: usize,
    reverse: bool,
    f: impl Fn(T, T) -> T + Sync,
) -> Array {
    let (outer, len, inner) = split_at_axis(a.shape(), axis);
    let mut out: Vec<T> = elems::<T>(a).to_vec();
    let block = len * inner;
    if block > 0 {
        let do_block = |blk: &mut [T]| {
            if inner == 1 {
                // One contiguous lane: each element folds in its predecessor.
                if reverse {
                    for i in (1..len).rev() {
                        blk[i - 1] = f(blk[i], blk[i - 1]);
                    }
                } else {
                    for i in 1..len {
                        blk[i] = f(blk[i - 1], blk[i]);
                    }
                }
                return;
            }
            for step in 1..len {
                let (prev, cur) = if reverse {
                    (len - step, len - step - 1)
                } else {
                    (step - 1, step)
                };
                // Split so the previous row can be read while the current is written.
                let (lo, hi) = blk.split_at_mut(prev.max(cur) * inner);
                let (p, c) = if reverse {
                    (&hi[..inner], &mut lo[cur * inner..])
                } else {
                    (&lo[prev * inner..], &mut hi[..inner])
                };
                for (c, &p) in c.iter_mut().zip(p) {
                    *c = f(p, *c);
                }
            }
        };
        if out.len() >= PAR_MIN_LEN && outer > 1 {
            out.par_chunks_mut(block).for_each(do_block);
        } else {
            out.chunks_mut(block).for_each(do_block);
        }
    }
    Array::new(a.shape(), T::into_buffer(out))
}

fn scan_num<T: Elem + Arith>(op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
    match op {
        ScanOp::Sum => scan_with(a, axis, reverse, T::add),
        ScanOp::Prod => scan_with(a, axis, reverse, T::mul),
        ScanOp::Max => scan_with(a, axis, reverse, T::max),
        ScanOp::Min => scan_with(a, axis, reverse, T::min),
    }
}

/// Inclusive scan; on bool, Sum/Max scan with `or` and Prod/Min with `and`.
pub fn scan(op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
    assert!(
        axis < a.ndim(),
        "scan axis {axis} out of range for {:?}",
        a.shape()
    );
    match a.dtype() {
        DType::BF16 | DType::F16 | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
            crate::backend::Dispatch(&super::Cpu).scan(op, a, axis, reverse)
        }
        DType::Bool => match op {
            ScanOp::Sum | ScanOp::Max => scan_with(a, axis, reverse, |x: bool, y: bool| x | y),
            ScanOp::Prod | ScanOp::Min => scan_with(a, axis, reverse, |x: bool, y: bool| x & y),
        },
        DType::I32 => scan_num::<i32>(op, a, axis, reverse),
        DType::I64 => scan_num::<i64>(op, a, axis, reverse),
        DType::U32 => scan_num::<u32>(op, a, axis, reverse),
        DType::F32 => scan_num::<f32>(op, a, axis, reverse),
        DType::F64 => scan_num::<f64>(op, a, axis, reverse),
        DType::C64 => {
            use crate::complex::C64;
            match op {
                ScanOp::Sum => scan_with(a, axis, reverse, |x: C64, y: C64| {
                    C64::new(x.re + y.re, x.im + y.im)
                }),
                ScanOp::Prod => scan_with(a, axis, reverse, |x: C64, y: C64| {
                    C64::new(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re)
                }),
                ScanOp::Max | ScanOp::Min => {
                    panic!("{op:?} is not defined on complex64 (checked by the caller)")
                }
            }
        }
    }
}
