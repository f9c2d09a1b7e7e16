//! An optional system BLAS (OpenBLAS), found and loaded at run time, for
//! large float matrix products; `linalg` falls back to `matrixmultiply`.
//!
//! Why load a C library at all: on the 2-core AVX-512 machines we measure on,
//! `matrixmultiply` reaches about 60% of the FMA peak and the pure-Rust `gemm`
//! crates less, while OpenBLAS (what NumPy itself ships) reaches 85-90%.
//! Loading it with `dlopen` instead of linking keeps the build free of system
//! libraries, as cudarc does for CUDA: a machine without OpenBLAS builds and
//! runs the same code, only its large products are slower.
//!
//! `ARR_BLAS=off` (or `0`, `none`) turns it off; `ARR_BLAS=/path/lib.so`
//! names the library (it must export the LP64 `cblas_sgemm`/`cblas_dgemm`).
//! OpenBLAS's kernels are chosen from the CPU's features (`core_type`), not
//! from the CPU models the installed release happens to know.

use std::sync::OnceLock;

type CblasGemm<T> = unsafe extern "C" fn(
    i32, // order
    i32, // trans a
    i32, // trans b
    i32, // m
    i32, // n
    i32, // k
    T,   // alpha
    *const T,
    i32, // lda
    *const T,
    i32, // ldb
    T,   // beta
    *mut T,
    i32, // ldc
);

const ROW_MAJOR: i32 = 101;
const NO_TRANS: i32 = 111;
const TRANS: i32 = 112;

/// A loaded BLAS: the library stays open for as long as the process runs.
pub struct Blas {
    _lib: libloading::Library,
    sgemm: CblasGemm<f32>,
    dgemm: CblasGemm<f64>,
    /// What was loaded, for reports: "OpenBLAS 0.3.21 ... (Cooperlake)".
    pub name: String,
    /// The library runs each call on the calling thread (OpenBLAS, set to
    /// one thread when it loads), so callers may thread the work
    /// themselves; false for a library that threads itself.
    pub single_threaded: bool,
}

/// Library names tried in order when `ARR_BLAS` does not name one. Only
/// OpenBLAS: a bare `libblas.so.3` may be the slow reference implementation.
const CANDIDATES: &[&str] = &[
    "libopenblas.so.0",
    "libopenblas.so",
    "libopenblas.0.dylib",
    "libopenblas.dylib",
];

fn load(path: &str) -> Option<Blas> {
    // SAFETY: loading a shared library runs its initialisers; OpenBLAS's only
    // set up its thread pool. The symbols are looked up with the C signatures
    // that the CBLAS standard gives them (LP64: 32-bit integers), and the
    // library is kept alive in `Blas` for as long as the pointers are used.
    unsafe {
        let lib = libloading::Library::new(path).ok()?;
        let sgemm = *lib.get::<CblasGemm<f32>>(b"cblas_sgemm\0").ok()?;
        let dgemm = *lib.get::<CblasGemm<f64>>(b"cblas_dgemm\0").ok()?;
        let text = |sym: &[u8]| -> Option<String> {
            let f = lib
                .get::<unsafe extern "C" fn() -> *const std::ffi::c_char>(sym)
                .ok()?;
            let p = f();
            (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        // One thread pool for every kernel: OpenBLAS's own threads spin
        // after each call (tens of milliseconds), and on 2 cores they spun
        // against rayon's elementwise workers for ~40% of a transformer
        // step. With one thread per call, `linalg` splits products into
        // row panels over rayon's threads, as it does for matrixmultiply,
        // and device workers may call it at once.
        let single_threaded =
            match lib.get::<unsafe extern "C" fn(i32)>(b"openblas_set_num_threads\0") {
                Ok(set) => {
                    set(1);
                    true
                }
                Err(_) => false,
            };
        let name = match (
            text(b"openblas_get_config\0"),
            text(b"openblas_get_corename\0"),
        ) {
            (Some(config), Some(core)) => {
                let version = config.split_whitespace().take(2).collect::<Vec<_>>();
                format!("{} ({core})", version.join(" "))
            }
            _ => path.to_string(),
        };
        Some(Blas {
            _lib: lib,
            sgemm,
            dgemm,
            name,
            single_threaded,
        })
    }
}

/// The OpenBLAS kernel family this CPU's features call for: the AVX-512
/// kernels ("SkylakeX") with AVX-512 F/BW/DQ/VL, the AVX2 ones ("Haswell")
/// with AVX2 and FMA; `None` elsewhere (OpenBLAS decides).
///
/// Why: OpenBLAS picks its kernels from the CPU *model* it knows, and a
/// distribution's release falls behind new processors — Debian's 0.3.21
/// takes a recent Xeon for an unknown CPU and runs its SSE3 ("Prescott")
/// kernels, 7x slower on a 1024² product (68 ms against 7.6 ms with the
/// AVX-512 kernels on the same machine). Features, not models, say which
/// kernels the CPU runs; OpenBLAS's own DYNAMIC_ARCH builds take the
/// choice from `OPENBLAS_CORETYPE`, read once when the library loads.
pub fn core_type() -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl");
        if avx512 {
            return Some("SkylakeX");
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Some("Haswell");
        }
    }
    None
}

/// Set `OPENBLAS_CORETYPE` from the CPU's features (`core_type`) unless the
/// user set it: before OpenBLAS loads, and best before any thread starts
/// (the binary calls it first thing; `get` calls it too, for other users
/// of this crate).
pub fn choose_core_type() {
    if std::env::var_os("OPENBLAS_CORETYPE").is_none() {
        if let Some(core) = core_type() {
            std::env::set_var("OPENBLAS_CORETYPE", core);
        }
    }
}

/// The process's BLAS, loaded on first use; `None` when there is none or it is turned off.
pub fn get() -> Option<&'static Blas> {
    static BLAS: OnceLock<Option<Blas>> = OnceLock::new();
    BLAS.get_or_init(|| match std::env::var("ARR_BLAS") {
        Ok(v) if matches!(v.as_str(), "off" | "0" | "none" | "") => None,
        Ok(path) => load(&path),
        Err(_) => {
            choose_core_type();
            CANDIDATES.iter().find_map(|p| load(p))
        }
    })
    .as_ref()
}

/// Whether large products should be split over rayon's threads before they
/// reach the BLAS (it runs each call on one thread), or handed to it whole.
pub fn split_by_caller() -> bool {
    get().is_none_or(|b| b.single_threaded)
}

/// Which matrix-product implementation large float products use.
pub fn backend_name() -> String {
    match get() {
        Some(b) => b.name.clone(),
        None => "matrixmultiply".to_string(),
    }
}

/// How CBLAS reads an `r x c` operand with element strides `(rs, cs)`:
/// row-major as is (`NoTrans`, leading dimension `rs`) or as the transpose of
/// a row-major `c x r` (`Trans`, leading dimension `cs`). `None` when neither
/// stride is 1 or the other is too small (broadcast rows, say).
fn layout(r: usize, c: usize, rs: isize, cs: isize) -> Option<(i32, i32)> {
    // A stride along an axis of length 1 is never used: pick the one CBLAS wants.
    let cs = if c == 1 { 1 } else { cs };
    let rs = if r == 1 { c.max(1) as isize } else { rs };
    let fits = |v: isize, min: usize| v >= min.max(1) as isize && v <= i32::MAX as isize;
    if cs == 1 && fits(rs, c) {
        return Some((NO_TRANS, rs as i32));
    }
    if rs == 1 && fits(cs, r) {
        return Some((TRANS, cs as i32));
    }
    None
}

/// Element types CBLAS multiplies.
pub trait BlasElem: Sized {
    fn gemm_fn(blas: &Blas) -> CblasGemm<Self>;
    const ONE: Self;
    const ZERO: Self;
}

impl BlasElem for f32 {
    fn gemm_fn(blas: &Blas) -> CblasGemm<f32> {
        blas.sgemm
    }
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
}

impl BlasElem for f64 {
    fn gemm_fn(blas: &Blas) -> CblasGemm<f64> {
        blas.dgemm
    }
    const ONE: f64 = 1.0;
    const ZERO: f64 = 0.0;
}

/// `c = a @ b` (one batch) through BLAS, with `a` (`m x k`) and `b` (`k x n`)
/// read through element strides from the given offsets and `c` row-major
/// `m x n`. Returns false (touching nothing) when there is no BLAS or the
/// strides are not ones CBLAS can express; the caller then uses its fallback.
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: BlasElem>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    ao: isize,
    ars: isize,
    acs: isize,
    b: &[T],
    bo: isize,
    brs: isize,
    bcs: isize,
    c: &mut [T],
) -> bool {
    let Some(blas) = get() else {
        return false;
    };
    // Device workers run several products at once; a library's own thread
    // pool, shared by all of them, is slower there than a GEMM per worker.
    if !blas.single_threaded && crate::devices::on_device_worker() {
        return false;
    }
    let small = |v: usize| v >= 1 && v <= i32::MAX as usize;
    if !(small(m) && small(k) && small(n) && c.len() == m * n) {
        return false;
    }
    let (Some((ta, lda)), Some((tb, ldb))) = (layout(m, k, ars, acs), layout(k, n, brs, bcs))
    else {
        return false;
    };
    // The last element each operand's layout reaches must lie inside its slice.
    let reach = |o: isize, r: usize, c: usize, rs: isize, cs: isize| {
        o + (r as isize - 1) * rs + (c as isize - 1) * cs
    };
    let a_last = reach(ao, m, k, ars, acs);
    let b_last = reach(bo, k, n, brs, bcs);
    if ao < 0 || bo < 0 || a_last as usize >= a.len() || b_last as usize >= b.len() {
        return false;
    }
    // SAFETY: `layout` checked that one stride of each operand is 1 and the
    // leading dimension covers the other extent, so CBLAS reads exactly the
    // elements `reach` bounds, which lie inside `a` and `b`; `c` is exactly
    // `m x n` with leading dimension `n`. beta = 0, so `c` is only written.
    unsafe {
        (T::gemm_fn(blas))(
            ROW_MAJOR,
            ta,
            tb,
            m as i32,
            n as i32,
            k as i32,
            T::ONE,
            a.as_ptr().offset(ao),
            lda,
            b.as_ptr().offset(bo),
            ldb,
            T::ZERO,
            c.as_mut_ptr(),
            n as i32,
        );
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        // Row-major 3x4, its transpose view 4x3, a row vector, a broadcast.
        assert_eq!(layout(3, 4, 4, 1), Some((NO_TRANS, 4)));
        assert_eq!(layout(4, 3, 1, 4), Some((TRANS, 4)));
        assert_eq!(layout(1, 5, 0, 1), Some((NO_TRANS, 5)));
        assert_eq!(layout(3, 4, 0, 1), None);
        assert_eq!(layout(3, 4, 8, 2), None);
    }
}
