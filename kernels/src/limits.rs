//! How large one allocation may be. Every size computed from user input —
//! an array's shape, a string or list repetition, a format width — is
//! checked here before anything is allocated, so an impossible request is
//! the language's MemoryError instead of an aborted (or killed) process.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most bytes one allocation may take: 1 TiB. A larger request comes
/// from a mistake (`zeros((10**6, 10**6))`), not from a workload of the
/// machines arr runs on, and the allocator would abort the process on it
/// (or, with overcommit, hand out pages that the kernel then kills the
/// process for touching).
pub const MAX_ALLOC_BYTES: usize = 1 << 40;

/// Above this the allocator is asked first whether it could give the bytes
/// now (a reservation that touches nothing: one mapping and unmapping), so
/// a request beyond what the system has is refused too.
const PROBE_BYTES: usize = 64 << 20;

/// The user's bound on one allocation and on live bytes (0: none; `usize::MAX`: not
/// read yet): `ARR_MEMORY_LIMIT`
/// at start-up, or `set_memory_limit` at run time.
static USER_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Set (or, with None, lift) the user's bound on one allocation.
pub fn set_user_limit(bytes: Option<usize>) {
    USER_LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The user's bound on one allocation, if one is set.
pub fn user_limit() -> Option<usize> {
    let mut limit = USER_LIMIT.load(Ordering::Relaxed);
    if limit == usize::MAX {
        // First use: read the environment once.
        limit = env_limit().ok().flatten().unwrap_or(0);
        USER_LIMIT.store(limit, Ordering::Relaxed);
    }
    (limit != 0).then_some(limit)
}

/// `ARR_MEMORY_LIMIT` if set, or why it is not a byte count (the binary
/// refuses a bad one at start-up).
pub fn env_limit() -> Result<Option<usize>, String> {
    match std::env::var("ARR_MEMORY_LIMIT") {
        Err(_) => Ok(None),
        Ok(v) => parse_bytes(&v).filter(|&b| b > 0).map(Some).ok_or_else(|| {
            format!(
                "ARR_MEMORY_LIMIT={v:?}: expected a positive number of bytes such as 8G or 512M"
            )
        }),
    }
}

/// `1000`, `512M`, `8G`, `1.5GiB`: a byte count as people write it.
pub fn parse_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches("ib")
        .trim_end_matches('b')
    {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0f64.powi(4),
        _ => return None,
    };
    let bytes = number * scale;
    (bytes.is_finite() && bytes >= 0.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

/// The bytes of a `Name:   123 kB` line of a `/proc` file such as
/// `/proc/meminfo` or `/proc/self/status`.
pub(crate) fn kib_field(text: &str, name: &str) -> Option<usize> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: usize = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The bytes this process could still be given without the kernel's OOM
/// killer ending it: what the system has available (RAM the kernel can free
/// plus swap) and what its control group still allows. Linux overcommits,
/// so the allocator alone says yes to far more; None where neither is known.
pub fn available_bytes() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let field = |name: &str| kib_field(meminfo.as_deref()?, name);
    let system = match (field("MemAvailable:"), field("SwapFree:")) {
        (Some(m), swap) => Some(m.saturating_add(swap.unwrap_or(0))),
        _ => None,
    };
    let read =
        |path: &str| -> Option<usize> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let group = match (
        read("/sys/fs/cgroup/memory.max"),
        read("/sys/fs/cgroup/memory.current"),
    ) {
        (Some(max), Some(current)) => Some(max.saturating_sub(current)),
        _ => None,
    };
    match (system, group) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A refused allocation and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TooLarge {
    /// It would take this many bytes (a float: the exact count may fit no
    /// integer): more than `MAX_ALLOC_BYTES` or than the system can give.
    Bytes(f64),
    /// Its dimensions (the zero ones counted as one) multiply past the
    /// address space, so even an empty array of them has no strides.
    Extent,
    /// It would take this many bytes, more than the user's limit
    /// (`ARR_MEMORY_LIMIT`, `set_memory_limit`), the second number.
    OverLimit(f64, usize),
    /// It would take this many bytes, more than the machine has available
    /// now (the second number).
    OverAvailable(f64, usize),
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TooLarge::Bytes(b) => write!(f, "{b:.1e} bytes"),
            TooLarge::Extent => f.write_str("its dimensions multiply past the address space"),
            TooLarge::OverLimit(b, limit) => {
                write!(f, "{b:.1e} bytes, over the memory limit of {limit} bytes")
            }
            TooLarge::OverAvailable(b, free) => {
                write!(
                    f,
                    "{b:.1e} bytes, more than the {free:.1e} bytes available",
                    free = *free as f64
                )
            }
        }
    }
}

/// The bytes of `dims` items multiplied together (a shape; a count is one
/// dimension) of `item_bytes` each, if one allocation may have them: the
/// rule for every allocation whose size comes from user input. The product
/// is computed without wrapping, must be at most `MAX_ALLOC_BYTES` and the
/// user's limit, and beyond 64 MiB the allocator must be able to give it and
/// the machine must have it available.
pub fn checked_bytes(dims: &[usize], item_bytes: usize) -> Result<usize, TooLarge> {
    // Any zero makes the true product zero, wherever it stands.
    let bytes = match dims.contains(&0) {
        true => Some(0),
        false => dims
            .iter()
            .try_fold(item_bytes, |acc, &d| acc.checked_mul(d)),
    };
    let exact = || {
        TooLarge::Bytes(
            dims.iter()
                .fold(item_bytes as f64, |acc, &d| acc * d as f64),
        )
    };
    let limit = user_limit();
    match bytes {
        None => Err(exact()),
        Some(b) if b > MAX_ALLOC_BYTES => Err(exact()),
        Some(b) if limit.is_some_and(|limit| b > limit) => {
            Err(TooLarge::OverLimit(b as f64, limit.unwrap_or(0)))
        }
        Some(b) if b > PROBE_BYTES && Vec::<u8>::new().try_reserve_exact(b).is_err() => {
            Err(exact())
        }
        Some(b) if b > PROBE_BYTES => match available_bytes() {
            Some(free) if b > free => Err(TooLarge::OverAvailable(b as f64, free)),
            _ => Ok(b),
        },
        Some(b) => Ok(b),
    }
}

/// The number of elements of an array of `shape` whose items take
/// `item_bytes`, if such an array can exist at all, allocated or only
/// traced: its size in bytes must fit `usize`, and so must each of its
/// row-major strides in bytes, the product of the dimensions after it (so
/// `(2**62, 0)` exists, as in JAX, but `(0, 2**62, 2**62)` does not: its
/// middle stride is past the address space even though it holds nothing).
pub fn element_count(shape: &[usize], item_bytes: usize) -> Result<usize, TooLarge> {
    let strides_fit = shape
        .iter()
        .rev()
        .try_fold(item_bytes.max(1), |stride, &d| stride.checked_mul(d))
        .is_some();
    match strides_fit {
        true if shape.contains(&0) => Ok(0),
        true => Ok(shape.iter().product()),
        false if shape.contains(&0) => Err(TooLarge::Extent),
        false => Err(TooLarge::Bytes(
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
        assert_eq!(array_bytes(&[1 << 62, 0], 4), Ok(0));
        assert_eq!(
            array_bytes(&[1 << 62, 0, 1 << 62], 4),
            Err(TooLarge::Extent)
        );
        assert_eq!(element_count(&[1 << 62, 1 << 62, 0], 8), Ok(0));
        assert_eq!(element_count(&[1 << 20, 1 << 20], 4), Ok(1 << 40));
        assert!(element_count(&[1 << 32, 1 << 32], 1).is_err());
    }

    #[test]
    fn byte_counts_parse_as_people_write_them() {
        assert_eq!(parse_bytes("1000"), Some(1000));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("8G"), Some(8 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_bytes("2 kb"), Some(2048));
        assert_eq!(parse_bytes("abc"), None);
        assert_eq!(parse_bytes("-3"), None);
        assert_eq!(parse_bytes("5X"), None);
    }
}
