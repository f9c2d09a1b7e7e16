//! `dot_general`: batched matrix products via the system BLAS (`blas.rs`) or
//! `matrixmultiply` for floats, and plain loops for integers.
//!
//! Operands are viewed as `[batch..., free..., contract...]` (lhs) and
//! `[batch..., contract..., free...]` (rhs). When the free and contracting
//! axes of an operand each collapse to a single strided axis, gemm reads the
//! operand in place (transposed operands included); otherwise it is copied
//! into that order first.
//!
//! `matmul_kernel` runs a product with an elementwise epilogue
//! (`crate::kernel::MatmulKernel`): the product is computed by the same gemm
//! calls as `dot_general` (so it has the same bits), and the epilogue reads
//! each thread's rows of it right after they are computed.

use super::elem::{alloc, alloc_overwrite, elems, Elem};
use super::fused::{Epilogue, KFloat};
use super::scalar::Arith;
use crate::interrupt::Poll;
use crate::kernel::MatmulKernel;
use crate::{strides_of, Array, Buffer, DType, DotDims, Shape};
// 16-bit floats compute in f32 through `Dispatch` (its methods are the trait's).
use crate::Backend as _;
use rayon::prelude::*;

/// One operand seen as `batch x rows x cols` with element strides.
struct MatView {
    batch_shape: Shape,
    batch_strides: Vec<isize>,
    row_stride: isize,
    col_stride: isize,
}

/// The stride of a group of axes that collapses to one strided axis, if it does.
fn group_stride(shape: &[usize], strides: &[usize], group: &[usize]) -> Option<isize> {
    let dims: Vec<usize> = group.iter().copied().filter(|&d| shape[d] != 1).collect();
    for w in dims.windows(2) {
        if strides[w[0]] != strides[w[1]] * shape[w[1]] {
            return None;
        }
    }
    Some(dims.last().map_or(1, |&d| strides[d] as isize))
}

/// View `a` as `batch x (rows group) x (cols group)`, copying when the groups
/// do not collapse. Returns the (possibly new) array and its view.
fn mat_view(a: &Array, batch: &[usize], rows: &[usize], cols: &[usize]) -> (Array, MatView) {
    let st = strides_of(a.shape());
    let batch_shape: Shape = batch.iter().map(|&d| a.shape()[d]).collect();
    if let (Some(rs), Some(cs)) = (
        group_stride(a.shape(), &st, rows),
        group_stride(a.shape(), &st, cols),
    ) {
        let batch_strides = batch.iter().map(|&d| st[d] as isize).collect();
        return (
            a.clone(),
            MatView {
                batch_shape,
                batch_strides,
                row_stride: rs,
                col_stride: cs,
            },
        );
    }
    let perm: Vec<usize> = batch.iter().chain(rows).chain(cols).copied().collect();
    let t = super::shape::transpose(a, &perm);
    let ncols: usize = cols.iter().map(|&d| a.shape()[d]).product();
    let tst = strides_of(t.shape());
    let batch_strides = (0..batch.len()).map(|i| tst[i] as isize).collect();
    (
        t,
        MatView {
            batch_shape,
            batch_strides,
            row_stride: ncols as isize,
            col_stride: 1,
        },
    )
}

/// Element offset of batch number `b` in a view.
fn batch_offset(v: &MatView, mut b: usize) -> isize {
    let mut off = 0;
    for d in (0..v.batch_shape.len()).rev() {
        off += (b % v.batch_shape[d]) as isize * v.batch_strides[d];
        b /= v.batch_shape[d];
    }
    off
}

struct Problem {
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    out_shape: Shape,
    lhs: (Array, MatView),
    rhs: (Array, MatView),
}

fn plan(a: &Array, b: &Array, dims: &DotDims) -> Problem {
    assert_eq!(
        dims.lhs_batch.len(),
        dims.rhs_batch.len(),
        "dot_general batch dims differ in number"
    );
    assert_eq!(
        dims.lhs_contract.len(),
        dims.rhs_contract.len(),
        "dot_general contracting dims differ in number"
    );
    for (&l, &r) in dims.lhs_batch.iter().zip(&dims.rhs_batch) {
        assert_eq!(a.shape()[l], b.shape()[r], "dot_general batch sizes differ");
    }
    for (&l, &r) in dims.lhs_contract.iter().zip(&dims.rhs_contract) {
        assert_eq!(
            a.shape()[l],
            b.shape()[r],
            "dot_general contracting sizes differ"
        );
    }
    let free = |arr: &Array, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..arr.ndim())
            .filter(|d| !batch.contains(d) && !contract.contains(d))
            .collect()
    };
    let lf = free(a, &dims.lhs_batch, &dims.lhs_contract);
    let rf = free(b, &dims.rhs_batch, &dims.rhs_contract);
    let size =
        |arr: &Array, axes: &[usize]| -> usize { axes.iter().map(|&d| arr.shape()[d]).product() };
    let out_shape: Shape = dims
        .lhs_batch
        .iter()
        .chain(&lf)
        .map(|&d| a.shape()[d])
        .chain(rf.iter().map(|&d| b.shape()[d]))
        .collect();
    Problem {
        batch: size(a, &dims.lhs_batch),
        m: size(a, &lf),
        k: size(a, &dims.lhs_contract),
        n: size(b, &rf),
        out_shape,
        lhs: mat_view(a, &dims.lhs_batch, &lf, &dims.lhs_contract),
        rhs: mat_view(b, &dims.rhs_batch, &dims.rhs_contract, &rf),
    }
}

/// Calls matrixmultiply's gemm for one element type.
trait Gemm: Elem + super::blas::BlasElem {
    /// `c = a @ b` for one batch; `c` is row-major `m x n`.
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: &[Self],
        ao: isize,
        ars: isize,
        acs: isize,
        b: &[Self],
        bo: isize,
        brs: isize,
        bcs: isize,
        c: &mut [Self],
    );
}

macro_rules! impl_gemm {
    ($t:ty, $f:path) => {
        impl Gemm for $t {
            fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: &[$t],
                ao: isize,
                ars: isize,
                acs: isize,
                b: &[$t],
                bo: isize,
                brs: isize,
                bcs: isize,
                c: &mut [$t],
            ) {
                assert!(c.len() == m * n);
                // Every element the strides reach must lie inside the slices.
                let last = |o: isize, r: usize, rs: isize, cc: usize, cs: isize| {
                    o + (r as isize - 1) * rs.max(0) + (cc as isize - 1) * cs.max(0)
                };
                assert!(
                    ao >= 0 && (last(ao, m, ars, k, acs) as usize) < a.len(),
                    "gemm lhs view out of bounds"
                );
                assert!(
                    bo >= 0 && (last(bo, k, brs, n, bcs) as usize) < b.len(),
                    "gemm rhs view out of bounds"
                );
                assert!(ars >= 0 && acs >= 0 && brs >= 0 && bcs >= 0);
                // SAFETY: the asserts above keep every strided read inside `a`
                // and `b` (strides are non-negative, m, k, n >= 1 here), and `c`
                // is exactly m x n row-major, written through strides (n, 1).
                unsafe {
                    $f(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr().offset(ao),
                        ars,
                        acs,
                        b.as_ptr().offset(bo),
                        brs,
                        bcs,
                        0.0,
                        c.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
        }
    };
}
impl_gemm!(f32, matrixmultiply::sgemm);
impl_gemm!(f64, matrixmultiply::dgemm);

/// How a float product is computed; `dot_float` and `matmul_kernel` make
/// the same choices, so an epilogue sees the values eager mode computes.
struct Strategy {
    /// Many small products: batches spread over threads (gemm itself only
    /// threads large products).
    parallel: bool,
    /// BLAS (where there is one) for products big enough to amortise its call.
    use_blas: bool,
    /// Row panels over the rayon threads, one gemm call each: always for
    /// matrixmultiply, and for a BLAS that runs each call on one thread
    /// (OpenBLAS as `blas` loads it), so products and elementwise kernels
    /// share one thread pool.
    split: bool,
}

fn strategy(p: &Problem) -> Strategy {
    let flops = p.m * p.k * p.n;
    let parallel = flops < 128 * 128 * 128 && p.batch * flops >= 1 << 16;
    let threads = super::elem::threads();
    Strategy {
        parallel,
        use_blas: !parallel && flops >= 1 << 16,
        split: threads > 1
            && !parallel
            && p.m >= 2 * threads
            && flops >= 1 << 21
            && super::blas::split_by_caller(),
    }
}

/// Rows of one product into `c`: through the BLAS when `use_blas` and it
/// accepts them, else matrixmultiply; both polled for interrupts.
#[allow(clippy::too_many_arguments)]
fn product_rows<T: Gemm>(
    stop: &Poll,
    use_blas: bool,
    mkn: (usize, usize, usize),
    a: &[T],
    av: (isize, isize, isize),
    b: &[T],
    bv: (isize, isize, isize),
    c: &mut [T],
) {
    if !(use_blas && blas_polled(stop, mkn, a, av, b, bv, c)) {
        gemm_polled(stop, mkn, a, av, b, bv, c)
    }
}

/// A product of more multiply-adds than this is computed in row panels with
/// an interrupt poll between them, so Ctrl-C stops it within tens of
/// milliseconds. Each panel packs the rhs again: a few percent of a product
/// this size, nothing for the smaller ones, which take one call.
const POLL_FLOPS: usize = 1 << 31;

/// `T::gemm` of an `m x k x n` product, in row panels of about half
/// `POLL_FLOPS` when it is larger; at an interrupt the remaining panels are
/// skipped (the caller discards the unfinished product).
#[allow(clippy::too_many_arguments)]
fn gemm_polled<T: Gemm>(
    stop: &Poll,
    (m, k, n): (usize, usize, usize),
    a: &[T],
    (ao, ars, acs): (isize, isize, isize),
    b: &[T],
    (bo, brs, bcs): (isize, isize, isize),
    c: &mut [T],
) {
    if m.saturating_mul(k).saturating_mul(n) <= POLL_FLOPS {
        T::gemm(m, k, n, a, ao, ars, acs, b, bo, brs, bcs, c);
        return;
    }
    let rows = (POLL_FLOPS / 2 / (k * n).max(1)).max(1);
    in_panels(stop, c, n, rows, (ao, ars), |_, pm, a_off, part| {
        T::gemm(pm, k, n, a, a_off, ars, acs, b, bo, brs, bcs, part);
        true
    });
}

/// `f(index, rows, lhs offset, panel)` on the panels of `rows` rows of the
/// output `c` (`n` columns), with an interrupt poll before each: at an
/// interrupt the rest is skipped (true: the caller discards the product);
/// false as soon as `f` declines.
fn in_panels<T>(
    stop: &Poll,
    c: &mut [T],
    n: usize,
    rows: usize,
    (ao, ars): (isize, isize),
    mut f: impl FnMut(usize, usize, isize, &mut [T]) -> bool,
) -> bool {
    for (i, part) in c.chunks_mut(rows * n).enumerate() {
        if stop.requested() {
            return true;
        }
        if !f(i, part.len() / n, ao + (i * rows) as isize * ars, part) {
            return false;
        }
    }
    true
}

/// `blas::gemm` (false where it declines, having written nothing), in row
/// panels with interrupt polls for products beyond twice `POLL_FLOPS` (the
/// BLAS is faster, so its panels are larger).
#[allow(clippy::too_many_arguments)]
fn blas_polled<T: Gemm>(
    stop: &Poll,
    (m, k, n): (usize, usize, usize),
    a: &[T],
    (ao, ars, acs): (isize, isize, isize),
    b: &[T],
    (bo, brs, bcs): (isize, isize, isize),
    c: &mut [T],
) -> bool {
    if m.saturating_mul(k).saturating_mul(n) <= 2 * POLL_FLOPS {
        return super::blas::gemm(m, k, n, a, ao, ars, acs, b, bo, brs, bcs, c);
    }
    let rows = (POLL_FLOPS / (k * n).max(1)).max(1);
    in_panels(stop, c, n, rows, (ao, ars), |i, pm, a_off, part| {
        if super::blas::gemm(pm, k, n, a, a_off, ars, acs, b, bo, brs, bcs, part) {
            return true;
        }
        // A shorter last panel the BLAS declines (one row, say).
        if i > 0 {
            T::gemm(pm, k, n, a, a_off, ars, acs, b, bo, brs, bcs, part);
        }
        i > 0
    })
}

fn dot_float<T: Gemm>(p: &Problem) -> Vec<T> {
    if p.k == 0 {
        return alloc::<T>(p.batch * p.m * p.n);
    }
    // gemm with beta = 0 never reads the output, so stale contents are fine.
    let mut out = alloc_overwrite::<T>(p.batch * p.m * p.n);
    if out.is_empty() {
        return out;
    }
    let (la, lv) = (&p.lhs.0, &p.lhs.1);
    let (ra, rv) = (&p.rhs.0, &p.rhs.1);
    let (ad, bd) = (&*elems::<T>(la), &*elems::<T>(ra));
    let Strategy {
        parallel,
        use_blas,
        split,
    } = strategy(p);
    let stop = Poll::here();
    let one = |bi: usize, c: &mut [T]| {
        if stop.requested() {
            return;
        }
        let (ao, bo) = (batch_offset(lv, bi), batch_offset(rv, bi));
        let (ars, acs, brs, bcs) = (lv.row_stride, lv.col_stride, rv.row_stride, rv.col_stride);
        let (mkn, av, bv) = ((p.m, p.k, p.n), (ao, ars, acs), (bo, brs, bcs));
        // Each gemm call runs on one thread (a pool of its own would
        // compete with rayon's and with device workers): large products
        // are split into row panels over the rayon threads.
        if split {
            let rows = p.m.div_ceil(super::elem::threads());
            c.par_chunks_mut(rows * p.n)
                .enumerate()
                .for_each(|(i, part)| {
                    let m = part.len() / p.n;
                    let av = (ao + (i * rows) as isize * ars, ars, acs);
                    product_rows(&stop, use_blas, (m, p.k, p.n), ad, av, bd, bv, part)
                });
            return;
        }
        product_rows(&stop, use_blas, mkn, ad, av, bd, bv, c)
    };
    for_each_batch(&mut out, p, parallel, one);
    out
}

/// Run a matrix product with its epilogue (`MatmulKernel`) on the operands
/// `lhs`, `rhs`, then the epilogue's other inputs; returns its outputs.
pub fn matmul_kernel(mk: &MatmulKernel, inputs: Vec<Array>) -> Vec<Array> {
    assert!(inputs.len() >= 2, "a matrix product has two operands");
    assert!(mk.is_well_formed(), "malformed matmul kernel:\n{mk}");
    let mut inputs = inputs.into_iter();
    let (a, b) = (inputs.next().unwrap(), inputs.next().unwrap());
    let others: Vec<Array> = inputs.collect();
    match mk.epilogue.dtype {
        DType::F32 => dot_epilogue::<f32>(mk, &a, &b, others),
        DType::F64 => dot_epilogue::<f64>(mk, &a, &b, others),
        d => panic!("matmul kernels compute in float32 or float64, not {d}"),
    }
}

/// One panel's outputs: a slice of each store.
type PanelStores<'a, T> = Vec<&'a mut [T]>;

/// Cut the stores' range `[start, start + len)` into chunks of `chunk`
/// elements, one `PanelStores` per chunk.
fn panel_stores<T>(
    stores: &mut [Vec<T>],
    start: usize,
    len: usize,
    chunk: usize,
) -> Vec<PanelStores<'_, T>> {
    let mut out: Vec<PanelStores<T>> = (0..len.div_ceil(chunk)).map(|_| Vec::new()).collect();
    for s in stores.iter_mut() {
        for (t, c) in s[start..start + len].chunks_mut(chunk).enumerate() {
            out[t].push(c);
        }
    }
    out
}

fn dot_epilogue<T: Gemm + KFloat>(
    mk: &MatmulKernel,
    a: &Array,
    b: &Array,
    others: Vec<Array>,
) -> Vec<Array> {
    assert!(
        a.dtype() == T::DTYPE && b.dtype() == T::DTYPE,
        "matmul operands"
    );
    let p = plan(a, b, &mk.dims);
    assert_eq!(&p.out_shape[..], mk.product_shape(), "matmul kernel shape");
    let (epi, mut stores) = Epilogue::<T>::new(&mk.epilogue, mk.product, others);
    let mn = p.m * p.n;
    if mn > 0 {
        run_dot_epilogue(&p, &epi, &mut stores);
    }
    stores
        .into_iter()
        .enumerate()
        .map(|(j, v)| Array::new(&mk.output_shape(j), T::into_buffer(v)))
        .collect()
}

/// The product is computed by the gemm calls `dot_float` makes (so its
/// values are eager mode's, bit for bit), into one buffer that is recycled
/// afterwards. Where those calls are per thread — row panels of a large
/// matrixmultiply product, batches of many small ones — each thread applies
/// the epilogue to its part right after computing it, while it is in cache;
/// after a single call (a small product, or a BLAS that threads itself) the
/// epilogue runs over row panels on all cores.
///
/// Why not panels small enough for L2: each gemm call packs the whole rhs
/// again. 64-row panels made a 1024^3 matrixmultiply product with a tanh
/// epilogue about 15% slower than the unfused pair, and per-panel sgemm
/// calls were slower too; what a panel in L2 saves (one write and one read
/// of the product) is a few percent of a product that size.
fn run_dot_epilogue<T: Gemm + KFloat>(p: &Problem, epi: &Epilogue<T>, stores: &mut [Vec<T>]) {
    let (m, n) = (p.m, p.n);
    let mn = m * n;
    let (la, lv) = (&p.lhs.0, &p.lhs.1);
    let (ra, rv) = (&p.rhs.0, &p.rhs.1);
    let (ad, bd) = (&*elems::<T>(la), &*elems::<T>(ra));
    let st = strategy(p);
    let threads = super::elem::threads();
    // Rows [r0, r0 + c.len() / n) of batch `bi` of the product into `c`,
    // as `dot_float` computes them.
    let stop = Poll::here();
    let gemm_rows = |bi: usize, r0: usize, c: &mut [T]| {
        if stop.requested() {
            return;
        }
        if p.k == 0 {
            c.fill(<T as Arith>::ZERO);
            return;
        }
        let (ao, bo) = (batch_offset(lv, bi), batch_offset(rv, bi));
        let (ars, acs, brs, bcs) = (lv.row_stride, lv.col_stride, rv.row_stride, rv.col_stride);
        let a_off = ao + r0 as isize * ars;
        let mkn = (c.len() / n, p.k, n);
        let (av, bv) = ((a_off, ars, acs), (bo, brs, bcs));
        product_rows(&stop, st.use_blas, mkn, ad, av, bd, bv, c)
    };
    // The epilogue over a computed batch `c` of the product, on all cores.
    let epilogue_all = |c: &[T], base: usize, stores: &mut [Vec<T>]| {
        let rows = if threads > 1 && mn >= super::elem::PAR_MIN_LEN {
            m.div_ceil(threads * 4)
        } else {
            m
        };
        let outs = panel_stores(stores, base, mn, rows * n);
        let run = |(i, (cc, mut out)): (usize, (&[T], PanelStores<T>))| {
            epi.run_panel(cc, base + i * rows * n, &mut out);
        };
        if outs.len() > 1 {
            c.par_chunks(rows * n).zip(outs).enumerate().for_each(run);
        } else {
            c.chunks(rows * n).zip(outs).enumerate().for_each(run);
        }
    };
    // gemm with beta = 0 never reads the output, so stale contents are fine.
    let mut c = alloc_overwrite::<T>(p.batch * mn);
    if p.batch > 1 && st.parallel && threads > 1 {
        // Many small products: each batch's product and epilogue on one thread.
        let outs = panel_stores(stores, 0, p.batch * mn, mn);
        c.par_chunks_mut(mn)
            .zip(outs)
            .enumerate()
            .for_each(|(bi, (cb, mut out))| {
                gemm_rows(bi, 0, cb);
                epi.run_panel(cb, bi * mn, &mut out);
            });
    } else {
        for (bi, cb) in c.chunks_mut(mn).enumerate() {
            let base = bi * mn;
            if st.split {
                // Row panels, one per thread, as `dot_float`; each thread
                // runs the epilogue on its panel while it is in cache.
                let rows = m.div_ceil(threads);
                let outs = panel_stores(stores, base, mn, rows * n);
                cb.par_chunks_mut(rows * n)
                    .zip(outs)
                    .enumerate()
                    .for_each(|(i, (cc, mut out))| {
                        gemm_rows(bi, i * rows, cc);
                        epi.run_panel(cc, base + i * rows * n, &mut out);
                    });
            } else {
                gemm_rows(bi, 0, cb);
                epilogue_all(cb, base, stores);
            }
        }
    }
    // A large product's buffer goes back to the pool, as the eager
    // product's does once the epilogue has read it.
    super::elem::recycle(&mut T::into_buffer(c));
}

/// Integer product with wrapping arithmetic: i-k-j loop order so the inner
/// loop streams a row of the rhs and a row of the output.
fn dot_int<T: Elem + Arith>(p: &Problem) -> Vec<T> {
    let mut out = alloc::<T>(p.batch * p.m * p.n);
    if out.is_empty() || p.k == 0 {
        return out;
    }
    let (la, lv) = (&p.lhs.0, &p.lhs.1);
    let (ra, rv) = (&p.rhs.0, &p.rhs.1);
    let (ad, bd) = (&*elems::<T>(la), &*elems::<T>(ra));
    let one = |bi: usize, c: &mut [T]| {
        let (ao, bo) = (batch_offset(lv, bi), batch_offset(rv, bi));
        let mut brow: Vec<T> = vec![T::ZERO; p.n];
        for kk in 0..p.k {
            for (j, x) in brow.iter_mut().enumerate() {
                *x = bd[(bo + kk as isize * rv.row_stride + j as isize * rv.col_stride) as usize];
            }
            for i in 0..p.m {
                let aik =
                    ad[(ao + i as isize * lv.row_stride + kk as isize * lv.col_stride) as usize];
                for (o, &y) in c[i * p.n..(i + 1) * p.n].iter_mut().zip(&brow) {
                    *o = T::add(*o, T::mul(aik, y));
                }
            }
        }
    };
    for_each_batch(&mut out, p, p.batch * p.m * p.k * p.n >= 1 << 16, one);
    out
}

/// Run `one(batch index, output block)` for every batch, on threads if asked
/// and there is more than one batch.
fn for_each_batch<T: Send>(
    out: &mut [T],
    p: &Problem,
    parallel: bool,
    one: impl Fn(usize, &mut [T]) + Sync,
) {
    if p.batch > 1 && parallel && super::elem::threads() > 1 {
        out.par_chunks_mut(p.m * p.n)
            .enumerate()
            .for_each(|(bi, c)| one(bi, c));
    } else {
        for (bi, c) in out.chunks_mut(p.m * p.n).enumerate() {
            one(bi, c);
        }
    }
}

pub fn dot_general(a: &Array, b: &Array, dims: &DotDims) -> Array {
    assert_eq!(a.dtype(), b.dtype(), "dot_general on mixed dtypes");
    if a.dtype() == DType::Bool {
        // Logical: any(a & b) over the contracting axes.
        let ai = super::elementwise::convert(a, DType::I32);
        let bi = super::elementwise::convert(b, DType::I32);
        return super::elementwise::convert(&dot_general(&ai, &bi, dims), DType::Bool);
    }
    if a.dtype().computed_as().is_some() {
        return crate::backend::Dispatch(&super::Cpu).dot_general(a, b, dims);
    }
    if a.dtype() == DType::C64 {
        return crate::complex::dot_general(a, b, dims);
    }
    let p = plan(a, b, dims);
    let buf = match a.dtype() {
        DType::F32 => Buffer::F32(dot_float::<f32>(&p)),
        DType::F64 => Buffer::F64(dot_float::<f64>(&p)),
        DType::I32 => Buffer::I32(dot_int::<i32>(&p)),
        DType::I64 => Buffer::I64(dot_int::<i64>(&p)),
        DType::U32 => Buffer::U32(dot_int::<u32>(&p)),
        DType::Bool
        | DType::BF16
        | DType::F16
        | DType::C64
        | DType::I8
        | DType::I16
        | DType::U8
        | DType::U16 => {
            unreachable!("handled above")
        }
    };
    Array::new(&p.out_shape, buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Products large enough for the BLAS path, with each operand row-major
    /// or transposed in place, against a float64 triple loop; and the BLAS
    /// and matrixmultiply paths against each other where a BLAS is loaded.
    #[test]
    fn large_products_in_every_layout() {
        let (m, k, n) = (67, 129, 45);
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let a = Array::new(&[m, k], Buffer::F32(values(m * k, 1)));
            let b = Array::new(&[k, n], Buffer::F32(values(k * n, 2)));
            // A transposed operand is stored [k, m] and contracted over axis 0.
            let (a_op, lc) = if ta {
                (super::super::shape::transpose(&a, &[1, 0]), 0)
            } else {
                (a.clone(), 1)
            };
            let (b_op, rc) = if tb {
                (super::super::shape::transpose(&b, &[1, 0]), 1)
            } else {
                (b.clone(), 0)
            };
            let dims = DotDims {
                lhs_batch: vec![],
                rhs_batch: vec![],
                lhs_contract: vec![lc],
                rhs_contract: vec![rc],
            };
            let got = dot_general(&a_op, &b_op, &dims);
            assert_eq!(got.shape(), &[m, n]);
            let (av, bv) = (&*elems::<f32>(&a), &*elems::<f32>(&b));
            let gv = &*elems::<f32>(&got);
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|t| av[i * k + t] as f64 * bv[t * n + j] as f64)
                        .sum();
                    let err = (gv[i * n + j] as f64 - want).abs();
                    assert!(
                        err < 1e-4,
                        "({ta}, {tb}) at {i},{j}: {} vs {want}",
                        gv[i * n + j]
                    );
                }
            }
            if super::super::blas::get().is_some() {
                let p = plan(&a_op, &b_op, &dims);
                let (lv, rv) = (&p.lhs.1, &p.rhs.1);
                let mut c = vec![0f32; m * n];
                <f32 as Gemm>::gemm(
                    m,
                    k,
                    n,
                    &elems::<f32>(&p.lhs.0),
                    0,
                    lv.row_stride,
                    lv.col_stride,
                    &elems::<f32>(&p.rhs.0),
                    0,
                    rv.row_stride,
                    rv.col_stride,
                    &mut c,
                );
                for (x, y) in c.iter().zip(gv) {
                    assert!((x - y).abs() < 1e-4);
                }
            }
        }
    }
}
