//! Data movement: transpose, broadcast, slice, reverse, pad, concatenate, iota.
//!
//! The first four are one operation, a strided copy: the output walks the
//! input at `offset + sum(i_d * stride_d)` with signed strides (0 to
//! broadcast, negative to reverse). Axes are merged where possible so the inner
//! loop is a memcpy, a fill, or one strided walk.

use super::elem::{alloc_overwrite, elems, par_chunk, split_at_axis, Elem};
use crate::{strides_of, Array, Buffer, DType, Shape};
use rayon::prelude::*;
use smallvec::SmallVec;

type Strides = SmallVec<[isize; 4]>;

/// Square tile edge for transposes whose inner loop would stride through memory.
const TILE: usize = 32;

/// Drop size-1 axes and merge axes that are contiguous with their successor.
fn coalesce(shape: &[usize], strides: &[isize]) -> (Shape, Strides) {
    let mut out_shape = Shape::new();
    let mut out_strides = Strides::new();
    for (&size, &stride) in shape.iter().zip(strides) {
        if size == 1 {
            continue;
        }
        if let (Some(ps), Some(pst)) = (out_shape.last_mut(), out_strides.last_mut()) {
            if *pst == stride * size as isize {
                *ps *= size;
                *pst = stride;
                continue;
            }
        }
        out_shape.push(size);
        out_strides.push(stride);
    }
    (out_shape, out_strides)
}

/// Copy one inner run of `out.len()` elements starting at `src[start]`.
#[inline(always)]
fn copy_run<T: Copy>(src: &[T], start: isize, stride: isize, out: &mut [T]) {
    let s = start as usize;
    match stride {
        1 => out.copy_from_slice(&src[s..s + out.len()]),
        0 => out.fill(src[s]),
        -1 => {
            let lo = s + 1 - out.len();
            for (o, &x) in out.iter_mut().zip(src[lo..=s].iter().rev()) {
                *o = x;
            }
        }
        _ => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = src[(start + i as isize * stride) as usize];
            }
        }
    }
}

/// Fill `out[start..start+out.len()]` (flat positions in `shape`) from the strided view.
fn copy_range<T: Copy>(
    src: &[T],
    offset: isize,
    shape: &[usize],
    strides: &[isize],
    start: usize,
    out: &mut [T],
) {
    let nd = shape.len();
    if nd == 0 {
        if let Some(o) = out.first_mut() {
            *o = src[offset as usize];
        }
        return;
    }
    let inner = shape[nd - 1];
    let inner_stride = strides[nd - 1];
    let mut row = start / inner;
    let mut col = start % inner;
    let mut idx: SmallVec<[usize; 4]> = smallvec::smallvec![0; nd - 1];
    let mut base = offset;
    for d in (0..nd - 1).rev() {
        idx[d] = row % shape[d];
        row /= shape[d];
        base += idx[d] as isize * strides[d];
    }
    let mut pos = 0;
    while pos < out.len() {
        let len = (inner - col).min(out.len() - pos);
        copy_run(
            src,
            base + col as isize * inner_stride,
            inner_stride,
            &mut out[pos..pos + len],
        );
        pos += len;
        col = 0;
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            base += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            base -= shape[d] as isize * strides[d];
            idx[d] = 0;
        }
    }
}

/// Tiled 2-D transpose: `out[r * cols + c] = src[c * rows + r]`.
fn transpose_2d<T: Copy + Send + Sync>(src: &[T], rows: usize, cols: usize, out: &mut [T]) {
    // `src` is [cols, rows] row-major and `out` is [rows, cols]. Bands of TILE
    // output rows read TILE x TILE source tiles that stay in cache.
    let do_band = |r0: usize, band: &mut [T]| {
        let nr = band.len() / cols;
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for r in 0..nr {
                let orow = &mut band[r * cols + c0..r * cols + c1];
                for (k, o) in orow.iter_mut().enumerate() {
                    *o = src[(c0 + k) * rows + r0 + r];
                }
            }
        }
    };
    match par_chunk(out.len()) {
        None => {
            for (b, band) in out.chunks_mut(TILE * cols).enumerate() {
                do_band(b * TILE, band);
            }
        }
        Some(_) => out
            .par_chunks_mut(TILE * cols)
            .enumerate()
            .for_each(|(b, band)| do_band(b * TILE, band)),
    }
}

/// Materialise the strided view `(offset, shape, strides)` of `src`.
pub fn strided_copy<T: Elem>(
    src: &[T],
    offset: isize,
    shape: &[usize],
    strides: &[isize],
) -> Vec<T> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let (shape, strides) = coalesce(shape, strides);
    // One contiguous run (a block of leading rows, say) that one thread
    // copies: without first zeroing a fresh output, which costs as much as
    // the copy. (Large runs on the main thread take the parallel path.)
    let contiguous = shape.is_empty() || (shape.len() == 1 && strides[0] == 1);
    if contiguous && par_chunk(n).is_none() {
        let s = offset as usize;
        return src[s..s + n].to_vec();
    }
    let mut out = alloc_overwrite::<T>(n);
    let nd = shape.len();
    // When the last two axes read a contiguous block transposed, copy block by
    // block through the tiled path: the naive inner loop would stride by a
    // whole row per element.
    if nd >= 2
        && strides[nd - 2] == 1
        && strides[nd - 1] == shape[nd - 2] as isize
        && shape[nd - 2] >= 8
    {
        let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
        let block = rows * cols;
        let (outer_shape, outer_strides) = (&shape[..nd - 2], &strides[..nd - 2]);
        for (b, part) in out.chunks_mut(block).enumerate() {
            let mut base = offset;
            let mut rest = b;
            for d in (0..outer_shape.len()).rev() {
                base += (rest % outer_shape[d]) as isize * outer_strides[d];
                rest /= outer_shape[d];
            }
            let base = base as usize;
            transpose_2d(&src[base..base + block], rows, cols, part);
        }
        return out;
    }
    match par_chunk(n) {
        None => copy_range(src, offset, &shape, &strides, 0, &mut out),
        Some(chunk) => out
            .par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(ci, part)| copy_range(src, offset, &shape, &strides, ci * chunk, part)),
    }
    out
}

fn view<T: Elem>(a: &Array, offset: isize, shape: &[usize], strides: &[isize]) -> Array {
    Array::new(
        shape,
        T::into_buffer(strided_copy(&elems::<T>(a), offset, shape, strides)),
    )
}

fn view_any(a: &Array, offset: isize, shape: &[usize], strides: &[isize]) -> Array {
    crate::with_dtype!(a.dtype(), T => view::<T>(a, offset, shape, strides))
}

fn signed_strides(shape: &[usize]) -> Strides {
    strides_of(shape).iter().map(|&s| s as isize).collect()
}

pub fn transpose(a: &Array, perm: &[usize]) -> Array {
    assert_eq!(
        perm.len(),
        a.ndim(),
        "transpose permutation {perm:?} for shape {:?}",
        a.shape()
    );
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return a.clone();
    }
    let st = signed_strides(a.shape());
    let shape: Shape = perm.iter().map(|&p| a.shape()[p]).collect();
    let strides: Strides = perm.iter().map(|&p| st[p]).collect();
    view_any(a, 0, &shape, &strides)
}

pub fn broadcast_in_dim(a: &Array, shape: &[usize], dims: &[usize]) -> Array {
    assert_eq!(
        dims.len(),
        a.ndim(),
        "broadcast_in_dim dims {dims:?} for shape {:?}",
        a.shape()
    );
    let st = signed_strides(a.shape());
    let mut strides: Strides = smallvec::smallvec![0; shape.len()];
    for (i, &d) in dims.iter().enumerate() {
        let size = a.shape()[i];
        assert!(
            size == shape[d] || size == 1,
            "cannot broadcast {:?} to {shape:?} via {dims:?}",
            a.shape()
        );
        if size != 1 {
            strides[d] = st[i];
        }
    }
    if shape.iter().product::<usize>() == a.len()
        && dims
            .iter()
            .enumerate()
            .all(|(i, &d)| i == 0 || d > dims[i - 1])
    {
        // Only size-1 axes are added: same elements, same order.
        return a.reshape(shape);
    }
    view_any(a, 0, shape, &strides)
}

pub fn slice(a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array {
    let nd = a.ndim();
    assert!(
        start.len() == nd && limit.len() == nd && stride.len() == nd,
        "slice arguments for shape {:?}",
        a.shape()
    );
    let st = signed_strides(a.shape());
    let mut offset = 0isize;
    let mut shape = Shape::new();
    let mut strides = Strides::new();
    for d in 0..nd {
        assert!(
            start[d] <= limit[d] && limit[d] <= a.shape()[d] && stride[d] >= 1,
            "bad slice on axis {d}"
        );
        let size = (limit[d] - start[d]).div_ceil(stride[d]);
        if size > 0 {
            offset += start[d] as isize * st[d];
        }
        shape.push(size);
        strides.push(st[d] * stride[d] as isize);
    }
    if shape.contains(&0) {
        offset = 0;
    }
    view_any(a, offset, &shape, &strides)
}

pub fn rev(a: &Array, axes: &[usize]) -> Array {
    let mut strides = signed_strides(a.shape());
    let mut offset = 0isize;
    for &d in axes {
        assert!(
            d < a.ndim(),
            "rev axis {d} out of range for {:?}",
            a.shape()
        );
        if a.shape()[d] > 0 {
            offset += (a.shape()[d] - 1) as isize * strides[d];
        }
        strides[d] = -strides[d];
    }
    if a.is_empty() {
        return a.clone();
    }
    view_any(a, offset, a.shape(), &strides)
}

fn pad_typed<T: Elem>(
    a: &Array,
    value: T,
    lo: &[usize],
    hi: &[usize],
    interior: &[usize],
) -> Array {
    let nd = a.ndim();
    let shape: Shape = (0..nd)
        .map(|d| {
            let n = a.shape()[d];
            lo[d] + hi[d] + n + n.saturating_sub(1) * interior[d]
        })
        .collect();
    let n: usize = shape.iter().product();
    let mut out = vec![value; n];
    if !a.is_empty() {
        let ost = strides_of(&shape);
        let offset: usize = (0..nd).map(|d| lo[d] * ost[d]).sum();
        let dst: Shape = (0..nd).map(|d| ost[d] * (interior[d] + 1)).collect();
        let src = &*elems::<T>(a);
        // Walk the input row by row; each row lands with stride dst[nd-1].
        let (inner, istride) = if nd == 0 {
            (1, 1)
        } else {
            (a.shape()[nd - 1], dst[nd - 1])
        };
        let outer_shape = &a.shape()[..nd.saturating_sub(1)];
        let mut idx: SmallVec<[usize; 4]> = smallvec::smallvec![0; outer_shape.len()];
        for row in src.chunks(inner) {
            let base: usize = offset + idx.iter().zip(&dst).map(|(i, s)| i * s).sum::<usize>();
            if istride == 1 {
                out[base..base + inner].copy_from_slice(row);
            } else {
                for (j, &x) in row.iter().enumerate() {
                    out[base + j * istride] = x;
                }
            }
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < outer_shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    Array::new(&shape, T::into_buffer(out))
}

pub fn pad(a: &Array, value: &Array, lo: &[usize], hi: &[usize], interior: &[usize]) -> Array {
    let nd = a.ndim();
    assert!(
        lo.len() == nd && hi.len() == nd && interior.len() == nd,
        "pad arguments for shape {:?}",
        a.shape()
    );
    assert_eq!(value.len(), 1, "pad value must be a scalar");
    assert_eq!(
        value.dtype(),
        a.dtype(),
        "pad value dtype differs from the array's"
    );
    crate::with_dtype!(a.dtype(), T => pad_typed::<T>(a, elems::<T>(value)[0], lo, hi, interior))
}

fn concat_typed<T: Elem>(arrays: &[Array], axis: usize, shape: &[usize]) -> Array {
    let (outer, _, inner) = split_at_axis(shape, axis);
    let n: usize = shape.iter().product();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let bufs: Vec<_> = arrays.iter().map(elems::<T>).collect();
    let blocks: Vec<(&[T], usize)> = arrays
        .iter()
        .zip(&bufs)
        .map(|(a, b)| (&**b, a.shape()[axis] * inner))
        .collect();
    for o in 0..outer {
        for &(data, block) in &blocks {
            out.extend_from_slice(&data[o * block..(o + 1) * block]);
        }
    }
    Array::new(shape, T::into_buffer(out))
}

/// An array of `shape` put together from blocks, each given by its index
/// ranges (blocks held by several devices are copied once): the n-D
/// generalisation of `concatenate`, for arrays kept as per-device shards.
pub fn assemble_blocks<'a>(
    shape: &[usize],
    dtype: DType,
    blocks: impl Iterator<Item = (Vec<std::ops::Range<usize>>, &'a Array)>,
) -> Buffer {
    fn typed<'a, T: Elem>(
        shape: &[usize],
        blocks: impl Iterator<Item = (Vec<std::ops::Range<usize>>, &'a Array)>,
    ) -> Buffer {
        let n: usize = shape.iter().product();
        let mut out = alloc_overwrite::<T>(n);
        let strides = strides_of(shape);
        let mut seen = std::collections::HashSet::new();
        for (ranges, block) in blocks {
            if !seen.insert(ranges.clone()) || block.is_empty() {
                continue;
            }
            let src = &*elems::<T>(block);
            let nd = shape.len();
            if nd == 0 {
                out[0] = src[0];
                continue;
            }
            // Copy the block row by row (its last axis is contiguous in both).
            let row = ranges[nd - 1].len();
            let outer: Vec<usize> = ranges[..nd - 1].iter().map(|r| r.len()).collect();
            for (i, chunk) in src.chunks_exact(row).enumerate() {
                let mut rest = i;
                let mut at = ranges[nd - 1].start;
                for d in (0..nd - 1).rev() {
                    at += (ranges[d].start + rest % outer[d]) * strides[d];
                    rest /= outer[d];
                }
                out[at..at + row].copy_from_slice(chunk);
            }
        }
        T::into_buffer(out)
    }
    crate::with_dtype!(dtype, T => typed::<T>(shape, blocks))
}

pub fn concatenate(arrays: &[Array], axis: usize) -> Array {
    let first = arrays
        .first()
        .expect("concatenate needs at least one array");
    assert!(
        axis < first.ndim(),
        "concatenate axis {axis} out of range for {:?}",
        first.shape()
    );
    let mut shape: Shape = first.shape().into();
    shape[axis] = 0;
    for a in arrays {
        assert_eq!(a.dtype(), first.dtype(), "concatenate of mixed dtypes");
        assert_eq!(a.ndim(), first.ndim(), "concatenate of mixed ranks");
        for d in 0..a.ndim() {
            assert!(
                d == axis || a.shape()[d] == first.shape()[d],
                "concatenate shapes {:?} {:?}",
                first.shape(),
                a.shape()
            );
        }
        shape[axis] += a.shape()[axis];
    }
    crate::with_dtype!(first.dtype(), T => concat_typed::<T>(arrays, axis, &shape))
}

pub fn iota(dtype: DType, shape: &[usize], dim: usize) -> Array {
    assert!(
        dim < shape.len(),
        "iota dim {dim} out of range for {shape:?}"
    );
    let (outer, len, inner) = split_at_axis(shape, dim);
    // The values of one axis, converted once; the output is those repeated
    // in its own dtype (no full-size int64 intermediate).
    let axis = Array::new(&[len], Buffer::I64((0..len as i64).collect()));
    let axis = super::elementwise::convert(&axis, dtype);
    crate::with_dtype!(dtype, T => {
        let values = elems::<T>(&axis);
        let mut v: Vec<T> = Vec::with_capacity(outer * len * inner);
        for _ in 0..outer {
            for &x in values.iter() {
                v.extend(std::iter::repeat_n(x, inner));
            }
        }
        Array::new(shape, T::into_buffer(v))
    })
}
