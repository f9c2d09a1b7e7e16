//! The element trait that ties Rust scalar types to `Buffer` variants, plus
//! output allocation and the parallel-splitting policy shared by all kernels.
//!
//! Large buffers are recycled: when the last array holding a 4–256 MiB
//! buffer goes away it joins a small pool (at most 4 buffers, 256 MiB) that
//! the next large output reuses, which avoids the page faults of fresh
//! memory. A process may therefore keep up to 256 MiB of freed memory
//! (`Backend::release_cached_buffers` gives it back).

use crate::{Array, Buffer, DType};
use std::sync::{Arc, Mutex, Weak};

/// Outputs with at least this many elements are split across rayon threads.
pub const PAR_MIN_LEN: usize = 32 * 1024;
/// No parallel chunk is smaller than this many elements.
pub const PAR_MIN_CHUNK: usize = 16 * 1024;

/// A Rust scalar type stored in one `Buffer` variant.
pub trait Elem: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    const DTYPE: DType;
    /// The elements of a buffer of this type; panics on a dtype mismatch (a caller bug).
    fn slice(buf: &Buffer) -> &[Self];
    /// The vector of a buffer of this type, `None` on a dtype mismatch.
    fn vec_mut(buf: &mut Buffer) -> Option<&mut Vec<Self>>;
    fn into_buffer(v: Vec<Self>) -> Buffer;
    /// NaN test; always false for integers and bool.
    fn is_nan(self) -> bool;
    /// NaN for floats; the default value for other types (never used there).
    fn nan() -> Self;
}

macro_rules! impl_elem {
    ($t:ty, $variant:ident, $nan:expr, $nan_value:expr) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$variant;
            #[inline]
            fn slice(buf: &Buffer) -> &[Self] {
                match buf {
                    Buffer::$variant(v) => v,
                    other => panic!(
                        "expected a {} buffer, got {}",
                        DType::$variant,
                        other.dtype()
                    ),
                }
            }
            #[inline]
            fn vec_mut(buf: &mut Buffer) -> Option<&mut Vec<Self>> {
                match buf {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            #[inline]
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$variant(v)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                let f: fn($t) -> bool = $nan;
                f(self)
            }
            #[inline(always)]
            fn nan() -> Self {
                $nan_value
            }
        }
    };
}

impl_elem!(bool, Bool, |_| false, false);
impl_elem!(i8, I8, |_| false, 0);
impl_elem!(i16, I16, |_| false, 0);
impl_elem!(u8, U8, |_| false, 0);
impl_elem!(u16, U16, |_| false, 0);
impl_elem!(i32, I32, |_| false, 0);
impl_elem!(i64, I64, |_| false, 0);
impl_elem!(u32, U32, |_| false, 0);
impl_elem!(half::bf16, BF16, |x| x.is_nan(), half::bf16::NAN);
impl_elem!(half::f16, F16, |x| x.is_nan(), half::f16::NAN);
impl_elem!(f32, F32, |x| x.is_nan(), f32::NAN);
impl_elem!(f64, F64, |x| x.is_nan(), f64::NAN);
impl_elem!(
    crate::complex::C64,
    C64,
    |z| z.re.is_nan() || z.im.is_nan(),
    crate::complex::C64 {
        re: f32::NAN,
        im: f32::NAN
    }
);

/// Run `$body` with the type alias `$T` bound to the Rust type of `$dtype`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::C64 => {
                type $T = $crate::complex::C64;
                $body
            }
        }
    };
}

/// The elements of `a` as `[T]`: a handle on its buffer that derefs to
/// the slice. Bind it as `let v = &*elems::<T>(a);` (the handle lives as
/// long as the slice) so loops index a plain slice.
#[inline]
pub fn elems<T: Elem>(a: &Array) -> Elems<T> {
    Elems {
        buf: a.live(),
        elem: std::marker::PhantomData,
    }
}

/// A shared handle on a buffer of `T`s (see `elems`).
pub struct Elems<T> {
    buf: std::sync::Arc<Buffer>,
    elem: std::marker::PhantomData<T>,
}

impl<T: Elem> std::ops::Deref for Elems<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        T::slice(&self.buf)
    }
}

/// A fresh output of `n` default (zero) elements.
///
/// `vec![0; n]` becomes `calloc`, so large outputs get lazily zeroed pages that
/// the (parallel) writers fault in. Above 4 MiB we also ask Linux for
/// transparent huge pages, as NumPy does, which cuts page-fault cost ~500x.
pub fn alloc<T: Elem>(n: usize) -> Vec<T> {
    let v = vec![T::default(); n];
    advise_huge_pages(&v);
    v
}

/// Buffers of dropped arrays, kept for reuse by `alloc_overwrite`: one
/// pool per thread, so the device workers of a mesh (eight programs on a
/// few cores) recycle their own temporaries without contending for a lock.
///
/// A fresh large output costs the kernel a zeroing page fault per page, and
/// a mid-sized one (a model layer's activations, from 16 KiB) a `memset` by
/// `calloc` on memory the allocator recycles; a pooled one costs nothing, so
/// chains of temporaries (`x * 2 + y`), loops and the equations of a
/// compiled training step run at memory speed. Each pool is bounded to
/// `POOL_MAX_BUFFERS` buffers and `POOL_MAX_BYTES` in all; a thread's pool
/// is freed with the thread.
type Pool = Arc<Mutex<Vec<Buffer>>>;
type PoolRef = Weak<Mutex<Vec<Buffer>>>;
const POOL_MIN_BYTES: usize = 16 << 10;
const POOL_MAX_BYTES: usize = 128 << 20;
const POOL_MAX_BUFFERS: usize = 256;

/// Every thread's pool, so `release_pooled_buffers` can empty them all.
static POOLS: Mutex<Vec<PoolRef>> = Mutex::new(Vec::new());

thread_local! {
    static POOL: Pool = {
        let pool: Pool = Arc::default();
        let mut all = POOLS.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&pool));
        pool
    };
}

/// `f` on this thread's pool; `None` while the thread is exiting (its pool
/// is gone) or the pool is in use (a drop inside `f` itself).
fn with_pool<R>(f: impl FnOnce(&mut Vec<Buffer>) -> R) -> Option<R> {
    POOL.try_with(|p| p.try_lock().ok().map(|mut g| f(&mut g)))
        .ok()
        .flatten()
}

/// The bytes a buffer holds: its capacity, which a pooled buffer keeps
/// when it is reused for a shorter array.
fn byte_len(b: &Buffer) -> usize {
    crate::with_buffer!(b, v => v.capacity()) * b.dtype().size_bytes()
}

/// Whether a buffer this large is worth offering to the pool (cheap check
/// done before taking ownership in `Array::drop`).
pub(crate) fn worth_recycling(b: &Buffer) -> bool {
    (POOL_MIN_BYTES..=POOL_MAX_BYTES).contains(&byte_len(b))
}

/// Keep `buf`'s storage for reuse (leaving an empty buffer behind). The
/// oldest pooled buffers are freed to stay within the bounds.
pub(crate) fn recycle(buf: &mut Buffer) {
    if !worth_recycling(buf) {
        return;
    }
    let taken = std::mem::replace(buf, Buffer::Bool(Vec::new()));
    let evicted = with_pool(move |pool| {
        let bytes = byte_len(&taken);
        let mut evicted = Vec::new();
        while !pool.is_empty()
            && (pool.len() >= POOL_MAX_BUFFERS
                || pool.iter().map(byte_len).sum::<usize>() + bytes > POOL_MAX_BYTES)
        {
            evicted.push(pool.remove(0));
        }
        pool.push(taken);
        evicted
    });
    // Freed outside the pool's lock (a drop may recycle again).
    drop(evicted);
}

/// Every live thread's pool (taken out of the registry's lock).
fn all_pools() -> Vec<Pool> {
    POOLS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect()
}

/// Free the pooled buffers of every thread (for measurements of peak
/// memory, which must see every buffer a computation needs).
pub fn release_pooled_buffers() {
    for pool in all_pools() {
        // Taken under the lock, freed after it.
        let freed = std::mem::take(&mut *pool.lock().unwrap_or_else(|p| p.into_inner()));
        drop(freed);
    }
}

/// An output of `n` elements whose contents are unspecified (stale values
/// from a recycled buffer, or zeros): only for kernels that write every element.
pub fn alloc_overwrite<T: Elem>(n: usize) -> Vec<T> {
    let bytes = n * std::mem::size_of::<T>();
    if bytes >= POOL_MIN_BYTES {
        let found = with_pool(|pool| take_fit(pool, T::DTYPE, bytes))
            .flatten()
            .or_else(|| steal(T::DTYPE, bytes));
        if let Some(mut buf) = found {
            if let Some(v) = T::vec_mut(&mut buf) {
                let mut v = std::mem::take(v);
                // Within capacity: no reallocation, at most the difference written.
                v.resize(n, T::default());
                return v;
            }
        }
    }
    alloc(n)
}

/// The smallest pooled buffer of `dtype` that holds `bytes`, with up to
/// 50% slack so similar sizes share buffers. By capacity: a buffer reused
/// for a shorter array keeps its size for the next longer one.
fn take_fit(pool: &mut Vec<Buffer>, dtype: DType, bytes: usize) -> Option<Buffer> {
    let fits =
        |b: &Buffer| b.dtype() == dtype && (bytes..=bytes + bytes / 2).contains(&byte_len(b));
    let best = (0..pool.len())
        .filter(|&i| fits(&pool[i]))
        .min_by_key(|&i| byte_len(&pool[i]))?;
    Some(pool.remove(best))
}

/// `take_fit` from another thread's pool (one not in use right now): an
/// array often dies on another thread than the one that made it — a
/// compiled step's results are made on the device workers and dropped by
/// the caller when the next step's replace them — so those buffers would
/// otherwise pile up in one pool while the workers allocate afresh.
fn steal(dtype: DType, bytes: usize) -> Option<Buffer> {
    all_pools()
        .iter()
        .find_map(|p| take_fit(&mut *p.try_lock().ok()?, dtype, bytes))
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &[T]) {
    const HUGE: usize = 2 << 20;
    const MADV_HUGEPAGE: i32 = 14;
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let bytes = std::mem::size_of_val(v);
    if bytes < 2 * HUGE {
        return;
    }
    // madvise needs a page-aligned start; round inward to whole huge pages.
    let start = v.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE);
    let end = (start + bytes) & !(HUGE - 1);
    if end > aligned {
        // SAFETY: the range lies inside `v`'s live allocation; MADV_HUGEPAGE is
        // only a hint and never changes the contents. Failure is harmless.
        unsafe {
            madvise(
                aligned as *mut std::ffi::c_void,
                end - aligned,
                MADV_HUGEPAGE,
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_v: &[T]) {}

/// How many threads a kernel may split its work over: the rayon pool's,
/// or 1 on a device worker (several of those run at once and share the
/// cores already, so a kernel there runs on its own thread).
#[inline]
pub fn threads() -> usize {
    if crate::devices::on_device_worker() {
        1
    } else {
        rayon::current_num_threads().max(1)
    }
}

/// Chunk length for splitting `n` elements across threads, or `None` if `n`
/// is small enough to do on the calling thread.
#[inline]
pub fn par_chunk(n: usize) -> Option<usize> {
    if n < PAR_MIN_LEN {
        return None;
    }
    let threads = threads();
    if threads == 1 {
        return None;
    }
    // A few chunks per thread balances load without much scheduling overhead.
    let chunk = n.div_ceil(threads * 4).max(PAR_MIN_CHUNK);
    Some(chunk.next_multiple_of(64))
}

/// Shape `[outer, len, inner]` of `shape` around `axis`.
pub fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}
