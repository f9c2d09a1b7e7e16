//! Builtins about classes and objects: `getattr`/`setattr`/`hasattr`,
//! `issubclass`, `super`, `property`/`classmethod`/`staticmethod`,
//! dataclasses (`dataclass`, `field`, `replace`, `fields`, `asdict`), named
//! tuples (`NamedTuple`, `namedtuple`), and registering classes as pytree
//! nodes (`register_pytree_node`, `register_pytree_node_class`,
//! `register_dataclass`, `register_static`).

use crate::args::*;
use crate::Registry;
use arr_runtime::class::{is_object, Class, Descriptor, Pytree, Super};
use arr_runtime::eval::iter_items;
use arr_runtime::exception;
use arr_runtime::value::Object;
use arr_runtime::{Dict, Error, ErrorKind, Interp, Key, NativeClosure, Result, Value};
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "getattr(obj, name, *default)",
        "The attribute name of obj; default (if given) when it has none.",
        getattr,
    );
    r.func(
        "setattr(obj, name, value)",
        "Set the attribute name of obj (an instance or class) to value.",
        setattr,
    );
    r.func(
        "hasattr(obj, name)",
        "Whether obj has the attribute name.",
        hasattr,
    );
    r.func(
        "vars(obj)",
        "The attributes of an instance, as a dict.",
        |interp, a| interp.attr(&a[0], "__dict__"),
    );
    r.func(
        "issubclass(cls, classinfo)",
        "Whether the class cls is classinfo (or one of a tuple of them), or inherits from it.",
        issubclass,
    );
    r.func(
        "super(cls=None, obj=None)",
        "The methods of the classes after cls in obj's method resolution order; \
         a bare super() inside a method is super(TheClass, self).",
        super_,
    );
    r.func(
        "property(fget)",
        "An attribute computed by fget(self) when read (a decorator); @name.setter adds a setter.",
        |_, a| {
            Ok(Value::object(Descriptor::Property {
                get: a[0].clone(),
                set: None,
            }))
        },
    );
    r.func(
        "classmethod(f)",
        "A method that receives the class as its first argument (a decorator).",
        |_, a| Ok(Value::object(Descriptor::ClassMethod(a[0].clone()))),
    );
    r.func(
        "staticmethod(f)",
        "A function in a class that receives no instance or class (a decorator).",
        |_, a| Ok(Value::object(Descriptor::StaticMethod(a[0].clone()))),
    );
    r.value("object", Value::Class(arr_runtime::class::object_class()));
    r.func(
        "delattr(obj, name)",
        "Delete the attribute name of obj (as `del obj.name`).",
        |interp, a| {
            let name = str_arg("delattr", &a[1])?.to_string();
            interp.del_attr(&a[0], &name)?;
            Ok(Value::None)
        },
    );
    r.func(
        "_object_setattr(obj, name, value)",
        "object.__setattr__: set an attribute without the class's __setattr__.",
        |interp, a| {
            let name = str_arg("__setattr__", &a[1])?.to_string();
            interp.set_attr_raw(&a[0], &name, a[2].clone())?;
            Ok(Value::None)
        },
    );
    r.func(
        "_object_new(cls, *args, **kwargs)",
        "object.__new__: a new instance of cls whose __init__ has not run.",
        |_, a| match &a[0] {
            Value::Class(c) => Ok(Value::Instance(Rc::new(arr_runtime::class::Instance::new(
                c.clone(),
                None,
            )))),
            other => Err(Error::type_error(format!(
                "object.__new__(X): X is not a type object ({})",
                other.type_name()
            ))),
        },
    );
    r.func(
        "_object_init_subclass(cls, **kwargs)",
        "object.__init_subclass__: nothing to do for a new subclass; keywords are an error.",
        |_, a| match &a[1] {
            Value::Dict(kw) if !kw.borrow().is_empty() => Err(Error::type_error(
                "object.__init_subclass__() takes no keyword arguments",
            )),
            _ => Ok(Value::None),
        },
    );
    r.func(
        "dataclass(cls=None, *, init=True, repr=True, eq=True, order=False, frozen=False, kw_only=False, unsafe_hash=False, match_args=True, slots=False, weakref_slot=False)",
        "Add __init__, __repr__ and __eq__ to a class from its annotated fields, in order \
         (a decorator, also with options: @dataclass(frozen=True)). unsafe_hash, match_args, \
         slots and weakref_slot are accepted: arr's objects need none of them.",
        dataclass,
    );
    r.func(
        "field(*, default=None, default_factory=None, init=True, repr=True, compare=True, metadata=None, kw_only=None, **options)",
        "Options of a dataclass field: its default, or a function making it, and metadata \
         (metadata=dict(static=True) makes it a static field for register_dataclass).",
        field,
    );
    r.func(
        "replace(obj, **changes)",
        "A copy of a dataclass instance or named tuple with some fields changed.",
        replace,
    );
    r.func(
        "fields(class_or_instance)",
        "The fields of a dataclass, as a tuple of Field objects (with .name, .default, .metadata).",
        |_, a| {
            Ok(Value::tuple(
                dataclass_fields(&a[0])?
                    .into_iter()
                    .map(Value::object)
                    .collect(),
            ))
        },
    );
    r.func(
        "asdict(obj)",
        "A dataclass instance as a dict of its fields (nested dataclasses too).",
        |interp, a| asdict(interp, &a[0]),
    );
    r.func(
        "is_dataclass(obj)",
        "Whether obj is a dataclass or an instance of one.",
        |_, a| Ok(Value::Bool(dataclass_fields(&a[0]).is_ok())),
    );
    r.func(
        "NamedTuple(typename, fields=())",
        "A tuple class with named fields: a base class (`class P(NamedTuple): x: int`) or \
         NamedTuple('P', [('x', int), ('y', int)]).",
        named_tuple,
    );
    r.func(
        "namedtuple(typename, field_names, *, defaults=None)",
        "A tuple class with named fields: namedtuple('P', ['x', 'y']) or namedtuple('P', 'x y').",
        namedtuple,
    );
    r.func(
        "register_pytree_node(nodetype, flatten_func, unflatten_func)",
        "Make instances of a class pytree nodes: flatten_func(x) gives (children, aux_data) \
         and unflatten_func(aux_data, children) rebuilds x.",
        |_, a| {
            let class = class_arg("register_pytree_node", &a[0])?;
            register_node(
                &class,
                Pytree::Custom {
                    flatten: a[1].clone(),
                    unflatten: a[2].clone(),
                },
            )?;
            Ok(Value::None)
        },
    );
    r.func(
        "register_pytree_node_class(cls)",
        "A decorator: instances of cls are pytree nodes through its tree_flatten method and \
         tree_unflatten(aux_data, children) classmethod.",
        register_pytree_node_class,
    );
    r.func(
        "register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=())",
        "Make a dataclass a pytree node: data fields are its children, meta fields static \
         structure (by default the fields with metadata static=True are meta). A decorator too.",
        register_dataclass,
    );
    r.func(
        "register_static(cls)",
        "A decorator: instances of cls are pytree nodes with no children (all static structure).",
        |_, a| {
            let class = class_arg("register_static", &a[0])?;
            register_node(&class, Pytree::Static)?;
            Ok(a[0].clone())
        },
    );
    r.func(
        "_register_object_pytree(cls)",
        "A decorator: instances of cls (and its subclasses) are pytree nodes whose children are \
         their attributes holding arrays or such objects, by name (Flax NNX's modules).",
        |_, a| {
            let class = class_arg("_register_object_pytree", &a[0])?;
            register_node(&class, Pytree::Object)?;
            Ok(a[0].clone())
        },
    );
    r.func(
        "id(x)",
        "The identity of x: an integer that differs between two objects alive at once.",
        |_, a| Ok(Value::Int(identity(&a[0]))),
    );
    r.func(
        "_copy_copy(x)",
        "A shallow copy of x, as copy.copy: a new list, dict, set or instance holding the same items.",
        |_, a| Ok(copy_value(&a[0], &mut None)),
    );
    r.func(
        "_copy_deepcopy(x)",
        "A deep copy of x, as copy.deepcopy: containers and instances copied all the way down, \
         objects reached twice copied once (arrays, immutable, are shared).",
        |_, a| {
            Ok(copy_value(
                &a[0],
                &mut Some(std::collections::HashMap::new()),
            ))
        },
    );
}

/// `id(x)`: the address of a heap value; small values (numbers, `None`)
/// are their own identity, as equal ones are interchangeable.
fn identity(v: &Value) -> i64 {
    if let Some(addr) = v.address() {
        return addr as i64;
    }
    match v {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        Value::Float(f) => f.to_bits() as i64,
        Value::Array(arr_runtime::Tensor::Concrete(a)) => a.identity() as i64,
        Value::Array(t) => t as *const arr_runtime::Tensor as i64,
        _ => 0,
    }
}

/// `copy.copy` (`memo` None) and `copy.deepcopy` (`memo` the copies made so
/// far, by the address of the original, so sharing and cycles survive).
fn copy_value(v: &Value, memo: &mut Option<std::collections::HashMap<usize, Value>>) -> Value {
    if !matches!(
        v,
        Value::List(_) | Value::Dict(_) | Value::Instance(_) | Value::Tuple(_)
    ) {
        return v.clone();
    }
    let addr = identity(v) as usize;
    if let Some(m) = memo {
        if let Some(c) = m.get(&addr) {
            return c.clone();
        }
    }
    let deep = memo.is_some();
    let item = |x: &Value, memo: &mut Option<_>| match deep {
        true => copy_value(x, memo),
        false => x.clone(),
    };
    match v {
        Value::List(l) => {
            let new = Rc::new(std::cell::RefCell::new(Vec::new()));
            if let Some(m) = memo {
                m.insert(addr, Value::List(new.clone()));
            }
            let items: Vec<Value> = l.borrow().iter().map(|x| item(x, memo)).collect();
            *new.borrow_mut() = items;
            Value::List(new)
        }
        Value::Dict(d) => {
            let new = Rc::new(std::cell::RefCell::new(Dict::new()));
            if let Some(m) = memo {
                m.insert(addr, Value::Dict(new.clone()));
            }
            let items: Dict = d
                .borrow()
                .iter()
                .map(|(k, x)| (k.clone(), item(x, memo)))
                .collect();
            *new.borrow_mut() = items;
            Value::Dict(new)
        }
        // Tuples are immutable: a shallow copy is the tuple itself.
        Value::Tuple(t) if deep => Value::tuple(t.iter().map(|x| item(x, memo)).collect()),
        Value::Tuple(_) => v.clone(),
        Value::Instance(i) => {
            let items = i
                .items
                .as_ref()
                .map(|it| Rc::new(it.iter().map(|x| item(x, memo)).collect()));
            let new = Rc::new(arr_runtime::class::Instance::new(i.class.clone(), items));
            if let Some(m) = memo {
                m.insert(addr, Value::Instance(new.clone()));
            }
            let attrs: Vec<(Rc<str>, Value)> = i
                .attrs
                .borrow()
                .iter()
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect();
            for (k, x) in attrs {
                let x = item(&x, memo);
                new.attrs.borrow_mut().insert(k, x);
            }
            *new.node.borrow_mut() = i.node.borrow().clone();
            Value::Instance(new)
        }
        _ => v.clone(),
    }
}

fn class_arg(what: &str, v: &Value) -> Result<Rc<Class>> {
    match v {
        Value::Class(c) => Ok(c.clone()),
        other => Err(Error::type_error(format!(
            "{what}: expected a class, got {}",
            other.type_name()
        ))),
    }
}

fn getattr(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let name = str_arg("getattr(): attribute name", &a[1])?;
    let default = iter_items(&a[2])?;
    match interp.attr(&a[0], name) {
        Err(e) if e.kind == ErrorKind::AttributeError && !default.is_empty() => {
            Ok(default[0].clone())
        }
        r => r,
    }
}

fn setattr(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let name = str_arg("setattr(): attribute name", &a[1])?;
    interp.set_attr(&a[0], name, a[2].clone())?;
    Ok(Value::None)
}

fn hasattr(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let name = str_arg("hasattr(): attribute name", &a[1])?;
    match interp.attr(&a[0], name) {
        Ok(_) => Ok(Value::Bool(true)),
        Err(e) if e.kind == ErrorKind::AttributeError => Ok(Value::Bool(false)),
        Err(e) => Err(e),
    }
}

fn issubclass(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    fn sub(c: &Value, info: &Value) -> Result<bool> {
        Ok(match (c, info) {
            (_, Value::Tuple(ts)) => {
                for t in ts.iter() {
                    if sub(c, t)? {
                        return Ok(true);
                    }
                }
                false
            }
            (Value::Class(c), Value::Class(d)) => c.is_subclass(d) || is_object(d),
            // Exception classes (Python's and JAX's) follow their own bases.
            (c, d) if exception::as_class(c).is_some() => {
                exception::as_class(d).is_some() && exception::is_subclass(c, d)
            }
            (_, Value::Builtin(b)) if &*b.name == "object" => true,
            (Value::Builtin(x), Value::Builtin(y)) => x.name == y.name,
            (Value::Class(_) | Value::Builtin(_), _) => false,
            (other, _) => {
                return Err(Error::type_error(format!(
                    "issubclass() arg 1 must be a class, not {}",
                    other.type_name()
                )))
            }
        })
    }
    Ok(Value::Bool(sub(&a[0], &a[1])?))
}

fn super_(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match (&a[0], &a[1]) {
        (Value::Class(c), obj @ (Value::Instance(_) | Value::Class(_))) => {
            Ok(Value::object(Super {
                class: c.clone(),
                obj: obj.clone(),
            }))
        }
        (Value::None, _) => Err(Error::new(
            ErrorKind::RuntimeError,
            "super(): no arguments (a bare super() works only in a method of a class)",
        )),
        (cls, obj) => Err(Error::type_error(format!(
            "super(type, obj): expected a class and an instance of it, got {} and {}",
            cls.type_name(),
            obj.type_name()
        ))),
    }
}

fn register_node(class: &Rc<Class>, how: Pytree) -> Result<()> {
    if class.pytree.borrow().is_some() {
        return Err(Error::value_error(format!(
            "Duplicate custom PyTreeDef type registration for <class '__main__.{}'>.",
            class.name
        )));
    }
    *class.pytree.borrow_mut() = Some(how);
    Ok(())
}

fn register_pytree_node_class(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let class = class_arg("register_pytree_node_class", &a[0])?;
    let flatten = class.lookup("tree_flatten").ok_or_else(|| {
        Error::new(
            ErrorKind::AttributeError,
            format!(
                "type object '{}' has no attribute 'tree_flatten'",
                class.name
            ),
        )
    })?;
    let unflatten = interp.attr(&a[0], "tree_unflatten")?;
    register_node(&class, Pytree::Custom { flatten, unflatten })?;
    Ok(a[0].clone())
}

// ---- dataclasses ----

/// A dataclass field: `dataclasses.Field`.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: Rc<str>,
    pub default: Option<Value>,
    pub factory: Option<Value>,
    pub init: bool,
    pub repr: bool,
    pub compare: bool,
    pub metadata: Value,
    pub annotation: Value,
    /// Keyword-only in `__init__` (None: as the dataclass says).
    pub kw_only: Option<bool>,
}

impl Object for Field {
    fn type_name(&self) -> &'static str {
        "Field"
    }

    fn repr(&self) -> String {
        format!("Field(name='{}')", self.name)
    }

    fn attr(&self, name: &str) -> Option<Value> {
        Some(match name {
            "name" => Value::str(&self.name),
            "default" => self.default.clone().unwrap_or(Value::None),
            "default_factory" => self.factory.clone().unwrap_or(Value::None),
            "metadata" => self.metadata.clone(),
            "type" => self.annotation.clone(),
            "init" => Value::Bool(self.init),
            "repr" => Value::Bool(self.repr),
            "compare" => Value::Bool(self.compare),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

const FIELDS: &str = "__dataclass_fields__";

fn field(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // `default=None` is a real default: the keyword's presence decides.
    let given = |v: &Value| !matches!(v, Value::None);
    if given(&a[0]) && given(&a[1]) {
        return Err(Error::value_error(
            "cannot specify both default and default_factory",
        ));
    }
    if let Value::Dict(d) = &a[7] {
        if let Some(k) = d.borrow().keys().next() {
            return Err(Error::type_error(format!(
                "field() got an unexpected keyword argument {}",
                arr_runtime::display::repr(&k.to_value())
            )));
        }
    }
    Ok(Value::object(Field {
        name: Rc::from(""),
        default: given(&a[0]).then(|| a[0].clone()),
        factory: given(&a[1]).then(|| a[1].clone()),
        init: a[2].truthy()?,
        repr: a[3].truthy()?,
        compare: a[4].truthy()?,
        metadata: match &a[5] {
            Value::None => Value::dict(Dict::default()),
            m => m.clone(),
        },
        annotation: Value::None,
        kw_only: match &a[6] {
            Value::None => None,
            v => Some(v.truthy()?),
        },
    }))
}

fn field_of(v: &Value) -> Option<&Field> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Field>(),
        _ => None,
    }
}

/// The fields of a dataclass (or of an instance's class), in order.
fn dataclass_fields(v: &Value) -> Result<Vec<Field>> {
    let class = match v {
        Value::Class(c) => c.clone(),
        Value::Instance(i) => i.class.clone(),
        other => {
            return Err(Error::type_error(format!(
                "must be called with a dataclass type or instance, not {}",
                other.type_name()
            )))
        }
    };
    match class.lookup(FIELDS) {
        Some(Value::Tuple(fs)) => Ok(fs.iter().filter_map(field_of).cloned().collect()),
        _ => Err(Error::type_error(format!(
            "must be called with a dataclass type or instance ({} is not one)",
            class.name
        ))),
    }
}

#[derive(Clone, Copy)]
struct DataclassOptions {
    init: bool,
    repr: bool,
    eq: bool,
    frozen: bool,
    kw_only: bool,
}

fn dataclass(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let options = DataclassOptions {
        init: a[1].truthy()?,
        repr: a[2].truthy()?,
        eq: a[3].truthy()?,
        frozen: a[5].truthy()?,
        kw_only: a[6].truthy()?,
    };
    match &a[0] {
        Value::None => Ok(NativeClosure::value("dataclass", move |_, args, _| {
            let [cls] = <[Value; 1]>::try_from(args)
                .map_err(|_| Error::type_error("dataclass(...) decorates one class"))?;
            make_dataclass(&cls, options)
        })),
        cls => make_dataclass(cls, options),
    }
}

fn make_dataclass(cls: &Value, options: DataclassOptions) -> Result<Value> {
    let class = class_arg("dataclass", cls)?;
    // Fields of dataclass bases first (in reverse MRO), then this class's annotations.
    let mut fields: Vec<Field> = Vec::new();
    for base in class.ancestors.iter().rev() {
        if let Some(Value::Tuple(fs)) = base.attrs.borrow().get(FIELDS) {
            for f in fs.iter().filter_map(field_of) {
                match fields.iter_mut().find(|g| g.name == f.name) {
                    Some(g) => *g = f.clone(),
                    None => fields.push(f.clone()),
                }
            }
        }
    }
    let annotations: Vec<(Rc<str>, Value)> = match class.attrs.borrow().get("__annotations__") {
        Some(Value::Dict(d)) => d
            .borrow()
            .iter()
            .filter_map(|(k, v)| match k {
                Key::Str(s) => Some((s.clone(), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for (name, annotation) in annotations {
        let own = class.attrs.borrow().get(&name).cloned();
        let mut f = match own.as_ref().and_then(field_of) {
            Some(f) => f.clone(),
            None => Field {
                name: name.clone(),
                default: own.clone(),
                factory: None,
                init: true,
                repr: true,
                compare: true,
                metadata: Value::dict(Dict::default()),
                annotation: Value::None,
                kw_only: None,
            },
        };
        f.kw_only = Some(f.kw_only.unwrap_or(options.kw_only));
        f.name = name.clone();
        f.annotation = annotation;
        // The class attribute is the default, as in Python (or nothing).
        match &f.default {
            Some(d) => {
                class.attrs.borrow_mut().insert(name.clone(), d.clone());
            }
            None => {
                class.attrs.borrow_mut().shift_remove(&name);
            }
        }
        match fields.iter_mut().find(|g| g.name == name) {
            Some(g) => *g = f,
            None => fields.push(f),
        }
    }
    let mut seen_default = false;
    for f in fields.iter().filter(|f| f.init && f.kw_only != Some(true)) {
        let has = f.default.is_some() || f.factory.is_some();
        if seen_default && !has {
            return Err(Error::type_error(format!(
                "non-default argument '{}' follows default argument",
                f.name
            )));
        }
        seen_default |= has;
    }
    let fields = Rc::new(fields);
    let mut attrs = class.attrs.borrow_mut();
    attrs.insert(
        Rc::from(FIELDS),
        Value::tuple(fields.iter().cloned().map(Value::object).collect()),
    );
    if options.init && !attrs.contains_key("__init__") {
        let (fs, name) = (fields.clone(), class.name.clone());
        attrs.insert(
            Rc::from("__init__"),
            NativeClosure::value("__init__", move |interp, args, kwargs| {
                dataclass_init(interp, &name, &fs, args, kwargs)
            }),
        );
    }
    if options.repr && !attrs.contains_key("__repr__") {
        let fs = fields.clone();
        attrs.insert(
            Rc::from("__repr__"),
            NativeClosure::value("__repr__", move |interp, args, _| {
                let Some(Value::Instance(i)) = args.first() else {
                    return Err(Error::type_error("__repr__ needs an instance"));
                };
                let mut parts = Vec::new();
                for f in fs.iter().filter(|f| f.repr) {
                    let v = interp.attr(&args[0], &f.name)?;
                    parts.push(format!("{}={}", f.name, interp.item_text(&v)?));
                }
                Ok(Value::str(&format!(
                    "{}({})",
                    i.class.name,
                    parts.join(", ")
                )))
            }),
        );
    }
    if options.eq && !attrs.contains_key("__eq__") {
        let fs = fields.clone();
        attrs.insert(
            Rc::from("__eq__"),
            NativeClosure::value("__eq__", move |interp, args, _| {
                let [a, b] = <[Value; 2]>::try_from(args)
                    .map_err(|_| Error::type_error("__eq__ takes one argument"))?;
                let (Value::Instance(x), Value::Instance(y)) = (&a, &b) else {
                    return Ok(Value::Bool(false));
                };
                if !Rc::ptr_eq(&x.class, &y.class) {
                    return Ok(Value::Bool(false));
                }
                let mut p = Vec::new();
                let mut q = Vec::new();
                for f in fs.iter().filter(|f| f.compare) {
                    p.push(interp.attr(&a, &f.name)?);
                    q.push(interp.attr(&b, &f.name)?);
                }
                Ok(Value::Bool(arr_runtime::eval::values_equal(
                    &Value::tuple(p),
                    &Value::tuple(q),
                )?))
            }),
        );
    }
    drop(attrs);
    if options.frozen {
        class.frozen.set(true);
    }
    Ok(cls.clone())
}

/// The generated `__init__`: fields from positional and keyword arguments,
/// then defaults; `__post_init__` afterwards if the class has one.
fn dataclass_init(
    interp: &mut Interp,
    name: &str,
    fields: &[Field],
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Value> {
    let mut args = args.into_iter();
    let Some(Value::Instance(inst)) = args.next() else {
        return Err(Error::type_error("__init__ needs an instance"));
    };
    // Positional-or-keyword fields first, then the keyword-only ones.
    let (mut init, keyword_only): (Vec<&Field>, Vec<&Field>) = fields
        .iter()
        .filter(|f| f.init)
        .partition(|f| f.kw_only != Some(true));
    let n_positional = init.len();
    init.extend(keyword_only);
    let positional: Vec<Value> = args.collect();
    if positional.len() > n_positional {
        return Err(Error::type_error(format!(
            "{name}.__init__() takes {} positional arguments but {} were given",
            n_positional + 1,
            positional.len() + 1
        )));
    }
    let mut values: Vec<Option<Value>> = positional.into_iter().map(Some).collect();
    values.resize(init.len(), None);
    for (k, v) in kwargs {
        let Some(p) = init.iter().position(|f| f.name == k) else {
            return Err(Error::type_error(format!(
                "{name}.__init__() got an unexpected keyword argument '{k}'"
            )));
        };
        if values[p].is_some() {
            return Err(Error::type_error(format!(
                "{name}.__init__() got multiple values for argument '{k}'"
            )));
        }
        values[p] = Some(v);
    }
    let mut missing = Vec::new();
    for (f, v) in init.iter().zip(values.iter_mut()) {
        if v.is_none() {
            *v = match (&f.default, &f.factory) {
                (Some(d), _) => Some(d.clone()),
                (None, Some(make)) => Some(interp.call(make, Vec::new(), Vec::new())?),
                (None, None) => {
                    missing.push(format!("'{}'", f.name));
                    None
                }
            };
        }
    }
    if !missing.is_empty() {
        return Err(Error::type_error(format!(
            "{name}.__init__() missing {} required positional argument{}: {}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            missing.join(" and ")
        )));
    }
    // Through the class's __setattr__, as Python's generated __init__
    // does; set directly in a frozen dataclass (still initialised).
    let obj = Value::Instance(inst.clone());
    for (f, v) in init.iter().zip(values) {
        let v = v.expect("every field has a value");
        if inst.class.frozen.get() {
            inst.attrs.borrow_mut().insert(f.name.clone(), v);
        } else {
            interp.set_attr(&obj, &f.name, v)?;
        }
    }
    for f in fields.iter().filter(|f| !f.init) {
        let v = match (&f.default, &f.factory) {
            (Some(d), _) => Some(d.clone()),
            (None, Some(make)) => Some(interp.call(make, Vec::new(), Vec::new())?),
            (None, None) => None,
        };
        if let Some(v) = v {
            inst.attrs.borrow_mut().insert(f.name.clone(), v);
        }
    }
    if let Some(post) = inst.class.lookup("__post_init__") {
        interp.call(&post, vec![Value::Instance(inst.clone())], Vec::new())?;
    }
    Ok(Value::None)
}

fn replace(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let obj = &a[0];
    let changes: Vec<(Rc<str>, Value)> = crate::kwargs_of(&a[1]);
    if let Value::Instance(i) = obj {
        if i.items.is_some() {
            let r = interp.attr(obj, "_replace")?;
            return interp.call(&r, Vec::new(), changes);
        }
    }
    let fields = dataclass_fields(obj)?;
    let Value::Instance(i) = obj else {
        return Err(Error::type_error(
            "replace() should be called on dataclass instances",
        ));
    };
    let mut kwargs = Vec::new();
    for f in fields.iter().filter(|f| f.init) {
        let v = match changes.iter().find(|(k, _)| *k == f.name) {
            Some((_, v)) => v.clone(),
            None => interp.attr(obj, &f.name)?,
        };
        kwargs.push((f.name.clone(), v));
    }
    if let Some((k, _)) = changes
        .iter()
        .find(|(k, _)| !fields.iter().any(|f| f.init && f.name == *k))
    {
        return Err(Error::type_error(format!(
            "{}.__init__() got an unexpected keyword argument '{k}'",
            i.class.name
        )));
    }
    interp.call(&Value::Class(i.class.clone()), Vec::new(), kwargs)
}

fn asdict(interp: &mut Interp, v: &Value) -> Result<Value> {
    Ok(match v {
        Value::Instance(_) if dataclass_fields(v).is_ok() => {
            let mut d = Dict::default();
            for f in dataclass_fields(v)? {
                let x = interp.attr(v, &f.name)?;
                d.insert(Key::Str(f.name.clone()), asdict(interp, &x)?);
            }
            Value::dict(d)
        }
        Value::List(l) => {
            let items = l.borrow().clone();
            Value::list(
                items
                    .iter()
                    .map(|x| asdict(interp, x))
                    .collect::<Result<_>>()?,
            )
        }
        Value::Tuple(t) => {
            Value::tuple(t.iter().map(|x| asdict(interp, x)).collect::<Result<_>>()?)
        }
        Value::Dict(d) => {
            let entries: Vec<(Key, Value)> = d
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut out = Dict::default();
            for (k, x) in entries {
                out.insert(k, asdict(interp, &x)?);
            }
            Value::dict(out)
        }
        other => other.clone(),
    })
}

/// `register_dataclass(cls, data_fields, meta_fields)`, or as a decorator.
fn register_dataclass(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let class = class_arg("register_dataclass", &a[0])?;
    let names = |v: &Value| -> Result<Vec<Rc<str>>> {
        iter_items(v)?
            .iter()
            .map(|n| str_arg("register_dataclass: a field name", n).map(Rc::from))
            .collect()
    };
    let (data, meta) =
        match (&a[1], &a[2]) {
            (Value::None, Value::None) => {
                let fields = dataclass_fields(&a[0]).map_err(|_| {
                    Error::type_error(format!(
                    "register_dataclass: {} is not a dataclass: pass data_fields and meta_fields",
                    class.name
                ))
                })?;
                let mut data = Vec::new();
                let mut meta = Vec::new();
                for f in fields.iter().filter(|f| f.init) {
                    let is_static = match &f.metadata {
                        Value::Dict(d) => d
                            .borrow()
                            .get(&Key::Str(Rc::from("static")))
                            .is_some_and(|v| v.truthy().unwrap_or(false)),
                        _ => false,
                    };
                    if is_static {
                        meta.push(f.name.clone());
                    } else {
                        data.push(f.name.clone());
                    }
                }
                (data, meta)
            }
            (Value::None, _) | (_, Value::None) => return Err(Error::type_error(
                "register_dataclass: data_fields and meta_fields must both be given, or neither",
            )),
            (d, m) => (names(d)?, names(m)?),
        };
    register_node(&class, Pytree::Fields { data, meta })?;
    Ok(a[0].clone())
}

// ---- named tuples ----

fn make_named_tuple(name: &str, fields: Vec<Rc<str>>, defaults: Vec<Value>) -> Result<Value> {
    for (i, f) in fields.iter().enumerate() {
        if f.is_empty() || fields[..i].contains(f) || f.starts_with('_') {
            return Err(Error::value_error(format!(
                "namedtuple: invalid or duplicate field name '{f}'"
            )));
        }
    }
    if defaults.len() > fields.len() {
        return Err(Error::type_error(
            "Got more default values than field names",
        ));
    }
    let class = Class::new(name, Vec::new(), None)?;
    let first_default = fields.len() - defaults.len();
    for (f, d) in fields[first_default..].iter().zip(defaults) {
        class.attrs.borrow_mut().insert(f.clone(), d);
    }
    *class.tuple_fields.borrow_mut() = Some(Rc::new(fields));
    Ok(Value::Class(Rc::new(class)))
}

fn named_tuple(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let name = str_arg("NamedTuple: typename", &a[0])?;
    let mut fields = Vec::new();
    for pair in iter_items(&a[1])? {
        let p = iter_items(&pair)?;
        match p.first() {
            Some(Value::Str(s)) if p.len() == 2 => fields.push(Rc::from(s.as_str())),
            _ => {
                return Err(Error::type_error(
                    "NamedTuple('Name', fields): fields must be (name, type) pairs",
                ))
            }
        }
    }
    make_named_tuple(name, fields, Vec::new())
}

fn namedtuple(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let name = str_arg("namedtuple: typename", &a[0])?;
    let fields: Vec<Rc<str>> = match &a[1] {
        Value::Str(s) => s
            .replace(',', " ")
            .split_whitespace()
            .map(Rc::from)
            .collect(),
        other => iter_items(other)?
            .iter()
            .map(|f| str_arg("namedtuple: a field name", f).map(Rc::from))
            .collect::<Result<_>>()?,
    };
    let defaults = match &a[2] {
        Value::None => Vec::new(),
        d => iter_items(d)?,
    };
    make_named_tuple(name, fields, defaults)
}
