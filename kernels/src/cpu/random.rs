//! The Threefry-2x32 block cipher that JAX's PRNG is built on.

use super::elem::{alloc_overwrite, elems, par_chunk};
use crate::{Array, Buffer, DType};
use rayon::prelude::*;

/// Rotation amounts: the first set for rounds 1-4, 9-12, 17-20, the second for the others.
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// 20 rounds of Threefry-2x32 on one block, exactly as JAX's reference.
#[inline]
pub fn threefry_block(k0: u32, k1: u32, x0: u32, x1: u32) -> (u32, u32) {
    let ks = [k0, k1, k0 ^ k1 ^ 0x1BD1_1BDA];
    let mut x = [x0.wrapping_add(ks[0]), x1.wrapping_add(ks[1])];
    for group in 0..5 {
        for &r in &ROTATIONS[group % 2] {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(r) ^ x[0];
        }
        // Key injection after every 4 rounds, with the injection count added to x1.
        x[0] = x[0].wrapping_add(ks[(group + 1) % 3]);
        x[1] = x[1]
            .wrapping_add(ks[(group + 2) % 3])
            .wrapping_add(group as u32 + 1);
    }
    (x[0], x[1])
}

/// Elementwise over u32 arrays; each input has the output's size, or is a
/// single element that is used for every position.
pub fn threefry2x32(k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array) {
    let inputs = [k0, k1, x0, x1];
    for a in inputs {
        assert_eq!(a.dtype(), DType::U32, "threefry2x32 takes u32 arrays");
    }
    let big = inputs.iter().max_by_key(|a| a.len()).unwrap();
    let n = big.len();
    for a in inputs {
        assert!(
            a.len() == n || a.len() == 1,
            "threefry2x32 inputs {:?} and {:?} differ",
            a.shape(),
            big.shape()
        );
    }
    let bufs = inputs.map(elems::<u32>);
    let data: [&[u32]; 4] = bufs.each_ref().map(|b| &**b);
    let at = |d: &[u32], i: usize| if d.len() == 1 { d[0] } else { d[i] };
    let mut y0 = alloc_overwrite::<u32>(n);
    let mut y1 = alloc_overwrite::<u32>(n);
    // Huge draws poll for an interrupt every 64Ki elements (the caller
    // discards an unfinished result).
    let stop = crate::interrupt::Poll::here();
    let fill = |start: usize, o0: &mut [u32], o1: &mut [u32]| {
        for (i, (a, b)) in o0.iter_mut().zip(o1.iter_mut()).enumerate() {
            if i % (1 << 16) == 0 && stop.requested() {
                return;
            }
            let j = start + i;
            (*a, *b) = threefry_block(
                at(data[0], j),
                at(data[1], j),
                at(data[2], j),
                at(data[3], j),
            );
        }
    };
    match par_chunk(n) {
        None => fill(0, &mut y0, &mut y1),
        Some(chunk) => y0
            .par_chunks_mut(chunk)
            .zip(y1.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(ci, (a, b))| fill(ci * chunk, a, b)),
    }
    (
        Array::new(big.shape(), Buffer::U32(y0)),
        Array::new(big.shape(), Buffer::U32(y1)),
    )
}
