//! NumPy's `Generator` (`np.random.default_rng(seed)`): PCG64 seeded through
//! NumPy's `SeedSequence`, with NumPy's own algorithms on top (the 256-layer
//! ziggurat for normals and exponentials, Lemire's bounded integers,
//! Fisher-Yates shuffles, Floyd's sampling without replacement), so a seeded
//! script draws NumPy's exact numbers. Results are host-side float64/int64
//! arrays, or Python scalars where NumPy returns one.

use crate::args::*;
use crate::np_random::{count, size_arg};
use crate::np_ziggurat::{FE, FI, KE, KI, WE, WI};
use crate::Registry;
use arr_kernels::{Array, Buffer, DType};
use arr_runtime::numpy;
use arr_runtime::value::Object;
use arr_runtime::{Builtin, Effect, Error, Interp, Result, Value};
use std::cell::RefCell;
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "np_default_rng(seed=None)",
        "NumPy's Generator over PCG64, seeded by SeedSequence(seed) (an int, a list of \
         ints, None for fresh OS entropy, or a Generator, returned as is).",
        default_rng,
    );
    let methods: &[(&str, &str, arr_runtime::NativeFn)] = &[
        (
            "random(self, size=None)",
            "Uniform floats in [0, 1): a float, or a float64 array of shape size.",
            random,
        ),
        (
            "standard_normal(self, size=None)",
            "Standard normal floats (NumPy's ziggurat).",
            standard_normal,
        ),
        (
            "normal(self, loc=0.0, scale=1.0, size=None)",
            "Normal floats with mean loc and standard deviation scale.",
            normal,
        ),
        (
            "uniform(self, low=0.0, high=1.0, size=None)",
            "Uniform floats in [low, high).",
            uniform,
        ),
        (
            "standard_exponential(self, size=None)",
            "Exponential floats with scale 1 (NumPy's ziggurat).",
            standard_exponential,
        ),
        (
            "exponential(self, scale=1.0, size=None)",
            "Exponential floats with the given scale (mean).",
            exponential,
        ),
        (
            "integers(self, low, high=None, size=None, dtype=None, endpoint=False)",
            "Uniform integers in [low, high) ([low, high] with endpoint=True; [0, low) \
             without high): int64 unless dtype=int32.",
            integers,
        ),
        (
            "permutation(self, x)",
            "A shuffled arange(x) (x an int), or a shuffled copy of x along its first axis.",
            permutation,
        ),
        (
            "shuffle(self, x)",
            "Shuffle the list x in place (arrays are immutable: use permutation).",
            shuffle,
        ),
        (
            "choice(self, a, size=None, replace=True, p=None, shuffle=True)",
            "Samples from arange(a) (a an int) or from a's rows, with replacement or \
             without, uniformly or with probabilities p.",
            choice,
        ),
    ];
    for (signature, doc, f) in methods {
        // Each draw advances the generator: never compiled automatically.
        let b = Builtin::new(signature, doc, *f).with_effect(Effect::World);
        let name = b.name.to_string();
        r.interp
            .add_method(GENERATOR, &name, Value::Builtin(Rc::new(b)));
    }
}

const GENERATOR: &str = "Generator";

/// PCG64 (XSL-RR 128/64) with NumPy's cached upper half for 32-bit draws.
#[derive(Debug)]
struct Pcg64 {
    state: u128,
    inc: u128,
    spare: Option<u32>,
}

const PCG_MULT: u128 = (2549297995355413924u128 << 64) | 4865540595714422341;

impl Pcg64 {
    fn new(seed: u128, seq: u128) -> Pcg64 {
        let mut g = Pcg64 {
            state: 0,
            inc: (seq << 1) | 1,
            spare: None,
        };
        g.step();
        g.state = g.state.wrapping_add(seed);
        g.step();
        g
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        (((s >> 64) as u64) ^ (s as u64)).rotate_right((s >> 122) as u32)
    }

    fn next_u32(&mut self) -> u32 {
        if let Some(u) = self.spare.take() {
            return u;
        }
        let v = self.next_u64();
        self.spare = Some((v >> 32) as u32);
        v as u32
    }

    fn next_double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9007199254740992.0)
    }

    /// NumPy's `random_standard_normal`: the 256-layer ziggurat.
    fn standard_normal(&mut self) -> f64 {
        const R: f64 = 3.654_152_885_361_009;
        const INV_R: f64 = 0.273_661_237_329_758_3;
        loop {
            let r = self.next_u64();
            let idx = (r & 0xff) as usize;
            let r = r >> 8;
            let rabs = (r >> 1) & 0x000f_ffff_ffff_ffff;
            let mut x = rabs as f64 * f64::from_bits(WI[idx]);
            if r & 1 == 1 {
                x = -x;
            }
            if rabs < KI[idx] {
                return x;
            }
            if idx == 0 {
                // The tail beyond R, by Marsaglia's method (1 - U avoids log(0)).
                loop {
                    let xx = -INV_R * (-self.next_double()).ln_1p();
                    let yy = -(-self.next_double()).ln_1p();
                    if yy + yy > xx * xx {
                        return if (rabs >> 8) & 1 == 1 {
                            -(R + xx)
                        } else {
                            R + xx
                        };
                    }
                }
            }
            let (f0, f1) = (f64::from_bits(FI[idx - 1]), f64::from_bits(FI[idx]));
            if (f0 - f1) * self.next_double() + f1 < (-0.5 * x * x).exp() {
                return x;
            }
        }
    }

    /// NumPy's `random_standard_exponential`: the 256-layer ziggurat.
    fn standard_exponential(&mut self) -> f64 {
        const R: f64 = 7.697_117_470_131_05;
        loop {
            let ri = self.next_u64() >> 3;
            let idx = (ri & 0xff) as usize;
            let ri = ri >> 8;
            let x = ri as f64 * f64::from_bits(WE[idx]);
            if ri < KE[idx] {
                return x;
            }
            if idx == 0 {
                return R - (-self.next_double()).ln_1p();
            }
            let (f0, f1) = (f64::from_bits(FE[idx - 1]), f64::from_bits(FE[idx]));
            if (f0 - f1) * self.next_double() + f1 < (-x).exp() {
                return x;
            }
        }
    }

    /// A uniform integer in [0, rng] (NumPy's `random_bounded_uint64`):
    /// Lemire's multiply-and-reject, through the 32-bit draws when rng fits.
    fn bounded(&mut self, rng: u64) -> u64 {
        if rng == 0 {
            0
        } else if rng == u32::MAX as u64 {
            self.next_u32() as u64
        } else if rng < u32::MAX as u64 {
            let excl = rng as u32 + 1;
            let mut m = self.next_u32() as u64 * excl as u64;
            if (m as u32) < excl {
                let threshold = (u32::MAX - rng as u32) % excl;
                while (m as u32) < threshold {
                    m = self.next_u32() as u64 * excl as u64;
                }
            }
            m >> 32
        } else if rng == u64::MAX {
            self.next_u64()
        } else {
            let excl = rng + 1;
            let mut m = self.next_u64() as u128 * excl as u128;
            if (m as u64) < excl {
                let threshold = (u64::MAX - rng) % excl;
                while (m as u64) < threshold {
                    m = self.next_u64() as u128 * excl as u128;
                }
            }
            (m >> 64) as u64
        }
    }

    /// A uniform integer in [0, max] by masked rejection (NumPy's
    /// `random_interval`, what its shuffles use).
    fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        loop {
            let v = if max <= u32::MAX as u64 {
                self.next_u32() as u64 & mask
            } else {
                self.next_u64() & mask
            };
            if v <= max {
                return v;
            }
        }
    }

    /// Fisher-Yates from the end, as `Generator.shuffle` does.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.interval(i as u64) as usize;
            v.swap(i, j);
        }
    }
}

/// NumPy's `SeedSequence(entropy).generate_state(4, uint64)`: the entropy
/// hashed into a pool of four 32-bit words, then expanded.
fn seed_sequence(entropy: &[u32]) -> [u64; 2 * 2] {
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    const MIX_MULT_L: u32 = 0xca01_f9dd;
    const MIX_MULT_R: u32 = 0x4973_f715;
    const POOL: usize = 4;
    let mut hash_const = INIT_A;
    let mut hashmix = |value: u32| {
        let mut v = value ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_A);
        v = v.wrapping_mul(hash_const);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| {
        let r = MIX_MULT_L
            .wrapping_mul(x)
            .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let mut pool = [0u32; POOL];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0));
    }
    for src in 0..POOL {
        for dst in 0..POOL {
            if src != dst {
                pool[dst] = mix(pool[dst], hashmix(pool[src]));
            }
        }
    }
    for &e in entropy.iter().skip(POOL) {
        for p in pool.iter_mut() {
            *p = mix(*p, hashmix(e));
        }
    }
    let mut hash_const = INIT_B;
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let mut v = pool[i % POOL] ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hash_const);
        *w = v ^ (v >> 16);
    }
    std::array::from_fn(|i| words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32)
}

/// An int seed as NumPy's little-endian 32-bit words (0 is one zero word).
fn int_words(n: i64, out: &mut Vec<u32>) -> Result<()> {
    if n < 0 {
        return Err(Error::value_error(format!(
            "expected non-negative integer, got {n}"
        )));
    }
    let n = n as u64;
    out.push(n as u32);
    if n >> 32 != 0 {
        out.push((n >> 32) as u32);
    }
    Ok(())
}

/// The seed's entropy words: an int, a (nested) sequence of ints, or fresh
/// OS entropy (128 bits, as NumPy draws) for None.
fn entropy(seed: &Value, out: &mut Vec<u32>) -> Result<()> {
    match seed {
        Value::None => {
            let mut bytes = [0u8; 16];
            let read = std::fs::File::open("/dev/urandom")
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
            if read.is_err() {
                // No urandom: the clock and this process are the entropy.
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                bytes = (t ^ ((std::process::id() as u128) << 96)).to_le_bytes();
            }
            out.extend(
                bytes
                    .chunks(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            Ok(())
        }
        Value::Int(_) | Value::Bool(_) => int_words(int_arg("seed", seed)?, out),
        Value::Float(_) => Err(Error::type_error(
            "SeedSequence expects int or sequence of ints for entropy not a float",
        )),
        Value::List(_) | Value::Tuple(_) | Value::Array(_) => {
            for v in numpy::sequence_items(seed)? {
                match v {
                    Value::Int(_) | Value::Bool(_) => int_words(int_arg("seed", &v)?, out)?,
                    Value::Array(ref t) if t.ndim() == 0 => {
                        int_words(int_arg("seed", &numpy::item(t)?)?, out)?
                    }
                    other => {
                        return Err(Error::type_error(format!(
                            "SeedSequence expects int or sequence of ints for entropy, got {}",
                            other.type_name()
                        )))
                    }
                }
            }
            Ok(())
        }
        other => Err(Error::type_error(format!(
            "SeedSequence expects int or sequence of ints for entropy, got {}",
            other.type_name()
        ))),
    }
}

/// `np.random.default_rng(seed)`: one generator, shared by every copy of the value.
#[derive(Debug)]
struct Generator {
    pcg: RefCell<Pcg64>,
}

impl Object for Generator {
    fn type_name(&self) -> &'static str {
        GENERATOR
    }
    fn repr(&self) -> String {
        "Generator(PCG64)".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn default_rng(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if generator(&a[0]).is_some() {
        return Ok(a[0].clone());
    }
    let mut words = Vec::new();
    entropy(&a[0], &mut words)?;
    let s = seed_sequence(&words);
    let seed = ((s[0] as u128) << 64) | s[1] as u128;
    let seq = ((s[2] as u128) << 64) | s[3] as u128;
    Ok(Value::object(Generator {
        pcg: RefCell::new(Pcg64::new(seed, seq)),
    }))
}

fn generator(v: &Value) -> Option<&Generator> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Generator>(),
        _ => None,
    }
}

/// The receiver of a method: always a Generator, as methods are looked up by its type.
fn pcg(v: &Value) -> Result<std::cell::RefMut<'_, Pcg64>> {
    generator(v)
        .map(|g| g.pcg.borrow_mut())
        .ok_or_else(|| Error::type_error("expected a numpy.random.Generator"))
}

/// `size` draws as a float (size None) or a float64 array of shape size.
fn floats(this: &Value, size: &Value, draw: impl Fn(&mut Pcg64) -> f64) -> Result<Value> {
    let shape = size_arg(size)?;
    let mut g = pcg(this)?;
    match shape {
        None => Ok(Value::Float(draw(&mut g))),
        Some(shape) => {
            let n = count(&shape)?;
            let data: Vec<f64> = (0..n).map(|_| draw(&mut g)).collect();
            Ok(Value::Array(Array::new(&shape, Buffer::F64(data)).into()))
        }
    }
}

fn random(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&a[0], &a[1], Pcg64::next_double)
}

fn standard_normal(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&a[0], &a[1], Pcg64::standard_normal)
}

fn normal(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let loc = f64_arg("loc", &a[1])?;
    let scale = f64_arg("scale", &a[2])?;
    if scale < 0.0 || scale.is_nan() {
        return Err(Error::value_error("scale < 0"));
    }
    floats(&a[0], &a[3], |g| loc + scale * g.standard_normal())
}

fn uniform(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let low = f64_arg("low", &a[1])?;
    let high = f64_arg("high", &a[2])?;
    let range = high - low;
    if !range.is_finite() {
        return Err(Error::new(
            arr_runtime::ErrorKind::ValueError,
            "uniform: high - low is not finite",
        )
        .as_class("OverflowError"));
    }
    floats(&a[0], &a[3], |g| low + range * g.next_double())
}

fn standard_exponential(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&a[0], &a[1], Pcg64::standard_exponential)
}

fn exponential(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let scale = f64_arg("scale", &a[1])?;
    if scale < 0.0 || scale.is_nan() {
        return Err(Error::value_error("scale < 0"));
    }
    floats(&a[0], &a[2], |g| scale * g.standard_exponential())
}

/// The dtype of `integers`: int64 (NumPy's default, also for `dtype=int`) or int32.
fn int_dtype(v: &Value) -> Result<DType> {
    if let Value::Builtin(b) = v {
        if &*b.name == "int" {
            return Ok(DType::I64);
        }
    }
    match dtype_arg(v)? {
        None | Some(DType::I64) => Ok(DType::I64),
        Some(DType::I32) => Ok(DType::I32),
        Some(d) => Err(Error::type_error(format!(
            "integers: dtype {} is not supported (int64 or int32)",
            d.name()
        ))),
    }
}

/// `n` integers in [low, high] (closed) as `dtype`, or one Python int.
fn bounded_ints(
    g: &mut Pcg64,
    low: i64,
    high: i64,
    shape: Option<Vec<usize>>,
    dtype: DType,
) -> Result<Value> {
    let rng = (high as i128 - low as i128) as u64;
    let mut draw = || (low as i128 + g.bounded(rng) as i128) as i64;
    match shape {
        None => Ok(Value::Int(draw())),
        Some(shape) => {
            let n = count(&shape)?;
            let data: Vec<i64> = (0..n).map(|_| draw()).collect();
            let buffer = match dtype {
                DType::I32 => Buffer::I32(data.into_iter().map(|v| v as i32).collect()),
                _ => Buffer::I64(data),
            };
            Ok(Value::Array(Array::new(&shape, buffer).into()))
        }
    }
}

fn integers(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (low, high) = match &a[2] {
        Value::None => (0, int_arg("low", &a[1])? as i128),
        h => (int_arg("low", &a[1])? as i128, int_arg("high", h)? as i128),
    };
    let endpoint = a[5].truthy()?;
    let high = if endpoint { high } else { high - 1 };
    let dtype = int_dtype(&a[4])?;
    let (min, max) = match dtype {
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    };
    if low < min {
        return Err(Error::value_error(format!(
            "low is out of bounds for {}",
            dtype.name()
        )));
    }
    if high > max {
        return Err(Error::value_error(format!(
            "high is out of bounds for {}",
            dtype.name()
        )));
    }
    if low > high {
        return Err(Error::value_error(if endpoint {
            "low > high"
        } else {
            "low >= high"
        }));
    }
    let shape = size_arg(&a[3])?;
    bounded_ints(&mut *pcg(&a[0])?, low as i64, high as i64, shape, dtype)
}

fn index_array(v: Vec<i64>) -> arr_runtime::Tensor {
    Array::new(&[v.len()], Buffer::I64(v)).into()
}

fn permutation(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let shuffled = |n: usize| -> Result<Vec<i64>> {
        let mut v: Vec<i64> = (0..n as i64).collect();
        pcg(&a[0])?.shuffle(&mut v);
        Ok(v)
    };
    match &a[1] {
        // A negative n is NumPy's arange(n): empty.
        Value::Int(n) => {
            let n = (*n).max(0) as usize;
            count(&[n])?;
            Ok(Value::Array(index_array(shuffled(n)?)))
        }
        v => {
            let x = array_arg(v)?;
            if x.ndim() == 0 {
                return Err(Error::index_error(
                    "x must be an integer or at least 1-dimensional",
                ));
            }
            let order = index_array(shuffled(x.shape()[0])?);
            Ok(Value::Array(arr_runtime::index::get_index(
                &x,
                &Value::Array(order),
            )?))
        }
    }
}

fn shuffle(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match &a[1] {
        Value::List(items) => {
            let mut g = pcg(&a[0])?;
            g.shuffle(&mut items.borrow_mut());
            Ok(Value::None)
        }
        _ => Err(Error::type_error(
            "shuffle: x must be a list, shuffled in place (arrays are immutable: \
             rng.permutation(x) is a shuffled copy)",
        )),
    }
}

/// `choice`'s probabilities, checked as NumPy checks them.
fn probabilities(p: &Value, pop: usize) -> Result<Vec<f64>> {
    // A list's numbers are float64, as in NumPy (not arr's float32 arrays);
    // an array keeps its dtype, and its precision sets the tolerance.
    let (p, atol) = match p {
        Value::List(_) | Value::Tuple(_) => {
            let items = numpy::sequence_items(p)?;
            let p = items
                .iter()
                .map(|v| f64_arg("p", v))
                .collect::<Result<Vec<f64>>>()
                .map_err(|_| Error::value_error("p must be 1-dimensional"))?;
            (p, f64::EPSILON.sqrt())
        }
        v => {
            let t = array_arg(v)?;
            if t.ndim() != 1 {
                return Err(Error::value_error("p must be 1-dimensional"));
            }
            let atol = match t.dtype() {
                DType::F64 => f64::EPSILON.sqrt(),
                _ => (f32::EPSILON as f64).sqrt(),
            };
            (t.concrete()?.to_f64_vec()?, atol)
        }
    };
    if p.len() != pop {
        return Err(Error::value_error("a and p must have same size"));
    }
    if p.iter().any(|v| v.is_nan()) {
        return Err(Error::value_error("probabilities contain NaN"));
    }
    if p.iter().any(|&v| v < 0.0) {
        return Err(Error::value_error("probabilities are not non-negative"));
    }
    if (p.iter().sum::<f64>() - 1.0).abs() > atol {
        return Err(Error::value_error("Probabilities do not sum to 1"));
    }
    Ok(p)
}

/// Floyd's sampling of k distinct values of 0..n with NumPy's open-addressing
/// set, then (if `shuffle`) a shuffle of the sample.
fn floyd(g: &mut Pcg64, n: usize, k: usize, shuffle: bool) -> Vec<i64> {
    let set_size = (1.2 * k as f64) as u64;
    let mask = if set_size == 0 {
        0
    } else {
        u64::MAX >> set_size.leading_zeros()
    };
    const EMPTY: u64 = u64::MAX;
    let mut set = vec![EMPTY; (mask + 1) as usize];
    let mut out = Vec::with_capacity(k);
    for j in (n - k) as u64..n as u64 {
        let val = g.bounded(j);
        let mut loc = val & mask;
        while set[loc as usize] != EMPTY && set[loc as usize] != val {
            loc = (loc + 1) & mask;
        }
        if set[loc as usize] == EMPTY {
            set[loc as usize] = val;
            out.push(val as i64);
        } else {
            // val was drawn before: j itself is new (it was out of range until now).
            loc = j & mask;
            while set[loc as usize] != EMPTY {
                loc = (loc + 1) & mask;
            }
            set[loc as usize] = j;
            out.push(j as i64);
        }
    }
    if shuffle {
        shuffle_bounded(g, &mut out, 1);
    }
    out
}

/// NumPy's `_shuffle_int`: Fisher-Yates over `v[first..]` positions from the
/// end, with Lemire's bounded draws.
fn shuffle_bounded(g: &mut Pcg64, v: &mut [i64], first: usize) {
    for i in (first.max(1)..v.len()).rev() {
        let j = g.bounded(i as u64) as usize;
        v.swap(i, j);
    }
}

fn choice(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (pool, pop) = match &a[1] {
        Value::Int(n) if *n < 0 => {
            return Err(Error::value_error(
                "a must be a positive integer unless no samples are taken",
            ))
        }
        Value::Int(n) => (None, *n as usize),
        v => {
            let x = array_arg(v)?;
            if x.ndim() == 0 {
                return Err(Error::value_error(
                    "a must be a sequence or an integer, not a 0-d array",
                ));
            }
            let n = x.shape()[0];
            (Some(x), n)
        }
    };
    let shape = size_arg(&a[2])?;
    let k = match &shape {
        None => 1,
        Some(s) => count(s)?,
    };
    if pop == 0 && k != 0 {
        return Err(Error::value_error(
            "a cannot be empty unless no samples are taken",
        ));
    }
    let p = match &a[4] {
        Value::None => None,
        p => Some(probabilities(p, pop)?),
    };
    let replace = a[3].truthy()?;
    let mut g = pcg(&a[0])?;
    let picks: Vec<i64> = match (replace, p) {
        (true, None) => (0..k).map(|_| g.bounded(pop as u64 - 1) as i64).collect(),
        (true, Some(p)) => {
            // NumPy's inverse CDF: a running sum normalized by its total, then
            // the count of CDF entries <= each uniform draw.
            let mut cdf: Vec<f64> = p
                .iter()
                .scan(0.0, |s, v| {
                    *s += v;
                    Some(*s)
                })
                .collect();
            let total = cdf[pop - 1];
            cdf.iter_mut().for_each(|c| *c /= total);
            (0..k)
                .map(|_| {
                    let u = g.next_double();
                    cdf.partition_point(|&c| c <= u) as i64
                })
                .collect()
        }
        (false, Some(_)) => {
            return Err(Error::value_error(
                "choice: p= with replace=False is not supported",
            ))
        }
        (false, None) => {
            if k > pop {
                return Err(Error::value_error(
                    "Cannot take a larger sample than population when replace is False",
                ));
            }
            let shuffle = a[5].truthy()?;
            let cutoff = if shuffle { 50 } else { 20 };
            if pop > 10000 && k > pop / cutoff {
                // Shuffle only the tail of arange(pop), and keep that tail.
                let mut all: Vec<i64> = (0..pop as i64).collect();
                shuffle_bounded(&mut g, &mut all, (pop - k).max(1));
                all.split_off(pop - k)
            } else {
                floyd(&mut g, pop, k, shuffle)
            }
        }
    };
    drop(g);
    let idx = Array::new(shape.as_deref().unwrap_or(&[]), Buffer::I64(picks));
    match pool {
        None if shape.is_none() => Ok(Value::Int(idx.get_i64(0)?)),
        None => Ok(Value::Array(idx.into())),
        Some(x) => {
            let out = arr_runtime::index::get_index(&x, &Value::Array(idx.into()))?;
            if shape.is_none() && out.ndim() == 0 {
                return numpy::item(&out);
            }
            Ok(Value::Array(out))
        }
    }
}
