//! NumPy's legacy global random numbers (`np.random.seed`, `rand`, `normal`,
//! `randint`, `choice`, `permutation`...): the MT19937 generator and the
//! legacy `RandomState` algorithms, so a seeded script draws NumPy's exact
//! numbers. They are host-side float64/int64 arrays, as in NumPy; the state
//! is one generator per thread, like NumPy's global `RandomState`; a
//! `RandomState(seed)` object has a stream of its own and the same functions
//! as methods.

use crate::args::*;
use crate::Registry;
use arr_kernels::{Array, Buffer};
use arr_runtime::numpy;
use arr_runtime::value::Object;
use arr_runtime::{Builtin, Effect, Error, Interp, NativeFn, Result, Value};
use std::cell::RefCell;
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "np_shuffle(x)",
        "Shuffle the list x in place with the legacy stream (NumPy's np.random.shuffle); \
         arrays are immutable: use np.random.permutation(x) for a shuffled copy.",
        shuffle,
    );
    r.module(
        "_np_random",
        "NumPy's legacy global random numbers (numpy.random): seed it with seed(n).",
        MEMBERS,
    );
    r.func(
        "np_RandomState(seed=None)",
        "NumPy's legacy RandomState: its own MT19937 stream (seeded like seed(n)), with \
         the functions of numpy.random as methods.",
        random_state,
    );
    let shuffle_row: (&str, &str, NativeFn) = (
        "shuffle(x)",
        "Shuffle the list x in place (arrays are immutable: use permutation).",
        shuffle,
    );
    for &(signature, doc, f) in MEMBERS.iter().chain([&shuffle_row]) {
        let signature = signature.replacen('(', "(self, ", 1);
        // Each draw advances the stream: never compiled automatically.
        let b = Builtin::new(&signature, doc, move |interp, a| on_stream(interp, a, f))
            .with_effect(Effect::World);
        let name = b.name.to_string();
        r.interp
            .add_method(RANDOM_STATE, &name, Value::Builtin(Rc::new(b)));
    }
}

/// The functions of `numpy.random`, also the methods of a `RandomState`.
const MEMBERS: &[(&str, &str, NativeFn)] = &[
    (
        "seed(seed=None)",
        "Reset the generator: MT19937 seeded with an int in [0, 2**32).",
        seed,
    ),
    (
        "random_sample(size=None)",
        "Uniform floats in [0, 1): a float, or a float64 array of shape size.",
        random_sample,
    ),
    (
        "random(size=None)",
        "The same as random_sample.",
        random_sample,
    ),
    (
        "rand(*dims)",
        "Uniform floats in [0, 1) of shape dims.",
        rand,
    ),
    (
        "randn(*dims)",
        "Standard normal floats of shape dims.",
        randn,
    ),
    (
        "standard_normal(size=None)",
        "Standard normal floats (NumPy's legacy polar method).",
        standard_normal,
    ),
    (
        "uniform(low=0.0, high=1.0, size=None)",
        "Uniform floats in [low, high).",
        uniform,
    ),
    (
        "normal(loc=0.0, scale=1.0, size=None)",
        "Normal floats with mean loc and standard deviation scale.",
        normal,
    ),
    (
        "randint(low, high=None, size=None, dtype=None)",
        "Uniform integers in [low, high) (in [0, low) without high): int64.",
        randint,
    ),
    (
        "permutation(x)",
        "A shuffled arange(x) (x an int), or a shuffled copy of x along its first axis.",
        permutation,
    ),
    (
        "choice(a, size=None, replace=True, p=None)",
        "Samples from arange(a) (a an int) or from a's elements, as NumPy's legacy choice.",
        choice,
    ),
];

const N: usize = 624;

/// MT19937 with NumPy's legacy extras: the cached second normal of a pair.
#[derive(Debug)]
struct Mt {
    key: [u32; N],
    pos: usize,
    gauss: Option<f64>,
}

impl Mt {
    fn new(seed: u32) -> Mt {
        let mut key = [0u32; N];
        let mut s = seed;
        for (i, k) in key.iter_mut().enumerate() {
            *k = s;
            s = 1812433253u32
                .wrapping_mul(s ^ (s >> 30))
                .wrapping_add(i as u32 + 1);
        }
        Mt {
            key,
            pos: N,
            gauss: None,
        }
    }

    fn next_u32(&mut self) -> u32 {
        if self.pos >= N {
            self.generate();
        }
        let mut y = self.key[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn generate(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX: u32 = 0x9908_b0df;
        for i in 0..N {
            let y = (self.key[i] & UPPER) | (self.key[(i + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX } else { 0 };
            self.key[i] = self.key[(i + 397) % N] ^ (y >> 1) ^ mag;
        }
        self.pos = 0;
    }

    /// A double in [0, 1) from 53 random bits.
    fn next_double(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67108864.0 + b) / 9007199254740992.0
    }

    /// NumPy's legacy Gaussian: the polar method, keeping the pair's second value.
    fn gauss(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.next_double() - 1.0;
            let x2 = 2.0 * self.next_double() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    /// A uniform integer in [0, max] by masked rejection (NumPy's legacy bounded ints).
    fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        for shift in [1, 2, 4, 8, 16, 32] {
            mask |= mask >> shift;
        }
        loop {
            let v = if max <= u32::MAX as u64 {
                (self.next_u32() as u64) & mask
            } else {
                (((self.next_u32() as u64) << 32) | self.next_u32() as u64) & mask
            };
            if v <= max {
                return v;
            }
        }
    }
}

thread_local! {
    static STATE: RefCell<Option<Mt>> = const { RefCell::new(None) };
}

/// Run `f` on the global generator (seeded from the clock on first use, as
/// NumPy seeds from the OS when never seeded).
fn with_mt<T>(f: impl FnOnce(&mut Mt) -> T) -> T {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let mt = s.get_or_insert_with(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32);
            Mt::new(t)
        });
        f(mt)
    })
}

fn seed(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mt = seeded(&a[0])?;
    STATE.with(|st| *st.borrow_mut() = Some(mt));
    Ok(Value::None)
}

/// A generator seeded as `seed(n)` seeds: an int in [0, 2**32), or the clock for None.
fn seeded(seed: &Value) -> Result<Mt> {
    let s = match seed {
        Value::None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as i64),
        v => int_arg("seed", v)?,
    };
    if !(0..=u32::MAX as i64).contains(&s) {
        return Err(Error::value_error("Seed must be between 0 and 2**32 - 1"));
    }
    Ok(Mt::new(s as u32))
}

const RANDOM_STATE: &str = "RandomState";

/// `np.random.RandomState(seed)`: a stream of its own.
#[derive(Debug)]
struct RandomState {
    mt: RefCell<Option<Mt>>,
}

impl Object for RandomState {
    fn type_name(&self) -> &'static str {
        RANDOM_STATE
    }
    fn repr(&self) -> String {
        "RandomState(MT19937)".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn random_state(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::object(RandomState {
        mt: RefCell::new(Some(seeded(&a[0])?)),
    }))
}

/// A `RandomState` method: the legacy function `f` run on the object's
/// stream, swapped in as the global stream for the call (and back after,
/// error or not), so the functions exist once.
fn on_stream(interp: &mut Interp, mut a: Vec<Value>, f: NativeFn) -> Result<Value> {
    let this = a.remove(0);
    let state = match &this {
        Value::Object(o) => o.as_any().downcast_ref::<RandomState>(),
        _ => None,
    }
    .ok_or_else(|| Error::type_error("expected a numpy.random.RandomState"))?;
    let mine = state.mt.borrow_mut().take();
    let global = STATE.with(|s| s.replace(mine));
    let out = f(interp, a);
    *state.mt.borrow_mut() = STATE.with(|s| s.replace(global));
    out
}

/// The shape of a `size=` argument; None for a single scalar.
pub(crate) fn size_arg(v: &Value) -> Result<Option<Vec<usize>>> {
    match v {
        Value::None => Ok(None),
        v => numpy::parse_shape(v)
            .map(Some)
            .map_err(|e| Error::new(e.kind, format!("size: {}", e.message))),
    }
}

pub(crate) fn count(shape: &[usize]) -> Result<usize> {
    arr_runtime::prim::check_alloc(shape, arr_kernels::DType::F64)?;
    Ok(shape.iter().product())
}

/// `size` draws of `draw` as a float (size None) or a float64 array.
fn floats(size: &Value, mut draw: impl FnMut(&mut Mt) -> f64) -> Result<Value> {
    match size_arg(size)? {
        None => Ok(Value::Float(with_mt(&mut draw))),
        Some(shape) => {
            let n = count(&shape)?;
            let data: Vec<f64> = with_mt(|mt| (0..n).map(|_| draw(mt)).collect());
            Ok(Value::Array(Array::new(&shape, Buffer::F64(data)).into()))
        }
    }
}

fn ints(size: &Value, mut draw: impl FnMut(&mut Mt) -> i64) -> Result<Value> {
    match size_arg(size)? {
        None => Ok(Value::Int(with_mt(&mut draw))),
        Some(shape) => {
            let n = count(&shape)?;
            let data: Vec<i64> = with_mt(|mt| (0..n).map(|_| draw(mt)).collect());
            Ok(Value::Array(Array::new(&shape, Buffer::I64(data)).into()))
        }
    }
}

/// `rand(2, 3)`'s dims as a size (no dims: one scalar).
fn dims(a: &Value) -> Value {
    match a {
        Value::Tuple(t) if t.is_empty() => Value::None,
        other => other.clone(),
    }
}

fn random_sample(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&a[0], Mt::next_double)
}

fn rand(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&dims(&a[0]), Mt::next_double)
}

fn randn(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&dims(&a[0]), Mt::gauss)
}

fn standard_normal(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    floats(&a[0], Mt::gauss)
}

fn uniform(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let low = f64_arg("low", &a[0])?;
    let high = f64_arg("high", &a[1])?;
    let range = high - low;
    floats(&a[2], |mt| low + range * mt.next_double())
}

fn normal(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let loc = f64_arg("loc", &a[0])?;
    let scale = f64_arg("scale", &a[1])?;
    if scale < 0.0 {
        return Err(Error::value_error("normal: scale < 0"));
    }
    floats(&a[2], |mt| loc + scale * mt.gauss())
}

fn randint(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (low, high) = match &a[1] {
        Value::None => (0, int_arg("low", &a[0])?),
        h => (int_arg("low", &a[0])?, int_arg("high", h)?),
    };
    if low >= high {
        return Err(Error::value_error(format!(
            "randint: low >= high ({low} >= {high})"
        )));
    }
    let max = (high as i128 - low as i128 - 1) as u64;
    ints(&a[2], |mt| (low as i128 + mt.interval(max) as i128) as i64)
}

/// A legacy shuffle of 0..n: Fisher-Yates from the end.
fn shuffled(n: usize) -> Vec<i64> {
    let mut v: Vec<i64> = (0..n as i64).collect();
    with_mt(|mt| {
        for i in (1..n).rev() {
            let j = mt.interval(i as u64) as usize;
            v.swap(i, j);
        }
    });
    v
}

fn shuffle(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match &a[0] {
        Value::List(items) => {
            let mut items = items.borrow_mut();
            with_mt(|mt| {
                for i in (1..items.len()).rev() {
                    let j = mt.interval(i as u64) as usize;
                    items.swap(i, j);
                }
            });
            Ok(Value::None)
        }
        _ => Err(Error::type_error(
            "shuffle: x must be a list, shuffled in place (arrays are immutable: \
             np.random.permutation(x) is a shuffled copy)",
        )),
    }
}

fn index_array(v: Vec<i64>) -> arr_runtime::Tensor {
    Array::new(&[v.len()], Buffer::I64(v)).into()
}

fn permutation(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match &a[0] {
        Value::Int(n) if *n >= 0 => Ok(Value::Array(index_array(shuffled(*n as usize)))),
        Value::Int(n) => Err(Error::value_error(format!(
            "permutation: negative size {n}"
        ))),
        v => {
            let x = array_arg(v)?;
            if x.ndim() == 0 {
                return Err(Error::value_error(
                    "permutation: x must be an int or an array of at least one dimension",
                ));
            }
            let order = index_array(shuffled(x.shape()[0]));
            Ok(Value::Array(arr_runtime::index::get_index(
                &x,
                &Value::Array(order),
            )?))
        }
    }
}

fn choice(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (pool, n) = match &a[0] {
        Value::Int(n) => (None, *n),
        v => {
            let x = array_arg(v)?;
            if x.ndim() != 1 {
                return Err(Error::value_error(
                    "choice: a must be 1-dimensional or an integer",
                ));
            }
            let n = x.shape()[0] as i64;
            (Some(x), n)
        }
    };
    if n <= 0 {
        return Err(Error::value_error("choice: a must be greater than 0"));
    }
    if !matches!(a[3], Value::None) {
        return Err(Error::value_error(
            "choice: p= is not supported for the legacy generator",
        ));
    }
    let shape = size_arg(&a[1])?;
    let k = match &shape {
        None => 1,
        Some(s) => count(s)?,
    };
    let picks: Vec<i64> = if a[2].truthy()? {
        let max = (n - 1) as u64;
        with_mt(|mt| (0..k).map(|_| mt.interval(max) as i64).collect())
    } else {
        if k as i64 > n {
            return Err(Error::value_error(
                "choice: cannot take a larger sample than population when 'replace=False'",
            ));
        }
        shuffled(n as usize).into_iter().take(k).collect()
    };
    let idx = Array::new(shape.as_deref().unwrap_or(&[]), Buffer::I64(picks));
    match pool {
        None if shape.is_none() => Ok(Value::Int(idx.get_i64(0)?)),
        None => Ok(Value::Array(idx.into())),
        Some(x) => {
            let out = arr_runtime::index::get_index(&x, &Value::Array(idx.into()))?;
            if shape.is_none() {
                return numpy::item(&out);
            }
            Ok(Value::Array(out))
        }
    }
}
