//! `jit` as an arr function: static arguments, pytrees, the per-function
//! compile cache with the reason for each compile (`f.why()`, `:why f`,
//! `jit_stats()`), and `:ir --pass`. The compiler itself is
//! `arr_runtime::jit`.

use crate::args::*;
use crate::transforms::func_name;
use crate::tree::{leaves, map_leaves, structure};
use crate::Registry;
use arr_runtime::jit::{self, Cache, Signature};
use arr_runtime::prim::Prim;
use arr_runtime::transform;
use arr_runtime::transform::graph::{self, Graph};
use arr_runtime::{display, numpy, Dict, Error, Interp, Key, NativeClosure, Result, Tensor, Value};
use std::cell::RefCell;
use std::rc::Rc;

type Kwargs = Vec<(Rc<str>, Value)>;

/// The error a ref's read or write raises while a `jit` traces: the jit
/// catches it and runs its function op by op from then on (see `jitted`).
const REF_IN_JIT: &str = "a ref is read or written while jit traces (this jit runs op by op)";

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "_ref_access()",
        "Called by every read and write of a ref (jax.new_ref): refused while automatic JIT \
         or jit traces, so that the function runs op by op and each access happens.",
        |interp, _| {
            if interp.auto.tracing.is_some() {
                return Err(jit::auto::not_pure("reads or writes a ref"));
            }
            if transform::in_dynamic_graph() {
                return Err(Error::new(
                    arr_runtime::ErrorKind::TransformError,
                    REF_IN_JIT,
                ));
            }
            Ok(Value::None)
        },
    );
    r.effect_func(
        "_set_debug_nans(on)",
        "Set jax_debug_nans (operations raise FloatingPointError when they make a NaN); \
         returns the previous setting.",
        |_, a| {
            Ok(Value::Bool(arr_runtime::prim::set_debug_nans(
                a[0].truthy()?,
            )))
        },
    );
    r.effect_func(
        "_set_x64(on)",
        "Set jax_enable_x64: jax.numpy keeps 64-bit dtypes a JAX program asks for \
         (without it, JAX truncates them to 32 bits).",
        |_, a| {
            arr_runtime::numpy::set_x64(a[0].truthy()?);
            Ok(Value::None)
        },
    );
    r.func("_x64_enabled()", "Whether jax_enable_x64 is on.", |_, _| {
        Ok(Value::Bool(arr_runtime::numpy::x64()))
    });
    r.func(
        "_jax_disable_jit(disable=True)",
        "jax.disable_jit: a context manager inside which jitted functions run op by op.",
        disable_jit,
    );
    r.func(
        "jit(fun=None, static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=(), in_shardings=None, out_shardings=None)",
        "Compile fun: it is traced once per signature (argument types, pytree structure and \
         the values of static arguments), optimised, and the compiled version runs on later \
         calls. As a decorator: @jit, or @jit(static_argnums=1). f.why() lists every compile \
         with its reason. The arrays of donated arguments (donate_argnums, donate_argnames) \
         give their buffers to the call, which writes results into them in place: afterwards \
         they are deleted (x.is_deleted()), as in JAX. With in_shardings/out_shardings (NamedSharding, or a tuple with \
         one per argument/output), the program is partitioned over the mesh: each device \
         runs on its blocks, with collectives where layouts need them; f.plan(args) lists them.",
        make_jit,
    );
    r.effect_func(
        "set_auto_jit(on=True, threshold=None)",
        "Turn automatic JIT on or off: when on, a function called threshold times with the \
         same argument types, or a loop over a range after threshold iterations, is compiled \
         and runs compiled from then on (results are the same either way). The REPL's :jit \
         shows what was compiled. Returns the previous setting.",
        |interp, a| {
            let was = interp.auto.enabled;
            interp.auto.enabled = a[0].truthy()?;
            if !matches!(a[1], Value::None) {
                let t = int_arg("threshold", &a[1])?;
                if t < 1 {
                    return Err(Error::value_error(format!(
                        "set_auto_jit: threshold must be at least 1, got {t}"
                    )));
                }
                interp.auto.threshold = t.min(u32::MAX as i64) as u32;
            }
            Ok(Value::Bool(was))
        },
    );
    r.effect_func(
        "auto_jit_report()",
        "What automatic JIT compiled (hot functions and loops) and what it left \
         interpreted, with the reason: the text the REPL's :jit prints.",
        |interp, _| Ok(Value::str(&interp.auto.report())),
    );
    r.effect_func(
        "jit_stats()",
        "Every compile of every jitted function so far: a list of dicts with the function, \
         the reason, the time in ms, the equations before and after optimisation, and \
         the GPU kernels its first run compiled or found cached (in memory, on disk).",
        |_, _| {
            let mut out = Vec::new();
            for cache in jit::all_caches() {
                let c = cache.borrow();
                for r in &c.records {
                    let mut d = Dict::default();
                    d.insert(Key::Str("function".into()), Value::str(&c.name));
                    d.insert(Key::Str("reason".into()), Value::str(&r.reason));
                    d.insert(Key::Str("ms".into()), Value::Float(r.ms));
                    d.insert(
                        Key::Str("eqns_traced".into()),
                        Value::Int(r.eqns_traced as i64),
                    );
                    d.insert(
                        Key::Str("eqns_compiled".into()),
                        Value::Int(r.eqns_compiled as i64),
                    );
                    let k = &r.kernels;
                    for (key, n) in [
                        ("kernels_compiled", k.compiles),
                        ("kernels_from_memory", k.memory_hits),
                        ("kernels_from_disk", k.disk_hits),
                    ] {
                        d.insert(Key::Str(key.into()), Value::Int(n as i64));
                    }
                    out.push(Value::dict(d));
                }
            }
            Ok(Value::list(out))
        },
    );
}

/// The options of one `jit(...)`.
#[derive(Clone, Default, Debug)]
struct Options {
    static_argnums: Vec<i64>,
    static_argnames: Vec<String>,
    donate_argnums: Vec<i64>,
    donate_argnames: Vec<String>,
    /// The static positions that are parameters of the signature, by name too.
    named_positions: Vec<i64>,
}

pub(crate) fn int_list(v: &Value, what: &str) -> Result<Vec<i64>> {
    match v {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v)?
            .iter()
            .map(|x| int_arg(what, x))
            .collect(),
        Value::None => Ok(Vec::new()),
        other => Ok(vec![int_arg(what, other)?]),
    }
}

fn str_list(v: &Value, what: &str) -> Result<Vec<String>> {
    match v {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v)?
            .iter()
            .map(|x| str_arg(what, x).map(str::to_string))
            .collect(),
        Value::None => Ok(Vec::new()),
        other => Ok(vec![str_arg(what, other)?.to_string()]),
    }
}

fn make_jit(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if matches!(a[0], Value::None) {
        // `jit(static_argnames=...)` as a decorator factory: check the
        // options now, then make the jit of the function it is given (whose
        // signature places the static arguments).
        return Ok(NativeClosure::value("jit", move |interp, args, _| {
            let f = args
                .into_iter()
                .next()
                .ok_or_else(|| Error::type_error("jit(...) as a decorator takes the function"))?;
            let mut with_f = a.clone();
            with_f[0] = f;
            make_jit(interp, with_f)
        }));
    }
    a[0].expect_callable()?;
    let mut options = Options {
        static_argnums: int_list(&a[1], "static_argnums")?,
        static_argnames: str_list(&a[2], "static_argnames")?,
        donate_argnums: int_list(&a[3], "donate_argnums")?,
        donate_argnames: str_list(&a[4], "donate_argnames")?,
        named_positions: Vec::new(),
    };
    // As JAX does with the signature: a static argument is static whether it
    // comes by position or by name.
    if let Value::Function(func) = &a[0] {
        let params: Vec<&str> = func
            .code
            .params
            .iter()
            .take_while(|p| p.kind == arr_lang::ast::ParamKind::Normal)
            .map(|p| &*p.name)
            .collect();
        for &i in &options.static_argnums.clone() {
            let j = if i < 0 { i + params.len() as i64 } else { i };
            if let Some(name) = usize::try_from(j).ok().and_then(|j| params.get(j)) {
                options.named_positions.push(i);
                if !options.static_argnames.iter().any(|s| s == name) {
                    options.static_argnames.push(name.to_string());
                }
            }
        }
        for name in &options.static_argnames.clone() {
            if let Some(j) = params.iter().position(|p| p == name) {
                if !options.static_argnums.contains(&(j as i64)) {
                    options.static_argnums.push(j as i64);
                    options.named_positions.push(j as i64);
                }
            }
        }
    }
    if let Some(i) = options
        .donate_argnums
        .iter()
        .find(|i| options.static_argnums.contains(i))
    {
        return Err(Error::value_error(format!(
            "jit: argument {i} is in both static_argnums and donate_argnums: \
             a static argument is a Python value, it has no buffer to donate"
        )));
    }
    if let Some(k) = options
        .donate_argnames
        .iter()
        .find(|k| options.static_argnames.contains(k))
    {
        return Err(Error::value_error(format!(
            "jit: argument '{k}' is in both static_argnames and donate_argnames: \
             a static argument is a Python value, it has no buffer to donate"
        )));
    }
    if !matches!((&a[5], &a[6]), (Value::None, Value::None)) {
        if !options.donate_argnames.is_empty() {
            // A partitioned program bakes keyword arguments in as constants.
            return Err(Error::value_error(
                "jit: with in_shardings/out_shardings, donated arguments are given by \
                 position (donate_argnums), not by name",
            ));
        }
        let (ins, outs) = (a[5].clone(), a[6].clone());
        let donate = options.donate_argnums.clone();
        return crate::sharded_jit::sharded_jit(a[0].clone(), ins, outs, donate);
    }
    Ok(jitted(a[0].clone(), options))
}

/// `jit(f)` with no options.
/// `jax.disable_jit(disable=True)`: a context inside which jitted functions
/// run op by op, so that prints show values (as JAX's does).
fn disable_jit(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let disable = a[0].truthy()?;
    let before = Rc::new(std::cell::Cell::new(false));
    let saved = before.clone();
    let enter = NativeClosure::value("__enter__", move |interp, _, _| {
        saved.set(interp.jit_disabled);
        interp.jit_disabled = disable;
        Ok(Value::None)
    });
    let exit = NativeClosure::value("__exit__", move |interp, _, _| {
        interp.jit_disabled = before.get();
        Ok(Value::None)
    });
    Ok(Interp::make_module(
        "disable_jit",
        "The context of jax.disable_jit.",
        vec![("__enter__".into(), enter), ("__exit__".into(), exit)],
    ))
}

pub(crate) fn jit_of(f: Value) -> Value {
    jitted(f, Options::default())
}

/// The compiled programs of one function under one set of options, and
/// their output structures.
type Shared = (Rc<RefCell<Cache>>, Rc<RefCell<Vec<(Signature, Value)>>>);

thread_local! {
    /// As JAX's: the compile cache belongs to the function (and the jit
    /// options), not to one `jit(f)` value, so `jit(f)(x)` in a loop traces
    /// once, and a new `jit(f)` of the same function reuses its programs
    /// (which keep the globals they read when traced, as JAX's do).
    static BY_FUNCTION: RefCell<Vec<(std::rc::Weak<arr_runtime::value::Function>, String, Shared)>> =
        const { RefCell::new(Vec::new()) };
}

fn shared_cache(f: &Value, options: &Options, name: &str) -> Shared {
    let fresh = || (jit::new_cache(name), Rc::new(RefCell::new(Vec::new())));
    let Value::Function(func) = f else {
        return fresh();
    };
    let key = format!("{options:?}");
    BY_FUNCTION.with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|(w, _, _)| w.strong_count() > 0);
        if let Some((_, _, shared)) = m
            .iter()
            .find(|(w, k, _)| w.as_ptr() == Rc::as_ptr(func) && *k == key)
        {
            return shared.clone();
        }
        let shared = fresh();
        m.push((Rc::downgrade(func), key, shared.clone()));
        shared
    })
}

/// What one `jit(f)` holds: the function, its options, its compiled
/// programs (shared by every jit of the function), and the sharded jit it
/// makes for sharded arguments.
struct JitState {
    f: Value,
    options: Options,
    cache: Rc<RefCell<Cache>>,
    trees: Rc<RefCell<Vec<(Signature, Value)>>>,
    sharded: RefCell<Option<Value>>,
}

/// A call of a jitted function: by the sharded jit for sharded arguments,
/// else by the compiled program (with jax_debug_nans' check of its outputs).
fn compiled_call(
    interp: &mut Interp,
    s: &JitState,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    if takes_sharded(&s.options, &args, &kwargs)? {
        let jf = s
            .sharded
            .borrow_mut()
            .get_or_insert_with(|| {
                crate::sharded_jit::sharded_jit(
                    s.f.clone(),
                    Value::None,
                    Value::None,
                    s.options.donate_argnums.clone(),
                )
                .unwrap_or(Value::None)
            })
            .clone();
        if !matches!(jf, Value::None) {
            // A layout the partitioner cannot split evenly (JAX pads
            // uneven blocks): run unpartitioned, which gives the same values.
            match interp.call(&jf, args.clone(), kwargs.clone()) {
                Err(e)
                    if e.kind == arr_runtime::ErrorKind::ShapeError
                        && e.message.contains("is not divisible by its") => {}
                result => return result,
            }
        }
    }
    if !arr_runtime::prim::debug_nans() {
        return call(interp, &s.f, &s.options, &s.cache, &s.trees, args, kwargs);
    }
    // jax_debug_nans: outputs holding a NaN run the function again op
    // by op, so that the operation that made it is named.
    let out = call(
        interp,
        &s.f,
        &s.options,
        &s.cache,
        &s.trees,
        args.clone(),
        kwargs.clone(),
    )?;
    let leaves: Vec<Tensor> = crate::tree::leaves(&out)?
        .into_iter()
        .filter_map(|v| match v {
            Value::Array(t) => Some(t),
            _ => None,
        })
        .collect();
    if arr_runtime::prim::any_nan(&leaves) {
        let before = std::mem::replace(&mut interp.jit_disabled, true);
        let again = interp.call(&s.f, args, kwargs);
        interp.jit_disabled = before;
        again?;
        return Err(arr_runtime::Error::new(
            arr_runtime::ErrorKind::FloatingPointError,
            format!(
                "invalid value (nan) encountered in jit({}); run op by op, the function \
                 made no NaN (the compiled program's arithmetic differs)",
                func_name(&s.f)
            ),
        ));
    }
    Ok(out)
}

fn jitted(f: Value, options: Options) -> Value {
    let name = func_name(&f);
    let (cache, trees) = shared_cache(&f, &options, &name);
    // Called with sharded arrays, it is partitioned by their layouts, as
    // JAX's jit is: a sharded jit made on first need.
    let state = JitState {
        f: f.clone(),
        options: options.clone(),
        cache: cache.clone(),
        trees,
        sharded: RefCell::new(None),
    };
    // Set once tracing met a ref (jax.new_ref) or a host callback: JAX's
    // refs are state the program reads and writes at each call, a callback
    // needs its values when it runs; this jit then runs its function op by
    // op, so that every access and call happens when it runs.
    let op_by_op = std::cell::Cell::new(false);
    let value = NativeClosure::value(format!("jit({name})"), move |interp, args, kwargs| {
        let op_by_op_call = |interp: &mut Interp, args, kwargs| {
            let before = std::mem::replace(&mut interp.jit_disabled, true);
            let out = interp.call(&state.f, args, kwargs);
            interp.jit_disabled = before;
            out
        };
        if interp.jit_disabled {
            return interp.call(&state.f, args, kwargs);
        }
        if op_by_op.get() {
            return op_by_op_call(interp, args, kwargs);
        }
        match compiled_call(interp, &state, args.clone(), kwargs.clone()) {
            Err(e)
                if (e.message == REF_IN_JIT || e.message == transform::callback::OP_BY_OP)
                    && !transform::in_dynamic_graph() =>
            {
                op_by_op.set(true);
                op_by_op_call(interp, args, kwargs)
            }
            other => other,
        }
    });
    if let Value::Native(n) = &value {
        let why = NativeClosure::value(format!("jit({name}).why"), move |_, _, _| {
            Ok(Value::str(&why_text(&cache.borrow())))
        });
        n.attrs.borrow_mut().push(("why".into(), why));
        let (f3, o3) = (f.clone(), options.clone());
        let ir = NativeClosure::value(format!("jit({name}).ir"), move |interp, args, kwargs| {
            ir_after(interp, &f3, &o3, args, kwargs)
        });
        n.attrs.borrow_mut().push(("ir".into(), ir));
        // `lower(*args)`: JAX's ahead-of-time stages (surface.arr), over a
        // jit of the same function and options.
        for (stage_name, class) in [("lower", "_stages_Lowered"), ("trace", "_stages_Traced")] {
            let (f4, o4) = (f.clone(), options.clone());
            let lower = NativeClosure::value(
                format!("jit({name}).{stage_name}"),
                move |interp, args, kwargs| {
                    let ints = |v: &[i64]| Value::tuple(v.iter().map(|&i| Value::Int(i)).collect());
                    let names =
                        Value::tuple(o4.static_argnames.iter().map(|n| Value::str(n)).collect());
                    let kwargs_dict = Value::dict(
                        kwargs
                            .iter()
                            .map(|(k, v)| Ok((Value::str(k).to_key()?, v.clone())))
                            .collect::<Result<_>>()?,
                    );
                    let stage = crate::builtin_named(interp, class)?;
                    let statics = [o4.static_argnums.clone(), o4.named_positions.clone()].concat();
                    interp.call(
                        &stage,
                        vec![
                            jitted(f4.clone(), o4.clone()),
                            ints(&statics),
                            names,
                            Value::tuple(args),
                            kwargs_dict,
                        ],
                        Vec::new(),
                    )
                },
            );
            n.attrs.borrow_mut().push((stage_name.into(), lower));
        }
        let kernels = NativeClosure::value(
            format!("jit({name}).kernels"),
            move |interp, args, kwargs| {
                let g = compiled_graph(interp, &f, &options, args, kwargs, None)?;
                let texts: Vec<String> =
                    g.0.eqns
                        .iter()
                        .filter_map(|e| match &e.prim {
                            Prim::Fused(k) => Some(k.to_string()),
                            Prim::FusedMatmul(k) => Some(k.to_string()),
                            _ => None,
                        })
                        .collect();
                Ok(Value::str(&if texts.is_empty() {
                    "no fused kernels: every operation runs as its own kernel".to_string()
                } else {
                    texts.join("\n")
                }))
            },
        );
        n.attrs.borrow_mut().push(("kernels".into(), kernels));
    }
    value
}

/// Whether a call runs as a sharded jit: concrete arguments, some of them
/// laid out over a mesh, and no static or by-name donated arguments (a
/// partitioned program takes every positional leaf as an array).
fn takes_sharded(options: &Options, args: &[Value], kwargs: &Kwargs) -> Result<bool> {
    if !options.static_argnums.is_empty()
        || !options.static_argnames.is_empty()
        || !options.donate_argnames.is_empty()
        || !kwargs.is_empty()
        || !transform::idle()
    {
        return Ok(false);
    }
    let mut placed = false;
    for leaf in leaves(&Value::tuple(args.to_vec()))? {
        match &leaf {
            Value::Array(Tensor::Concrete(a)) => placed |= a.placement().is_some(),
            Value::Array(Tensor::Traced(_)) => return Ok(false),
            _ => {}
        }
    }
    Ok(placed)
}

/// One line per compile.
pub fn why_text(c: &Cache) -> String {
    if c.records.is_empty() {
        return format!("{}: not compiled yet", c.name);
    }
    c.records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{} compile {}: {} ({:.2} ms, {} equations traced, {} after optimisation)",
                c.name,
                i + 1,
                r.reason,
                r.ms,
                r.eqns_traced,
                r.eqns_compiled
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The arguments split into static values and a dynamic pytree.
struct Split {
    /// Static positional arguments by position, and static keywords.
    static_pos: Vec<(usize, Value)>,
    static_kw: Vec<(Rc<str>, Value)>,
    /// (dynamic positional arguments with None where static, dynamic keywords).
    dynamic: Value,
}

fn split_args(options: &Options, args: &[Value], kwargs: &Kwargs) -> Result<Split> {
    let n = args.len() as i64;
    let mut static_pos = Vec::new();
    for &i in &options.static_argnums {
        let j = if i < 0 { i + n } else { i };
        if j >= n && options.named_positions.contains(&i) {
            // A parameter given by name or left to its default.
            continue;
        }
        if j < 0 || j >= n {
            return Err(Error::value_error(format!(
                "jit: static_argnums {i} is out of range for a call with {n} positional arguments"
            )));
        }
        let v = &args[j as usize];
        if v.to_key().is_err() && identity(v).is_none() {
            return Err(Error::type_error(format!(
                "jit: static argument {j} must be hashable (a number, string, tuple, \
                 function or object), got {}",
                v.type_name()
            )));
        }
        static_pos.push((j as usize, v.clone()));
    }
    let dyn_args = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if static_pos.iter().any(|(j, _)| *j == i) {
                Value::None
            } else {
                a.clone()
            }
        })
        .collect();
    let mut static_kw = Vec::new();
    let mut dyn_kw = Dict::default();
    for (k, v) in kwargs {
        if options.static_argnames.iter().any(|s| **s == **k) {
            static_kw.push((k.clone(), v.clone()));
        } else {
            dyn_kw.insert(Key::Str(k.clone()), v.clone());
        }
    }
    Ok(Split {
        static_pos,
        static_kw,
        dynamic: Value::tuple(vec![Value::tuple(dyn_args), Value::dict(dyn_kw)]),
    })
}

/// Rebuild the call's arguments from the dynamic leaves and the statics.
fn rebuild(split: &Split, ts: &[Tensor]) -> Result<(Vec<Value>, Kwargs)> {
    let mut it = ts.iter();
    let tree = map_leaves(&split.dynamic, &mut |_| {
        Ok(Value::Array(
            it.next().expect("one tensor per leaf").clone(),
        ))
    })?;
    let parts = numpy::sequence_items(&tree)?;
    let mut args = numpy::sequence_items(&parts[0])?;
    for (i, v) in &split.static_pos {
        args[*i] = v.clone();
    }
    let mut kw: Kwargs = split.static_kw.clone();
    if let Value::Dict(d) = &parts[1] {
        for (k, v) in d.borrow().iter() {
            if let Key::Str(k) = k {
                kw.push((k.clone(), v.clone()));
            }
        }
    }
    Ok((args, kw))
}

/// A static argument compared by identity (a function, an object: as
/// JAX hashes them by default), as its address. The value is kept alive
/// from then on, so that no later value takes its address and a compiled
/// program of the old one.
fn identity(v: &Value) -> Option<String> {
    let ptr = match v {
        Value::BoundMethod(m) => {
            return Some(format!("{}.{}", identity(&m.0)?, identity(&m.1)?));
        }
        Value::Function(_)
        | Value::Builtin(_)
        | Value::Native(_)
        | Value::Instance(_)
        | Value::Class(_)
        | Value::Object(_) => v.address()?,
        _ => return None,
    };
    PINNED.with(|p| {
        let mut p = p.borrow_mut();
        p.entry(ptr).or_insert_with(|| v.clone());
    });
    Some(format!("{ptr:#x}"))
}

thread_local! {
    /// The static arguments compared by identity, by address (see `identity`).
    static PINNED: RefCell<std::collections::HashMap<usize, Value>> = RefCell::new(Default::default());
}

/// How a static argument is compared: by value (numbers, strings, tuples,
/// hashable stdlib objects), or by identity (functions, classes, user
/// objects: hashable by identity, and two of them may print alike).
fn static_text(v: &Value) -> String {
    let by_value = !matches!(
        v,
        Value::Function(_)
            | Value::Builtin(_)
            | Value::Native(_)
            | Value::Class(_)
            | Value::BoundMethod(_)
    ) && !matches!(v, Value::Instance(i) if i.items.is_none())
        && v.to_key().is_ok();
    match by_value {
        true => display::repr(v),
        false => format!(
            "{} (id {})",
            display::repr(v),
            identity(v).unwrap_or_default()
        ),
    }
}

fn signature(split: &Split, flat: &[Tensor]) -> Result<Signature> {
    let mut statics = vec![(
        "the argument structure".to_string(),
        structure(&split.dynamic)?,
    )];
    statics.extend(
        split
            .static_pos
            .iter()
            .map(|(i, v)| (format!("static argument {i}"), static_text(v))),
    );
    statics.extend(
        split
            .static_kw
            .iter()
            .map(|(k, v)| (format!("static argument {k}"), static_text(v))),
    );
    // Typed keys trace as keys: a program traced for them is not one for
    // their raw words. So are weakly typed arguments (Python numbers):
    // `f(2.0)` and `f(x)` of a float32 `x` promote differently inside.
    type Tag = fn(&Tensor) -> bool;
    let tagged: [(&str, Tag); 2] = [
        ("the typed key arguments", Tensor::is_key),
        ("the weakly typed arguments", Tensor::is_weak),
    ];
    for (what, has) in tagged {
        let at: Vec<String> = (0..flat.len())
            .filter(|&i| has(&flat[i]))
            .map(|i| i.to_string())
            .collect();
        if !at.is_empty() {
            statics.push((what.into(), at.join(",")));
        }
    }
    Ok(Signature {
        avals: flat.iter().map(Tensor::aval).collect(),
        names: (0..flat.len())
            .map(|i| format!("array argument {i}"))
            .collect(),
        statics,
    })
}

/// As JAX's jit with 64-bit types off: a NumPy array argument of a 64-bit
/// type (`np.random.randn(3)`) enters as its 32-bit type.
pub(crate) fn canonical(t: Tensor) -> Result<Tensor> {
    let Tensor::Concrete(a) = &t else {
        return Ok(t);
    };
    if !matches!(a.flavour(), arr_kernels::Flavour::NumPy { .. }) || numpy::x64() {
        return Ok(t);
    }
    let to = numpy::x32_of(a.dtype());
    numpy::convert(t, to)
}

#[allow(clippy::too_many_arguments)]
fn call(
    interp: &mut Interp,
    f: &Value,
    options: &Options,
    cache: &Rc<RefCell<Cache>>,
    trees: &Rc<RefCell<Vec<(Signature, Value)>>>,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    if jit::auto::tracing() {
        // A region that calls a jit-compiled function stays interpreted:
        // traced through, its body would be compiled by automatic JIT's
        // exact pipeline, slower than jit's own program and with other
        // bits wherever jit's pipeline reorders work (and donated arguments
        // would not be deleted), so results would depend on the feature.
        return Err(jit::auto::not_pure(format!(
            "calls jit({}), which runs its own compiled program",
            cache.borrow().name
        )));
    }
    let split = split_args(options, &args, &kwargs)?;
    let mut flat: Vec<Tensor> = leaves(&split.dynamic)?
        .iter()
        .map(|v| numpy::to_tensor(v).and_then(canonical))
        .collect::<Result<_>>()?;
    // Inside a transformation or another trace, trace through: the outer
    // interpretation sees the primitives (and an outer jit compiles them).
    // Donation is only for a call that runs the compiled program, as in JAX.
    if transform::top_level(&flat)?.is_some() {
        return interp.call(f, args, kwargs);
    }
    for t in &flat {
        t.concrete()?;
    }
    let donated = donated_leaves(options, &split, &flat)?;
    let sig = signature(&split, &flat)?;
    let compiled = cache.borrow().lookup(&sig);
    let kernels_before = compiled.is_none().then(arr_kernels::gpu::compile_stats);
    let compiled = match compiled {
        Some(c) => c,
        None => {
            let out_tree = RefCell::new(Value::None);
            let keys: Vec<bool> = flat.iter().map(Tensor::is_key).collect();
            let weak: Vec<bool> = flat.iter().map(Tensor::is_weak).collect();
            let c = cache.borrow_mut().compile(sig.clone(), |ts| {
                let ts: Vec<Tensor> = ts
                    .into_iter()
                    .zip(keys.iter().zip(&weak))
                    .map(|(t, (&k, &w))| t.keyed(k).weakened(w))
                    .collect();
                let (a, k) = rebuild(&split, &ts)?;
                let out = interp.call(f, a, k)?;
                let flat = leaves(&out)?
                    .iter()
                    .map(numpy::to_tensor)
                    .collect::<Result<Vec<_>>>()?;
                *out_tree.borrow_mut() = out;
                Ok(flat)
            })?;
            trees
                .borrow_mut()
                .push((sig.clone(), out_tree.into_inner()));
            warn_unusable_donations(interp, &cache.borrow().name, &c, &donated);
            c
        }
    };
    if donated.iter().any(|d| *d) {
        let why = format!("it was donated to jit({})", cache.borrow().name);
        for (t, d) in flat.iter_mut().zip(&donated) {
            if let (true, Tensor::Concrete(a)) = (*d, &*t) {
                // Every handle (the caller's variables, pytrees holding it)
                // is deleted; the program gets the buffer itself. (A
                // runtime-shared scalar is pinned: it stays.)
                if let Some(given) = a.donate(&why) {
                    *t = Tensor::Concrete(given);
                }
            }
        }
    }
    let outs = compiled.run(flat)?;
    if let Some(before) = kernels_before {
        cache.borrow_mut().note_kernels(&before);
    }
    let trees = trees.borrow();
    let tree = &trees
        .iter()
        .find(|(s, _)| *s == sig)
        .expect("a tree per compiled signature")
        .1;
    let mut it = outs.into_iter();
    // Outputs traced as typed keys come back as typed keys.
    map_leaves(tree, &mut |leaf| {
        let out = it.next().expect("one output per leaf");
        Ok(Value::Array(match leaf {
            Value::Array(t) if t.is_key() => out.keyed(true),
            _ => out,
        }))
    })
}

/// Whether `nums` (argument numbers, negative ones from the end) names
/// argument `i` of a call with `n` positional arguments.
pub(crate) fn names_argument(nums: &[i64], i: usize, n: usize) -> bool {
    nums.iter()
        .any(|&j| (if j < 0 { j + n as i64 } else { j }) == i as i64)
}

/// Which leaves of the dynamic arguments (in `leaves` order) are donated:
/// every array leaf of a donated argument. A donated array may be passed
/// only once in a call (its buffer cannot be both read and overwritten).
fn donated_leaves(options: &Options, split: &Split, flat: &[Tensor]) -> Result<Vec<bool>> {
    if options.donate_argnums.is_empty() && options.donate_argnames.is_empty() {
        return Ok(vec![false; flat.len()]);
    }
    let marked = |v: &Value, on: bool| map_leaves(v, &mut |_| Ok(Value::Bool(on)));
    // The dynamic tree (static positions are None), each leaf saying
    // whether its argument is donated.
    let parts = numpy::sequence_items(&split.dynamic)?;
    let dyn_args = numpy::sequence_items(&parts[0])?;
    let n = dyn_args.len();
    let pos = dyn_args
        .iter()
        .enumerate()
        .map(|(i, a)| marked(a, names_argument(&options.donate_argnums, i, n)))
        .collect::<Result<Vec<_>>>()?;
    let mut kw = Dict::default();
    if let Value::Dict(d) = &parts[1] {
        for (k, v) in d.borrow().iter() {
            let on = matches!(k, Key::Str(k) if options.donate_argnames.iter().any(|s| **s == **k));
            kw.insert(k.clone(), marked(v, on)?);
        }
    }
    let tree = Value::tuple(vec![Value::tuple(pos), Value::dict(kw)]);
    let donated: Vec<bool> = leaves(&tree)?
        .iter()
        .zip(flat)
        // A Python number has no buffer: nothing to give.
        .map(|(m, t)| matches!(m, Value::Bool(true)) && t.as_concrete().is_some())
        .collect();
    let arrays: Vec<_> = flat.iter().map(Tensor::as_concrete).collect();
    if let Some((i, j)) = donated_twice(&arrays, &donated) {
        let a = arrays[i].expect("donated leaves are arrays");
        return Err(Error::value_error(format!(
            "jit: array argument {i} is donated, and the same array is also array \
             argument {j} of this call ({}); a donated buffer can be passed only once",
            arr_runtime::prim::type_str(a.shape(), a.dtype())
        )));
    }
    Ok(donated)
}

/// As JAX does when it compiles: say which donated inputs no output can
/// take over (no output has their shape and dtype), since their donation
/// saves nothing but the input's lifetime.
fn warn_unusable_donations(interp: &mut Interp, name: &str, c: &jit::Compiled, donated: &[bool]) {
    let g = &c.graph;
    let n_consts = c.consts.len();
    let mut outs: Vec<arr_runtime::prim::Aval> = g
        .outvars
        .iter()
        .map(|a| match a {
            graph::Atom::Var(v) => g.types[*v].clone(),
            graph::Atom::Lit(x) => arr_runtime::prim::Aval::of(x),
        })
        .collect();
    let mut unusable = Vec::new();
    for (k, d) in donated.iter().enumerate() {
        if !*d {
            continue;
        }
        let aval = &g.types[g.invars[n_consts + k]];
        match outs.iter().position(|o| o == aval) {
            Some(i) => {
                outs.swap_remove(i);
            }
            None => unusable.push(arr_runtime::prim::type_str(&aval.shape, aval.dtype)),
        }
    }
    if !unusable.is_empty() {
        interp.emit(arr_runtime::output::RichOutput::Stderr(format!(
            "UserWarning: jit({name}): some donated buffers were not usable: {} \
             (no output has the same shape and dtype)\n",
            unusable.join(", ")
        )));
    }
}

/// `f.ir(*args, after=NAME)`: the IR of the compiled function for these
/// arguments after the named pass (`traced` for none; the default is the
/// last pass).
fn ir_after(
    interp: &mut Interp,
    f: &Value,
    options: &Options,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    // A sharded jit has stages of its own (the partitioner's among them).
    if let Some(ir) = crate::sharded_jit::ir_method(f) {
        return interp.call(&ir, args, kwargs);
    }
    let mut kwargs = kwargs;
    let pass = match kwargs.iter().position(|(k, _)| &**k == "after") {
        Some(i) => match kwargs.remove(i).1 {
            Value::None => None,
            other => Some(str_arg("after", &other)?.to_string()),
        },
        None => None,
    };
    if let Some(p) = &pass {
        if p == jit::partition::STAGE {
            return Err(Error::value_error(format!(
                "the '{p}' stage is a sharded jit's: {} has no in_shardings or out_shardings",
                func_name(f)
            )));
        }
        let passes = || std::iter::once(&jit::passes::TRACED).chain(jit::passes::PIPELINE);
        if !passes().any(|x| x.name == p) {
            let names: Vec<&str> = passes().map(|x| x.name).collect();
            return Err(Error::value_error(format!(
                "no pass named '{p}'; the passes are: {}",
                names.join(", ")
            )));
        }
    }
    let (g, n_consts) = compiled_graph(interp, f, options, args, kwargs, pass.as_deref())?;
    Ok(Value::str(&graph::text(&g, n_consts)))
}

/// Trace `f` for these arguments and run the pipeline up to `until`
/// (`traced`: none; None: all of it). Returns the graph and its constant count.
fn compiled_graph(
    interp: &mut Interp,
    f: &Value,
    options: &Options,
    args: Vec<Value>,
    kwargs: Kwargs,
    until: Option<&str>,
) -> Result<(Graph, usize)> {
    let split = split_args(options, &args, &kwargs)?;
    let flat: Vec<Tensor> = leaves(&split.dynamic)?
        .iter()
        .map(numpy::to_tensor)
        .collect::<Result<_>>()?;
    let avals: Vec<_> = flat.iter().map(Tensor::aval).collect();
    let closed = graph::trace(&avals, true, |ts| {
        let (a, k) = rebuild(&split, &ts)?;
        let out = interp.call(f, a, k)?;
        leaves(&out)?.iter().map(numpy::to_tensor).collect()
    })?;
    let g = match until {
        Some(p) if p == jit::passes::TRACED.name => (*closed.graph).clone(),
        other => jit::passes::run_pipeline(&closed.graph, other),
    };
    Ok((g, closed.consts.len()))
}
