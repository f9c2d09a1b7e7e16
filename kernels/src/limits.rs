//! How large one allocation may be. Every size computed from user input —
//! an array's shape, a string or list repetition, a format width — is
//! checked here before anything is allocated, so an impossible request is
//! the language's MemoryError instead of an aborted (or killed) process.

use std::fmt;

/// The most bytes one allocation may take: 1 TiB. A larger request comes
/// from a mistake (`zeros((10**6, 10**6))`), not from a workload of the
/// machines arr runs on, and the allocator would abort the process on it
/// (or, with overcommit, hand out pages that the kernel then kills the
/// process for touching).
pub const MAX_ALLOC_BYTES: usize = 1 << 40;

/// Above this the allocator is asked first whether it could give the bytes
/// now (a reservation that touches nothing: one mapping and unmapping), so
/// a request beyond what the system has is refused too.
const PROBE_BYTES: usize = 1 << 30;

/// A refused allocation and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TooLarge {
    /// It would take this many bytes (a float: the exact count may fit no
    /// integer): more than `MAX_ALLOC_BYTES` or than the system can give.
    Bytes(f64),
    /// Its dimensions (the zero ones counted as one) multiply past the
    /// address space, so even an empty array of them has no strides.
    Extent,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TooLarge::Bytes(b) => write!(f, "{b:.1e} bytes"),
            TooLarge::Extent => f.write_str("its dimensions multiply past the address space"),
        }
    }
}

/// The bytes of `dims` items multiplied together (a shape; a count is one
/// dimension) of `item_bytes` each, if one allocation may have them: the
/// rule for every allocation whose size comes from user input. The product
/// is computed without wrapping, must be at most `MAX_ALLOC_BYTES`, and
/// beyond 1 GiB the allocator must be able to give it.
pub fn checked_bytes(dims: &[usize], item_bytes: usize) -> Result<usize, TooLarge> {
    let bytes = dims
        .iter()
        .try_fold(item_bytes, |acc, &d| acc.checked_mul(d));
    let exact = || {
        TooLarge::Bytes(
            dims.iter()
                .fold(item_bytes as f64, |acc, &d| acc * d as f64),
        )
    };
    match bytes {
        None => Err(exact()),
        Some(b) if b > MAX_ALLOC_BYTES => Err(exact()),
        Some(b) if b > PROBE_BYTES && Vec::<u8>::new().try_reserve_exact(b).is_err() => {
            Err(exact())
        }
        Some(b) => Ok(b),
    }
}

/// The number of elements of an array of `shape` whose items take
/// `item_bytes`, if such an array can exist at all, allocated or only
/// traced: its size in bytes must fit `usize`, and so must the product of
/// its dimensions with the zero ones counted as one (its strides are such
/// products, so even an empty array needs them to fit).
pub fn element_count(shape: &[usize], item_bytes: usize) -> Result<usize, TooLarge> {
    let extent = shape
        .iter()
        .try_fold(item_bytes.max(1), |acc, &d| acc.checked_mul(d.max(1)));
    match extent {
        Some(_) => Ok(shape.iter().product()),
        None if shape.contains(&0) => Err(TooLarge::Extent),
        None => Err(TooLarge::Bytes(
            shape
                .iter()
                .fold(item_bytes as f64, |acc, &d| acc * d as f64),
        )),
    }
}

/// `checked_bytes` for an array of `shape` (which `element_count` admits).
pub fn array_bytes(shape: &[usize], item_bytes: usize) -> Result<usize, TooLarge> {
    element_count(shape, item_bytes)?;
    checked_bytes(shape, item_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_refused_without_wrapping() {
        assert_eq!(checked_bytes(&[2, 3], 4), Ok(24));
        assert_eq!(checked_bytes(&[], 8), Ok(8));
        assert_eq!(checked_bytes(&[0, 5], 4), Ok(0));
        // 2^32 * 2^32 wraps to 0 in usize: it must not pass as empty.
        assert_eq!(
            checked_bytes(&[1 << 32, 1 << 32], 4),
            Err(TooLarge::Bytes(4.0 * 2f64.powi(64)))
        );
        assert_eq!(
            checked_bytes(&[1_000_000_000_000, 1_000_000_000_000], 4)
                .unwrap_err()
                .to_string(),
            "4.0e24 bytes"
        );
        assert!(checked_bytes(&[MAX_ALLOC_BYTES + 1], 1).is_err());
        // An empty list repeated any number of times is empty; an empty
        // array of such dimensions has strides past the address space.
        assert_eq!(checked_bytes(&[0, 1 << 62, 1 << 62], 4), Ok(0));
        assert_eq!(
            array_bytes(&[0, 1 << 62, 1 << 62], 4),
            Err(TooLarge::Extent)
        );
        assert_eq!(array_bytes(&[0, 1 << 20], 4), Ok(0));
        assert_eq!(element_count(&[1 << 20, 1 << 20], 4), Ok(1 << 40));
        assert!(element_count(&[1 << 32, 1 << 32], 1).is_err());
    }
}
