//! Classes and their instances: the values `class` statements make,
//! attribute lookup through the method resolution order, bound methods,
//! descriptors (`property`, `classmethod`, `staticmethod`), `super`,
//! operator methods (`__add__`, `__eq__`, `__len__`...), `repr`, named
//! tuples, and how a class takes part in pytrees (`Pytree`).

use crate::display;
use crate::error::{Error, ErrorKind, Result};
use crate::eval::attr::{AttrKind, Attribute};
use crate::value::{Dict, Key, NativeClosure, Object, Value};
use crate::Interp;
use arr_lang::ast::{BinOp, CmpOp, UnaryOp};
use indexmap::IndexMap;
use std::cell::RefCell;
use std::rc::Rc;

/// The class attribute that holds a class's metaclass (`class C(metaclass=M)`),
/// inherited as attributes are.
pub const METACLASS: &str = "__metaclass__";

/// The metaclass a class was made with (or inherited), if it is a class.
pub fn metaclass(c: &Class) -> Option<Rc<Class>> {
    match c.lookup(METACLASS)? {
        Value::Class(meta) => Some(meta),
        _ => None,
    }
}

/// Whether `v` is a class whose metaclass gives it protocols (iteration,
/// `len`, subscripts, calls).
pub fn has_metaclass(v: &Value) -> bool {
    matches!(v, Value::Class(c) if metaclass(c).is_some())
}

/// A class: its namespace, its bases and their linearisation.
pub struct Class {
    pub name: Rc<str>,
    pub doc: Option<String>,
    pub bases: Vec<Rc<Class>>,
    /// The ancestors after the class itself, in C3 order (Python's MRO).
    pub ancestors: Vec<Rc<Class>>,
    pub attrs: RefCell<IndexMap<Rc<str>, Value>>,
    /// Named tuples: the fields, in order. Instances are then tuples.
    pub tuple_fields: RefCell<Option<Rc<Vec<Rc<str>>>>>,
    /// Dataclasses made with `frozen=True`: attributes cannot be set.
    pub frozen: std::cell::Cell<bool>,
    /// How instances flatten as pytrees; `None`: they are leaves.
    pub pytree: RefCell<Option<Pytree>>,
}

impl std::fmt::Debug for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "<class '{}'>", self.name)
    }
}

/// How instances of a registered class are pytree nodes.
#[derive(Clone, Debug)]
pub enum Pytree {
    /// `register_pytree_node(cls, flatten, unflatten)` (and the class form,
    /// whose flatten is the `tree_flatten` method): `flatten(x)` gives
    /// `(children, aux)`, `unflatten(aux, children)` rebuilds.
    Custom { flatten: Value, unflatten: Value },
    /// `register_dataclass`: the data fields are the children; the meta
    /// fields are part of the structure, compared by value.
    Fields {
        data: Vec<Rc<str>>,
        meta: Vec<Rc<str>>,
    },
    /// `register_static`: no children, the instance is all structure.
    Static,
    /// An object whose attributes are its state (Flax NNX's modules and
    /// variables): the children are the attributes that hold arrays or
    /// other such objects, in name order; the other attributes are static
    /// structure, compared by value. Decided at each walk, so an attribute
    /// that starts as `None` and later holds an array becomes a child.
    Object,
}

/// An instance: its class and its own attributes (and, for a named tuple,
/// its items).
pub struct Instance {
    pub class: Rc<Class>,
    pub attrs: RefCell<IndexMap<Rc<str>, Value>>,
    pub items: Option<Rc<Vec<Value>>>,
    /// For a class registered with user flatten/unflatten functions: the
    /// last flatten, so that pytree walks (which run no user code) can
    /// read it; kept current by `__init__` and attribute assignment.
    pub node: RefCell<Option<Node>>,
    /// While `__init__` runs (attributes may be missing: no flatten yet).
    pub initializing: std::cell::Cell<bool>,
}

/// A user-registered pytree node as flattened: its children (each a
/// subtree) and its auxiliary data. `pending`: the instance was rebuilt by a
/// pytree walk and the user's unflatten has not run yet; it runs when the
/// instance is first used (`Interp::materialize`).
#[derive(Clone, Debug)]
pub struct Node {
    pub children: Vec<Value>,
    pub aux: Value,
    pub pending: bool,
}

impl Instance {
    pub fn new(class: Rc<Class>, items: Option<Rc<Vec<Value>>>) -> Instance {
        Instance {
            class,
            attrs: RefCell::new(IndexMap::new()),
            items,
            node: RefCell::new(None),
            initializing: std::cell::Cell::new(false),
        }
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "<{} object>", self.class.name)
    }
}

impl Class {
    pub fn new(name: &str, bases: Vec<Rc<Class>>, doc: Option<String>) -> Result<Class> {
        let ancestors = linearize(&bases).ok_or_else(|| {
            Error::type_error(format!(
                "Cannot create a consistent method resolution order (MRO) for bases of {name}"
            ))
        })?;
        Ok(Class {
            name: Rc::from(name),
            doc,
            bases,
            ancestors,
            attrs: RefCell::new(IndexMap::new()),
            tuple_fields: RefCell::new(None),
            frozen: std::cell::Cell::new(false),
            pytree: RefCell::new(None),
        })
    }

    /// `name` in the class or its ancestors, in MRO order.
    pub fn lookup(&self, name: &str) -> Option<Value> {
        if let Some(v) = self.attrs.borrow().get(name) {
            return Some(v.clone());
        }
        self.ancestors
            .iter()
            .find_map(|c| c.attrs.borrow().get(name).cloned())
    }

    /// Whether `self` is `other` or inherits from it.
    pub fn is_subclass(self: &Rc<Class>, other: &Rc<Class>) -> bool {
        Rc::ptr_eq(self, other) || self.ancestors.iter().any(|c| Rc::ptr_eq(c, other))
    }

    /// The class, then its ancestors: the MRO.
    pub fn mro(self: &Rc<Class>) -> Vec<Rc<Class>> {
        let mut out = vec![self.clone()];
        out.extend(self.ancestors.iter().cloned());
        out
    }

    /// A named tuple's fields, if it is one (or inherits from one).
    pub fn fields(&self) -> Option<Rc<Vec<Rc<str>>>> {
        if let Some(f) = self.tuple_fields.borrow().clone() {
            return Some(f);
        }
        self.ancestors
            .iter()
            .find_map(|c| c.tuple_fields.borrow().clone())
    }

    /// The pytree registration of the class or its nearest registered ancestor.
    pub fn pytree(&self) -> Option<Pytree> {
        if let Some(p) = self.pytree.borrow().clone() {
            return Some(p);
        }
        self.ancestors
            .iter()
            .find_map(|c| c.pytree.borrow().clone())
    }
}

thread_local! {
    static OBJECT: Rc<Class> = Rc::new(Class::new("object", Vec::new(), None).expect("no bases"));
}

/// `object`, the root of every class: implicit at the end of every MRO
/// (only `__mro__` shows it), so classes need not hold it.
pub fn object_class() -> Rc<Class> {
    OBJECT.with(|o| o.clone())
}

/// Whether `c` is `object`.
pub fn is_object(c: &Rc<Class>) -> bool {
    OBJECT.with(|o| Rc::ptr_eq(o, c))
}

/// C3 linearisation of the bases: the ancestors of a new class, or None when
/// the bases admit no consistent order.
fn linearize(bases: &[Rc<Class>]) -> Option<Vec<Rc<Class>>> {
    let mut seqs: Vec<Vec<Rc<Class>>> = bases.iter().map(|b| b.mro()).collect();
    seqs.push(bases.to_vec());
    let mut out: Vec<Rc<Class>> = Vec::new();
    loop {
        seqs.retain(|s| !s.is_empty());
        if seqs.is_empty() {
            return Some(out);
        }
        // The first head that is in no other sequence's tail.
        let head = seqs
            .iter()
            .map(|s| s[0].clone())
            .find(|h| !seqs.iter().any(|s| s[1..].iter().any(|c| Rc::ptr_eq(c, h))))?;
        for s in seqs.iter_mut() {
            if Rc::ptr_eq(&s[0], &head) {
                s.remove(0);
            }
        }
        out.push(head);
    }
}

/// `property`, `classmethod` and `staticmethod` objects: what a class
/// attribute turns into when read through an instance or the class.
#[derive(Debug, Clone)]
pub enum Descriptor {
    Property { get: Value, set: Option<Value> },
    ClassMethod(Value),
    StaticMethod(Value),
}

impl Object for Descriptor {
    fn type_name(&self) -> &'static str {
        match self {
            Descriptor::Property { .. } => "property",
            Descriptor::ClassMethod(_) => "classmethod",
            Descriptor::StaticMethod(_) => "staticmethod",
        }
    }

    fn repr(&self) -> String {
        format!("<{} object>", self.type_name())
    }

    fn attr(&self, name: &str) -> Option<Value> {
        match (self, name) {
            // `@x.setter`: a property with the same getter and this setter.
            (Descriptor::Property { get, .. }, "setter") => {
                let get = get.clone();
                Some(NativeClosure::value("setter", move |_, args, _| {
                    let [set] = <[Value; 1]>::try_from(args)
                        .map_err(|_| Error::type_error("setter() takes exactly one argument"))?;
                    Ok(Value::object(Descriptor::Property {
                        get: get.clone(),
                        set: Some(set),
                    }))
                }))
            }
            (Descriptor::Property { get, .. }, "fget") => Some(get.clone()),
            (Descriptor::ClassMethod(f) | Descriptor::StaticMethod(f), "__func__") => {
                Some(f.clone())
            }
            _ => None,
        }
    }

    fn attributes(&self) -> Vec<Attribute> {
        Vec::new()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The descriptor in a value, if it is one.
pub fn descriptor(v: &Value) -> Option<&Descriptor> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Descriptor>(),
        _ => None,
    }
}

/// `super(C, obj)`: attribute lookup that starts after `C` in `obj`'s MRO.
#[derive(Debug)]
pub struct Super {
    pub class: Rc<Class>,
    pub obj: Value,
}

impl Object for Super {
    fn type_name(&self) -> &'static str {
        "super"
    }

    fn repr(&self) -> String {
        format!("<super: <class '{}'>>", self.class.name)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What `type(x)` gives for a value that is not an instance of a class:
/// arr's type string (`'f32[3,4]'`, as before), which also answers
/// `__name__` with Python's name of the type (`'int'`, `'ArrayImpl'`).
#[derive(Debug)]
pub struct TypeName {
    pub text: String,
    pub name: &'static str,
}

impl Object for TypeName {
    fn type_name(&self) -> &'static str {
        "type"
    }

    fn repr(&self) -> String {
        self.text.clone()
    }

    fn attr(&self, name: &str) -> Option<Value> {
        (name == "__name__").then(|| Value::str(self.name))
    }

    fn as_str(&self) -> Option<&str> {
        Some(&self.text)
    }

    /// Two values of one Python type have one type: `type(x) is type(y)`
    /// for arrays of different shapes, as for JAX's ArrayImpl.
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<TypeName>()
            .is_some_and(|o| o.name == self.name)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Python's name for the type of a value that is not an instance.
pub fn python_type_name(v: &Value) -> &'static str {
    match v {
        Value::None => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::Array(_) if crate::numpy::is_ndarray(v) => "ndarray",
        Value::Array(_) => "ArrayImpl",
        Value::List(_) => "list",
        Value::Tuple(_) => "tuple",
        Value::Dict(_) => "dict",
        Value::Function(_) | Value::Native(_) => "function",
        Value::Builtin(_) => "builtin_function_or_method",
        Value::BoundMethod(_) => "method",
        Value::Module(_) => "module",
        Value::DType(_) => "dtype",
        Value::Slice(_) => "slice",
        Value::Range(_) => "range",
        Value::Ellipsis => "ellipsis",
        Value::Class(_) => "type",
        Value::Instance(_) => "object",
        Value::Object(o) => o.type_name(),
    }
}

/// `type(x)`: the class of an instance, else a `TypeName`.
pub fn type_of(v: &Value) -> Value {
    match v {
        Value::Instance(i) => Value::Class(i.class.clone()),
        other => Value::object(TypeName {
            text: other.type_name(),
            name: python_type_name(other),
        }),
    }
}

/// The default repr of an instance, as Python writes it.
pub fn default_repr(i: &Rc<Instance>) -> String {
    format!(
        "<__main__.{} object at {:#x}>",
        i.class.name,
        Rc::as_ptr(i) as *const u8 as usize
    )
}

/// A named tuple's repr without calling user code: `P(x=1, y=2)`.
pub fn tuple_repr(i: &Instance, fields: &[Rc<str>], item: &dyn Fn(&Value) -> String) -> String {
    let items = i.items.as_deref().map(|v| v.as_slice()).unwrap_or_default();
    let parts: Vec<String> = fields
        .iter()
        .zip(items)
        .map(|(f, v)| format!("{f}={}", item(v)))
        .collect();
    format!("{}({})", i.class.name, parts.join(", "))
}

/// The method names of binary operators, and of their reflected forms.
fn binary_methods(op: BinOp) -> (&'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__"),
        BinOp::Sub => ("__sub__", "__rsub__"),
        BinOp::Mul => ("__mul__", "__rmul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__"),
        BinOp::Pow => ("__pow__", "__rpow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__"),
        BinOp::BitOr => ("__or__", "__ror__"),
        BinOp::BitXor => ("__xor__", "__rxor__"),
        BinOp::LShift => ("__lshift__", "__rlshift__"),
        BinOp::RShift => ("__rshift__", "__rrshift__"),
    }
}

fn attribute_error(msg: String) -> Error {
    Error::new(ErrorKind::AttributeError, msg)
}

/// A Python `NotImplemented` is not a value in arr: an operator method
/// that gives up returns None... only `NotImplemented` by name would be
/// clearer, so a method's result is taken as is.
fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Str(s) if s.as_str() == "NotImplemented")
}

impl Interp {
    /// Make a class from a `class` statement's pieces: the evaluated bases
    /// and the namespace its body filled.
    /// After a class statement made `class`: the nearest ancestor's
    /// `__init_subclass__` (implicitly a class method, as in Python) called
    /// with the class and the header's keywords. Without one, keywords are
    /// a TypeError, as `object.__init_subclass__` takes none.
    pub fn init_subclass(&mut self, class: &Value, keywords: Vec<(Rc<str>, Value)>) -> Result<()> {
        let Value::Class(c) = class else {
            return Ok(());
        };
        let hook = c
            .ancestors
            .iter()
            .find_map(|a| a.attrs.borrow().get("__init_subclass__").cloned());
        let Some(hook) = hook else {
            if let Some((k, _)) = keywords.first() {
                return Err(Error::type_error(format!(
                    "{}.__init_subclass__() takes no keyword arguments (got '{k}')",
                    c.name
                )));
            }
            return Ok(());
        };
        let func = match descriptor(&hook) {
            Some(Descriptor::ClassMethod(f)) => f.clone(),
            _ => hook,
        };
        self.call(&func, vec![class.clone()], keywords)?;
        Ok(())
    }

    pub fn make_class(
        &mut self,
        name: &str,
        doc: Option<String>,
        bases: Vec<Value>,
        namespace: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        if let Some(exc) = bases
            .iter()
            .find(|b| crate::exception::as_class(b).is_some())
        {
            return exception_class(name, &bases, exc, &namespace);
        }
        let mut classes = Vec::new();
        let mut named_tuple = false;
        for b in bases {
            match b {
                Value::Class(c) if is_object(&c) => {}
                Value::Class(c) => classes.push(c),
                Value::Builtin(b) if b.name.rsplit('.').next() == Some("NamedTuple") => {
                    named_tuple = true
                }
                Value::Builtin(b) if b.name.rsplit('.').next() == Some("object") => {}
                // A metaclass (`class Meta(type)`): its methods serve the
                // classes made with it (`Interp::method_of`); arr's `type`
                // itself adds nothing to inherit.
                Value::Builtin(b) if &*b.name == "type" => {}
                other => {
                    return Err(Error::type_error(format!(
                        "class {name}: a base must be a class, not {}",
                        other.type_name()
                    )))
                }
            }
        }
        let class = Class::new(name, classes, doc)?;
        {
            let mut attrs = class.attrs.borrow_mut();
            for (k, v) in namespace {
                // Functions in a class body are plain functions: a decorator
                // such as `staticmethod` marks the exceptions.
                attrs.insert(k, v);
            }
        }
        if named_tuple {
            let fields: Vec<Rc<str>> = match class.attrs.borrow().get("__annotations__") {
                Some(Value::Dict(d)) => d
                    .borrow()
                    .keys()
                    .filter_map(|k| match k {
                        Key::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            *class.tuple_fields.borrow_mut() = Some(Rc::new(fields));
        }
        Ok(Value::Class(Rc::new(class)))
    }

    /// `C(args)`: a new instance, initialised by `__init__` (a named tuple
    /// binds its fields instead).
    pub fn instantiate(
        &mut self,
        class: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        if let Some(fields) = class.fields() {
            let items = self.bind_fields(class, &fields, args, kwargs)?;
            let new = Rc::new(Instance::new(class.clone(), Some(Rc::new(items))));
            // A named tuple registered as a pytree node flattens its own way.
            self.reflatten(&new)?;
            return Ok(Value::Instance(new));
        }
        let new = Rc::new(Instance::new(class.clone(), None));
        let inst = Value::Instance(new.clone());
        match class.lookup("__init__") {
            Some(init) => {
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(inst.clone());
                all.extend(args);
                new.initializing.set(true);
                let r = self.call(&init, all, kwargs);
                new.initializing.set(false);
                let r = r?;
                if !matches!(r, Value::None) {
                    return Err(Error::type_error(format!(
                        "__init__() should return None, not '{}'",
                        r.type_name()
                    )));
                }
            }
            None if !args.is_empty() || !kwargs.is_empty() => {
                return Err(Error::type_error(format!(
                    "{}() takes no arguments",
                    class.name
                )))
            }
            None => {}
        }
        self.reflatten(&new)?;
        Ok(inst)
    }

    /// Flatten a user-registered node again after it changed, so pytree
    /// walks see its current children.
    pub fn reflatten(&mut self, i: &Rc<Instance>) -> Result<()> {
        let Some(Pytree::Custom { flatten, .. }) = i.class.pytree() else {
            return Ok(());
        };
        if i.initializing.get() {
            return Ok(());
        }
        let out = self.call(&flatten, vec![Value::Instance(i.clone())], Vec::new())?;
        let pair = match &out {
            Value::Tuple(t) if t.len() == 2 => t.clone(),
            _ => {
                return Err(Error::type_error(format!(
                "the pytree flatten function of {} must return a pair (children, aux_data), got {}",
                i.class.name,
                out.type_name()
            )))
            }
        };
        let children = crate::eval::iter_items(&pair[0]).map_err(|_| {
            Error::type_error(format!(
                "the pytree flatten function of {} must return its children as a tuple or list, got {}",
                i.class.name,
                pair[0].type_name()
            ))
        })?;
        *i.node.borrow_mut() = Some(Node {
            children,
            aux: pair[1].clone(),
            pending: false,
        });
        Ok(())
    }

    /// Run the user's unflatten for an instance a pytree walk rebuilt, and
    /// take over the attributes of what it returns.
    pub fn materialize(&mut self, i: &Rc<Instance>) -> Result<()> {
        let node = match &*i.node.borrow() {
            Some(n) if n.pending => n.clone(),
            _ => return Ok(()),
        };
        let Some(Pytree::Custom { unflatten, .. }) = i.class.pytree() else {
            return Ok(());
        };
        if let Some(n) = i.node.borrow_mut().as_mut() {
            n.pending = false;
        }
        let built = self.call(
            &unflatten,
            vec![node.aux.clone(), Value::tuple(node.children.clone())],
            Vec::new(),
        )?;
        match &built {
            Value::Instance(b) if Rc::ptr_eq(&b.class, &i.class) => {
                self.materialize(b)?;
                *i.attrs.borrow_mut() = b.attrs.borrow().clone();
                Ok(())
            }
            other => Err(Error::type_error(format!(
                "the pytree unflatten function of {} returned {}, not an instance of it",
                i.class.name,
                other.type_name()
            ))),
        }
    }

    /// A named tuple's items from a call: positional, then by keyword, then
    /// the class's defaults.
    pub fn bind_fields(
        &mut self,
        class: &Class,
        fields: &[Rc<str>],
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Vec<Value>> {
        if args.len() > fields.len() {
            return Err(Error::type_error(format!(
                "{}() takes {} positional arguments but {} were given",
                class.name,
                fields.len(),
                args.len()
            )));
        }
        let mut items: Vec<Option<Value>> = args.into_iter().map(Some).collect();
        items.resize(fields.len(), None);
        for (k, v) in kwargs {
            let Some(i) = fields.iter().position(|f| *f == k) else {
                return Err(Error::type_error(format!(
                    "{}() got an unexpected keyword argument '{k}'",
                    class.name
                )));
            };
            if items[i].is_some() {
                return Err(Error::type_error(format!(
                    "{}() got multiple values for argument '{k}'",
                    class.name
                )));
            }
            items[i] = Some(v);
        }
        let mut out = Vec::with_capacity(fields.len());
        for (f, item) in fields.iter().zip(items) {
            match item.or_else(|| class.lookup(f)) {
                Some(v) => out.push(v),
                None => {
                    return Err(Error::type_error(format!(
                        "{}() missing required argument: '{f}'",
                        class.name
                    )))
                }
            }
        }
        Ok(out)
    }

    /// `obj.name` for instances, classes and `super` objects; anything else
    /// goes to the built-in tables (`get_attr`).
    pub fn attr(&mut self, o: &Value, name: &str) -> Result<Value> {
        match o {
            Value::Instance(i) => self.instance_attr(o, i, name),
            Value::Class(c) => self.class_attr(c, name),
            Value::Object(obj) => match obj.as_any().downcast_ref::<Super>() {
                Some(s) => self.super_attr(s, name),
                None => self.get_attr(o, name),
            },
            _ => self.get_attr(o, name),
        }
    }

    fn instance_attr(&mut self, o: &Value, i: &Rc<Instance>, name: &str) -> Result<Value> {
        self.materialize(i)?;
        if let (Some(fields), Some(items)) = (i.class.fields(), &i.items) {
            if let Some(k) = fields.iter().position(|f| &**f == name) {
                return Ok(items[k].clone());
            }
        }
        match name {
            "__class__" => return Ok(Value::Class(i.class.clone())),
            "__dict__" => {
                let d: Dict = i
                    .attrs
                    .borrow()
                    .iter()
                    .map(|(k, v)| (Key::Str(k.clone()), v.clone()))
                    .collect();
                return Ok(Value::dict(d));
            }
            _ => {}
        }
        let found = i.class.lookup(name);
        if let Some(Descriptor::Property { get, .. }) = found.as_ref().and_then(descriptor) {
            let get = get.clone();
            return self.call(&get, vec![o.clone()], Vec::new());
        }
        // A user's descriptor (an instance whose class has `__get__`): a
        // data descriptor (with `__set__`) wins over the instance's own
        // attribute, another only where the instance has none (Python's
        // order; `functools.cached_property` stores its value there).
        let user = found.as_ref().and_then(|v| match v {
            Value::Instance(d) => d.class.lookup("__get__").map(|get| {
                (
                    self.bind(get, v, &d.class),
                    d.class.lookup("__set__").is_some(),
                )
            }),
            _ => None,
        });
        let owner = Value::Class(i.class.clone());
        if let Some((get, true)) = &user {
            return self.call(get, vec![o.clone(), owner], Vec::new());
        }
        if let Some(v) = i.attrs.borrow().get(name) {
            return Ok(v.clone());
        }
        if let Some((get, false)) = user {
            return self.call(&get, vec![o.clone(), owner], Vec::new());
        }
        match found {
            Some(v) => Ok(self.bind(v, o, &i.class)),
            None => {
                if let Some(fields) = i.class.fields() {
                    if let Some(v) = self.tuple_method(i, &fields, name) {
                        return Ok(v);
                    }
                }
                // Python's fallback for attributes found nowhere else.
                if let Some(getattr) = i.class.lookup("__getattr__") {
                    let getattr = self.bind(getattr, o, &i.class);
                    return self.call(&getattr, vec![Value::str(name)], Vec::new());
                }
                Err(attribute_error(format!(
                    "'{}' object has no attribute '{name}'",
                    i.class.name
                )))
            }
        }
    }

    /// A class attribute read through an instance: functions bind to it,
    /// class methods to its class, static methods stay plain.
    fn bind(&self, v: Value, obj: &Value, class: &Rc<Class>) -> Value {
        match &v {
            Value::Function(_) | Value::Native(_) | Value::Builtin(_) => {
                Value::BoundMethod(Rc::new((obj.clone(), v)))
            }
            _ => match descriptor(&v) {
                Some(Descriptor::ClassMethod(f)) => {
                    Value::BoundMethod(Rc::new((Value::Class(class.clone()), f.clone())))
                }
                Some(Descriptor::StaticMethod(f)) => f.clone(),
                _ => v,
            },
        }
    }

    fn class_attr(&mut self, c: &Rc<Class>, name: &str) -> Result<Value> {
        match name {
            "__name__" | "__qualname__" => return Ok(Value::str(&c.name)),
            "__doc__" => return Ok(c.doc.as_deref().map_or(Value::None, Value::str)),
            // Classes are defined by the program (the library's show as its).
            "__module__" if c.lookup("__module__").is_none() => return Ok(Value::str("__main__")),
            "__mro__" => {
                let mut mro = c.mro();
                if !is_object(c) {
                    mro.push(object_class());
                }
                return Ok(Value::tuple(mro.into_iter().map(Value::Class).collect()));
            }
            // A copy of the class's own namespace (Python's read-only
            // mappingproxy): `vars(cls)`.
            "__dict__" => {
                let d: Dict = c
                    .attrs
                    .borrow()
                    .iter()
                    .filter(|(k, _)| &***k != METACLASS)
                    .map(|(k, v)| (Key::Str(k.clone()), v.clone()))
                    .collect();
                return Ok(Value::dict(d));
            }
            "__bases__" => {
                return Ok(Value::tuple(
                    c.bases.iter().cloned().map(Value::Class).collect(),
                ))
            }
            "_fields" => {
                if let Some(fields) = c.fields() {
                    return Ok(Value::tuple(fields.iter().map(|f| Value::str(f)).collect()));
                }
            }
            _ => {}
        }
        match c.lookup(name) {
            Some(v) => Ok(match descriptor(&v) {
                Some(Descriptor::ClassMethod(f)) => {
                    Value::BoundMethod(Rc::new((Value::Class(c.clone()), f.clone())))
                }
                Some(Descriptor::StaticMethod(f)) => f.clone(),
                _ => v,
            }),
            None => Err(attribute_error(format!(
                "type object '{}' has no attribute '{name}'",
                c.name
            ))),
        }
    }

    fn super_attr(&mut self, s: &Super, name: &str) -> Result<Value> {
        let obj_class = match &s.obj {
            Value::Instance(i) => i.class.clone(),
            Value::Class(c) => c.clone(),
            other => {
                return Err(Error::type_error(format!(
                    "super(type, obj): obj must be an instance or subtype of type, not {}",
                    other.type_name()
                )))
            }
        };
        let mro = obj_class.mro();
        let start = mro
            .iter()
            .position(|c| Rc::ptr_eq(c, &s.class))
            .map_or(mro.len(), |p| p + 1);
        for c in &mro[start..] {
            let found = c.attrs.borrow().get(name).cloned();
            if let Some(v) = found {
                if let Some(Descriptor::Property { get, .. }) = descriptor(&v) {
                    let get = get.clone();
                    return self.call(&get, vec![s.obj.clone()], Vec::new());
                }
                return Ok(match &s.obj {
                    Value::Class(_) => match descriptor(&v) {
                        Some(Descriptor::ClassMethod(f)) => {
                            Value::BoundMethod(Rc::new((s.obj.clone(), f.clone())))
                        }
                        Some(Descriptor::StaticMethod(f)) => f.clone(),
                        _ => v,
                    },
                    _ => self.bind(v, &s.obj, &obj_class),
                });
            }
        }
        // `object`'s own methods (`__setattr__`), at the end of every MRO.
        let found = object_class().attrs.borrow().get(name).cloned();
        if let Some(v) = found {
            return Ok(self.bind(v, &s.obj, &obj_class));
        }
        if name == "__init__" {
            // object.__init__: accepts nothing more.
            return Ok(NativeClosure::value("__init__", |_, args, kwargs| {
                if !args.is_empty() || !kwargs.is_empty() {
                    return Err(Error::type_error(
                        "object.__init__() takes exactly one argument (the instance to initialize)",
                    ));
                }
                Ok(Value::None)
            }));
        }
        Err(attribute_error(format!(
            "'super' object has no attribute '{name}'"
        )))
    }

    /// `_replace`, `_asdict` and the tuple methods of a named tuple.
    fn tuple_method(
        &self,
        i: &Rc<Instance>,
        fields: &Rc<Vec<Rc<str>>>,
        name: &str,
    ) -> Option<Value> {
        let items = i.items.clone()?;
        Some(match name {
            "_fields" => Value::tuple(fields.iter().map(|f| Value::str(f)).collect()),
            "_asdict" => {
                let d: Dict = fields
                    .iter()
                    .zip(items.iter())
                    .map(|(f, v)| (Key::Str(f.clone()), v.clone()))
                    .collect();
                let d = Value::dict(d);
                NativeClosure::value("_asdict", move |_, _, _| Ok(d.clone()))
            }
            "_replace" => {
                let (inst, fields) = (i.clone(), fields.clone());
                NativeClosure::value("_replace", move |_, args, kwargs| {
                    if !args.is_empty() {
                        return Err(Error::type_error("_replace() takes only keyword arguments"));
                    }
                    let mut items = inst.items.as_deref().cloned().unwrap_or_default();
                    for (k, v) in kwargs {
                        let Some(p) = fields.iter().position(|f| *f == k) else {
                            return Err(Error::value_error(format!(
                                "Got unexpected field names: ['{k}']"
                            )));
                        };
                        items[p] = v;
                    }
                    Ok(Value::Instance(Rc::new(Instance::new(
                        inst.class.clone(),
                        Some(Rc::new(items)),
                    ))))
                })
            }
            _ => return None,
        })
    }

    /// `obj.name = v`: the class's `__setattr__` when it defines one.
    pub fn set_attr(&mut self, o: &Value, name: &str, v: Value) -> Result<()> {
        if let Value::Instance(i) = o {
            if let Some(hook) = i.class.lookup("__setattr__") {
                let hook = self.bind(hook, o, &i.class);
                return self
                    .call(&hook, vec![Value::str(name), v], Vec::new())
                    .map(|_| ());
            }
        }
        self.set_attr_raw(o, name, v)
    }

    /// `del obj.name` (and `delattr`): an instance's or a class's own attribute.
    pub fn del_attr(&mut self, o: &Value, name: &str) -> Result<()> {
        let removed = match o {
            Value::Instance(i) => {
                self.materialize(i)?;
                if i.class.frozen.get() || i.class.ancestors.iter().any(|c| c.frozen.get()) {
                    return Err(attribute_error(format!(
                        "cannot delete field '{name}' (the dataclass {} is frozen)",
                        i.class.name
                    )));
                }
                let removed = i.attrs.borrow_mut().shift_remove(name).is_some();
                if removed {
                    self.reflatten(i)?;
                }
                removed
            }
            Value::Class(c) => c.attrs.borrow_mut().shift_remove(name).is_some(),
            other => {
                return Err(attribute_error(format!(
                    "'{}' object has no attribute '{name}' that can be deleted",
                    other.type_name()
                )))
            }
        };
        match removed {
            true => Ok(()),
            false => Err(attribute_error(format!(
                "'{}' object has no attribute '{name}'",
                match o {
                    Value::Instance(i) => i.class.name.to_string(),
                    _ => o.type_name().to_string(),
                }
            ))),
        }
    }

    /// `obj.name = v` without the class's `__setattr__` (`object.__setattr__`).
    pub fn set_attr_raw(&mut self, o: &Value, name: &str, v: Value) -> Result<()> {
        match o {
            Value::Instance(i) => {
                self.materialize(i)?;
                if let Some(Descriptor::Property { set, .. }) =
                    i.class.lookup(name).as_ref().and_then(descriptor)
                {
                    return match set {
                        Some(set) => {
                            let set = set.clone();
                            self.call(&set, vec![o.clone(), v], Vec::new()).map(|_| ())
                        }
                        None => Err(attribute_error(format!(
                            "property '{name}' of '{}' object has no setter",
                            i.class.name
                        ))),
                    };
                }
                if i.items.is_some() {
                    return Err(attribute_error(format!(
                        "'{}' object attribute '{name}' is read-only (a named tuple cannot change)",
                        i.class.name
                    )));
                }
                if i.class.frozen.get() || i.class.ancestors.iter().any(|c| c.frozen.get()) {
                    return Err(attribute_error(format!(
                        "cannot assign to field '{name}' (the dataclass {} is frozen)",
                        i.class.name
                    )));
                }
                i.attrs.borrow_mut().insert(Rc::from(name), v);
                self.reflatten(i)
            }
            Value::Class(c) => {
                c.attrs.borrow_mut().insert(Rc::from(name), v);
                Ok(())
            }
            Value::Native(n) => {
                let mut attrs = n.attrs.borrow_mut();
                match attrs.iter_mut().find(|(k, _)| k == name) {
                    Some(slot) => slot.1 = v,
                    None => attrs.push((name.to_string(), v)),
                }
                Ok(())
            }
            other => Err(attribute_error(format!(
                "'{}' object has no attribute '{name}' that can be set",
                other.type_name()
            ))),
        }
    }

    /// The method `name` of an instance's class, bound to it.
    pub(crate) fn method_of(&self, o: &Value, name: &str) -> Option<Value> {
        match o {
            Value::Instance(i) => i.class.lookup(name).map(|m| self.bind(m, o, &i.class)),
            // A class's protocols are its metaclass's methods.
            Value::Class(c) => {
                let meta = metaclass(c)?;
                meta.lookup(name).map(|m| self.bind(m, o, &meta))
            }
            _ => None,
        }
    }

    /// `a op b` where an operand is an instance: `a.__op__(b)`, else
    /// `b.__rop__(a)`; a named tuple without them is a tuple.
    pub fn instance_binary(&mut self, op: BinOp, a: Value, b: Value) -> Result<Value> {
        let (name, reflected) = binary_methods(op);
        if let Some(m) = self.method_of(&a, name) {
            let r = self.call(&m, vec![b.clone()], Vec::new())?;
            if !is_not_implemented(&r) {
                return Ok(r);
            }
        }
        if let Some(m) = self.method_of(&b, reflected) {
            let r = self.call(&m, vec![a.clone()], Vec::new())?;
            if !is_not_implemented(&r) {
                return Ok(r);
            }
        }
        let (xa, xb) = (array_attribute(&a), array_attribute(&b));
        if xa.is_some() || xb.is_some() {
            return crate::eval::binary_op(op, xa.unwrap_or(a), xb.unwrap_or(b));
        }
        let (ta, tb) = (as_tuple(&a), as_tuple(&b));
        if ta.is_some() || tb.is_some() {
            return crate::eval::binary_op(op, ta.unwrap_or(a), tb.unwrap_or(b));
        }
        Err(Error::type_error(format!(
            "unsupported operand type(s) for {}: '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        )))
    }

    /// `-x`, `+x`, `~x` on an instance.
    pub fn instance_unary(&mut self, op: UnaryOp, v: Value) -> Result<Value> {
        let name = match op {
            UnaryOp::Neg => "__neg__",
            UnaryOp::Pos => "__pos__",
            UnaryOp::Invert => "__invert__",
            UnaryOp::Not => return Ok(Value::Bool(!self.truthy(&v)?)),
        };
        match self.method_of(&v, name) {
            Some(m) => self.call(&m, Vec::new(), Vec::new()),
            None if array_attribute(&v).is_some() => {
                crate::eval::unary_op(op, array_attribute(&v).expect("checked"))
            }
            None => Err(Error::type_error(format!(
                "bad operand type for unary {}: '{}'",
                op.symbol(),
                v.type_name()
            ))),
        }
    }

    /// Truthiness through `__bool__` or `__len__`.
    pub fn truthy(&mut self, v: &Value) -> Result<bool> {
        if let Value::Instance(i) = v {
            if let Some(items) = &i.items {
                return Ok(!items.is_empty());
            }
            if let Some(m) = self.method_of(v, "__bool__") {
                return self.call(&m, Vec::new(), Vec::new())?.truthy();
            }
            if let Some(m) = self.method_of(v, "__len__") {
                return self.call(&m, Vec::new(), Vec::new())?.truthy();
            }
            return Ok(true);
        }
        v.truthy()
    }

    /// How `a` and `b` order, as `sorted` and `min`/`max` see them: by
    /// `__lt__` (either way round) when one is an instance, else by value.
    pub fn order_values(&mut self, a: &Value, b: &Value) -> Result<std::cmp::Ordering> {
        if !matches!(a, Value::Instance(_)) && !matches!(b, Value::Instance(_)) {
            return crate::eval::compare_values(a, b);
        }
        let less = self.instance_compare(CmpOp::Lt, a, b)?;
        if self.truthy(&less)? {
            return Ok(std::cmp::Ordering::Less);
        }
        let greater = self.instance_compare(CmpOp::Lt, b, a)?;
        Ok(match self.truthy(&greater)? {
            true => std::cmp::Ordering::Greater,
            false => std::cmp::Ordering::Equal,
        })
    }

    /// `a op b` for comparisons where an operand is an instance.
    pub fn instance_compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> Result<Value> {
        let names = match op {
            CmpOp::Eq => Some(("__eq__", "__eq__")),
            CmpOp::NotEq => Some(("__ne__", "__ne__")),
            CmpOp::Lt => Some(("__lt__", "__gt__")),
            CmpOp::LtE => Some(("__le__", "__ge__")),
            CmpOp::Gt => Some(("__gt__", "__lt__")),
            CmpOp::GtE => Some(("__ge__", "__le__")),
            _ => None,
        };
        if let Some((name, reflected)) = names {
            if let Some(m) = self.method_of(a, name) {
                let r = self.call(&m, vec![b.clone()], Vec::new())?;
                if !is_not_implemented(&r) {
                    return Ok(r);
                }
            }
            if let Some(m) = self.method_of(b, reflected) {
                let r = self.call(&m, vec![a.clone()], Vec::new())?;
                if !is_not_implemented(&r) {
                    return Ok(r);
                }
            }
            if op == CmpOp::NotEq {
                let eq = self.instance_compare(CmpOp::Eq, a, b)?;
                return Ok(Value::Bool(!self.truthy(&eq)?));
            }
        }
        if matches!(op, CmpOp::In | CmpOp::NotIn) {
            if let Some(m) = self.method_of(b, "__contains__") {
                let found = self.call(&m, vec![a.clone()], Vec::new())?;
                let found = self.truthy(&found)?;
                return Ok(Value::Bool(found == (op == CmpOp::In)));
            }
        }
        let (ta, tb) = (as_tuple(a), as_tuple(b));
        if matches!(op, CmpOp::Is | CmpOp::IsNot) || (ta.is_none() && tb.is_none()) {
            return crate::eval::compare_op(op, a, b);
        }
        let a = ta.unwrap_or_else(|| a.clone());
        let b = tb.unwrap_or_else(|| b.clone());
        crate::eval::compare_op(op, &a, &b)
    }

    /// `obj[index]` on an instance: a named tuple's item, or `__getitem__`.
    pub fn instance_item(&mut self, o: &Value, index: &Value) -> Result<Value> {
        if let Some(m) = self.method_of(o, "__getitem__") {
            return self.call(&m, vec![index.clone()], Vec::new());
        }
        match as_tuple(o) {
            Some(t) => crate::eval::get_item(&t, index),
            None => Err(Error::type_error(format!(
                "'{}' object is not subscriptable",
                o.type_name()
            ))),
        }
    }

    /// `len(x)`, with `__len__` for instances.
    pub fn len_of(&mut self, v: &Value) -> Result<Option<i64>> {
        if let Value::Instance(i) = v {
            if let Some(items) = &i.items {
                return Ok(Some(items.len() as i64));
            }
        }
        if !crate::eval::is_instance_like(v) {
            return Ok(None);
        }
        if let Some(m) = self.method_of(v, "__len__") {
            let n = self.call(&m, Vec::new(), Vec::new())?;
            return n.to_int()?.map(Some).ok_or_else(|| {
                Error::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    n.type_name()
                ))
            });
        }
        Err(Error::type_error(format!(
            "object of type '{}' has no len()",
            v.type_name()
        )))
    }

    /// The items of an instance that is iterable: a named tuple, or one
    /// with `__iter__` (whose result is iterated) or `__getitem__` and
    /// `__len__`.
    pub fn instance_items(&mut self, v: &Value) -> Result<Vec<Value>> {
        self.items(v)
    }

    /// How an instance iterates: its items (those of what `__iter__`
    /// returned, or `__getitem__` up to its `len`), or (`Err`) the iterator
    /// object `__iter__` returned, to step with `next`.
    pub fn instance_iterator(
        &mut self,
        v: &Value,
    ) -> Result<std::result::Result<Vec<Value>, Value>> {
        if let Value::Instance(i) = v {
            if let Some(items) = &i.items {
                return Ok(Ok(items.to_vec()));
            }
        }
        if crate::eval::is_instance_like(v) {
            if let Some(m) = self.method_of(v, "__iter__") {
                let it = self.call(&m, Vec::new(), Vec::new())?;
                let stepped = crate::eval::generator::generator_of(&it).is_some()
                    || crate::eval::IterValue::of(&it).is_some()
                    || (matches!(it, Value::Instance(_))
                        && self.method_of(&it, "__next__").is_some());
                if stepped {
                    return Ok(Err(it));
                }
                if matches!(it, Value::Instance(_)) {
                    return Err(Error::type_error(format!(
                        "iter() returned non-iterator of type '{}'",
                        it.type_name()
                    )));
                }
                return crate::eval::iter_items(&it).map(Ok);
            }
            if let (Some(get), Some(n)) = (
                self.method_of(v, "__getitem__"),
                self.len_of(v).ok().flatten(),
            ) {
                let mut out = Vec::new();
                for k in 0..n {
                    out.push(self.call(&get, vec![Value::Int(k)], Vec::new())?);
                }
                return Ok(Ok(out));
            }
        }
        Err(Error::type_error(format!(
            "'{}' object is not iterable",
            v.type_name()
        )))
    }

    /// `repr(v)`, calling `__repr__` of instances (inside containers too).
    pub fn repr_of(&mut self, v: &Value) -> Result<String> {
        match v {
            Value::Instance(i) => self.instance_text(i, v, "__repr__"),
            Value::Class(_) if has_metaclass(v) => match self.method_of(v, "__repr__") {
                Some(m) => text_result(self.call(&m, Vec::new(), Vec::new())?, "__repr__"),
                None => Ok(display::repr(v)),
            },
            _ if contains_instance(v) => Ok(display::repr(&self.rendered(v)?)),
            _ => Ok(display::repr(v)),
        }
    }

    /// `str(v)`: `__str__`, else `__repr__`, of instances.
    pub fn str_of(&mut self, v: &Value) -> Result<String> {
        match v {
            Value::Instance(i) => match self.method_of(v, "__str__") {
                Some(m) => text_result(self.call(&m, Vec::new(), Vec::new())?, "__str__"),
                None => self.instance_text(i, v, "__repr__"),
            },
            Value::Class(_) if has_metaclass(v) => self.repr_of(v),
            _ if contains_instance(v) => Ok(display::str(&self.rendered(v)?)),
            _ => Ok(display::str(v)),
        }
    }

    fn instance_text(&mut self, i: &Rc<Instance>, v: &Value, method: &str) -> Result<String> {
        if let Some(m) = self.method_of(v, method) {
            return text_result(self.call(&m, Vec::new(), Vec::new())?, method);
        }
        if let Some(fields) = i.class.fields() {
            let mut parts = Vec::new();
            let items = i.items.as_deref().cloned().unwrap_or_default();
            for (f, x) in fields.iter().zip(&items) {
                parts.push(format!("{f}={}", self.item_text(x)?));
            }
            return Ok(format!("{}({})", i.class.name, parts.join(", ")));
        }
        Ok(default_repr(i))
    }

    /// An item inside a repr: arrays in JAX's one-line form.
    pub fn item_text(&mut self, v: &Value) -> Result<String> {
        match v {
            Value::Array(_) => Ok(display::item_repr(v)),
            other => self.repr_of(other),
        }
    }

    /// A copy of a container with each instance replaced by its repr's
    /// text, so the interpreter-free display can print it.
    fn rendered(&mut self, v: &Value) -> Result<Value> {
        Ok(match v {
            Value::Instance(i) => Value::object(Rendered(self.instance_text(i, v, "__repr__")?)),
            Value::List(l) => {
                let items = l.borrow().clone();
                Value::list(
                    items
                        .iter()
                        .map(|x| self.rendered(x))
                        .collect::<Result<_>>()?,
                )
            }
            Value::Tuple(t) => {
                Value::tuple(t.iter().map(|x| self.rendered(x)).collect::<Result<_>>()?)
            }
            Value::Dict(d) => {
                let entries: Vec<(Key, Value)> = d
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut out = Dict::default();
                for (k, x) in entries {
                    out.insert(k, self.rendered(&x)?);
                }
                Value::dict(out)
            }
            other => other.clone(),
        })
    }
}

// ---- instances in pytree walks ----

/// Whether `v` is an instance that is a pytree node: of a registered class,
/// or a named tuple. Other instances are leaves.
pub fn is_node(v: &Value) -> bool {
    matches!(v, Value::Instance(i) if i.items.is_some() || i.class.pytree().is_some())
}

/// The children of an instance node, in order. No user code runs: a class
/// with user functions answers from its last flatten.
pub fn node_children(i: &Instance) -> Result<Vec<Value>> {
    match i.class.pytree() {
        Some(Pytree::Custom { .. }) => match &*i.node.borrow() {
            Some(n) => Ok(n.children.clone()),
            None => Err(Error::type_error(format!(
                "this {} was made before its class was registered as a pytree node",
                i.class.name
            ))),
        },
        Some(Pytree::Fields { data, .. }) => data
            .iter()
            .map(|f| {
                i.attrs.borrow().get(f).cloned().ok_or_else(|| {
                    attribute_error(format!(
                        "'{}' object has no attribute '{f}' (a data field of the pytree)",
                        i.class.name
                    ))
                })
            })
            .collect(),
        Some(Pytree::Static) => Ok(Vec::new()),
        Some(Pytree::Object) => Ok(object_children(i).into_iter().map(|(_, v)| v).collect()),
        None => Ok(i.items.as_deref().cloned().unwrap_or_default()),
    }
}

/// How a child of an instance node is named in a key path (JAX's key
/// classes): an attribute (`GetAttrKey`: named tuples, dataclasses, object
/// nodes) or a position among the flattened children (`FlattenedIndexKey`:
/// classes with their own flatten function).
pub enum ChildKey {
    Attr(Rc<str>),
    Index(usize),
}

/// The keys of an instance node's children, in the order of
/// [`node_children`].
pub fn node_child_keys(i: &Instance) -> Result<Vec<ChildKey>> {
    Ok(match i.class.pytree() {
        Some(Pytree::Custom { .. }) => (0..node_children(i)?.len()).map(ChildKey::Index).collect(),
        Some(Pytree::Fields { data, .. }) => data.iter().cloned().map(ChildKey::Attr).collect(),
        Some(Pytree::Static) => Vec::new(),
        // An attribute named by an index (the items of a list-like object,
        // such as Flax's `nnx.List`) is an index in key paths: `[0]`.
        Some(Pytree::Object) => object_children(i)
            .into_iter()
            .map(|(k, _)| match index_name(&k) {
                Some(n) => ChildKey::Index(n),
                None => ChildKey::Attr(k),
            })
            .collect(),
        None => {
            let n = i.items.as_deref().map_or(0, |v| v.len());
            match i.class.fields() {
                Some(f) if f.len() == n => f.iter().cloned().map(ChildKey::Attr).collect(),
                _ => (0..n).map(ChildKey::Index).collect(),
            }
        }
    })
}

/// An instance node like `template` with other children. A class with user
/// functions gets a pending instance (its unflatten runs on first use); a
/// registered dataclass is rebuilt without `__init__`, as JAX does.
pub fn rebuild_node(template: &Rc<Instance>, children: Vec<Value>) -> Result<Value> {
    let class = template.class.clone();
    Ok(match class.pytree() {
        // A named tuple's items are fixed when it is made, so no pending
        // instance can take over what its unflatten returns: one child per
        // field is taken as the fields (what `tuple(q)` flattens to).
        Some(Pytree::Custom { .. })
            if class.fields().is_some_and(|f| f.len() == children.len()) =>
        {
            let aux = template
                .node
                .borrow()
                .as_ref()
                .map_or(Value::None, |n| n.aux.clone());
            let new = Instance::new(class, Some(Rc::new(children.clone())));
            *new.node.borrow_mut() = Some(Node {
                children,
                aux,
                pending: false,
            });
            Value::Instance(Rc::new(new))
        }
        Some(Pytree::Custom { .. }) => {
            let aux = match &*template.node.borrow() {
                Some(n) => n.aux.clone(),
                None => Value::None,
            };
            let new = Instance::new(class, None);
            *new.node.borrow_mut() = Some(Node {
                children,
                aux,
                pending: true,
            });
            Value::Instance(Rc::new(new))
        }
        Some(Pytree::Fields { data, .. }) => {
            let new = Instance::new(class, None);
            *new.attrs.borrow_mut() = template.attrs.borrow().clone();
            for (f, v) in data.iter().zip(children) {
                new.attrs.borrow_mut().insert(f.clone(), v);
            }
            Value::Instance(Rc::new(new))
        }
        Some(Pytree::Static) => Value::Instance(template.clone()),
        Some(Pytree::Object) => {
            let new = Instance::new(class, None);
            *new.attrs.borrow_mut() = template.attrs.borrow().clone();
            let names: Vec<Rc<str>> = object_children(template)
                .into_iter()
                .map(|(f, _)| f)
                .collect();
            for (f, v) in names.iter().zip(children) {
                new.attrs.borrow_mut().insert(f.clone(), v);
            }
            // Rebuilt with its attributes in sorted order, as Flax's
            // unflatten rebuilds a module (its repr lists them so).
            new.attrs
                .borrow_mut()
                .sort_by(|a, _, b, _| attr_order(a, b));
            // The children stay children whatever they now hold (a walk
            // rebuilds structures with placeholders for leaves).
            *new.node.borrow_mut() = Some(Node {
                children: names.into_iter().map(|f| Value::str(&f)).collect(),
                aux: Value::None,
                pending: false,
            });
            Value::Instance(Rc::new(new))
        }
        None => Value::Instance(Rc::new(Instance::new(class, Some(Rc::new(children))))),
    })
}

/// What an instance node contributes to a tree's structure besides its
/// children: the class and its static data, compared by value (so `jit`
/// traces again when a static field changes).
pub fn node_label(i: &Instance) -> String {
    match i.class.pytree() {
        Some(Pytree::Custom { .. }) => {
            let aux = match &*i.node.borrow() {
                Some(n) => display::repr(&n.aux),
                None => "?".to_string(),
            };
            format!("CustomNode({}[{aux}])", i.class.name)
        }
        Some(Pytree::Fields { meta, .. }) => {
            let attrs = i.attrs.borrow();
            let parts: Vec<String> = meta
                .iter()
                .map(|f| format!("{f}={}", attrs.get(f).map_or("?".into(), display::repr)))
                .collect();
            format!("{}[{}]", i.class.name, parts.join(", "))
        }
        Some(Pytree::Static) => format!("{}[static {:p}]", i.class.name, i as *const Instance),
        Some(Pytree::Object) => {
            let attrs = i.attrs.borrow();
            let children: Vec<Rc<str>> = object_children(i).into_iter().map(|(k, _)| k).collect();
            let mut names: Vec<&Rc<str>> = attrs.keys().collect();
            names.sort();
            let parts: Vec<String> = names
                .into_iter()
                .map(|k| match children.contains(k) {
                    true => k.to_string(),
                    false => format!("{k}={}", display::repr(&attrs[k])),
                })
                .collect();
            format!("{}[{}]", i.class.name, parts.join(", "))
        }
        None => i.class.name.to_string(),
    }
}

/// The array an array-like instance stands for: its class names, in
/// `__array_attribute__`, the attribute holding it (Flax's variables). The
/// counterpart of JAX's `__jax_array__` that runs no user code, so array
/// functions and operators take such instances as arrays anywhere.
pub fn array_attribute(v: &Value) -> Option<Value> {
    let Value::Instance(i) = v else { return None };
    let Some(Value::Str(name)) = i.class.lookup("__array_attribute__") else {
        return None;
    };
    let a = i.attrs.borrow().get(name.as_str()).cloned();
    a.filter(|a| matches!(a, Value::Array(_)))
}

/// An object node's children: its attributes that hold state, its array
/// attribute, and those that were children when a walk rebuilt it, by name.
fn object_children(i: &Instance) -> Vec<(Rc<str>, Value)> {
    let attrs = i.attrs.borrow();
    let node = i.node.borrow();
    let was_child = |k: &str| {
        node.as_ref().is_some_and(|n| {
            n.children
                .iter()
                .any(|c| matches!(c, Value::Str(s) if s.as_str() == k))
        })
    };
    // An array-like object's value is a child whatever it holds (a
    // variable of partition specs has the structure of one of arrays).
    let value_attr = match i.class.lookup("__array_attribute__") {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    };
    let is_value = |k: &str| value_attr.as_ref().is_some_and(|s| s.as_str() == k);
    // Attributes the object marked data (a child whatever it holds) or
    // static (never a child), in its `__pytree_data__` dict (Flax's
    // `nnx.data(x)` / `nnx.static(x)`).
    let marks = match attrs.get("__pytree_data__") {
        Some(Value::Dict(d)) => Some(d.clone()),
        _ => None,
    };
    let marked = |k: &str| -> Option<bool> {
        let marks = marks.as_ref()?.borrow();
        match marks.get(&crate::Key::Str(Rc::from(k))) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    };
    let mut children: Vec<(Rc<str>, Value)> = attrs
        .iter()
        .filter(|(k, v)| match marked(k) {
            Some(data) => data,
            None => was_child(k) || is_value(k) || holds_state(v, 0),
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // By name, indices by number (item 10 after item 9).
    children.sort_by(|a, b| attr_order(&a.0, &b.0));
    children
}

/// The order of an object node's attributes: by name, indices by number
/// (item 10 after item 9).
fn attr_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (index_name(a), index_name(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// The index an attribute named by digits stands for.
fn index_name(name: &str) -> Option<usize> {
    match name.bytes().all(|b| b.is_ascii_digit()) {
        true => name.parse().ok(),
        false => None,
    }
}

/// Whether a value holds state an object node's walk must reach: an
/// array, an object node, or a container or pytree node holding one.
fn holds_state(v: &Value, depth: usize) -> bool {
    within(v, depth, 64, &|v, depth| match v {
        Value::Array(_) => Some(true),
        Value::Instance(i) => Some(match i.class.pytree() {
            Some(Pytree::Object) => true,
            Some(_) => node_children(i).is_ok_and(|c| c.iter().any(|v| holds_state(v, depth + 1))),
            None => i
                .items
                .as_ref()
                .is_some_and(|c| c.iter().any(|v| holds_state(v, depth + 1))),
        }),
        _ => None,
    })
}

/// Whether `found` answers true for `v` or for something its lists, tuples
/// and dicts hold, down to `max` levels (`found` gives None to look inside).
/// Depth-bounded: a cyclic container answers false rather than hanging.
fn within(
    v: &Value,
    depth: usize,
    max: usize,
    found: &dyn Fn(&Value, usize) -> Option<bool>,
) -> bool {
    if depth > max {
        return false;
    }
    if let Some(answer) = found(v, depth) {
        return answer;
    }
    let inside = |x: &Value| within(x, depth + 1, max, found);
    match v {
        Value::List(l) => l.borrow().iter().any(inside),
        Value::Tuple(t) => t.iter().any(inside),
        Value::Dict(d) => d.borrow().values().any(inside),
        _ => false,
    }
}

/// The text a `__repr__`/`__str__` returned.
fn text_result(v: Value, method: &str) -> Result<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Error::type_error(format!(
            "{method} returned non-string (type {})",
            other.type_name()
        ))),
    }
}

/// Whether a container holds an instance (at any depth up to a few levels).
fn contains_instance(v: &Value) -> bool {
    within(v, 0, 32, &|v, _| {
        matches!(v, Value::Instance(_)).then_some(true)
    })
}

/// Text already rendered by user code, standing in for an instance.
#[derive(Debug)]
struct Rendered(String);

impl Object for Rendered {
    fn type_name(&self) -> &'static str {
        "object"
    }

    fn repr(&self) -> String {
        self.0.clone()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A named tuple as a plain tuple (None for anything else).
pub fn as_tuple(v: &Value) -> Option<Value> {
    match v {
        Value::Instance(i) => i.items.clone().map(Value::Tuple),
        _ => None,
    }
}

/// The attributes of an instance or class, for completion.
pub fn attributes(v: &Value) -> Vec<Attribute> {
    let mut names: Vec<(Rc<str>, Value)> = Vec::new();
    let class = match v {
        Value::Instance(i) => {
            names.extend(i.attrs.borrow().iter().map(|(k, v)| (k.clone(), v.clone())));
            i.class.clone()
        }
        Value::Class(c) => c.clone(),
        _ => return Vec::new(),
    };
    for c in class.mro() {
        for (k, v) in c.attrs.borrow().iter() {
            if !k.starts_with("__") && !names.iter().any(|(n, _)| n == k) {
                names.push((k.clone(), v.clone()));
            }
        }
    }
    names
        .into_iter()
        .map(|(name, v)| Attribute {
            name: name.to_string(),
            kind: if matches!(v, Value::Function(_) | Value::Native(_)) {
                AttrKind::Method
            } else {
                AttrKind::Property
            },
            doc: String::new(),
        })
        .collect()
}

/// `class name(Base): ...` where `Base` is an exception class: a subclass
/// of it. Exception classes carry no attributes of their own yet, so a body
/// beyond a docstring (methods, class attributes) is refused rather than
/// dropped.
fn exception_class(
    name: &str,
    bases: &[Value],
    exc: &Value,
    namespace: &[(Rc<str>, Value)],
) -> Result<Value> {
    let plain = |b: &Value| match b {
        Value::Class(c) => is_object(c),
        Value::Builtin(b) => b.name.rsplit('.').next() == Some("object"),
        _ => false,
    };
    if let Some(other) = bases
        .iter()
        .find(|b| crate::exception::as_class(b).is_none() && !plain(b))
    {
        return Err(Error::type_error(format!(
            "class {name}: an exception class derives from exception classes only, not {}",
            other.type_name()
        )));
    }
    let meta = ["__module__", "__qualname__", "__doc__", "__annotations__"];
    if let Some((k, _)) = namespace.iter().find(|(k, _)| !meta.contains(&&**k)) {
        return Err(Error::type_error(format!(
            "class {name}: an exception class with its own attributes or methods ({k}) is not \
             supported yet; define it with `pass` (or a docstring) and pass the details as its \
             arguments"
        )));
    }
    Ok(crate::exception::subclass(name, "__main__", exc).expect("an exception class"))
}
