//! Language values: Python-like scalars and containers, arrays, functions, modules.
//!
//! A value is two words (asserted below): `Array` is one pointer, errors are
//! boxed, strings are `Rc<String>`, and `Tensor`'s tag shares `Value`'s, so
//! a `Result<Value>` moves in registers. The interpreter loop (bench row
//! w8) was 25% slower with 56-byte values.

use crate::builtin::Builtin;
use crate::code::FuncCode;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use arr_kernels::DType;
use indexmap::IndexMap;
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    /// A Python int: weakly typed when it meets an array (`x * 2` keeps f32).
    Int(i64),
    /// A Python float: weakly typed like `Int`.
    Float(f64),
    /// A string; `Rc<String>` rather than `Rc<str>` keeps values two words wide.
    Str(Rc<String>),
    Array(Tensor),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<Vec<Value>>),
    Dict(Rc<RefCell<Dict>>),
    Function(Rc<Function>),
    Builtin(Rc<Builtin>),
    /// A function made by Rust code at run time, such as `grad(f)`.
    Native(Rc<NativeClosure>),
    /// `obj.method`: the receiver is passed as the first argument.
    BoundMethod(Rc<(Value, Value)>),
    Module(Rc<Module>),
    DType(DType),
    Slice(Rc<SliceValue>),
    /// `range(start, stop, step)`, lazily.
    Range(Rc<RangeValue>),
    Ellipsis,
    /// A class made by a `class` statement (or `namedtuple`).
    Class(Rc<crate::class::Class>),
    /// An instance of such a class.
    Instance(Rc<crate::class::Instance>),
    /// A value of a type the stdlib defines (a mesh, a partition spec...);
    /// boxed twice so `Value` stays two words.
    Object(Rc<Box<dyn Object>>),
}

/// A type defined outside the core language: its name, `repr`, and attributes.
pub trait Object: std::fmt::Debug {
    fn type_name(&self) -> &'static str;
    fn repr(&self) -> String;
    /// `==` with another object (only reached for two objects that are not
    /// the same one): by value for the types that define it (a sharding, a
    /// tree structure of the same shape), else False.
    fn equals(&self, _other: &dyn Object) -> bool {
        false
    }
    /// `obj.name`, if the type has that attribute: read from the type's
    /// property table (`eval::attr::property`).
    fn attr(&self, _name: &str) -> Option<Value> {
        None
    }
    /// Every attribute `attr` resolves, for completion: the same table's
    /// rows (`eval::attr::properties`).
    fn attributes(&self) -> Vec<crate::eval::attr::Attribute> {
        Vec::new()
    }
    /// `obj[index]`, if the type is subscriptable (`x.at[i]`).
    fn get_item(&self, _index: &Value) -> Option<Result<Value>> {
        None
    }
    /// `str(obj)`, when it is not the repr (an exception shows its message).
    fn str(&self) -> Option<String> {
        None
    }
    /// `obj(*args, **kwargs)`, for objects that can be called (`this` is
    /// the value holding `self`); `None` if they cannot.
    fn call(
        &self,
        _interp: &mut crate::Interp,
        _this: &Value,
        _args: Vec<Value>,
        _kwargs: Vec<(Rc<str>, Value)>,
    ) -> Option<Result<Value>> {
        None
    }
    /// An HTML form for notebooks (tables); `None` shows the repr as text.
    fn html(&self) -> Option<String> {
        None
    }
    /// What identifies the object as a dict key or set member, for the
    /// types that are hashable (a device); `None`: unhashable.
    fn hash_key(&self) -> Option<Key> {
        None
    }
    /// `len(obj)`, for the types that have one (a grid of devices).
    fn len(&self) -> Option<usize> {
        None
    }
    /// Whether `len(obj)` is 0 (None where it has no length).
    fn is_empty(&self) -> Option<bool> {
        self.len().map(|n| n == 0)
    }
    /// The text of a value that stands for a string (`type(x)` of a
    /// built-in value compares equal to arr's type string).
    fn as_str(&self) -> Option<&str> {
        None
    }
    /// For downcasting by the code that defines the type.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl Value {
    pub fn object(o: impl Object + 'static) -> Value {
        Value::Object(Rc::new(Box::new(o)))
    }
}

pub type Dict = IndexMap<Key, Value>;

/// A hashable value used as a dict key. Numbers that compare equal in Python
/// (`1`, `1.0`, `True`) are the same key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    None,
    Int(i64),
    /// Non-integral floats, by bit pattern.
    Float(u64),
    Str(Rc<str>),
    Tuple(Rc<Vec<Key>>),
    /// A hashable object (a device): compared by its `hash_key`, and
    /// giving back the object itself.
    Object(ObjectKey),
}

/// A hashable object as a key: its identity, and the object (held as the
/// object itself, not a `Value`, so the key has no interior mutability).
#[derive(Clone, Debug)]
pub struct ObjectKey {
    pub id: Rc<Key>,
    pub object: Rc<Box<dyn Object>>,
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for ObjectKey {}

impl std::hash::Hash for ObjectKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state)
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id.cmp(&other.id)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeValue {
    pub start: i64,
    pub stop: i64,
    pub step: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SliceValue {
    pub start: Option<i64>,
    pub stop: Option<i64>,
    pub step: Option<i64>,
}

/// A user function: compiled code plus what it closed over.
#[derive(Debug)]
pub struct Function {
    pub code: Rc<FuncCode>,
    /// Default values, aligned with `code.params` (None where there is no default).
    pub defaults: Vec<Option<Value>>,
    /// Captured cells of enclosing functions' variables.
    pub free_cells: Vec<Rc<RefCell<Option<Value>>>>,
    /// `__annotations__`: a dict, or None when the definition has none.
    pub annotations: Value,
}

/// The body of a `Value::Native`: a name for messages and a closure that
/// receives positional and keyword arguments.
pub struct NativeClosure {
    pub name: String,
    /// Attributes, such as `defjvp` of a `custom_jvp` function.
    pub attrs: RefCell<Vec<(String, Value)>>,
    #[allow(clippy::type_complexity)]
    pub f: Box<dyn Fn(&mut crate::Interp, Vec<Value>, Vec<(Rc<str>, Value)>) -> Result<Value>>,
    /// For a transformed function (`grad(f)`, `vmap(f, 1)`): the
    /// transformation with its options, as text, and the function it
    /// transforms. Two natives with the same pair compute the same function,
    /// so automatic JIT counts their calls together (a loop that calls
    /// `grad(loss)(p)` makes a new native each time).
    pub transform: Option<(String, Value)>,
}

impl std::fmt::Debug for NativeClosure {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "<function {}>", self.name)
    }
}

impl NativeClosure {
    pub fn value(
        name: impl Into<String>,
        f: impl Fn(&mut crate::Interp, Vec<Value>, Vec<(Rc<str>, Value)>) -> Result<Value> + 'static,
    ) -> Value {
        Self::make(name.into(), None, Box::new(f))
    }

    /// A transformed function: `transform` (with its options) applied to `of`.
    pub fn transformed(
        name: impl Into<String>,
        transform: String,
        of: Value,
        f: impl Fn(&mut crate::Interp, Vec<Value>, Vec<(Rc<str>, Value)>) -> Result<Value> + 'static,
    ) -> Value {
        Self::make(name.into(), Some((transform, of)), Box::new(f))
    }

    #[allow(clippy::type_complexity)]
    fn make(
        name: String,
        transform: Option<(String, Value)>,
        f: Box<dyn Fn(&mut crate::Interp, Vec<Value>, Vec<(Rc<str>, Value)>) -> Result<Value>>,
    ) -> Value {
        Value::Native(Rc::new(NativeClosure {
            name,
            attrs: RefCell::new(Vec::new()),
            f,
            transform,
        }))
    }
}

/// A namespace such as `random`.
#[derive(Debug)]
pub struct Module {
    pub name: String,
    pub doc: String,
    pub attrs: IndexMap<String, Value>,
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::new(s.to_string()))
    }

    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }

    pub fn dict(d: Dict) -> Value {
        Value::Dict(Rc::new(RefCell::new(d)))
    }

    /// The identity of a mutable container (a list or dict): the only values
    /// that can hold themselves.
    pub fn container_id(&self) -> Option<usize> {
        match self {
            Value::List(l) => Some(Rc::as_ptr(l) as *const u8 as usize),
            Value::Dict(d) => Some(Rc::as_ptr(d) as *const u8 as usize),
            _ => None,
        }
    }

    /// The Python-facing type name, for error messages.
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "NoneType".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::Array(a) => crate::display::type_string(a),
            Value::List(_) => "list".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Dict(_) => "dict".into(),
            Value::Function(_) | Value::Builtin(_) | Value::BoundMethod(_) | Value::Native(_) => {
                "function".into()
            }
            Value::Module(_) => "module".into(),
            Value::DType(_) => "dtype".into(),
            Value::Slice(_) => "slice".into(),
            Value::Range(..) => "range".into(),
            Value::Ellipsis => "ellipsis".into(),
            Value::Class(_) => "type".into(),
            Value::Instance(i) => i.class.name.to_string(),
            Value::Object(o) => o.type_name().into(),
        }
    }

    /// Python truthiness; an array is truthy only if it has one element.
    pub fn truthy(&self) -> Result<bool> {
        Ok(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(a) => {
                if a.len() != 1 {
                    return Err(Error::value_error(format!(
                        "the truth value of an array with {} elements is ambiguous: use any() or all(), or where(...) to select elementwise",
                        a.len()
                    )));
                }
                // JAX's class for `if x > 0` on a traced x.
                let a = a.concrete().map_err(|e| match e.kind {
                    crate::ErrorKind::ConcretizationError => {
                        e.as_class("TracerBoolConversionError")
                    }
                    _ => e,
                })?;
                a.get_f64(0)? != 0.0
            }
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Range(..) => range_len(self) > 0,
            Value::Object(_) => {
                crate::set::as_set(self).is_none_or(|s| !s.items.borrow().is_empty())
            }
            Value::Instance(i) => i.items.as_ref().is_none_or(|t| !t.is_empty()),
            _ => true,
        })
    }

    /// The dict key for this value, or a TypeError for unhashable values.
    pub fn to_key(&self) -> Result<Key> {
        Ok(match self {
            Value::None => Key::None,
            Value::Bool(b) => Key::Int(*b as i64),
            Value::Int(i) => Key::Int(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Key::Int(*f as i64),
            Value::Float(f) => Key::Float(f.to_bits()),
            Value::Str(s) => Key::Str(Rc::from(s.as_str())),
            Value::Tuple(t) => Key::Tuple(Rc::new(
                t.iter().map(|v| v.to_key()).collect::<Result<_>>()?,
            )),
            Value::Instance(i) if i.items.is_some() => crate::class::as_tuple(self)
                .expect("a named tuple")
                .to_key()?,
            Value::Object(o) if o.hash_key().is_some() => Key::Object(ObjectKey {
                id: Rc::new(o.hash_key().expect("checked")),
                object: o.clone(),
            }),
            // Classes, functions, modules and instances without `__eq__`
            // are keys by identity, as in Python.
            Value::Class(_)
            | Value::Function(_)
            | Value::Builtin(_)
            | Value::Native(_)
            | Value::Module(_)
            | Value::Ellipsis => identity_key(self),
            Value::Instance(i) if i.items.is_none() && i.class.lookup("__eq__").is_none() => {
                identity_key(self)
            }
            // A class whose `__eq__` and `__hash__` go by one attribute
            // names it in `__hash_attribute__` (an IntEnum's value): keys
            // are then equal when those attributes are, and still give the
            // instance back. (A general `__hash__` would need the
            // interpreter here.)
            Value::Instance(i) if i.items.is_none() && hash_attribute(i).is_some() => {
                Key::Object(ObjectKey {
                    id: Rc::new(hash_attribute(i).expect("checked").to_key()?),
                    object: Rc::new(Box::new(Identity(self.clone()))),
                })
            }
            other => {
                return Err(Error::type_error(format!(
                    "unhashable type: '{}'",
                    other.type_name()
                )))
            }
        })
    }

    /// Transformations check their function when they are made, as JAX does
    /// (`jit(3)` is a TypeError there, not at the call).
    pub fn expect_callable(&self) -> Result<()> {
        if self.is_callable() {
            return Ok(());
        }
        Err(Error::type_error(format!(
            "expected a callable value, got {}",
            self.type_name()
        )))
    }

    pub fn is_callable(&self) -> bool {
        match self {
            Value::Function(_)
            | Value::Builtin(_)
            | Value::BoundMethod(_)
            | Value::Native(_)
            | Value::Class(_) => true,
            Value::Instance(i) => i.class.lookup("__call__").is_some(),
            _ => crate::exception::as_class(self).is_some(),
        }
    }

    /// A Python int, also from a bool or a 0-d integer array; `None` for
    /// anything else. Reading a deleted array is its error, so an argument
    /// that must be an int reports the deletion, not a wrong type.
    pub fn to_int(&self) -> Result<Option<i64>> {
        Ok(match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            Value::Array(Tensor::Concrete(a))
                if a.len() == 1
                    && a.ndim() == 0
                    && (a.dtype().is_int() || a.dtype() == DType::Bool) =>
            {
                Some(a.get_i64(0)?)
            }
            _ => None,
        })
    }

    /// `to_int`, for asking what a value is: a deleted array is no int.
    pub fn as_int(&self) -> Option<i64> {
        self.to_int().ok().flatten()
    }

    /// A Python number as f64 (int, float, bool, or a one-element array,
    /// concrete or with a concrete primal); `None` for anything else.
    /// Reading a deleted array is its error.
    pub fn to_f64(&self) -> Result<Option<f64>> {
        Ok(match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(*b as u8 as f64),
            Value::Array(Tensor::Concrete(a)) if a.len() == 1 && a.ndim() == 0 => {
                Some(a.get_f64(0)?)
            }
            Value::Array(t) if t.len() == 1 && t.ndim() == 0 => match t.concrete() {
                Ok(a) => Some(a.get_f64(0)?),
                Err(_) => None,
            },
            _ => None,
        })
    }

    /// `to_f64`, for asking what a value is: a deleted array is no number.
    pub fn as_f64(&self) -> Option<f64> {
        self.to_f64().ok().flatten()
    }
}

impl Key {
    pub fn to_value(&self) -> Value {
        match self {
            Key::None => Value::None,
            Key::Int(i) => Value::Int(*i),
            Key::Float(b) => Value::Float(f64::from_bits(*b)),
            Key::Str(s) => Value::str(s),
            Key::Tuple(t) => Value::tuple(t.iter().map(|k| k.to_value()).collect()),
            Key::Object(o) => match o.object.as_any().downcast_ref::<Identity>() {
                Some(held) => held.0.clone(),
                None => Value::Object(o.object.clone()),
            },
        }
    }
}

/// A value that is a key by identity (a class, a function, an instance),
/// kept alive by the key so that its address stays its own.
#[derive(Debug)]
struct Identity(Value);

impl Object for Identity {
    fn type_name(&self) -> &'static str {
        "object"
    }

    fn repr(&self) -> String {
        crate::display::repr(&self.0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Value {
    /// The address of a value held behind a pointer (what `id` and keys by
    /// identity use); None for the values held inline (numbers, None).
    pub fn address(&self) -> Option<usize> {
        Some(match self {
            Value::List(l) => Rc::as_ptr(l) as *const () as usize,
            Value::Dict(d) => Rc::as_ptr(d) as *const () as usize,
            Value::Instance(i) => Rc::as_ptr(i) as *const () as usize,
            Value::Tuple(t) => Rc::as_ptr(t) as *const () as usize,
            Value::Str(s) => Rc::as_ptr(s) as *const () as usize,
            Value::Function(f) => Rc::as_ptr(f) as *const () as usize,
            Value::Class(c) => Rc::as_ptr(c) as *const () as usize,
            Value::Object(o) => Rc::as_ptr(o) as *const () as usize,
            Value::Native(n) => Rc::as_ptr(n) as *const () as usize,
            Value::Builtin(b) => Rc::as_ptr(b) as *const () as usize,
            Value::BoundMethod(m) => Rc::as_ptr(m) as *const () as usize,
            Value::Module(m) => Rc::as_ptr(m) as *const () as usize,
            _ => return None,
        })
    }
}

/// The value of the attribute an instance's class names in
/// `__hash_attribute__`, if it names one the instance has.
fn hash_attribute(i: &crate::class::Instance) -> Option<Value> {
    let Some(Value::Str(name)) = i.class.lookup("__hash_attribute__") else {
        return None;
    };
    i.attrs.borrow().get(name.as_str()).cloned()
}

fn identity_key(v: &Value) -> Key {
    // The one Ellipsis has a fixed identity no address takes.
    let address = v.address().unwrap_or(1);
    Key::Object(ObjectKey {
        id: Rc::new(Key::Tuple(Rc::new(vec![
            Key::Str(Rc::from("<identity>")),
            Key::Int(address as i64),
        ]))),
        object: Rc::new(Box::new(Identity(v.clone()))),
    })
}

/// Fail with MemoryError, before anything is allocated, when a Python
/// value of `dims` units multiplied together (a string's characters, a
/// list's items) of `unit_bytes` each cannot be had: arrays' rule
/// (`arr_kernels::limits::checked_bytes`). `kind` and `unit` name them in
/// the message ("str", "characters").
pub fn check_len(kind: &str, unit: &str, dims: &[usize], unit_bytes: usize) -> Result<()> {
    arr_kernels::limits::checked_bytes(dims, unit_bytes)
        .map(|_| ())
        .map_err(|why| {
            // At most two factors of 64 bits each: exact in 128.
            let count = dims.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128));
            Error::new(
                crate::ErrorKind::MemoryError,
                format!("cannot allocate a {kind} of {count} {unit} ({why})"),
            )
        })
}

/// `check_len` for a list or tuple of `dims` items multiplied together.
pub fn check_items(kind: &str, dims: &[usize]) -> Result<()> {
    check_len(kind, "items", dims, std::mem::size_of::<Value>())
}

/// `check_len` for a string of `dims` bytes multiplied together.
pub fn check_str(dims: &[usize]) -> Result<()> {
    check_len("str", "characters", dims, 1)
}

/// Make room for `more` items in a growing list. Growth past the capacity
/// is checked like any size from user input first: a failed doubling would
/// abort the process (and with overcommit one that passes the allocator
/// could leave the kernel to kill it), where a list built item by item
/// (`[i for i in range(10**9)]`, `append` in a loop) must raise MemoryError.
pub fn reserve_items(list: &mut Vec<Value>, more: usize) -> Result<()> {
    let need = list.len().saturating_add(more);
    if need <= list.capacity() {
        return Ok(());
    }
    // Doubling when it fits, else an eighth more, else exactly what is
    // needed: never one item at a time, which near the limit would check
    // and copy the whole list on every push.
    let cap = list.capacity();
    let doubled = need.max(cap.saturating_mul(2));
    let eighth = need.max(cap.saturating_add(cap / 8));
    let want = [doubled, eighth]
        .into_iter()
        .find(|&n| check_items("list", &[n]).is_ok());
    let want = match want {
        Some(n) => n,
        None => {
            check_items("list", &[need])?;
            need
        }
    };
    list.try_reserve_exact(want - list.len()).map_err(|_| {
        Error::new(
            crate::ErrorKind::MemoryError,
            format!("cannot allocate a list of {need} items"),
        )
    })
}

/// Push onto a growing list, through `reserve_items`.
#[inline]
pub fn push_item(list: &mut Vec<Value>, v: Value) -> Result<()> {
    if list.len() == list.capacity() {
        reserve_items(list, 1)?;
    }
    list.push(v);
    Ok(())
}

/// The number of items of a `Value::Range` (0 for anything else).
pub fn range_len(v: &Value) -> usize {
    match v {
        Value::Range(r) => r.len(),
        _ => 0,
    }
}

impl RangeValue {
    pub fn len(&self) -> usize {
        let RangeValue { start, stop, step } = *self;
        if step > 0 && stop > start {
            ((stop - start - 1) / step + 1) as usize
        } else if step < 0 && start > stop {
            ((start - stop - 1) / -step + 1) as usize
        } else {
            0
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How deep a walk of nested containers goes before it raises RecursionError
/// (Python's repr and JAX's pytree functions stop at a depth too). The
/// evaluator's stack holds many times this many walk frames.
pub const MAX_NESTING: usize = 10_000;

/// One walk of nested containers (pytree flattening, conversion to arrays,
/// structural equality): the lists and dicts it is inside, so that a
/// container holding itself (`a.append(a)`) raises a ValueError instead of
/// being followed until the stack runs out, and the depth, bounded by
/// [`MAX_NESTING`]. A walk calls `enter` before it visits a value's items and
/// `leave` after; an error ends the walk, so nothing is left to unwind.
#[derive(Default)]
pub struct Nesting {
    open: Vec<usize>,
    depth: usize,
}

impl Nesting {
    pub fn enter(&mut self, v: &Value, what: &str) -> Result<()> {
        // Every container a walk enters is a safe point: walks that build
        // a value per leaf (pytrees, reprs) stop when the memory is spent.
        if let Some(why) = arr_kernels::memory::exhausted() {
            return Err(Error::out_of_memory(why));
        }
        if let Some(id) = v.container_id() {
            if self.open.contains(&id) {
                return Err(Error::value_error(format!(
                    "{what}: the {} contains itself (a cyclic container cannot be walked)",
                    v.type_name()
                )));
            }
            self.open.push(id);
        }
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Error::new(
                crate::ErrorKind::RecursionError,
                format!("{what}: containers nested more than {MAX_NESTING} deep"),
            ));
        }
        Ok(())
    }

    pub fn leave(&mut self, v: &Value) {
        if v.container_id().is_some() {
            self.open.pop();
        }
        self.depth -= 1;
    }
}

// The evaluator moves values constantly: keep them two words wide, so that
// a `Result<Value>` travels in registers.
const _: () = assert!(std::mem::size_of::<Value>() == 16);
