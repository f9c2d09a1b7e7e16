//! Each device's block of an array, and arrays put together from the
//! devices' blocks. An array that already keeps one shard per device in
//! the wanted layout gives each device that shard as it is (so a training
//! loop copies nothing between steps); a donated one gives its shard's
//! buffer, which the device's program may then overwrite.

use arr_kernels::sharding::Placement;
use arr_kernels::Array;
use arr_kernels::Backend as _;
use std::ops::Range;
use std::sync::Arc;

/// The block of `a` with these index ranges.
pub fn block_of(a: &Array, ranges: &[Range<usize>]) -> Array {
    let start: Vec<usize> = ranges.iter().map(|r| r.start).collect();
    let limit: Vec<usize> = ranges.iter().map(|r| r.end).collect();
    arr_kernels::backend::of([a]).slice(a, &start, &limit, &vec![1; a.ndim()])
}

/// The block of each array that the device at mesh position `pos` holds:
/// its own shard when the array keeps its devices' shards in that layout.
pub fn blocks_at(arrays: &[Array], placements: &[Placement], pos: usize) -> Vec<Array> {
    donated_blocks_at(arrays, placements, pos, &[], "")
}

/// `blocks_at`, where each array marked in `donated` whose shards are laid
/// out as wanted gives its shard's buffer to this position's program
/// (deleting the shard, `why`); the caller deletes the arrays themselves
/// once every position has taken its block.
pub fn donated_blocks_at(
    arrays: &[Array],
    placements: &[Placement],
    pos: usize,
    donated: &[bool],
    why: &str,
) -> Vec<Array> {
    arrays
        .iter()
        .zip(placements)
        .enumerate()
        .map(|(i, (a, p))| match a.shards() {
            Some(shards) if a.placement().map(|q| &**q) == Some(p) => match donated.get(i) {
                Some(true) => a.donate_shard(pos, why).expect("the array has shards"),
                _ => shards[pos].clone(),
            },
            _ => block_of(a, &p.block(a.shape(), pos)),
        })
        .collect()
}

/// Output `i` of every mesh position, laid out by `p`: kept as the
/// devices' shards (replicas along the axes `p` does not name).
pub fn assemble(p: &Placement, outs: &[Vec<Array>], i: usize) -> Array {
    let block = outs[0][i].shape();
    let shape: Vec<usize> = (0..block.len()).map(|d| block[d] * p.parts(d)).collect();
    let shards: Vec<Array> = outs.iter().map(|o| o[i].clone()).collect();
    Array::from_shards(&shape, Arc::new(p.clone()), shards)
}

/// The devices' shards of `a` when it is laid out as a pmap's output is:
/// one index of `axis` on each of devices 0..size.
pub fn device_slices(a: &Array, axis: usize, size: usize) -> Option<&[Array]> {
    let p = a.placement()?;
    let split_here = p.spec.iter().enumerate().all(|(d, names)| {
        if d == axis {
            names == &[0]
        } else {
            names.is_empty()
        }
    });
    let laid_out = p.mesh.shape == [size]
        && p.mesh.devices.iter().copied().eq(0..size)
        && a.shape().get(axis) == Some(&size)
        && split_here;
    laid_out.then(|| a.shards()).flatten()
}

/// `a` at index `i` along `axis`, with that axis removed.
pub fn slice_at(a: &Array, axis: usize, i: usize) -> Array {
    let mut start = vec![0; a.ndim()];
    let mut limit = a.shape().to_vec();
    start[axis] = i;
    limit[axis] = i + 1;
    let s = arr_kernels::backend::of([a]).slice(a, &start, &limit, &vec![1; a.ndim()]);
    let mut shape = s.shape().to_vec();
    shape.remove(axis);
    s.reshape(&shape)
}

/// Device `r`'s inputs of a pmap over `size` devices: each mapped array at
/// index `r` of its mapped axis (`dims`), the others whole. An earlier
/// pmap's output gives device `r` its own result; a `donated` one gives
/// that shard's buffer (the caller deletes the arrays afterwards).
pub fn mapped_slices_at(
    arrays: &[Array],
    dims: &[Option<usize>],
    size: usize,
    r: usize,
    donated: &[bool],
    why: &str,
) -> Vec<Array> {
    arrays
        .iter()
        .zip(dims)
        .enumerate()
        .map(|(i, (a, d))| match d {
            None => a.clone(),
            Some(d) => match device_slices(a, *d, size) {
                // An earlier pmap's output: this device's own result.
                Some(shards) => {
                    let shard = match donated.get(i) {
                        Some(true) => a.donate_shard(r, why).expect("laid out as shards"),
                        _ => shards[r].clone(),
                    };
                    let mut shape = shard.shape().to_vec();
                    shape.remove(*d);
                    shard.reshape(&shape)
                }
                None => slice_at(a, *d, r),
            },
        })
        .collect()
}
