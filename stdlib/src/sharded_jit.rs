//! Sharded `jit` as an arr function: `jit(f, in_shardings=...,
//! out_shardings=..., donate_argnums=...)` reads the shardings of the
//! arguments (NamedSharding values, pytrees of them, or the arguments' own
//! layouts), keeps one partitioned program per layout of the arguments,
//! and gives the function `plan` (the collectives it will run) and `ir`
//! (its graph after a stage: `traced`, `partition`, then jit's passes). The
//! partitioner itself is `arr_runtime::jit::partition`.

use crate::parallel::{sharding_parts, under_transformation};
use crate::transforms::{flatten_tree, func_name, unflatten_tree};
use crate::tree::{leaves, structure};
use arr_kernels::sharding::Mesh;
use arr_runtime::jit::partition::{self, partition, plan_text, replicated, Partitioned, Spec};
use arr_runtime::prim::Aval;
use arr_runtime::sharding::ShardingValue;
use arr_runtime::transform::graph;
use arr_runtime::{Error, Interp, NativeClosure, Result, Tensor, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

type Kwargs = Vec<(Rc<str>, Value)>;

/// One compiled layout of a sharded jit.
struct Entry {
    key: String,
    part: Rc<Partitioned>,
    out_tree: Value,
    global: Vec<Aval>,
}

/// `jit(f)` with input and output layouts: see the module comment.
/// `jit(f, in_shardings=..., out_shardings=..., donate_argnums=...)`.
pub(crate) fn sharded_jit(
    f: Value,
    in_shardings: Value,
    out_shardings: Value,
    donate_argnums: Vec<i64>,
) -> Result<Value> {
    let name = func_name(&f);
    let entries: Rc<RefCell<Vec<Entry>>> = Rc::new(RefCell::new(Vec::new()));
    let (f2, i2, o2, e2) = (
        f.clone(),
        in_shardings.clone(),
        out_shardings.clone(),
        entries.clone(),
    );
    let why = format!("it was donated to jit({name})");
    let value = NativeClosure::value(format!("jit({name})"), move |interp, args, kwargs| {
        let donated: Vec<bool> = (0..args.len())
            .map(|i| crate::jit::names_argument(&donate_argnums, i, args.len()))
            .collect();
        call(
            interp,
            &f2,
            &i2,
            &o2,
            &e2,
            args,
            kwargs,
            Mode::Run {
                donated: &donated,
                why: &why,
            },
        )
    });
    let (f3, i3, o3, e3) = (
        f.clone(),
        in_shardings.clone(),
        out_shardings.clone(),
        entries.clone(),
    );
    let (f4, i4, o4, e4) = (
        f.clone(),
        in_shardings.clone(),
        out_shardings.clone(),
        entries.clone(),
    );
    if let Value::Native(n) = &value {
        let plan =
            NativeClosure::value(format!("jit({name}).plan"), move |interp, args, kwargs| {
                call(
                    interp,
                    &f,
                    &in_shardings,
                    &out_shardings,
                    &entries,
                    args,
                    kwargs,
                    Mode::Plan,
                )
            });
        n.attrs.borrow_mut().push(("plan".into(), plan));
        // What one step costs each device, for choosing among layouts
        // (`auto_strategy`): flops, elements written, collectives, bytes.
        let cost =
            NativeClosure::value(format!("jit({name}).cost"), move |interp, args, kwargs| {
                call(interp, &f4, &i4, &o4, &e4, args, kwargs, Mode::Cost)
            });
        n.attrs.borrow_mut().push(("cost".into(), cost));
        let ir = NativeClosure::value(
            format!("jit({name}).ir"),
            move |interp, args, mut kwargs| {
                // `f.ir(*args, after=NAME)`, as for an unsharded jit.
                let after = match kwargs.iter().position(|(k, _)| &**k == "after") {
                    Some(i) => match kwargs.remove(i).1 {
                        Value::None => None,
                        other => Some(crate::args::str_arg("after", &other)?.to_string()),
                    },
                    None => None,
                };
                if let Some(stage) = &after {
                    partition::check_stage(stage)?;
                }
                let mode = Mode::Ir {
                    after: after.as_deref(),
                };
                call(interp, &f3, &i3, &o3, &e3, args, kwargs, mode)
            },
        );
        n.attrs.borrow_mut().push(("ir".into(), ir));
    }
    Ok(value)
}

/// The `ir` method of `f` when it is a sharded jit (a function with a
/// `plan`), so `jit(f).ir(...)` and `:ir --pass NAME f(...)` show the
/// stages of its partitioned program.
pub(crate) fn ir_method(f: &Value) -> Option<Value> {
    let Value::Native(n) = f else {
        return None;
    };
    let attrs = n.attrs.borrow();
    if !attrs.iter().any(|(k, _)| k == "plan") {
        return None;
    }
    attrs
        .iter()
        .find(|(k, _)| k == "ir")
        .map(|(_, v)| v.clone())
}

/// The sharding given for item `i` of a tuple of shardings (or the one for all).
/// The sharding of each of `n_out` output arrays: `out_shardings` is one
/// sharding (or None) for every output, or a pytree of them with one leaf
/// per output array (as `in_shardings` is per argument), e.g. a list of
/// shardings for a function returning a list of parameters.
fn out_leaf_shardings(out_shardings: &Value, n_out: usize) -> Result<Vec<Value>> {
    match out_shardings {
        Value::Tuple(_) | Value::List(_) | Value::Dict(_) => {
            let l = leaves(out_shardings)?;
            if l.len() != n_out {
                return Err(Error::value_error(format!(
                    "sharded jit: out_shardings has {} shardings for {n_out} output arrays",
                    l.len()
                )));
            }
            Ok(l)
        }
        other => Ok(vec![other.clone(); n_out]),
    }
}

/// The spec one output sharding (or None) gives an output of `rank`.
fn out_spec(sharding: &Value, rank: usize) -> Result<Option<Spec>> {
    match one_sharding(sharding)? {
        Some(s) => sharding_parts(&s, rank).map(|(_, spec)| Some(spec)),
        None => Ok(None),
    }
}

/// A sharding given to jit: a NamedSharding, a bare P under the context
/// mesh, or None.
fn one_sharding(item: &Value) -> Result<Option<ShardingValue>> {
    if !matches!(item, Value::None | Value::Object(_)) {
        return Err(Error::type_error(format!(
            "sharded jit: shardings must be NamedSharding or None (or P(...) under set_mesh), \
             not {}",
            item.type_name()
        )));
    }
    Ok(arr_runtime::sharding::resolve(item, "sharded jit")?
        .map(|(mesh, spec)| ShardingValue { mesh, spec }))
}

/// What a call of a sharded jit does: run the program (the positional
/// arguments marked `donated` give their buffers to it), or describe it:
/// its plan, or its graph after a stage of the compiler (None: the last).
#[derive(Clone, Copy)]
enum Mode<'a> {
    Run { donated: &'a [bool], why: &'a str },
    Plan,
    Cost,
    Ir { after: Option<&'a str> },
}

#[allow(clippy::too_many_arguments)]
fn call(
    interp: &mut Interp,
    f: &Value,
    in_shardings: &Value,
    out_shardings: &Value,
    entries: &RefCell<Vec<Entry>>,
    args: Vec<Value>,
    kwargs: Kwargs,
    mode: Mode,
) -> Result<Value> {
    let describe_only = !matches!(mode, Mode::Run { .. });
    if arr_runtime::jit::auto::tracing() && !describe_only {
        // As for jit: the region stays interpreted and the sharded program
        // runs as compiled (and deletes what it donates).
        return Err(arr_runtime::jit::auto::not_pure(
            "calls a sharded jit, which runs its own compiled program",
        ));
    }
    if under_transformation(&args)? && !describe_only {
        // Under a transformation the layouts do not change the values.
        return interp.call(f, args, kwargs);
    }
    // The mesh: the first sharding's, or the first sharded argument's.
    let mut mesh: Option<Arc<Mesh>> = None;
    for v in [in_shardings, out_shardings] {
        for it in &leaves(v)? {
            if let Some(s) = one_sharding(it)? {
                mesh.get_or_insert(s.mesh);
            }
        }
    }
    let mut flat = Vec::new();
    let mut specs: Vec<Spec> = Vec::new();
    // Per flat leaf: whether its argument is donated.
    let mut donated_leaves: Vec<bool> = Vec::new();
    if let Value::Tuple(t) = in_shardings {
        if t.len() != args.len() {
            return Err(Error::value_error(format!(
                "sharded jit: in_shardings must be one sharding or a tuple with one entry \
                 per positional argument: got a tuple of length {} for {} argument{}",
                t.len(),
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            )));
        }
    }
    for (i, arg) in args.iter().enumerate() {
        // One sharding for the whole argument, or a pytree of them like it.
        let item = match in_shardings {
            Value::Tuple(t) => t.get(i).cloned().unwrap_or(Value::None),
            other => other.clone(),
        };
        let arg_leaves = flatten_tree(arg)?;
        let per_leaf: Vec<Value> = match &item {
            Value::Tuple(_) | Value::List(_) | Value::Dict(_) => {
                let l = leaves(&item)?;
                if l.len() != arg_leaves.len() {
                    return Err(Error::value_error(format!(
                        "sharded jit: argument {i} has {} arrays but its in_shardings entry {}",
                        arg_leaves.len(),
                        l.len()
                    )));
                }
                l
            }
            other => vec![other.clone(); arg_leaves.len()],
        };
        for (t, sh) in arg_leaves.into_iter().zip(&per_leaf) {
            let given = one_sharding(sh)?;
            let a = t.concrete()?.clone();
            let spec = match given {
                Some(s) => {
                    let (m, spec) = sharding_parts(&s, a.ndim())?;
                    mesh.get_or_insert(m);
                    spec
                }
                None => match a.placement() {
                    Some(p) if mesh.as_ref().is_none_or(|m| *m.as_ref() == *p.mesh) => {
                        mesh.get_or_insert_with(|| p.mesh.clone());
                        p.spec.clone()
                    }
                    _ => replicated(a.ndim()),
                },
            };
            flat.push(a);
            specs.push(spec);
            donated_leaves.push(matches!(mode, Mode::Run { donated, .. } if donated[i]));
        }
    }
    let arrays: Vec<_> = flat.iter().map(Some).collect();
    if let Some((i, j)) = crate::args::donated_twice(&arrays, &donated_leaves) {
        return Err(Error::value_error(format!(
            "sharded jit: array argument {i} is donated, and the same array is also \
             array argument {j} of this call; a donated buffer can be passed only once"
        )));
    }
    let Some(mesh) = mesh else {
        return Err(Error::value_error(
            "sharded jit: no mesh: give in_shardings or out_shardings as NamedSharding(mesh, P(...))",
        ));
    };
    let global: Vec<Aval> = flat
        .iter()
        .map(|a| Aval {
            shape: a.shape().into(),
            dtype: a.dtype(),
        })
        .collect();
    let args_tree = Value::tuple(args);
    // Keyword arguments are baked into the program, so they key it too.
    let kw: Vec<String> = kwargs
        .iter()
        .map(|(k, v)| format!("{k}={}", arr_runtime::display::repr(v)))
        .collect();
    let key = format!(
        "{:?} {:?} {} {}",
        global,
        specs,
        structure(&args_tree)?,
        kw.join(",")
    );
    let found = entries.borrow().iter().position(|e| e.key == key);
    let index = match found {
        Some(i) => i,
        None => {
            let out_tree = RefCell::new(Value::None);
            // Per output array, set once the function is traced.
            let out_leaves: RefCell<Vec<Value>> = RefCell::new(Vec::new());
            // The partitioner asks per output; the first sharding that does
            // not fit its output (a rank too small) is the error.
            let out_error: RefCell<Option<Error>> = RefCell::new(None);
            // Per output array, its layout as traced when that names an
            // Explicit axis (JAX's type): kept unless out_shardings says.
            let traced: RefCell<Vec<Option<Spec>>> = RefCell::new(Vec::new());
            let outs_wanted = |i: usize, rank: usize| -> Option<Spec> {
                let leaves = out_leaves.borrow();
                let given = leaves.get(i).unwrap_or(&Value::None);
                if matches!(given, Value::None) {
                    if let Some(Some(spec)) = traced.borrow().get(i) {
                        return (spec.len() == rank).then(|| spec.clone());
                    }
                }
                out_spec(given, rank)
                    .map_err(|e| {
                        out_error
                            .borrow_mut()
                            .get_or_insert(Error::value_error(format!(
                                "sharded jit: out_shardings for output {i} (rank {rank}): {}",
                                e.message
                            )));
                    })
                    .ok()
                    .flatten()
            };
            let part = partition(&mesh, &global, &specs, &outs_wanted, |ts| {
                let rebuilt = unflatten_tree(&args_tree, &ts)?;
                let out = interp.call(
                    f,
                    arr_runtime::numpy::sequence_items(&rebuilt)?,
                    kwargs.clone(),
                )?;
                let ts = flatten_tree(&out)?;
                *traced.borrow_mut() = ts
                    .iter()
                    .map(|t| {
                        t.placement()
                            .filter(|p| {
                                *p.mesh == *mesh
                                    && p.spec.iter().flatten().any(|&a| p.mesh.is_explicit(a))
                            })
                            .map(|p| p.spec.clone())
                    })
                    .collect();
                *out_leaves.borrow_mut() = out_leaf_shardings(out_shardings, ts.len())?;
                *out_tree.borrow_mut() = out;
                Ok(ts)
            })?;
            if let Some(e) = out_error.into_inner() {
                return Err(e);
            }
            // Outputs the partitioner did not ask about must fit too.
            let outs = flatten_tree(&out_tree.borrow())?;
            for (t, sharding) in outs.iter().zip(out_leaves.borrow().iter()) {
                out_spec(sharding, t.ndim())?;
            }
            let mut es = entries.borrow_mut();
            es.push(Entry {
                key,
                part: Rc::new(part),
                out_tree: out_tree.into_inner(),
                global: global.clone(),
            });
            es.len() - 1
        }
    };
    let (part, out_tree, global) = {
        let es = entries.borrow();
        (
            es[index].part.clone(),
            es[index].out_tree.clone(),
            es[index].global.clone(),
        )
    };
    let why = match mode {
        Mode::Run { why, .. } => why,
        Mode::Plan => return Ok(Value::str(&plan_text(&part, &global))),
        Mode::Cost => {
            let c = partition::cost(&part, &global);
            let items = [
                ("flops", Value::Float(c.flops)),
                ("elements", Value::Float(c.elements)),
                ("collectives", Value::Int(c.collectives as i64)),
                ("bytes_sent", Value::Int(c.bytes_sent as i64)),
                ("peak_bytes", Value::Int(c.peak_bytes as i64)),
                ("input_bytes", Value::Int(c.input_bytes as i64)),
            ];
            return Ok(Value::dict(
                items
                    .into_iter()
                    .map(|(k, v)| (arr_runtime::Key::Str(k.into()), v))
                    .collect(),
            ));
        }
        Mode::Ir { after } => {
            let (g, n_consts) = part.graph_after(after)?;
            return Ok(Value::str(&graph::text(&g, n_consts)));
        }
    };
    let outs: Vec<Tensor> = partition::run(&part, &flat, &donated_leaves, why)?
        .into_iter()
        .map(Tensor::from)
        .collect();
    unflatten_tree(&out_tree, &outs)
}
