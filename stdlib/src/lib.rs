//! The NumPy-like surface of arr: builtins over the runtime's primitives,
//! the prelude written in arr itself, and the one table that drives help and completion.
//!
//! Each module registers its builtins through `Registry`; `session()` builds a
//! ready `Session` with all of them and the prelude loaded.

mod args;
mod callback;
mod checkify;
mod classes;
mod creation;
mod debug;
pub mod device;
mod distributed;
mod exceptions;
mod io;
mod jit;
mod lazy;
mod math;
pub mod modules;
mod np_generator;
mod np_random;
mod np_ziggurat;
mod output;
mod parallel;
pub mod plot;
mod pystd;
mod python;
mod random;
mod re;
mod reduce;
mod shape;
mod sharded_jit;
mod sharding_api;
mod system;
mod table;
mod transforms;
mod tree;

use arr_runtime::{Builtin, Effect, Interp, NativeFn, Session, Value};
use std::rc::Rc;

pub use args::*;
pub use parallel::{mesh_report, mesh_table};

/// The prelude: functions that are most natural in arr itself.
const PRELUDE: &str = include_str!("prelude.arr");

/// NumPy, jax.numpy, jax.lax, jax.nn and jax.random functions written in arr,
/// loaded after the prelude (they use it).
const SURFACE: &str = include_str!("surface.arr");

/// Libraries written in arr, loaded at their first import (`lazy.rs`): the
/// top-level module, the name their errors show, the source. The namespace
/// table's rows for the module and its submodules are made then.
const LIBRARIES: &[(&str, &str, &str)] = &[
    ("optax", "<stdlib:optax>", include_str!("optax.arr")),
    (
        "jax.example_libraries",
        "<stdlib:example_libraries>",
        include_str!("example_libraries.arr"),
    ),
    ("flax", "<stdlib:flax>", include_str!("flax.arr")),
    ("pathlib", "<stdlib:pathlib>", include_str!("pathlib.arr")),
    ("orbax", "<stdlib:orbax>", include_str!("orbax.arr")),
    (
        "collections",
        "<stdlib:collections>",
        include_str!("collections.arr"),
    ),
    ("logging", "<stdlib:logging>", include_str!("logging.arr")),
    (
        "contextlib",
        "<stdlib:contextlib>",
        include_str!("contextlib.arr"),
    ),
    ("sys", "<stdlib:sys>", include_str!("sys.arr")),
    ("inspect", "<stdlib:inspect>", include_str!("inspect.arr")),
    ("enum", "<stdlib:enum>", include_str!("enum.arr")),
    (
        "matplotlib",
        "<stdlib:matplotlib>",
        include_str!("matplotlib.arr"),
    ),
];

/// Prelude functions named `_random_X` become `random.X`.
const RANDOM_PREFIX: &str = "_random_";

/// Where builtins are registered: globals, methods, and modules.
pub struct Registry<'a> {
    pub interp: &'a mut Interp,
}

impl Registry<'_> {
    /// A global function made from data (a row of a table).
    pub fn func_from(
        &mut self,
        signature: &str,
        doc: &str,
        f: impl Fn(&mut Interp, Vec<Value>) -> arr_runtime::Result<Value> + 'static,
    ) -> Value {
        let b = Value::Builtin(Rc::new(Builtin::new(signature, doc, f)));
        let name = b_name(&b);
        self.interp.set_builtin(&name, b.clone());
        b
    }

    /// A global function.
    pub fn func(&mut self, signature: &str, doc: &str, f: NativeFn) -> Value {
        self.func_from(signature, doc, f)
    }

    /// A global function with a side effect (output, files, clocks): code
    /// that calls it is never compiled automatically.
    pub fn effect_func(&mut self, signature: &str, doc: &str, f: NativeFn) -> Value {
        let b = Builtin::new(signature, doc, f).with_effect(Effect::World);
        let b = Value::Builtin(Rc::new(b));
        let name = b_name(&b);
        self.interp.set_builtin(&name, b.clone());
        b
    }

    /// A method that changes its receiver (a list or dict) in place.
    pub fn mutating_method(
        &mut self,
        receiver: &'static str,
        signature: &str,
        doc: &str,
        f: NativeFn,
    ) {
        let b = Builtin::new(signature, doc, f).with_effect(Effect::MutatesReceiver);
        let b = Value::Builtin(Rc::new(b));
        let name = b_name(&b);
        self.interp.add_method(receiver, &name, b);
    }

    /// A global function that is also a method of arrays (`x.sum()` is `sum(x)`).
    pub fn array_func(&mut self, signature: &str, doc: &str, f: NativeFn) {
        let b = self.func(signature, doc, f);
        let name = b_name(&b);
        self.interp.add_method("array", &name, b);
    }

    /// A method only (the receiver is the first parameter).
    pub fn method(&mut self, receiver: &'static str, signature: &str, doc: &str, f: NativeFn) {
        let b = Value::Builtin(Rc::new(Builtin::new(signature, doc, f)));
        let name = b_name(&b);
        self.interp.add_method(receiver, &name, b);
    }

    /// A method made from data (a closure over a row of a table).
    pub fn method_from(
        &mut self,
        receiver: &'static str,
        signature: &str,
        doc: &str,
        f: impl Fn(&mut Interp, Vec<Value>) -> arr_runtime::Result<Value> + 'static,
    ) {
        let b = Value::Builtin(Rc::new(Builtin::new(signature, doc, f)));
        let name = b_name(&b);
        self.interp.add_method(receiver, &name, b);
    }

    /// A method that changes its receiver, made from data (a closure over a row).
    pub fn mutating_method_from(
        &mut self,
        receiver: &'static str,
        signature: &str,
        doc: &str,
        f: impl Fn(&mut Interp, Vec<Value>) -> arr_runtime::Result<Value> + 'static,
    ) {
        let b = Builtin::new(signature, doc, f).with_effect(Effect::MutatesReceiver);
        let b = Value::Builtin(Rc::new(b));
        let name = b_name(&b);
        self.interp.add_method(receiver, &name, b);
    }

    /// A module such as `random`, from (signature, doc, fn) triples.
    pub fn module(&mut self, name: &str, doc: &str, members: &[(&str, &str, NativeFn)]) {
        let members = members
            .iter()
            .map(|(sig, d, f)| {
                let b = Builtin::new(sig, d, *f).qualified(name);
                let short = b.name.rsplit('.').next().unwrap_or_default().to_string();
                (short, Value::Builtin(Rc::new(b)))
            })
            .collect();
        self.interp
            .set_builtin(name, Interp::make_module(name, doc, members));
    }

    pub fn value(&mut self, name: &str, v: Value) {
        self.interp.set_builtin(name, v);
    }
}

fn b_name(v: &Value) -> String {
    match v {
        Value::Builtin(b) => b.name.to_string(),
        _ => unreachable!("registered values are builtins"),
    }
}

/// Register every builtin into `interp` (without the prelude).
pub fn register_all(interp: &mut Interp) {
    let mut r = Registry { interp };
    python::register(&mut r);
    pystd::register(&mut r);
    exceptions::register(&mut r);
    classes::register(&mut r);
    creation::register(&mut r);
    math::register(&mut r);
    reduce::register(&mut r);
    shape::register(&mut r);
    tree::register(&mut r);
    random::register(&mut r);
    np_random::register(&mut r);
    np_generator::register(&mut r);
    io::register(&mut r);
    system::register(&mut r);
    output::register(&mut r);
    plot::register(&mut r);
    transforms::register(&mut r);
    jit::register(&mut r);
    parallel::register(&mut r);
    sharding_api::register(&mut r);
    distributed::register(&mut r);
    device::register(&mut r);
    debug::register(&mut r);
    callback::register(&mut r);
    checkify::register(&mut r);
    re::register(&mut r);
    table::register(&mut r);
}

/// A session with every builtin and the prelude loaded.
pub fn session() -> Session {
    let mut s = Session::new();
    register_all(&mut s.interp);
    s.run_script(arr_runtime::transform::graph::STDLIB_SOURCE, PRELUDE)
        .unwrap_or_else(|e| panic!("the prelude failed to load:\n{e}"));
    lazy::load(
        &mut s,
        arr_runtime::transform::graph::STDLIB_SOURCE,
        SURFACE,
    )
    .unwrap_or_else(|e| panic!("the surface failed to load:\n{e}"));
    // Prelude definitions are builtins (the library's code binds its names
    // there, `Var::Builtin`): users may shadow them, `help` lists them.
    let mut random_members = Vec::new();
    for (id, v) in s.interp.builtins.iter().enumerate() {
        let Some(v) = v else { continue };
        let name = s.interp.interner.name(id as u32);
        if let Some(short) = name.strip_prefix(RANDOM_PREFIX) {
            random_members.push((short.to_string(), v.clone()));
        }
    }
    for name in PRELUDE_METHODS {
        if let Ok(v) = builtin_named(&s.interp, name) {
            s.interp.add_method("array", name, v);
        }
    }
    extend_module(&mut s.interp, "random", random_members);
    // The importable namespaces; `np` and `jnp` also without an import, as
    // arr scripts have always had them.
    modules::register(&mut s.interp, &|name| !is_library(name));
    for &(top, file, source) in LIBRARIES {
        let loader = move |interp: &mut Interp| {
            lazy::load_library(interp, file, source)?;
            modules::register(interp, &|name| library_of(name) == Some(top));
            Ok(())
        };
        s.interp.module_loaders.insert(top.into(), Rc::new(loader));
    }
    s.interp.set_builtin("Ellipsis", Value::Ellipsis);
    // `argv` (and `sys.argv`, its view): a script's runner replaces it with
    // the script's path and arguments; elsewhere it is Python's `['']`.
    s.interp
        .set_builtin("argv", Value::list(vec![Value::str("")]));
    // `object.__setattr__` (and `super().__setattr__`): the plain attribute
    // store a class's own `__setattr__` ends in.
    // `super().__init_subclass__(**kw)` ends in `object`'s, which takes none.
    let object = arr_runtime::class::object_class();
    for (name, builtin) in [
        ("__setattr__", "_object_setattr"),
        ("__init_subclass__", "_object_init_subclass"),
        ("__new__", "_object_new"),
    ] {
        if let Ok(f) = builtin_named(&s.interp, builtin) {
            object.attrs.borrow_mut().insert(name.into(), f);
        }
    }
    for (alias, module) in [("np", "numpy"), ("jnp", "jax.numpy")] {
        let m = s.interp.modules[module].clone();
        s.interp.set_builtin(alias, m);
    }
    s
}

/// The library (of `LIBRARIES`) a dotted module name belongs to: the one
/// named by the module or by a prefix of it (`jax.example_libraries.stax`).
fn library_of(module: &str) -> Option<&'static str> {
    LIBRARIES.iter().map(|l| l.0).find(|&l| {
        module == l
            || module
                .strip_prefix(l)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

fn is_library(module: &str) -> bool {
    library_of(module).is_some()
}

/// A builtin by name (one the prelude or surface defined), for Rust code
/// that hands work to arr code.
pub(crate) fn builtin_named(interp: &Interp, name: &str) -> arr_runtime::Result<Value> {
    interp
        .interner
        .get(name)
        .and_then(|id| interp.builtins.get(id as usize)?.clone())
        .ok_or_else(|| {
            arr_runtime::Error::new(
                arr_runtime::ErrorKind::NameError,
                format!("no builtin named '{name}'"),
            )
        })
}

/// Add (or replace) members of the builtin module `name`.
fn extend_module(interp: &mut Interp, name: &str, members: Vec<(String, Value)>) {
    let id = interp.interner.intern(name) as usize;
    let Some(Some(Value::Module(m))) = interp.builtins.get(id) else {
        return;
    };
    let mut attrs: Vec<(String, Value)> = m.attrs.clone().into_iter().collect();
    for (k, v) in members {
        match attrs.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => attrs.push((k, v)),
        }
    }
    let module = Interp::make_module(name, &m.doc, attrs);
    interp.set_builtin(name, module);
}

/// Prelude functions that are also array methods.
const PRELUDE_METHODS: &[&str] = &["var", "std"];
