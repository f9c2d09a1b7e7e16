//! Dense row-major arrays: a shape and a shared, immutable buffer.
//!
//! Arrays are values: an operation returns a new array. The buffer is behind an
//! `Arc`, so reshaping and copying a handle are free, and a kernel may reuse an
//! input's buffer in place when it holds the only reference (`Arc::get_mut`).
//! The one change an array sees is donation: its buffer is given to a
//! compiled function and every handle of it is deleted.

use crate::dtype::DType;
use crate::gpu::DeviceBuffer;
use crate::sharding::Placement;
use crate::Backend;
use smallvec::SmallVec;
use std::sync::{Arc, OnceLock, RwLock};

pub type Shape = SmallVec<[usize; 4]>;

/// Typed storage. `Vec<bool>` keeps one byte per element, as NumPy does.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    BF16(Vec<half::bf16>),
    F16(Vec<half::f16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<crate::complex::C64>),
}

/// Dispatch on a buffer's element type with the same body for each:
/// `with_buffer!(buf, v => v.len())` binds `v: &Vec<T>`.
#[macro_export]
macro_rules! with_buffer {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::Buffer::Bool($v) => $body,
            $crate::Buffer::I8($v) => $body,
            $crate::Buffer::I16($v) => $body,
            $crate::Buffer::U8($v) => $body,
            $crate::Buffer::U16($v) => $body,
            $crate::Buffer::I32($v) => $body,
            $crate::Buffer::I64($v) => $body,
            $crate::Buffer::U32($v) => $body,
            $crate::Buffer::BF16($v) => $body,
            $crate::Buffer::F16($v) => $body,
            $crate::Buffer::F32($v) => $body,
            $crate::Buffer::F64($v) => $body,
            $crate::Buffer::C64($v) => $body,
        }
    };
}

impl Buffer {
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Bool(_) => DType::Bool,
            Buffer::I8(_) => DType::I8,
            Buffer::I16(_) => DType::I16,
            Buffer::U8(_) => DType::U8,
            Buffer::U16(_) => DType::U16,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
            Buffer::U32(_) => DType::U32,
            Buffer::BF16(_) => DType::BF16,
            Buffer::F16(_) => DType::F16,
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::C64(_) => DType::C64,
        }
    }

    pub fn len(&self) -> usize {
        with_buffer!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A zero-filled buffer (`false` for bool).
    pub fn zeros(dtype: DType, len: usize) -> Buffer {
        match dtype {
            DType::Bool => Buffer::Bool(vec![false; len]),
            DType::I8 => Buffer::I8(vec![0; len]),
            DType::I16 => Buffer::I16(vec![0; len]),
            DType::U8 => Buffer::U8(vec![0; len]),
            DType::U16 => Buffer::U16(vec![0; len]),
            DType::I32 => Buffer::I32(vec![0; len]),
            DType::I64 => Buffer::I64(vec![0; len]),
            DType::U32 => Buffer::U32(vec![0; len]),
            DType::BF16 => Buffer::BF16(vec![half::bf16::ZERO; len]),
            DType::F16 => Buffer::F16(vec![half::f16::ZERO; len]),
            DType::F32 => Buffer::F32(vec![0.0; len]),
            DType::F64 => Buffer::F64(vec![0.0; len]),
            DType::C64 => Buffer::C64(vec![Default::default(); len]),
        }
    }

    /// Element `i` as f64 (for printing and comparisons in tests; the real
    /// part of a complex number).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Buffer::Bool(v) => v[i] as u8 as f64,
            Buffer::I8(v) => v[i] as f64,
            Buffer::I16(v) => v[i] as f64,
            Buffer::U8(v) => v[i] as f64,
            Buffer::U16(v) => v[i] as f64,
            Buffer::I32(v) => v[i] as f64,
            Buffer::I64(v) => v[i] as f64,
            Buffer::U32(v) => v[i] as f64,
            Buffer::BF16(v) => v[i].to_f64(),
            Buffer::F16(v) => v[i].to_f64(),
            Buffer::F32(v) => v[i] as f64,
            Buffer::F64(v) => v[i],
            Buffer::C64(v) => v[i].re as f64,
        }
    }

    /// Element `i` as i64 (floats truncate toward zero).
    pub fn get_i64(&self, i: usize) -> i64 {
        match self {
            Buffer::Bool(v) => v[i] as i64,
            Buffer::I8(v) => v[i] as i64,
            Buffer::I16(v) => v[i] as i64,
            Buffer::U8(v) => v[i] as i64,
            Buffer::U16(v) => v[i] as i64,
            Buffer::I32(v) => v[i] as i64,
            Buffer::I64(v) => v[i],
            Buffer::U32(v) => v[i] as i64,
            Buffer::BF16(v) => v[i].to_f32() as i64,
            Buffer::F16(v) => v[i].to_f32() as i64,
            Buffer::F32(v) => v[i] as i64,
            Buffer::F64(v) => v[i] as i64,
            Buffer::C64(v) => v[i].re as i64,
        }
    }

    /// The raw little-endian bytes (for `.npy` files).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Buffer::Bool(v) => v.iter().map(|&b| b as u8).collect(),
            Buffer::I8(v) => v.iter().map(|&x| x as u8).collect(),
            Buffer::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::U8(v) => v.clone(),
            Buffer::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::BF16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::C64(v) => v
                .iter()
                .flat_map(|z| z.re.to_le_bytes().into_iter().chain(z.im.to_le_bytes()))
                .collect(),
        }
    }

    /// Decode little-endian bytes; `None` if the length does not divide evenly.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Buffer> {
        let n = dtype.size_bytes();
        if !bytes.len().is_multiple_of(n) {
            return None;
        }
        let chunks = bytes.chunks_exact(n);
        Some(match dtype {
            DType::Bool => Buffer::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::I8 => Buffer::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::U8 => Buffer::U8(bytes.to_vec()),
            DType::I16 => Buffer::I16(
                chunks
                    .map(|c| i16::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::U16 => Buffer::U16(
                chunks
                    .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::I32 => Buffer::I32(
                chunks
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::I64 => Buffer::I64(
                chunks
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::U32 => Buffer::U32(
                chunks
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::BF16 => Buffer::BF16(
                chunks
                    .map(|c| half::bf16::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::F16 => Buffer::F16(
                chunks
                    .map(|c| half::f16::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::F32 => Buffer::F32(
                chunks
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::F64 => Buffer::F64(
                chunks
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            DType::C64 => Buffer::C64(
                chunks
                    .map(|c| crate::complex::C64 {
                        re: f32::from_le_bytes(c[..4].try_into().unwrap()),
                        im: f32::from_le_bytes(c[4..].try_into().unwrap()),
                    })
                    .collect(),
            ),
        })
    }
}

/// A read of an array whose buffer was given away (`donate`, `delete`):
/// what the array was and why its elements are gone. The language reports
/// it as JAX does ("Array has been deleted ...").
#[derive(Clone, Debug)]
pub struct Deleted {
    pub shape: Shape,
    pub dtype: DType,
    pub why: Arc<str>,
}

/// Which array library's rules the language gives an array. The kernels
/// only keep the tag (a handle's, not the buffer's); the language reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flavour {
    /// An arr (JAX) array: a `jax.Array`.
    #[default]
    Jax,
    /// A NumPy `ndarray`: what NumPy's functions return. `writeable` is
    /// false for a view of an immutable array (`np.asarray` of a JAX array).
    NumPy { writeable: bool },
    /// Typed PRNG keys (`jax.random.key`): the last axis holds each key's
    /// two u32 words, and the language shows the array without it (shape
    /// `()` for one key, dtype `key<fry>`).
    Key,
}

/// An n-dimensional array: row-major, contiguous, immutable once shared.
///
/// One pointer wide, so that language values holding arrays stay small
/// (the interpreter moves values constantly). The shape sits beside a shared
/// buffer, so a reshape shares the elements.
#[derive(Clone, Debug)]
pub struct Array {
    inner: Arc<ArrayInner>,
}

#[derive(Debug)]
struct ArrayInner {
    shape: Shape,
    dtype: DType,
    /// The elements, row-major. An array made from per-device shards
    /// puts them together here the first time they are read as a whole.
    /// Behind a lock rather than immutable so that donating the array to a
    /// compiled function can take the buffer out of every handle at once
    /// (`donate`); reads hold the lock only to clone the `Arc`.
    buf: RwLock<Option<Arc<Buffer>>>,
    /// Why the array's buffer is gone (`donate`), once it is.
    deleted: OnceLock<Arc<str>>,
    /// Shared by the runtime itself (a cached scalar): never donated.
    pinned: bool,
    /// Made by `donate`: kernels write into this buffer before others.
    donated: bool,
    /// Whose rules the language applies to this handle (see `Flavour`).
    flavour: Flavour,
    /// JAX's weak type: the array stands for a Python scalar (`jnp.asarray(2.0)`,
    /// `grad` at `3.0`), so its dtype gives way to the other operand's in
    /// promotion. A tag of the handle, like the flavour; the language sets it.
    weak: bool,
    /// Which device holds which block (`None`: an ordinary host array).
    /// Each device's resident bytes count its block while the array lives.
    placement: Option<Arc<Placement>>,
    /// The block of each mesh position, when the array was made from the
    /// devices' results (`from_shards`); otherwise the blocks are regions
    /// of `buf`.
    shards: Option<Arc<[Array]>>,
    /// The elements on a GPU: where the array lives when `home` says so
    /// (then `buf` is a host copy made when first read), else a cached
    /// upload of a host array to the device that last computed with it.
    gpu: RwLock<Option<Arc<DeviceBuffer>>>,
    /// The GPU device (`gpu::devices()` index) the array lives on.
    home: Option<usize>,
}

impl Array {
    /// Panics if the buffer length differs from the shape's product: a caller bug.
    pub fn new(shape: &[usize], buf: Buffer) -> Array {
        Array::from_arc(shape, Arc::new(buf))
    }

    pub fn from_arc(shape: &[usize], buf: Arc<Buffer>) -> Array {
        Array::host(shape, buf, false)
    }

    /// A host array of `buf`; `donated` marks a buffer given by `donate`.
    fn host(shape: &[usize], buf: Arc<Buffer>, donated: bool) -> Array {
        assert_eq!(
            shape.iter().product::<usize>(),
            buf.len(),
            "buffer length does not match shape {shape:?}"
        );
        // `from_slice` copies; `into()` would go through the generic extend.
        let mut a = Array::build(Shape::from_slice(shape), buf.dtype(), Some(buf), None, None);
        if donated {
            Arc::get_mut(&mut a.inner).expect("just made").donated = true;
        }
        a
    }

    /// A new array (not deleted, pinned or donated) of these parts.
    fn build(
        shape: Shape,
        dtype: DType,
        buf: Option<Arc<Buffer>>,
        placement: Option<Arc<Placement>>,
        shards: Option<Arc<[Array]>>,
    ) -> Array {
        Array {
            inner: Arc::new(ArrayInner {
                shape,
                dtype,
                buf: RwLock::new(buf),
                deleted: OnceLock::new(),
                pinned: false,
                donated: false,
                flavour: Flavour::Jax,
                weak: false,
                placement,
                shards,
                gpu: RwLock::new(None),
                home: None,
            }),
        }
    }

    /// An array that lives on a GPU device: its elements are `buf` there,
    /// copied to the host only when something reads them there.
    pub fn on_gpu(shape: &[usize], dtype: DType, buf: Arc<DeviceBuffer>) -> Array {
        let mut a = Array::build(Shape::from_slice(shape), dtype, None, None, None);
        let inner = Arc::get_mut(&mut a.inner).expect("just made");
        inner.home = Some(buf.device);
        inner.gpu = RwLock::new(Some(buf));
        a
    }

    /// Wait until the array's elements are computed: a GPU array's device
    /// finishes the launches queued before; a host array is ready.
    pub fn wait(&self) -> Result<(), Deleted> {
        self.check_live()?;
        if let Some(home) = self.inner.home {
            crate::gpu::device(home).synchronize();
        } else if self
            .inner
            .buf
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            // Sharded: its blocks are its elements; putting them together
            // would copy the whole array only to wait.
            match &self.inner.shards {
                Some(shards) => shards.iter().try_for_each(Array::wait)?,
                None => {
                    self.buffer()?;
                }
            }
        }
        Ok(())
    }

    /// The GPU device the array lives on (`None`: host memory).
    pub fn home(&self) -> Option<usize> {
        self.inner.home
    }

    /// The array's elements on GPU device `device`, if they are there (it
    /// lives there, or was uploaded there before).
    pub fn device_copy(&self, device: usize) -> Option<Arc<DeviceBuffer>> {
        let g = self.inner.gpu.read().unwrap_or_else(|e| e.into_inner());
        g.as_ref().filter(|b| b.device == device).cloned()
    }

    /// Keep an upload of this host array for the next operation on the device.
    pub fn keep_device_copy(&self, buf: Arc<DeviceBuffer>) {
        if self.inner.home.is_none() && self.deleted().is_none() {
            *self.inner.gpu.write().unwrap_or_else(|e| e.into_inner()) = Some(buf);
        }
    }

    /// The array of `shape` laid out by `placement` whose block at mesh
    /// position `pos` is `shards[pos]` (replicas hold equal blocks): the
    /// devices' results, kept as they are. The whole array is put together
    /// only when something reads it as a whole, as a device array is
    /// copied to the host only when needed.
    pub fn from_shards(shape: &[usize], placement: Arc<Placement>, shards: Vec<Array>) -> Array {
        assert_eq!(
            shards.len(),
            placement.mesh.size(),
            "one shard per mesh position"
        );
        for (pos, shard) in shards.iter().enumerate() {
            let want: Vec<usize> = placement
                .block(shape, pos)
                .iter()
                .map(|r| r.len())
                .collect();
            assert_eq!(shard.shape(), &want[..], "shard {pos} of {shape:?}");
        }
        let dtype = shards.first().map_or(DType::F32, Array::dtype);
        Array::build(
            Shape::from_slice(shape),
            dtype,
            None,
            None,
            Some(shards.into()),
        )
        .with_placement(placement)
    }

    /// The array laid out by `placement`, each mesh position's block copied
    /// into a buffer of its own, as a transfer to the devices makes (the
    /// whole buffer stays too, for reading it on the host).
    pub fn distribute(&self, placement: Arc<Placement>) -> Result<Array, Deleted> {
        let buf = self.buffer()?;
        let shards: Vec<Array> = (0..placement.mesh.size())
            .map(|pos| {
                let b = placement.block(self.shape(), pos);
                let start: Vec<usize> = b.iter().map(|r| r.start).collect();
                let limit: Vec<usize> = b.iter().map(|r| r.end).collect();
                crate::cpu::Cpu.slice(self, &start, &limit, &vec![1; self.ndim()])
            })
            .collect();
        Ok(Array::build(
            self.inner.shape.clone(),
            self.inner.dtype,
            Some(buf),
            None,
            Some(shards.into()),
        )
        .with_placement(placement))
    }

    /// The block of each mesh position of its placement, without copying,
    /// when the array keeps its devices' shards (`from_shards`).
    pub fn shards(&self) -> Option<&[Array]> {
        self.inner.shards.as_deref()
    }

    /// The whole buffer: the buffer itself, or (once) its shards put
    /// together; `None` once the array is deleted (its shards may be gone
    /// too, so they are never put together then).
    fn try_buf(&self) -> Option<Arc<Buffer>> {
        if let Some(b) = &*self.inner.buf.read().unwrap_or_else(|e| e.into_inner()) {
            return Some(b.clone());
        }
        let mut slot = self.inner.buf.write().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = &*slot {
            return Some(b.clone());
        }
        if self.deleted().is_some() {
            return None;
        }
        let b = Arc::new(self.assemble());
        *slot = Some(b.clone());
        Some(b)
    }

    /// The elements of a GPU array copied to the host.
    fn download(&self) -> Option<Buffer> {
        let home = self.inner.home?;
        let g = self.inner.gpu.read().unwrap_or_else(|e| e.into_inner());
        let buf = g.as_ref()?;
        Some(crate::gpu::device(home).download(buf, self.inner.dtype, self.len()))
    }

    /// The buffer of an array a kernel was handed. Kernels are only given
    /// live arrays: the runtime reads every operand through `buffer` (or
    /// `eval_concrete`'s check) first, so a deleted one here is a caller bug.
    pub(crate) fn live(&self) -> Arc<Buffer> {
        match self.buffer() {
            Ok(b) => b,
            Err(d) => panic!("a kernel was handed a deleted array ({})", d.why),
        }
    }

    /// Why reading this array fails, if it does: it was deleted.
    fn check_live(&self) -> Result<(), Deleted> {
        match self.inner.deleted.get() {
            Some(why) => Err(Deleted {
                shape: self.inner.shape.clone(),
                dtype: self.inner.dtype,
                why: why.clone(),
            }),
            None => Ok(()),
        }
    }

    /// A deleted array of this shape and dtype: what metadata operations
    /// (reshape, a new handle or layout) make of a deleted array, so the
    /// deletion is reported where the elements are read.
    fn deleted_of(shape: &[usize], dtype: DType, why: Arc<str>) -> Array {
        let a = Array::build(Shape::from_slice(shape), dtype, None, None, None);
        a.inner.deleted.set(why).expect("just made");
        a
    }

    /// The shards put together into one buffer (or a GPU array's elements
    /// copied to the host).
    fn assemble(&self) -> Buffer {
        if let Some(b) = self.download() {
            return b;
        }
        let shards = self
            .inner
            .shards
            .as_ref()
            .expect("an array has a buffer or shards");
        let p = self
            .inner
            .placement
            .as_ref()
            .expect("sharded arrays have a placement");
        crate::cpu::assemble_blocks(
            &self.inner.shape,
            self.inner.dtype,
            (0..shards.len()).map(|pos| (p.block(&self.inner.shape, pos), &shards[pos])),
        )
    }

    /// Mark every handle deleted (`why`) and take the host buffer out;
    /// `None` if the array was already deleted or is pinned. Shards held
    /// by this array alone are freed, and the devices' resident bytes
    /// released, by `release`.
    fn take_for_deletion(&self, why: &str) -> Option<Option<Arc<Buffer>>> {
        if self.inner.pinned || self.inner.deleted.set(why.into()).is_err() {
            return None;
        }
        self.inner
            .gpu
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Some(
            self.inner
                .buf
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        )
    }

    /// The rest of a deletion: free the shards this array alone holds and
    /// take its blocks off the devices' resident bytes.
    fn release(&self, why: &str) {
        for pos in 0..self.inner.shards.as_ref().map_or(0, |s| s.len()) {
            if let Some(s) = self.sole_shard(pos) {
                s.delete(why);
            }
        }
        self.inner.release_resident();
    }

    /// Why the array has no buffer any more (it was donated), if it has none.
    pub fn deleted(&self) -> Option<&str> {
        self.inner.deleted.get().map(|s| &**s)
    }

    /// Delete the array without giving its elements to anybody (its
    /// shards may have been donated one by one already): every handle of
    /// it is deleted, its buffer and shards are freed once the last handle
    /// goes. False if it was already deleted or is pinned.
    pub fn delete(&self, why: &str) -> bool {
        if self.take_for_deletion(why).is_none() {
            return false;
        }
        self.release(why);
        true
    }

    /// Whether the shard at `pos` is held by this array alone (no other
    /// handle made by `with_placement` shares the shards, nobody holds the
    /// shard itself), so deleting it deletes nothing of anybody else's.
    fn sole_shard(&self, pos: usize) -> Option<&Array> {
        let shards = self.inner.shards.as_ref()?;
        let shard = shards.get(pos)?;
        (Arc::strong_count(shards) == 1 && Arc::strong_count(&shard.inner) == 1).then_some(shard)
    }

    /// The block at mesh position `pos` for a program this array is
    /// donated to: the shard's own buffer (the shard is deleted) when this
    /// array alone holds it, else a shared handle of it.
    pub fn donate_shard(&self, pos: usize, why: &str) -> Option<Array> {
        if let Some(given) = self.sole_shard(pos).and_then(|s| s.donate(why)) {
            return Some(given);
        }
        self.shards().map(|s| s[pos].clone())
    }

    /// Give this array's elements away, as JAX's buffer donation does: every
    /// handle of the array is deleted from now on (`deleted` says `why`),
    /// and the returned array holds the buffer, uniquely if nothing else
    /// shared it, so a compiled function can write its results in place.
    /// The shards of a sharded array that nobody else holds are freed. `None` if the
    /// array was already deleted, or is pinned (then nothing changes).
    pub fn donate(&self, why: &str) -> Option<Array> {
        if let Some(home) = self.home() {
            // A GPU array's buffer moves to the new array, on its device.
            let buf = self.device_copy(home)?;
            self.take_for_deletion(why)?;
            self.release(why);
            return Some(Array::on_gpu(&self.inner.shape, self.inner.dtype, buf));
        }
        // Never read on the host: the shards are put together once, now.
        let buf = self
            .take_for_deletion(why)?
            .unwrap_or_else(|| Arc::new(self.assemble()));
        self.release(why);
        Some(Array::host(&self.inner.shape, buf, true))
    }

    pub fn scalar_f32(x: f32) -> Array {
        Array::new(&[], Buffer::F32(vec![x]))
    }

    pub fn zeros(dtype: DType, shape: &[usize]) -> Array {
        Array::new(shape, Buffer::zeros(dtype, shape.iter().product()))
    }

    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    pub fn ndim(&self) -> usize {
        self.inner.shape.len()
    }

    pub fn len(&self) -> usize {
        self.inner.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// The elements (a handle: the buffer is shared, not copied), or why
    /// there are none. The one way to read an array: every accessor that
    /// reads elements goes through it, so a deleted array is an error on
    /// every path, never a panic.
    pub fn buffer(&self) -> Result<Arc<Buffer>, Deleted> {
        self.check_live()?;
        self.try_buf().ok_or_else(|| {
            self.check_live()
                .expect_err("only a deletion takes the buffer away")
        })
    }

    /// The buffer, mutable only if no other array shares it (for in-place
    /// reuse); `None` for a deleted array too.
    pub fn buffer_mut(&mut self) -> Option<&mut Buffer> {
        self.check_live().ok()?;
        // A live host array holds its buffer, so an unshared one reaches
        // it without the lock: `buffer`'s read lock and handle cost four
        // atomic operations, as much as a small elementwise kernel's work.
        // Shards or a GPU array are put together first.
        if self.inner.shards.is_some() || self.inner.home.is_some() {
            self.buffer().ok()?;
        }
        Arc::get_mut(&mut self.inner)
            .and_then(|inner| {
                inner
                    .buf
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_mut()
            })
            .and_then(Arc::get_mut)
    }

    /// The buffer itself, if no other array or handle shares it (so a
    /// kernel can write its result into it); otherwise the array back.
    pub fn into_buffer(mut self) -> Result<Buffer, Array> {
        if self.deleted().is_some() || self.buffer_mut().is_none() {
            return Err(self);
        }
        let Ok(mut inner) = Arc::try_unwrap(self.inner) else {
            unreachable!("buffer_mut found the array unshared")
        };
        let buf = inner
            .buf
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .expect("buffer_mut put the buffer together");
        Ok(Arc::try_unwrap(buf).unwrap_or_else(|_| unreachable!("buffer_mut found it unshared")))
    }

    /// The address of the first element: two arrays with the same address
    /// share their storage (JAX's `unsafe_buffer_pointer`).
    pub fn buffer_address(&self) -> Result<usize, Deleted> {
        Ok(with_buffer!(&*self.buffer()?, v => v.as_ptr() as usize))
    }

    /// Whether two handles are the same array (same buffer, same shape).
    pub fn same(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A handle of the same elements that is never donated, for an array
    /// the runtime hands to many owners (a cached scalar): donating one
    /// owner's handle must not delete everybody's. (Of a deleted array, a
    /// deleted one.)
    pub fn pinned(&self) -> Array {
        let buf = match self.buffer() {
            Ok(b) => b,
            Err(d) => return Array::deleted_of(self.shape(), self.dtype(), d.why),
        };
        let mut a = Array::from_arc(self.shape(), buf);
        let inner = Arc::get_mut(&mut a.inner).expect("just made");
        inner.pinned = true;
        inner.weak = self.inner.weak;
        a
    }

    /// Whether this handle is shared by the runtime (a cached scalar).
    pub fn is_pinned(&self) -> bool {
        self.inner.pinned
    }

    /// Whose rules the language gives this array.
    pub fn flavour(&self) -> Flavour {
        self.inner.flavour
    }

    /// A handle of the same elements with another flavour (a sharded
    /// array keeps its own: NumPy's arrays live on the host).
    pub fn with_flavour(&self, flavour: Flavour) -> Array {
        if self.inner.flavour == flavour || self.placement().is_some() {
            return self.clone();
        }
        let mut a = self.reshape(self.shape());
        if let Some(inner) = Arc::get_mut(&mut a.inner) {
            inner.flavour = flavour;
        }
        a
    }

    /// Whether the array is weakly typed (see `ArrayInner::weak`).
    pub fn is_weak(&self) -> bool {
        self.inner.weak
    }

    /// A handle of the same elements, weakly typed or not. Sharded arrays
    /// and NumPy's are never weak (a placement is not re-made for a tag).
    pub fn with_weak(&self, weak: bool) -> Array {
        if self.inner.weak == weak
            || (weak && (self.placement().is_some() || self.inner.flavour != Flavour::Jax))
        {
            return self.clone();
        }
        let mut a = self.reshape(self.shape());
        if let Some(inner) = Arc::get_mut(&mut a.inner) {
            inner.weak = weak;
        }
        a
    }

    /// Whether this array holds a donated buffer (`donate`'s result): a
    /// kernel that may overwrite one of its inputs picks such a one first,
    /// so results land where the caller gave memory, as JAX's aliasing does.
    pub fn is_donated(&self) -> bool {
        self.inner.donated
    }

    /// Another array of the same elements and layout (the buffer shared):
    /// deleting one leaves the other. A deleted array has no elements to share.
    pub fn handle(&self) -> Result<Array, Deleted> {
        self.check_live()?;
        Ok(match self.placement() {
            Some(p) => self.with_placement(p.clone()),
            None => self.reshape(self.shape()).with_weak(self.inner.weak),
        })
    }

    /// A number that identifies this array (not its buffer) while it lives.
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Whether two arrays share one buffer (a deleted array shares only
    /// with its own handle).
    pub fn same_buffer(&self, other: &Array) -> bool {
        match (self.buffer(), other.buffer()) {
            (Ok(a), Ok(b)) => Arc::ptr_eq(&a, &b),
            _ => self.same(other),
        }
    }

    /// Same elements, new shape. Panics if the sizes differ: callers check.
    /// A donated buffer stays marked as one (see `is_donated`); the reshape
    /// of a deleted array is deleted.
    pub fn reshape(&self, shape: &[usize]) -> Array {
        if let (Some(home), None) = (self.home(), self.deleted()) {
            if let Some(buf) = self.device_copy(home) {
                return Array::on_gpu(shape, self.dtype(), buf);
            }
        }
        match self.buffer() {
            Ok(buf) => Array::host(shape, buf, self.inner.donated),
            Err(d) => Array::deleted_of(shape, self.dtype(), d.why),
        }
    }

    /// Which device holds which block, for a sharded array.
    pub fn placement(&self) -> Option<&Arc<Placement>> {
        self.inner.placement.as_ref()
    }

    /// The same elements laid out over a mesh (the placement's rank must be
    /// the array's; checked by `Placement::new`). Of a deleted array, a
    /// deleted one (resident nowhere).
    pub fn with_placement(&self, placement: Arc<Placement>) -> Array {
        if let Err(d) = self.check_live() {
            let a = Array::build(
                self.inner.shape.clone(),
                self.inner.dtype,
                None,
                Some(placement),
                None,
            );
            a.inner.deleted.set(d.why).expect("just made");
            return a;
        }
        for (dev, bytes) in placement.bytes_per_device(self.shape(), self.dtype()) {
            crate::devices::stats(dev)
                .resident_bytes
                .fetch_add(bytes as u64, std::sync::atomic::Ordering::Relaxed);
        }
        // The shards stay only under the placement they were made for.
        let shards = self.inner.shards.clone().filter(|_| {
            self.inner.placement.is_none() || self.placement().map(|p| &**p) == Some(&*placement)
        });
        let host = self
            .inner
            .buf
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let buf = match (&shards, host) {
            (_, Some(b)) => Some(b),
            (Some(_), None) => None,
            (None, None) => Some(self.live()),
        };
        let a = Array::build(
            self.inner.shape.clone(),
            self.inner.dtype,
            buf,
            Some(placement),
            shards,
        );
        let mut live = LIVE_SHARDED.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&a.inner));
        a
    }

    /// The sharded arrays alive now (for the mesh views).
    pub fn live_sharded() -> Vec<Array> {
        let mut live = LIVE_SHARDED.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.iter()
            .filter_map(|w| w.upgrade().map(|inner| Array { inner }))
            .filter(|a| a.deleted().is_none())
            .collect()
    }

    /// Row-major strides in elements.
    pub fn strides(&self) -> Shape {
        strides_of(&self.inner.shape)
    }

    pub fn get_f64(&self, i: usize) -> Result<f64, Deleted> {
        Ok(self.buffer()?.get_f64(i))
    }

    /// Element `i` as i64 (floats truncate toward zero).
    pub fn get_i64(&self, i: usize) -> Result<i64, Deleted> {
        Ok(self.buffer()?.get_i64(i))
    }

    /// All elements as f64, row-major.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>, Deleted> {
        let b = self.buffer()?;
        Ok((0..self.len()).map(|i| b.get_f64(i)).collect())
    }
}

/// Every sharded array made, weakly, so `:mesh` can list what each device holds.
static LIVE_SHARDED: std::sync::Mutex<Vec<std::sync::Weak<ArrayInner>>> =
    std::sync::Mutex::new(Vec::new());

/// A large buffer whose last array goes away is offered to the CPU kernels'
/// buffer pool, so the next large output reuses its pages instead of faulting
/// in fresh zeroed ones.
impl ArrayInner {
    /// Take this array's blocks off its devices' resident bytes.
    fn release_resident(&self) {
        if let Some(p) = &self.placement {
            for (dev, bytes) in p.bytes_per_device(&self.shape, self.dtype) {
                crate::devices::stats(dev)
                    .resident_bytes
                    .fetch_sub(bytes as u64, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

impl Drop for ArrayInner {
    fn drop(&mut self) {
        // A donated array released its bytes when it was donated.
        if self.deleted.get().is_none() {
            self.release_resident();
        }
        let Some(buf) = self.buf.get_mut().unwrap_or_else(|e| e.into_inner()) else {
            return;
        };
        if crate::cpu::elem::worth_recycling(buf) {
            if let Some(buf) = Arc::get_mut(buf) {
                crate::cpu::elem::recycle(buf);
            }
        }
    }
}

/// Row-major strides of a shape, in elements.
pub fn strides_of(shape: &[usize]) -> Shape {
    let mut strides: Shape = smallvec::smallvec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// NumPy broadcasting of two shapes; `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Shape> {
    // The common cases first: equal shapes, or a scalar operand.
    if a == b || b.is_empty() {
        return Some(Shape::from_slice(a));
    }
    if a.is_empty() {
        return Some(Shape::from_slice(b));
    }
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}
