//! The CPU executor of the kernel IR (`crate::kernel`): the iteration space
//! is cut into blocks of `BLOCK` elements; for each block every register is
//! computed over the whole block in a tight loop (so the per-element
//! functions vectorise), then folded into the reductions; an output is
//! computed straight into its store (a kernel larger than the private
//! caches streams its stores instead), and a sum's last binary operation is
//! folded as it is computed, never stored (`Layout`). No full-size
//! intermediate exists, and blocks are spread over all cores.

use super::elem::{alloc_overwrite, elems, Elem, Elems};
use super::scalar::{Arith, Float};
use crate::kernel::{Kernel, ScalarOp};
use crate::ops::{BinaryFn, BinaryKernels, UnaryFn, UnaryKernels};
use crate::{Array, BinaryOp, Buffer, DType, ReduceOp, UnaryOp};
use rayon::prelude::*;
use smallvec::SmallVec;
use std::cell::Cell;
use std::thread::LocalKey;

/// Elements per block: registers of this many floats stay in L1/L2.
const BLOCK: usize = 1024;
/// Below this many elements, one thread does all the work.
const PAR_MIN: usize = 1 << 15;
/// From this many bytes per store, a kernel streams (`Layout::stream`).
const STREAM_MIN: usize = 8 << 20;

/// The register types.
pub trait KFloat: Elem + Arith + Float + UnaryKernels + BinaryKernels {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// This thread's scratch registers of this type (`with_scratch`).
    fn scratch() -> &'static LocalKey<Cell<Vec<Self>>>;
}

thread_local! {
    static SCRATCH_F32: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    static SCRATCH_F64: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

impl KFloat for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn scratch() -> &'static LocalKey<Cell<Vec<f32>>> {
        &SCRATCH_F32
    }
}

impl KFloat for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn scratch() -> &'static LocalKey<Cell<Vec<f64>>> {
        &SCRATCH_F64
    }
}

/// Scratch registers larger than this are freed after use, not kept.
const SCRATCH_KEEP: usize = 4 << 20;

/// `f` with this thread's scratch registers: a kernel run in many small
/// pieces (a matrix product's epilogue panel by panel, a short row split
/// over threads) would otherwise allocate and zero its registers each
/// time. The scratch is taken out while in use, so a nested run (a task
/// stolen while this thread waits) starts an empty one.
fn with_scratch<T: KFloat, R>(f: impl FnOnce(&mut Vec<T>) -> R) -> R {
    let mut regs = T::scratch().try_with(Cell::take).unwrap_or_default();
    let r = f(&mut regs);
    if regs.len() * std::mem::size_of::<T>() <= SCRATCH_KEEP {
        // Gone only while the thread exits: the scratch is freed then.
        let _ = T::scratch().try_with(|c| c.set(regs));
    }
    r
}

/// Run a kernel on its inputs (in order), returning its outputs. An input
/// held nowhere else may be overwritten by an output.
pub fn run_kernel(k: &Kernel, inputs: Vec<Array>) -> Vec<Array> {
    match k.dtype {
        DType::F32 => run::<f32>(k, inputs),
        DType::F64 => run::<f64>(k, inputs),
        d => panic!("kernels compute in float32 or float64, not {d}"),
    }
}

/// An input's elements as registers read them: the array's own buffer, or
/// its bools as 0/1.
enum Data<T> {
    Shared(Elems<T>),
    Owned(Vec<T>),
}

impl<T: KFloat> Data<T> {
    fn slice(&self) -> &[T] {
        match self {
            Data::Shared(s) => s,
            Data::Owned(v) => v,
        }
    }
}

fn data<T: KFloat>(a: &Array) -> Data<T> {
    match &*a.live() {
        Buffer::Bool(v) => Data::Owned(
            v.iter()
                .map(|&b| if b { T::ONE } else { T::ZERO })
                .collect(),
        ),
        _ => Data::Shared(elems::<T>(a)),
    }
}

fn identity<T: KFloat>(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Any => 0.0,
        ReduceOp::Prod | ReduceOp::All => 1.0,
        ReduceOp::Max => T::LOWEST.to_f64(),
        ReduceOp::Min => T::HIGHEST.to_f64(),
    }
}

/// Fold a block of values into an accumulator (kept in f64, so long f32
/// sums keep their precision).
#[inline(always)]
fn fold<T: KFloat>(op: ReduceOp, acc: f64, xs: &[T]) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Any => acc + sum_lanes(xs, xs, |x, _| x),
        ReduceOp::Prod | ReduceOp::All => xs.iter().fold(acc, |a, &x| a * x.to_f64()),
        // 16 lanes in the register type (NaN sticks in its lane), then the
        // lanes into the accumulator: softmax's row maxima vectorise.
        ReduceOp::Max => {
            let lanes = extreme_lanes(xs, T::LOWEST, T::max);
            lanes.iter().fold(acc, |a, &x| f64::max_nan(a, x.to_f64()))
        }
        ReduceOp::Min => {
            let lanes = extreme_lanes(xs, T::HIGHEST, T::min);
            lanes.iter().fold(acc, |a, &x| f64::min_nan(a, x.to_f64()))
        }
    }
}

/// The running `pick` (max or min) of `xs` in 16 lanes; the remainder
/// joins the first lanes.
#[inline(always)]
fn extreme_lanes<T: KFloat>(xs: &[T], identity: T, pick: fn(T, T) -> T) -> [T; 16] {
    let mut lanes = [identity; 16];
    let chunks = xs.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..16 {
            lanes[i] = pick(lanes[i], c[i]);
        }
    }
    for (i, &x) in rest.iter().enumerate() {
        lanes[i] = pick(lanes[i], x);
    }
    lanes
}

/// `fold` a block at a time, so a row kept whole in registers (a kernel
/// reading row values) reduces exactly as the same row visited in blocks.
#[inline(always)]
fn fold_blocks<T: KFloat>(op: ReduceOp, mut acc: f64, xs: &[T]) -> f64 {
    // A loop, not `Iterator::fold`: that generic function was compiled on
    // its own, outside `run_range_avx2`, so the sums ran 4 lanes wide.
    for b in xs.chunks(BLOCK) {
        acc = fold(op, acc, b);
    }
    acc
}

/// The sum of `f(a[i], b[i])` as `fold` adds a block: 32 lanes of partial
/// sums (four independent vector add chains, so the adds' latency
/// overlaps), the lanes into 8 in the register type (converting all 32 to
/// f64 one by one cost a quarter of a short kernel's time), those and the
/// remainder in f64. `f` reads a register's value (`fold`) or computes a
/// binary operation on two registers (`BinaryFold`), with the same result.
#[inline(always)]
fn sum_lanes<T: KFloat>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> f64 {
    let mut lanes = [T::ZERO; 32];
    let (ca, cb) = (a.chunks_exact(32), b[..a.len()].chunks_exact(32));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..32 {
            lanes[i] = T::add(lanes[i], f(x[i], y[i]));
        }
    }
    for w in [16, 8] {
        for i in 0..w {
            lanes[i] = T::add(lanes[i], lanes[i + w]);
        }
    }
    let mut s = 0.0;
    for l in &lanes[..8] {
        s += l.to_f64();
    }
    for (&x, &y) in ra.iter().zip(rb) {
        s += f(x, y).to_f64();
    }
    s
}

/// A sum's last operation, folded as it is computed: `acc` plus the sum of
/// `op(a[i], b[i])`, exactly as `fold` sums a register holding those
/// values, without storing and reloading the register (a streaming sum
/// such as `sum(x * x)` then reads its input once, at memory speed).
struct BinaryFold<'a, T> {
    a: &'a [T],
    b: &'a [T],
    acc: f64,
}

impl<T: KFloat> BinaryFn<T> for BinaryFold<'_, T> {
    type Out = f64;
    #[inline(always)]
    fn map<F: Fn(T, T) -> T + Copy + Send + Sync>(self, f: F) -> f64 {
        let (a, b) = (self.a, &self.b[..self.a.len()]);
        let mut acc = self.acc;
        for (x, y) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
            acc += sum_lanes(x, y, f);
        }
        acc
    }
    #[inline(always)]
    fn test<F: Fn(T, T) -> bool + Copy + Send + Sync>(self, f: F) -> f64 {
        self.map(|x, y| bit(f(x, y)))
    }
}

/// Whether `op` is a float operation of the table (not one on bools only),
/// so `BinaryFold` can fold it.
fn folds_directly<T: KFloat>(op: BinaryOp) -> bool {
    struct Probe;
    impl<T> BinaryFn<T> for Probe {
        type Out = ();
        fn map<F: Fn(T, T) -> T + Copy + Send + Sync>(self, _: F) {}
        fn test<F: Fn(T, T) -> bool + Copy + Send + Sync>(self, _: F) {}
    }
    T::binary(op, Probe).is_some()
}

/// How a kernel's registers are kept, worked out once per run.
struct Layout {
    /// Per register: a sum's last binary operation that no other register,
    /// store or row value reads; `run_range_body` folds it directly and
    /// `eval_block` leaves it uncomputed.
    direct_sum: SmallVec<[bool; 64]>,
    /// Per register: the output store it is computed straight into (and
    /// read back from by later registers), instead of being computed into
    /// scratch and copied there — a copy per element of every output.
    stored: SmallVec<[Option<usize>; 64]>,
    /// Per register: a load of an input whose buffer became a store, read
    /// from that store in place because nothing writes the store's block
    /// before the load's last reader (otherwise the block is copied into
    /// the register first).
    in_place: SmallVec<[bool; 64]>,
    /// The stores are larger than the cores' private caches together: no
    /// block of them is still cached when it is read again, so each output
    /// block is computed into scratch and copied to its store with
    /// non-temporal stores (which skip reading each line of the store
    /// before overwriting it: a third of the memory traffic of a streaming
    /// kernel), and the next block of each contiguous input is prefetched
    /// while this one is computed (a block's loads come in a burst, which
    /// the hardware prefetcher alone does not overlap with the arithmetic).
    stream: bool,
}

impl Layout {
    /// `in_store[n]`: the store that input `n`'s buffer became, if any.
    fn new<T: KFloat>(k: &Kernel, in_store: &[Option<usize>]) -> Layout {
        let n: usize = k.shape.iter().product();
        let stream = cfg!(target_arch = "x86_64")
            && n.saturating_mul(std::mem::size_of::<T>()) >= STREAM_MIN;
        let mut direct_sum: SmallVec<[bool; 64]> = smallvec::smallvec![false; k.body.len()];
        for (j, o) in k.outputs.iter().enumerate() {
            if let (Some(ReduceOp::Sum), ScalarOp::Binary(op, _, _)) = (o.reduce, k.body[o.reg]) {
                let read_by_body = k
                    .body
                    .iter()
                    .any(|b| b.operands().contains(&o.reg) || *b == ScalarOp::Reduced(j));
                let outputs = k.outputs.iter().filter(|p| p.reg == o.reg).count();
                direct_sum[o.reg] = !read_by_body && outputs == 1 && folds_directly::<T>(op);
            }
        }
        let mut stored: SmallVec<[Option<usize>; 64]> = smallvec::smallvec![None; k.body.len()];
        let stores = k.outputs.iter().filter(|o| o.reduce.is_none());
        for (s, o) in stores.enumerate() {
            let computed = !matches!(k.body[o.reg], ScalarOp::Load(_) | ScalarOp::Const(_));
            // A store that took an input's buffer still holds that input's
            // block until the input's load has copied it into a register.
            let loaded_before = k.body.iter().enumerate().all(|(l, b)| match *b {
                ScalarOp::Load(n) => in_store[n] != Some(s) || l < o.reg,
                _ => true,
            });
            if computed && loaded_before && stored[o.reg].is_none() && !stream {
                stored[o.reg] = Some(s);
            }
        }
        let mut in_place: SmallVec<[bool; 64]> = smallvec::smallvec![false; k.body.len()];
        for (l, b) in k.body.iter().enumerate() {
            let ScalarOp::Load(n) = *b else { continue };
            let Some(s) = in_store[n] else { continue };
            let writer = stored.iter().position(|&t| t == Some(s));
            let read_before_written = k
                .body
                .iter()
                .enumerate()
                .all(|(i, b)| !b.operands().contains(&l) || writer.is_none_or(|w| i < w));
            // Outputs, and the direct sums, are read after every register
            // is computed.
            let output = k.outputs.iter().any(|o| o.reg == l);
            let summed =
                (0..k.body.len()).any(|i| direct_sum[i] && k.body[i].operands().contains(&l));
            in_place[l] = read_before_written && !output && !summed;
        }
        Layout {
            direct_sum,
            stored,
            in_place,
            stream,
        }
    }
}

trait NanMinMax {
    fn max_nan(a: f64, b: f64) -> f64;
    fn min_nan(a: f64, b: f64) -> f64;
}

impl NanMinMax for f64 {
    fn max_nan(a: f64, b: f64) -> f64 {
        <f64 as Arith>::max(a, b)
    }
    fn min_nan(a: f64, b: f64) -> f64 {
        <f64 as Arith>::min(a, b)
    }
}

fn combine(op: ReduceOp, a: f64, b: f64) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Any => a + b,
        ReduceOp::Prod | ReduceOp::All => a * b,
        ReduceOp::Max => f64::max_nan(a, b),
        ReduceOp::Min => f64::min_nan(a, b),
    }
}

/// An input as the registers read it: its elements, and the flat index of
/// the iteration space that its first element stands at (0, except for a
/// matrix product's panel, which holds only the rows being computed).
/// An input whose buffer became output store `s` (`in_store`) is read from
/// that store: each block is loaded into its register before the block's
/// results are stored over it.
#[derive(Clone, Copy)]
struct Src<'a, T> {
    elems: &'a [T],
    base: usize,
    in_store: Option<usize>,
}

/// Every input from index 0.
fn whole<T: KFloat>(data: &[Data<T>]) -> Vec<Src<'_, T>> {
    data.iter()
        .map(|d| Src {
            elems: d.slice(),
            base: 0,
            in_store: None,
        })
        .collect()
}

/// Read `len` elements of an input starting at flat iteration index `start`.
#[inline(always)]
fn load<T: KFloat>(k: &Kernel, n: usize, src: Src<T>, start: usize, out: &mut [T]) {
    let input = &k.inputs[n];
    let len = out.len();
    if input.is_contiguous(&k.shape) {
        out.copy_from_slice(&src.elems[start - src.base..start - src.base + len]);
        return;
    }
    // Only contiguous inputs come in panels.
    let src = src.elems;
    if input.is_scalar() {
        out.fill(src[0]);
        return;
    }
    // General strides: the iteration space in runs along its last axis
    // (a broadcast row, a bias, a mask): each run is a copy, a fill or a
    // strided gather, and the multi-index is only worked out per run.
    let shape = &k.shape;
    let strides = &input.strides;
    let nd = shape.len();
    let (inner, step) = (shape[nd - 1], strides[nd - 1]);
    if inner < 16 {
        return load_walk(shape, strides, src, start, out);
    }
    let mut pos = start;
    let mut done = 0;
    while done < len {
        let at = pos % inner;
        let run = (inner - at).min(len - done);
        let mut off = at * step;
        let mut rest = pos / inner;
        for d in (0..nd - 1).rev() {
            off += (rest % shape[d]) * strides[d];
            rest /= shape[d];
        }
        let dst = &mut out[done..done + run];
        match step {
            0 => dst.fill(src[off]),
            1 => dst.copy_from_slice(&src[off..off + run]),
            _ => {
                for (j, slot) in dst.iter_mut().enumerate() {
                    *slot = src[off + j * step];
                }
            }
        }
        done += run;
        pos += run;
    }
}

/// `load` one element at a time, for iteration spaces whose last axis is
/// too short for runs: walks the multi-index, adding strides.
fn load_walk<T: KFloat>(
    shape: &[usize],
    strides: &[usize],
    src: &[T],
    start: usize,
    out: &mut [T],
) {
    let nd = shape.len();
    let mut idx = vec![0; nd];
    let mut rest = start;
    for d in (0..nd).rev() {
        idx[d] = rest % shape[d];
        rest /= shape[d];
    }
    let mut off: usize = idx.iter().zip(strides).map(|(i, s)| i * s).sum();
    for slot in out.iter_mut() {
        *slot = src[off];
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            off += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            off -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

#[inline(always)]
fn bit<T: KFloat>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

/// A unary op's function from the op table over a block of registers.
/// Bool data sits in registers as 0/1, so an op defined only on bool (`~`)
/// runs its bool function on `x != 0`.
struct UnaryRegs<'a, T> {
    a: &'a [T],
    out: &'a mut [T],
}

impl<T: KFloat> UnaryFn<T> for UnaryRegs<'_, T> {
    type Out = ();
    #[inline(always)]
    fn map<F: Fn(T) -> T + Copy + Send + Sync>(self, f: F) {
        for (o, &x) in self.out.iter_mut().zip(self.a) {
            *o = f(x);
        }
    }
    #[inline(always)]
    fn test<F: Fn(T) -> bool + Copy + Send + Sync>(self, f: F) {
        for (o, &x) in self.out.iter_mut().zip(self.a) {
            *o = bit(f(x));
        }
    }
    #[inline(always)]
    fn slices<F: Fn(T) -> T + Copy + Send + Sync>(
        self,
        into: fn(&[T], &mut [T]),
        _: fn(&mut [T]),
        _: F,
    ) {
        into(self.a, self.out)
    }
}

impl<T: KFloat> UnaryFn<bool> for UnaryRegs<'_, T> {
    type Out = ();
    fn map<F: Fn(bool) -> bool + Copy + Send + Sync>(self, f: F) {
        for (o, &x) in self.out.iter_mut().zip(self.a) {
            *o = bit(f(x != T::ZERO));
        }
    }
    fn test<F: Fn(bool) -> bool + Copy + Send + Sync>(self, f: F) {
        self.map(f)
    }
}

#[inline(always)]
fn unary<T: KFloat>(op: UnaryOp, a: &[T], out: &mut [T]) {
    if T::unary(op, UnaryRegs { a, out: &mut *out }).is_none() {
        op.on_bool(UnaryRegs { a, out })
            .unwrap_or_else(|| panic!("{} is not a register operation", op.name()));
    }
}

/// A binary op's function from the op table over blocks of registers; as
/// for unary ops, logical ops run on bools read as `x != 0`.
struct BinaryRegs<'a, T> {
    a: &'a [T],
    b: &'a [T],
    out: &'a mut [T],
}

impl<T: KFloat> BinaryFn<T> for BinaryRegs<'_, T> {
    type Out = ();
    #[inline(always)]
    fn map<F: Fn(T, T) -> T + Copy + Send + Sync>(self, f: F) {
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            *o = f(x, y);
        }
    }
    #[inline(always)]
    fn test<F: Fn(T, T) -> bool + Copy + Send + Sync>(self, f: F) {
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            *o = bit(f(x, y));
        }
    }
}

impl<T: KFloat> BinaryFn<bool> for BinaryRegs<'_, T> {
    type Out = ();
    fn map<F: Fn(bool, bool) -> bool + Copy + Send + Sync>(self, f: F) {
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            *o = bit(f(x != T::ZERO, y != T::ZERO));
        }
    }
    fn test<F: Fn(bool, bool) -> bool + Copy + Send + Sync>(self, f: F) {
        self.map(f)
    }
}

#[inline(always)]
fn binary<T: KFloat>(op: BinaryOp, a: &[T], b: &[T], out: &mut [T]) {
    if T::binary(
        op,
        BinaryRegs {
            a,
            b,
            out: &mut *out,
        },
    )
    .is_none()
    {
        op.on_bool(BinaryRegs { a, b, out })
            .unwrap_or_else(|| panic!("{} is not a register operation", op.name()));
    }
}

/// An output store's slice for one range, written and read through its
/// pointer: a register computed straight into its store is read from there
/// by the block's later registers while other stores are written, which
/// `&mut` slices of the same stores cannot express. Every access to the
/// stores of a range goes through these, none through the slices they were
/// taken from, while the range runs.
#[derive(Clone, Copy)]
struct Out<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Out<T> {
    fn of(store: &mut [T]) -> Out<T> {
        Out {
            ptr: store.as_mut_ptr(),
            len: store.len(),
        }
    }

    /// Elements `[at, at + len)` to write.
    ///
    /// # Safety
    /// No other slice of those elements may be alive while it is.
    #[allow(clippy::mut_from_ref)]
    unsafe fn block_mut<'b>(&self, at: usize, len: usize) -> &'b mut [T] {
        assert!(at + len <= self.len, "a block within its store");
        // SAFETY: in bounds (checked); exclusive by the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), len) }
    }

    /// Elements `[at, at + len)` to read.
    ///
    /// # Safety
    /// Nothing may write those elements while the slice is alive.
    unsafe fn block<'b>(&self, at: usize, len: usize) -> &'b [T] {
        assert!(at + len <= self.len, "a block within its store");
        // SAFETY: in bounds (checked); unwritten by the caller's promise.
        unsafe { std::slice::from_raw_parts(self.ptr.add(at), len) }
    }
}

/// Per register, the elements it reads other than its own scratch: an
/// input's (a contiguous load is not copied) or its store's. Kept by
/// `run_range_body` across blocks, on the stack.
type Views<'a, T> = SmallVec<[Option<&'a [T]>; 64]>;

/// Evaluate every register over `len` elements from flat index `start`.
/// `regs` holds the registers one after another, `width` elements each; a
/// register the layout stores directly is computed into its store's block
/// instead. `views` receives, per register, the slice it is read from when
/// that is not its scratch.
/// `stores` are the output slices of the range that begins at flat index
/// `range_start` (read by inputs that run in place).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn eval_block<'a, T: KFloat>(
    k: &Kernel,
    srcs: &[Src<'a, T>],
    stores: &[Out<T>],
    range_start: usize,
    regs: &mut [T],
    width: usize,
    start: usize,
    len: usize,
    first: bool,
    row_values: &mut [Option<f64>],
    views: &mut Views<'a, T>,
    layout: &Layout,
) {
    views.clear();
    let at = start - range_start;
    for i in 0..k.body.len() {
        if layout.direct_sum[i] {
            views.push(None);
            continue;
        }
        let (done, rest) = regs.split_at_mut(i * width);
        let out: &mut [T] = match layout.stored[i] {
            // SAFETY: a stored register is the only writer of its store's
            // block, and the store's own input was loaded before it: copied,
            // or read in place by registers that all come before this one
            // (`Layout::new`), so no view of this block is read from here on.
            Some(s) => unsafe { stores[s].block_mut(at, len) },
            None => &mut rest[..len],
        };
        let reg = |r: usize| views[r].unwrap_or(&done[r * width..r * width + len]);
        let mut view = None;
        match k.body[i] {
            ScalarOp::Load(n) => {
                let src = srcs[n];
                if let Some(s) = src.in_store {
                    // SAFETY: no register writes this store's block before
                    // this load (`Layout::new`), nor, when it is read in
                    // place, before the load's last reader.
                    let block = unsafe { stores[s].block(at, len) };
                    if layout.in_place[i] {
                        view = Some(block);
                    } else {
                        out.copy_from_slice(block);
                    }
                } else if k.inputs[n].is_contiguous(&k.shape) {
                    let from = start - src.base;
                    if layout.stream {
                        let next = (from + len).min(src.elems.len());
                        prefetch(&src.elems[next..(next + len).min(src.elems.len())]);
                    }
                    view = Some(&src.elems[from..from + len]);
                } else {
                    load(k, n, src, start, out)
                }
            }
            // A constant's register is written by nothing else: filled once.
            ScalarOp::Const(x) => {
                if first {
                    rest[..width].fill(T::from_f64(x))
                }
            }
            ScalarOp::Unary(op, a) => unary(op, reg(a), out),
            ScalarOp::Binary(op, a, b) => binary(op, reg(a), reg(b), out),
            ScalarOp::Select(c, a, b) => {
                let (c, a, b) = (reg(c), reg(a), reg(b));
                // Zipped slices, not indices: without bounds checks the
                // loop becomes compares and blends (it ran one branch per
                // element, a causal mask's select in every attention).
                for (o, ((&c, &a), &b)) in out.iter_mut().zip(c.iter().zip(a).zip(b)) {
                    *o = if c != T::ZERO { a } else { b };
                }
            }
            // The block is the whole row (`run_range_body`), so the
            // reduction's register is complete.
            ScalarOp::Reduced(j) => {
                let o = k.outputs[j];
                let op = o.reduce.expect("a reducing output");
                let x = fold_blocks(op, identity::<T>(op), reg(o.reg));
                row_values[j] = Some(x);
                out.fill(T::from_f64(x));
            }
        }
        if let Some(s) = layout.stored[i] {
            // SAFETY: written above and by nothing else in this block.
            view = Some(unsafe { stores[s].block(at, len) });
        }
        views.push(view);
    }
}

/// Run flat indices [start, end): store elementwise outputs into `stores`
/// (slices covering exactly that range) and return the reductions' partials.
/// `regs` is scratch space for the registers, kept by the caller across
/// calls (a kernel over many short rows calls this once per row).
fn run_range<T: KFloat>(
    k: &Kernel,
    srcs: &[Src<T>],
    start: usize,
    end: usize,
    stores: &mut [&mut [T]],
    regs: &mut Vec<T>,
    layout: &Layout,
) -> Acc {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { run_range_avx2(k, srcs, start, end, stores, regs, layout) };
    }
    run_range_body(k, srcs, start, end, stores, regs, layout)
}

/// `run_range` compiled for AVX2: the register loops run 8 floats wide
/// instead of 4. The operations are the same IEEE operations (no
/// contraction into FMA), so results do not depend on the path taken.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_range_avx2<T: KFloat>(
    k: &Kernel,
    srcs: &[Src<T>],
    start: usize,
    end: usize,
    stores: &mut [&mut [T]],
    regs: &mut Vec<T>,
    layout: &Layout,
) -> Acc {
    run_range_body(k, srcs, start, end, stores, regs, layout)
}

/// The reductions of one range, one per output (unused for the others):
/// inline, as ranges are as short as a row of 64 elements.
type Acc = SmallVec<[f64; 8]>;

#[inline(always)]
fn run_range_body<T: KFloat>(
    k: &Kernel,
    srcs: &[Src<T>],
    start: usize,
    end: usize,
    stores: &mut [&mut [T]],
    regs: &mut Vec<T>,
    layout: &Layout,
) -> Acc {
    // Small arrays get small registers: zeroing a whole block per register
    // would cost more than the work. A kernel reading row values takes its
    // row (the whole range) as one block.
    let width = if k.reads_row_values() {
        end - start
    } else {
        BLOCK.min(end - start)
    };
    // Every register is written before it is read (constants at the
    // range's first block), so the scratch needs no clearing.
    if regs.len() < width * k.body.len() {
        // Fresh rather than grown: growing copies the stale registers.
        *regs = vec![T::ZERO; width * k.body.len()];
    }
    let regs = &mut regs[..width * k.body.len()];
    let mut acc: Acc = k
        .outputs
        .iter()
        .map(|o| o.reduce.map_or(0.0, identity::<T>))
        .collect();
    let stores: SmallVec<[Out<T>; 8]> = stores.iter_mut().map(|s| Out::of(s)).collect();
    let mut pos = start;
    let mut views = Views::new();
    while pos < end {
        let len = width.min(end - pos);
        // The reductions read back in this block (then the whole row).
        let mut row_values: SmallVec<[Option<f64>; 8]> = smallvec::smallvec![None; k.outputs.len()];
        eval_block(
            k,
            srcs,
            &stores,
            start,
            regs,
            width,
            pos,
            len,
            pos == start,
            &mut row_values,
            &mut views,
            layout,
        );
        let mut s = 0;
        let reg = |r: usize| views[r].unwrap_or(&regs[r * width..r * width + len]);
        for (j, out) in k.outputs.iter().enumerate() {
            let body = k.body[out.reg];
            if let (true, ScalarOp::Binary(op, a, b)) = (layout.direct_sum[out.reg], body) {
                let fold = BinaryFold {
                    a: reg(a),
                    b: reg(b),
                    acc: acc[j],
                };
                acc[j] = T::binary(op, fold).expect("checked by Layout::new");
                continue;
            }
            let r = reg(out.reg);
            match out.reduce {
                None => {
                    if layout.stored[out.reg] != Some(s) {
                        // SAFETY: only this output writes store `s`, and `r`
                        // is another register or store.
                        let block = unsafe { stores[s].block_mut(pos - start, len) };
                        if layout.stream {
                            stream_copy(block, r);
                        } else {
                            block.copy_from_slice(r);
                        }
                    }
                    s += 1;
                }
                // A row's reduction read back is its whole fold already.
                Some(op) => {
                    acc[j] = match row_values[j] {
                        Some(x) => combine(op, acc[j], x),
                        None => fold_blocks(op, acc[j], r),
                    }
                }
            }
        }
        pos += len;
    }
    #[cfg(target_arch = "x86_64")]
    if layout.stream {
        // SAFETY: SSE is part of x86-64. The fence orders the non-temporal
        // stores before whatever tells another thread that this range is done.
        unsafe { std::arch::x86_64::_mm_sfence() };
    }
    acc
}

/// Ask for the cache lines of `next` ahead of their use.
#[inline(always)]
fn prefetch<T>(next: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = next.as_ptr().cast::<i8>();
        for off in (0..std::mem::size_of_val(next)).step_by(64) {
            // SAFETY: a prefetch never faults, and the address is within `next`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = next;
}

/// `dst.copy_from_slice(src)` with non-temporal stores where the CPU has
/// them (`Layout::stream`): the lines go to memory without being read into
/// the cache first. The caller fences before the results are shared.
#[inline(always)]
fn stream_copy<T: Copy>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "a block of the same length");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let bytes = std::mem::size_of_val(src);
        let (d, s) = (dst.as_mut_ptr().cast::<u8>(), src.as_ptr().cast::<u8>());
        // The stream stores need 16-byte alignment: elements before the
        // first aligned address (a whole number of them, as `T`'s size
        // divides 16) and after the last whole 16 bytes are copied plainly.
        let head = d.align_offset(16).min(bytes);
        let body = (bytes - head) / 16 * 16;
        // SAFETY: every offset is within both slices (`head + body <= bytes`),
        // which do not overlap (one is borrowed mutably); the stream stores'
        // addresses are 16-byte aligned; SSE2 is part of x86-64.
        unsafe {
            std::ptr::copy_nonoverlapping(s, d, head);
            for off in (head..head + body).step_by(16) {
                let v = _mm_loadu_si128(s.add(off).cast::<__m128i>());
                _mm_stream_si128(d.add(off).cast::<__m128i>(), v);
            }
            std::ptr::copy_nonoverlapping(
                s.add(head + body),
                d.add(head + body),
                bytes - head - body,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// The output stores of a kernel and the inputs as its registers read them.
/// This is the memory plan's last step: an input nothing else holds, read
/// element for element in the order of the iteration space and of the
/// kernel's type, gives its buffer to a store (a dead or donated buffer is
/// overwritten in place instead of allocating a new one); `in_store` says
/// which. `None` inputs (an epilogue's product) read nothing here.
#[allow(clippy::type_complexity)]
fn claim<T: KFloat>(
    k: &Kernel,
    mut inputs: Vec<Option<Array>>,
    n_stores: usize,
) -> (Vec<Vec<T>>, Vec<Data<T>>, Vec<Option<usize>>) {
    let n: usize = k.shape.iter().product();
    let mut stores: Vec<Vec<T>> = Vec::with_capacity(n_stores);
    let mut in_store: Vec<Option<usize>> = vec![None; inputs.len()];
    // Donated buffers first (a stable sort keeps the inputs' order otherwise).
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&j| !inputs[j].as_ref().is_some_and(Array::is_donated));
    for j in order {
        if stores.len() == n_stores {
            break;
        }
        let eligible = inputs[j]
            .as_ref()
            .is_some_and(|a| a.dtype() == T::DTYPE && k.inputs[j].is_contiguous(&k.shape));
        if !eligible {
            continue;
        }
        let a = inputs[j].take().expect("eligible inputs exist");
        match a.into_buffer() {
            Ok(mut buf) => {
                let v = T::vec_mut(&mut buf).expect("the kernel's type");
                in_store[j] = Some(stores.len());
                stores.push(std::mem::take(v));
            }
            Err(a) => inputs[j] = Some(a),
        }
    }
    while stores.len() < n_stores {
        stores.push(alloc_overwrite::<T>(n));
    }
    // Inputs that became stores (and the epilogue's product) read nothing here.
    let read = inputs
        .iter()
        .map(|a| a.as_ref().map_or(Data::Owned(Vec::new()), data::<T>))
        .collect();
    (stores, read, in_store)
}

fn run<T: KFloat>(k: &Kernel, inputs: Vec<Array>) -> Vec<Array> {
    let n: usize = k.shape.iter().product();
    let inner: usize = k.shape[k.shape.len() - k.reduce_axes..].iter().product();
    let outer = n.checked_div(inner).unwrap_or(0);
    let n_stores = k.outputs.iter().filter(|o| o.reduce.is_none()).count();
    let (mut stores, data, in_store) =
        claim::<T>(k, inputs.into_iter().map(Some).collect(), n_stores);
    let mut srcs = whole(&data);
    for (src, s) in srcs.iter_mut().zip(&in_store) {
        src.in_store = *s;
    }
    let mut reduced: Vec<Vec<T>> = k
        .outputs
        .iter()
        .filter(|o| o.reduce.is_some())
        .map(|_| vec![T::ZERO; outer])
        .collect();
    let threads = super::elem::threads();
    let layout = Layout::new::<T>(k, &in_store);
    // At an interrupt the remaining rows are skipped: the caller discards
    // the unfinished outputs.
    let stop = crate::interrupt::Poll::here();
    // Rows of the reduction (the whole space when nothing is reduced).
    let (rows, row_len) = if k.reduce_axes == 0 {
        (1, n)
    } else {
        (outer, inner)
    };
    if rows >= threads && rows > 1 && n >= PAR_MIN {
        // Many rows: each task takes whole rows (one task, run here, on a
        // device worker: its kernels run on its own thread).
        let tasks = if threads == 1 { 1 } else { threads * 4 };
        let per_task = rows.div_ceil(tasks);
        let chunk = per_task * row_len;
        let mut store_chunks: Vec<Vec<&mut [T]>> =
            (0..rows.div_ceil(per_task)).map(|_| Vec::new()).collect();
        for s in stores.iter_mut() {
            for (t, c) in s.chunks_mut(chunk.max(1)).enumerate() {
                store_chunks[t].push(c);
            }
        }
        let task = |(t, mut st): (usize, Vec<&mut [T]>)| {
            let first = t * per_task;
            let last = (first + per_task).min(rows);
            let mut out = Vec::new();
            let mut offset = 0;
            with_scratch(|regs| {
                for r in first..last {
                    if stop.requested() {
                        out.push(smallvec::smallvec![0.0; k.outputs.len()]);
                        continue;
                    }
                    let mut views: SmallVec<[&mut [T]; 8]> = st
                        .iter_mut()
                        .map(|s| &mut s[offset..offset + row_len])
                        .collect();
                    out.push(run_range(
                        k,
                        &srcs,
                        r * row_len,
                        (r + 1) * row_len,
                        &mut views,
                        regs,
                        &layout,
                    ));
                    offset += row_len;
                }
            });
            out
        };
        let partials: Vec<Vec<Acc>> = if store_chunks.len() == 1 {
            store_chunks.into_iter().enumerate().map(task).collect()
        } else {
            store_chunks.into_par_iter().enumerate().map(task).collect()
        };
        for (r, acc) in partials.into_iter().flatten().enumerate() {
            write_reduced(k, &mut reduced, r, &acc);
        }
    } else {
        // Few rows: each row is split across the threads, partials combined.
        for r in 0..rows {
            if stop.requested() {
                break;
            }
            let base = r * row_len;
            let chunk = if row_len >= PAR_MIN && threads > 1 && !k.reads_row_values() {
                row_len.div_ceil(threads * 4).next_multiple_of(BLOCK)
            } else {
                row_len.max(1)
            };
            let mut store_chunks: Vec<Vec<&mut [T]>> = (0..row_len.div_ceil(chunk).max(1))
                .map(|_| Vec::new())
                .collect();
            for s in stores.iter_mut() {
                for (t, c) in s[base..base + row_len].chunks_mut(chunk).enumerate() {
                    store_chunks[t].push(c);
                }
            }
            let part = |(t, mut st): (usize, Vec<&mut [T]>)| {
                let start = base + t * chunk;
                let end = (start + chunk).min(base + row_len);
                with_scratch(|regs| run_range(k, &srcs, start, end, &mut st, regs, &layout))
            };
            // One chunk (a small row) runs here, without a trip through the pool.
            let partials: Vec<Acc> = if store_chunks.len() == 1 {
                store_chunks.into_iter().enumerate().map(part).collect()
            } else {
                store_chunks.into_par_iter().enumerate().map(part).collect()
            };
            let mut acc: Vec<f64> = k
                .outputs
                .iter()
                .map(|o| o.reduce.map_or(0.0, identity::<T>))
                .collect();
            for p in partials {
                for (j, out) in k.outputs.iter().enumerate() {
                    if let Some(op) = out.reduce {
                        acc[j] = combine(op, acc[j], p[j]);
                    }
                }
            }
            write_reduced(k, &mut reduced, r, &acc);
        }
    }
    let mut stores = stores.into_iter();
    let mut reduced = reduced.into_iter();
    k.outputs
        .iter()
        .enumerate()
        .map(|(j, o)| {
            let v = match o.reduce {
                None => stores.next().expect("a store per output"),
                Some(_) => reduced.next().expect("a reduction per output"),
            };
            Array::new(&k.output_shape(j), T::into_buffer(v))
        })
        .collect()
}

fn write_reduced<T: KFloat>(k: &Kernel, reduced: &mut [Vec<T>], row: usize, acc: &[f64]) {
    let mut s = 0;
    for (j, out) in k.outputs.iter().enumerate() {
        if out.reduce.is_some() {
            if let Some(slot) = reduced[s].get_mut(row) {
                *slot = T::from_f64(acc[j]);
            }
            s += 1;
        }
    }
}

/// The epilogue of a matrix product (`crate::kernel::MatmulKernel`), run on
/// panels of the product as they are computed.
pub(super) struct Epilogue<'a, T: KFloat> {
    k: &'a Kernel,
    product: usize,
    /// Every input but the product (whose slot holds an empty slice).
    data: Vec<Data<T>>,
    /// Which inputs are read from the output store that took their buffer.
    in_store: Vec<Option<usize>>,
    layout: Layout,
}

impl<'a, T: KFloat> Epilogue<'a, T> {
    /// `others` are the epilogue's inputs other than the product, in order.
    /// Returns the epilogue and its output stores (each the size of the
    /// product; an unshared input's buffer may be one of them).
    pub(super) fn new(
        k: &'a Kernel,
        product: usize,
        others: Vec<Array>,
    ) -> (Epilogue<'a, T>, Vec<Vec<T>>) {
        assert_eq!(others.len() + 1, k.inputs.len(), "epilogue inputs");
        assert!(
            k.reduce_axes == 0 && k.outputs.iter().all(|o| o.reduce.is_none()),
            "an epilogue only stores"
        );
        let mut inputs: Vec<Option<Array>> = others.into_iter().map(Some).collect();
        inputs.insert(product, None);
        let (stores, data, in_store) = claim::<T>(k, inputs, k.outputs.len());
        let epi = Epilogue {
            k,
            product,
            data,
            layout: Layout::new::<T>(k, &in_store),
            in_store,
        };
        (epi, stores)
    }

    /// Apply the epilogue to flat indices `[start, start + panel.len())` of
    /// the product, whose values are `panel`; `stores` are the outputs'
    /// slices for that range.
    pub(super) fn run_panel(&self, panel: &[T], start: usize, stores: &mut [&mut [T]]) {
        let mut srcs: SmallVec<[Src<T>; 8]> = self
            .data
            .iter()
            .zip(&self.in_store)
            .map(|(d, s)| Src {
                elems: d.slice(),
                base: 0,
                in_store: *s,
            })
            .collect();
        srcs[self.product] = Src {
            elems: panel,
            base: start,
            in_store: None,
        };
        with_scratch(|regs| {
            run_range(
                self.k,
                &srcs,
                start,
                start + panel.len(),
                stores,
                regs,
                &self.layout,
            )
        });
    }
}
