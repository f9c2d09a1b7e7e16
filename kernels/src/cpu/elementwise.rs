//! Elementwise kernels: unary, binary (with broadcasting), select and convert.
//!
//! Broadcasting is planned once per call: size-1 axes get stride 0, adjacent
//! axes that stay contiguous for every operand are merged, and the last merged
//! axis becomes the inner loop, where each operand is either a contiguous run
//! or a single repeated value. Hot loops are plain slice zips so they vectorise.

use super::elem::{alloc_overwrite, elems, par_chunk, Elem};
use crate::complex::C64;
use crate::ops::{BinaryFn, BinaryKernels, UnaryFn, UnaryKernels};
use crate::{broadcast_shapes, Array, BinaryOp, DType, Shape, UnaryOp};
// 16-bit floats compute in f32 through `Dispatch` (its methods are the trait's).
use crate::Backend as _;
use rayon::prelude::*;
use smallvec::SmallVec;

/// How one operand reads along the inner loop: a contiguous run or one value.
#[derive(Clone, Copy)]
pub enum Src<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

impl<'a, T: Copy> Src<'a, T> {
    #[inline(always)]
    fn new(data: &'a [T], off: usize, inner_stride: usize, len: usize) -> Self {
        if inner_stride == 1 {
            Src::Slice(&data[off..off + len])
        } else {
            Src::Scalar(data[off])
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> T {
        match self {
            Src::Slice(s) => s[i],
            Src::Scalar(v) => *v,
        }
    }
}

/// A broadcast iteration plan for `K` operands over one output shape.
pub struct Plan<const K: usize> {
    pub len: usize,
    /// Merged outer axes (all but the inner one) and each operand's strides there.
    outer: SmallVec<[usize; 4]>,
    outer_strides: SmallVec<[[usize; K]; 4]>,
    inner: usize,
    /// 1 if the operand is contiguous along the inner axis, 0 if broadcast.
    inner_stride: [usize; K],
}

impl<const K: usize> Plan<K> {
    /// Plan `inputs` (each broadcastable to `shape`) into `shape`.
    pub fn new(shape: &[usize], inputs: [&[usize]; K]) -> Self {
        let nd = shape.len();
        let mut dims: SmallVec<[(usize, [usize; K]); 6]> = SmallVec::new();
        let mut in_strides: [Shape; K] = std::array::from_fn(|k| crate::strides_of(inputs[k]));
        for (k, s) in in_strides.iter_mut().enumerate() {
            assert!(
                inputs[k].len() <= nd,
                "operand {k} has more axes than the output"
            );
            // Left-pad with broadcast axes.
            let pad = nd - inputs[k].len();
            let mut full: Shape = smallvec::smallvec![0; nd];
            for d in 0..inputs[k].len() {
                let size = inputs[k][d];
                assert!(
                    size == shape[d + pad] || size == 1,
                    "shape {:?} does not broadcast to {shape:?}",
                    inputs[k]
                );
                full[d + pad] = if size == 1 { 0 } else { s[d] };
            }
            *s = full;
        }
        for (d, &size) in shape.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let strides: [usize; K] = std::array::from_fn(|k| in_strides[k][d]);
            if let Some((psize, pstrides)) = dims.last_mut() {
                if (0..K).all(|k| pstrides[k] == strides[k] * size) {
                    *psize *= size;
                    *pstrides = strides;
                    continue;
                }
            }
            dims.push((size, strides));
        }
        let len = shape.iter().product();
        let (inner, inner_stride) = match dims.pop() {
            Some((size, strides)) => (size, strides.map(|s| s.min(1))),
            None => (1, [0; K]),
        };
        // Inner strides are 0 or 1 because the inputs are row-major contiguous.
        Plan {
            len,
            outer: dims.iter().map(|d| d.0).collect(),
            outer_strides: dims.iter().map(|d| d.1).collect(),
            inner,
            inner_stride,
        }
    }

    /// A plan over one flat axis of `len` elements (same-shape operands, or
    /// single elements with inner stride 0).
    pub fn flat(len: usize, inner_stride: [usize; K]) -> Self {
        Plan {
            len,
            outer: SmallVec::new(),
            outer_strides: SmallVec::new(),
            inner: len.max(1),
            inner_stride,
        }
    }

    /// Call `f(offsets, pos, len)` for each inner run of output range
    /// `start..end`; operand `k`'s run starts at `offsets[k]`.
    #[inline]
    fn for_runs(&self, start: usize, end: usize, mut f: impl FnMut([usize; K], usize, usize)) {
        if start >= end {
            return;
        }
        let nd = self.outer.len();
        let mut row = start / self.inner;
        let mut col = start % self.inner;
        // Decompose the first row once; later rows advance like an odometer.
        let mut idx: SmallVec<[usize; 4]> = smallvec::smallvec![0; nd];
        let mut base = [0usize; K];
        for d in (0..nd).rev() {
            idx[d] = row % self.outer[d];
            row /= self.outer[d];
            for (b, s) in base.iter_mut().zip(self.outer_strides[d]) {
                *b += idx[d] * s;
            }
        }
        let mut pos = start;
        loop {
            let len = (self.inner - col).min(end - pos);
            let offs: [usize; K] = std::array::from_fn(|k| base[k] + col * self.inner_stride[k]);
            f(offs, pos, len);
            pos += len;
            if pos >= end {
                return;
            }
            col = 0;
            for d in (0..nd).rev() {
                idx[d] += 1;
                for (b, s) in base.iter_mut().zip(self.outer_strides[d]) {
                    *b += s;
                }
                if idx[d] < self.outer[d] {
                    break;
                }
                for (b, s) in base.iter_mut().zip(self.outer_strides[d]) {
                    *b -= self.outer[d] * s;
                }
                idx[d] = 0;
            }
        }
    }

    /// Fill `out` (of `self.len` elements) run by run, splitting across threads
    /// for large outputs. `f(offsets, out_run)` writes one run.
    pub fn run<O: Send>(&self, out: &mut [O], f: impl Fn([usize; K], &mut [O]) + Sync) {
        debug_assert_eq!(out.len(), self.len);
        match par_chunk(self.len) {
            None => self.for_runs(0, self.len, |offs, pos, len| {
                f(offs, &mut out[pos..pos + len])
            }),
            Some(chunk) => out
                .par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(ci, part)| {
                    let start = ci * chunk;
                    self.for_runs(start, start + part.len(), |offs, pos, len| {
                        f(offs, &mut part[pos - start..pos - start + len])
                    })
                }),
        }
    }

    pub fn inner_stride(&self, k: usize) -> usize {
        self.inner_stride[k]
    }
}

#[inline(always)]
fn kernel2<T: Copy, O: Copy, F: Fn(T, T) -> O>(a: Src<T>, b: Src<T>, out: &mut [O], f: &F) {
    match (a, b) {
        (Src::Slice(a), Src::Slice(b)) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
        (Src::Slice(a), Src::Scalar(y)) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, y);
            }
        }
        (Src::Scalar(x), Src::Slice(b)) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(x, y);
            }
        }
        (Src::Scalar(x), Src::Scalar(y)) => out.fill(f(x, y)),
    }
}

/// `out[i] = f(out[i], b[i])` (or `f(b[i], out[i])` when `out_is_rhs`).
#[inline(always)]
fn kernel2_inplace<T: Copy, F: Fn(T, T) -> T>(
    out: &mut [T],
    other: Src<T>,
    out_is_rhs: bool,
    f: &F,
) {
    match (other, out_is_rhs) {
        (Src::Slice(b), false) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(*o, y);
            }
        }
        (Src::Scalar(y), false) => {
            for o in out.iter_mut() {
                *o = f(*o, y);
            }
        }
        (Src::Slice(a), true) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, *o);
            }
        }
        (Src::Scalar(x), true) => {
            for o in out.iter_mut() {
                *o = f(x, *o);
            }
        }
    }
}

fn out_shape(a: &Array, b: &Array) -> Shape {
    if a.shape() == b.shape() {
        return a.shape().into();
    }
    broadcast_shapes(a.shape(), b.shape()).unwrap_or_else(|| {
        panic!(
            "shapes {:?} and {:?} do not broadcast",
            a.shape(),
            b.shape()
        )
    })
}

/// The plan for two operands, with shortcuts for the common cheap cases.
fn plan2(shape: &[usize], a: &Array, b: &Array) -> Plan<2> {
    let n = shape.iter().product::<usize>();
    if a.len() == n && b.len() == n {
        Plan::flat(n, [1, 1])
    } else if a.len() == n && b.len() == 1 {
        Plan::flat(n, [1, 0])
    } else if a.len() == 1 && b.len() == n {
        Plan::flat(n, [0, 1])
    } else {
        Plan::new(shape, [a.shape(), b.shape()])
    }
}

/// Binary op into a fresh output of element type `O`.
fn binary_fresh<T: Elem, O: Elem>(a: &Array, b: &Array, f: impl Fn(T, T) -> O + Sync) -> Array {
    let shape = out_shape(a, b);
    let plan = plan2(&shape, a, b);
    binary_planned(a, b, &shape, &plan, f)
}

/// `binary_fresh` with the output's shape and plan already made.
fn binary_planned<T: Elem, O: Elem>(
    a: &Array,
    b: &Array,
    shape: &[usize],
    plan: &Plan<2>,
    f: impl Fn(T, T) -> O + Sync,
) -> Array {
    let (ad, bd) = (&*elems::<T>(a), &*elems::<T>(b));
    let mut out = alloc_overwrite::<O>(plan.len);
    let (sa, sb) = (plan.inner_stride(0), plan.inner_stride(1));
    plan.run(&mut out, |offs, o| {
        kernel2(
            Src::new(ad, offs[0], sa, o.len()),
            Src::new(bd, offs[1], sb, o.len()),
            o,
            &f,
        )
    });
    Array::new(shape, O::into_buffer(out))
}

/// Binary op whose result has the operands' type: reuses an unshared input
/// buffer of the output's shape instead of allocating. (Each operand's
/// buffer is asked for once: the uniqueness test is an atomic operation,
/// a noticeable part of an op on a hundred elements.)
fn binary_same<T: Elem>(mut a: Array, mut b: Array, f: impl Fn(T, T) -> T + Sync) -> Array {
    let shape = out_shape(&a, &b);
    let plan = plan2(&shape, &a, &b);
    for out_is_rhs in [false, true] {
        let (dst, other, k) = if out_is_rhs {
            (&mut b, &a, 0)
        } else {
            (&mut a, &b, 1)
        };
        if dst.shape() != &shape[..] {
            continue;
        }
        let Some(v) = dst.buffer_mut().and_then(T::vec_mut) else {
            continue;
        };
        let od = &*elems::<T>(other);
        let so = plan.inner_stride(k);
        plan.run(v, |offs, o| {
            kernel2_inplace(o, Src::new(od, offs[k], so, o.len()), out_is_rhs, &f)
        });
        return if out_is_rhs { b } else { a };
    }
    binary_planned(&a, &b, &shape, &plan, f)
}

/// A binary op's function from the op table, run over two arrays.
struct BinaryArrays(Array, Array);

impl<T: Elem> BinaryFn<T> for BinaryArrays {
    type Out = Array;
    fn map<F: Fn(T, T) -> T + Copy + Send + Sync>(self, f: F) -> Array {
        binary_same(self.0, self.1, f)
    }
    fn test<F: Fn(T, T) -> bool + Copy + Send + Sync>(self, f: F) -> Array {
        binary_fresh(&self.0, &self.1, f)
    }
}

pub fn binary(op: BinaryOp, a: Array, b: Array) -> Array {
    assert_eq!(a.dtype(), b.dtype(), "binary {} on mixed dtypes", op.name());
    let dtype = a.dtype();
    if dtype.computed_as().is_some() {
        return crate::backend::Dispatch(&super::Cpu).binary(op, a, b);
    }
    crate::with_dtype!(dtype, T => <T as BinaryKernels>::binary(op, BinaryArrays(a, b)))
        .unwrap_or_else(|| panic!("{} is not defined on {dtype}", op.name()))
}

/// `out[i] = f(src[i])`, in parallel for large inputs.
pub fn map_into<T: Elem, O: Elem>(src: &[T], out: &mut [O], f: impl Fn(T) -> O + Sync) {
    match par_chunk(src.len()) {
        None => {
            for (o, &x) in out.iter_mut().zip(src) {
                *o = f(x);
            }
        }
        Some(chunk) => out
            .par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(o, s)| {
                for (o, &x) in o.iter_mut().zip(s) {
                    *o = f(x);
                }
            }),
    }
}

/// A fresh array `f(a[i])`.
pub fn map_fresh<T: Elem, O: Elem>(a: &Array, f: impl Fn(T) -> O + Sync) -> Array {
    let src = &*elems::<T>(a);
    let mut out = alloc_overwrite::<O>(src.len());
    map_into(src, &mut out, f);
    Array::new(a.shape(), O::into_buffer(out))
}

/// `f(a[i])` into `a`'s own buffer when it is unshared.
fn map_same<T: Elem>(mut a: Array, f: impl Fn(T) -> T + Sync) -> Array {
    if let Some(v) = a.buffer_mut().and_then(T::vec_mut) {
        let apply = |part: &mut [T]| {
            for x in part.iter_mut() {
                *x = f(*x);
            }
        };
        match par_chunk(v.len()) {
            None => apply(v),
            Some(chunk) => v.par_chunks_mut(chunk).for_each(apply),
        }
        return a;
    }
    map_fresh(&a, f)
}

/// Like `map_same`, for an op that comes as slice functions: `into(src, out)`
/// and `in_place(v)`, each called on one thread's chunk.
fn map_same_slices<T: Elem>(
    mut a: Array,
    into: fn(&[T], &mut [T]),
    in_place: fn(&mut [T]),
) -> Array {
    if let Some(v) = a.buffer_mut().and_then(T::vec_mut) {
        match par_chunk(v.len()) {
            None => in_place(v),
            Some(chunk) => v.par_chunks_mut(chunk).for_each(in_place),
        }
        return a;
    }
    let src = &*elems::<T>(&a);
    let mut out = alloc_overwrite::<T>(src.len());
    match par_chunk(src.len()) {
        None => into(src, &mut out),
        Some(chunk) => out
            .par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(o, s)| into(s, o)),
    }
    Array::new(a.shape(), T::into_buffer(out))
}

/// A unary op's function from the op table, run over an array (in its
/// buffer when unshared). Slice loops are `vmath`'s vectorised f32
/// transcendentals.
struct UnaryArray(Array);

impl<T: Elem> UnaryFn<T> for UnaryArray {
    type Out = Array;
    fn map<F: Fn(T) -> T + Copy + Send + Sync>(self, f: F) -> Array {
        map_same(self.0, f)
    }
    fn test<F: Fn(T) -> bool + Copy + Send + Sync>(self, f: F) -> Array {
        map_fresh(&self.0, f)
    }
    fn slices<F: Fn(T) -> T + Copy + Send + Sync>(
        self,
        into: fn(&[T], &mut [T]),
        in_place: fn(&mut [T]),
        _: F,
    ) -> Array {
        map_same_slices(self.0, into, in_place)
    }
}

pub fn unary(op: UnaryOp, a: Array) -> Array {
    let dtype = a.dtype();
    if dtype.computed_as().is_some() {
        return crate::backend::Dispatch(&super::Cpu).unary(op, a);
    }
    if dtype == DType::C64 && crate::complex::to_real(op) {
        return crate::complex::unary_to_real(op, &a);
    }
    crate::with_dtype!(dtype, T => <T as UnaryKernels>::unary(op, UnaryArray(a)))
        .unwrap_or_else(|| panic!("{} is not defined on {dtype}", op.name()))
}

fn select_typed<T: Elem>(cond: &Array, a: &Array, b: &Array) -> Array {
    let shape = broadcast_shapes(cond.shape(), a.shape())
        .and_then(|s| broadcast_shapes(&s, b.shape()))
        .unwrap_or_else(|| {
            panic!(
                "select shapes {:?} {:?} {:?} do not broadcast",
                cond.shape(),
                a.shape(),
                b.shape()
            )
        });
    let plan = Plan::new(&shape, [cond.shape(), a.shape(), b.shape()]);
    let (cd, ad, bd) = (&*elems::<bool>(cond), &*elems::<T>(a), &*elems::<T>(b));
    let strides = [
        plan.inner_stride(0),
        plan.inner_stride(1),
        plan.inner_stride(2),
    ];
    let mut out = alloc_overwrite::<T>(plan.len);
    plan.run(&mut out, |offs, o| {
        let n = o.len();
        let (c, x, y) = (
            Src::new(cd, offs[0], strides[0], n),
            Src::new(ad, offs[1], strides[1], n),
            Src::new(bd, offs[2], strides[2], n),
        );
        match (c, x, y) {
            (Src::Slice(c), Src::Slice(x), Src::Slice(y)) => {
                for (((o, &c), &x), &y) in o.iter_mut().zip(c).zip(x).zip(y) {
                    *o = if c { x } else { y };
                }
            }
            (Src::Scalar(c), x, y) => {
                let src = if c { x } else { y };
                match src {
                    Src::Slice(s) => o.copy_from_slice(s),
                    Src::Scalar(v) => o.fill(v),
                }
            }
            (c, x, y) => {
                for (i, o) in o.iter_mut().enumerate() {
                    *o = if c.get(i) { x.get(i) } else { y.get(i) };
                }
            }
        }
    });
    Array::new(&shape, T::into_buffer(out))
}

pub fn select(cond: &Array, a: &Array, b: &Array) -> Array {
    assert_eq!(cond.dtype(), DType::Bool, "select condition must be bool");
    assert_eq!(
        a.dtype(),
        b.dtype(),
        "select branches have different dtypes"
    );
    crate::with_dtype!(a.dtype(), T => select_typed::<T>(cond, a, b))
}

/// Conversions with NumPy `astype` / Rust `as` semantics: floats truncate
/// toward zero and saturate (NaN becomes 0), integers wrap, bool is 0/1 and
/// anything converts to bool as `!= 0`.
pub trait Cast: Copy {
    fn to_bool(self) -> bool;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_u32(self) -> u32;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    /// The narrow integers: integers wrap, floats truncate and saturate
    /// (as conversions to the wider integers do).
    fn to_i8(self) -> i8 {
        self.to_f64() as i8
    }
    fn to_i16(self) -> i16 {
        self.to_f64() as i16
    }
    fn to_u8(self) -> u8 {
        self.to_f64() as u8
    }
    fn to_u16(self) -> u16 {
        self.to_f64() as u16
    }
    /// The complex number with this real part.
    fn to_c64(self) -> C64 {
        C64::new(self.to_f32(), 0.0)
    }
    /// Rounded to nearest even, once, from the exact value.
    fn to_bf16(self) -> half::bf16 {
        crate::dtype::bf16_from_f64(self.to_f64())
    }
    fn to_f16(self) -> half::f16 {
        crate::dtype::f16_from_f64(self.to_f64())
    }
}

macro_rules! impl_cast {
    ($($t:ty),*) => {$(
        impl Cast for $t {
            #[inline(always)]
            fn to_bool(self) -> bool { self != (0 as $t) }
            #[inline(always)]
            fn to_i32(self) -> i32 { self as i32 }
            #[inline(always)]
            fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn to_u32(self) -> u32 { self as u32 }
            #[inline(always)]
            fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn to_i8(self) -> i8 { self as i8 }
            #[inline(always)]
            fn to_i16(self) -> i16 { self as i16 }
            #[inline(always)]
            fn to_u8(self) -> u8 { self as u8 }
            #[inline(always)]
            fn to_u16(self) -> u16 { self as u16 }
        }
    )*};
}
impl_cast!(i8, i16, u8, u16, i32, i64, u32, f32, f64);

/// 16-bit floats convert as their (exact) f32 value does.
macro_rules! impl_cast_half {
    ($($t:ty),*) => {$(
        impl Cast for $t {
            #[inline(always)]
            fn to_bool(self) -> bool { self.to_f32() != 0.0 }
            #[inline(always)]
            fn to_i32(self) -> i32 { self.to_f32() as i32 }
            #[inline(always)]
            fn to_i64(self) -> i64 { self.to_f32() as i64 }
            #[inline(always)]
            fn to_u32(self) -> u32 { self.to_f32() as u32 }
            #[inline(always)]
            fn to_f32(self) -> f32 { <$t>::to_f32(self) }
            #[inline(always)]
            fn to_f64(self) -> f64 { <$t>::to_f64(self) }
        }
    )*};
}
impl_cast_half!(half::bf16, half::f16);

impl Cast for bool {
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
}

/// A complex number converts to a real type as its real part does (NumPy
/// and JAX drop the imaginary part); to bool, as `!= 0`.
impl Cast for C64 {
    #[inline(always)]
    fn to_bool(self) -> bool {
        self.re != 0.0 || self.im != 0.0
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self.re as i32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.re as i64
    }
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self.re as u32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self.re
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.re as f64
    }
    #[inline(always)]
    fn to_c64(self) -> C64 {
        self
    }
}

fn convert_from<T: Elem + Cast>(a: &Array, dtype: DType) -> Array {
    match dtype {
        DType::Bool => map_fresh(a, T::to_bool),
        DType::I8 => map_fresh(a, T::to_i8),
        DType::I16 => map_fresh(a, T::to_i16),
        DType::U8 => map_fresh(a, T::to_u8),
        DType::U16 => map_fresh(a, T::to_u16),
        DType::I32 => map_fresh(a, T::to_i32),
        DType::I64 => map_fresh(a, T::to_i64),
        DType::U32 => map_fresh(a, T::to_u32),
        DType::BF16 => map_fresh(a, T::to_bf16),
        DType::F16 => map_fresh(a, T::to_f16),
        DType::F32 => map_fresh(a, T::to_f32),
        DType::F64 => map_fresh(a, T::to_f64),
        DType::C64 => map_fresh(a, T::to_c64),
    }
}

pub fn convert(a: &Array, dtype: DType) -> Array {
    if a.dtype() == dtype {
        return a.clone();
    }
    crate::with_dtype!(a.dtype(), T => convert_from::<T>(a, dtype))
}
