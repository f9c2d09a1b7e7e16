//! Pytrees: nested lists, tuples and dicts of leaves, flattened in JAX's order
//! (sequences in order, dict keys sorted; None is an empty subtree), and
//! instances of registered classes and named tuples (`arr_runtime::class`).
//! Every walk of a pytree is one of the walks here.

use crate::Registry;
use arr_runtime::class;
use arr_runtime::display;
use arr_runtime::{Dict, Error, Interp, Key, Nesting, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "tree_leaves(tree)",
        "The leaves of a pytree, in order (dict keys sorted).",
        |_, a| Ok(Value::list(leaves(&a[0])?)),
    );
    r.func(
        "tree_map(f, tree, *rest)",
        "A pytree of the same structure with f applied to each leaf (and the matching leaves of rest).",
        tree_map,
    );
    r.func(
        "tree_structure(tree)",
        "A description of the pytree's structure, with * for each leaf.",
        |_, a| Ok(Value::str(&format!("PyTreeDef({})", structure(&a[0])?))),
    );
    r.func(
        "tree_flatten(tree)",
        "(leaves, treedef): treedef is the tree with every leaf replaced by ... (use it with tree_unflatten).",
        |_, a| Ok(Value::tuple(vec![Value::list(leaves(&a[0])?), skeleton(&a[0])?])),
    );
    r.func(
        "tree_unflatten(treedef, leaves)",
        "Rebuild a pytree from a treedef and its leaves.",
        tree_unflatten,
    );
}

/// Dict entries in sorted key order, as JAX flattens them.
fn sorted_entries(d: &Dict) -> Vec<(Key, Value)> {
    let mut entries: Vec<(Key, Value)> = d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

/// The leaves of `tree`, in JAX's order. Every walk of a pytree goes
/// through a [`Nesting`], so a container that holds itself raises.
pub fn leaves(tree: &Value) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    collect(tree, &mut out, &mut Nesting::default())?;
    Ok(out)
}

fn collect(tree: &Value, out: &mut Vec<Value>, walk: &mut Nesting) -> Result<()> {
    match tree {
        Value::None => {}
        node if is_node(node) => {
            walk.enter(tree, WHAT)?;
            for x in children(tree)? {
                collect(&x, out, walk)?;
            }
            walk.leave(tree);
        }
        leaf => out.push(leaf.clone()),
    }
    Ok(())
}

const WHAT: &str = "pytree";

/// Whether a value has children: a list, tuple, dict, or an instance node.
fn is_node(v: &Value) -> bool {
    matches!(v, Value::List(_) | Value::Tuple(_) | Value::Dict(_)) || class::is_node(v)
}

/// A container's children in leaf order (dict values by sorted key).
fn children(tree: &Value) -> Result<Vec<Value>> {
    Ok(match tree {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Dict(d) => sorted_entries(&d.borrow())
            .into_iter()
            .map(|(_, v)| v)
            .collect(),
        Value::Instance(i) => class::node_children(i)?,
        _ => Vec::new(),
    })
}

pub fn structure(tree: &Value) -> Result<String> {
    structure_in(tree, &mut Nesting::default())
}

fn structure_in(tree: &Value, walk: &mut Nesting) -> Result<String> {
    let parts = |walk: &mut Nesting| -> Result<Vec<String>> {
        walk.enter(tree, WHAT)?;
        let parts = children(tree)?
            .iter()
            .map(|x| structure_in(x, walk))
            .collect::<Result<Vec<_>>>()?;
        walk.leave(tree);
        Ok(parts)
    };
    Ok(match tree {
        Value::None => "None".into(),
        Value::List(_) => format!("[{}]", parts(walk)?.join(", ")),
        Value::Tuple(t) if t.len() == 1 => format!("({},)", parts(walk)?[0]),
        Value::Tuple(_) => format!("({})", parts(walk)?.join(", ")),
        Value::Dict(d) => {
            let keys: Vec<Key> = sorted_entries(&d.borrow())
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let items: Vec<String> = keys
                .iter()
                .zip(parts(walk)?)
                .map(|(k, v)| format!("{}: {v}", display::repr(&k.to_value())))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Instance(i) if class::is_node(tree) => {
            format!("{}({})", class::node_label(i), parts(walk)?.join(", "))
        }
        _ => "*".into(),
    })
}

fn skeleton(tree: &Value) -> Result<Value> {
    map_leaves(tree, &mut |_| Ok(Value::Ellipsis))
}

/// Rebuild `tree` with each leaf replaced by `f(leaf)`, keeping containers' kinds.
pub fn map_leaves(tree: &Value, f: &mut dyn FnMut(&Value) -> Result<Value>) -> Result<Value> {
    map_in(tree, f, &mut Nesting::default())
}

fn map_in(
    tree: &Value,
    f: &mut dyn FnMut(&Value) -> Result<Value>,
    walk: &mut Nesting,
) -> Result<Value> {
    if !is_node(tree) {
        return match tree {
            Value::None => Ok(Value::None),
            leaf => f(leaf),
        };
    }
    walk.enter(tree, WHAT)?;
    let mapped = children(tree)?
        .iter()
        .map(|x| map_in(x, f, walk))
        .collect::<Result<Vec<_>>>()?;
    walk.leave(tree);
    Ok(match tree {
        Value::List(_) => Value::list(mapped),
        Value::Tuple(_) => Value::tuple(mapped),
        Value::Dict(d) => {
            // Visited in sorted order (the leaf order), but the dict keeps its own order.
            let by_key: Dict = sorted_entries(&d.borrow())
                .into_iter()
                .map(|(k, _)| k)
                .zip(mapped)
                .collect();
            let ordered = d
                .borrow()
                .keys()
                .map(|k| (k.clone(), by_key[k].clone()))
                .collect();
            Value::dict(ordered)
        }
        Value::Instance(i) => class::rebuild_node(i, mapped)?,
        _ => unreachable!("containers only"),
    })
}

fn tree_map(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let rest: Vec<Vec<Value>> = arr_runtime::numpy::sequence_items(&a[2])?
        .iter()
        .map(leaves)
        .collect::<Result<_>>()?;
    let n = leaves(&a[1])?.len();
    if let Some(bad) = rest.iter().find(|r| r.len() != n) {
        return Err(Error::value_error(format!(
            "tree_map: the trees have different numbers of leaves ({n} and {}): structures {} and another",
            bad.len(),
            structure(&a[1])?
        )));
    }
    // Equal leaf counts are not enough: {'a': 1} and {'b': 1} differ.
    let first = structure(&a[1])?;
    for other in arr_runtime::numpy::sequence_items(&a[2])?.iter() {
        let theirs = structure(other)?;
        if theirs != first {
            return Err(Error::value_error(format!(
                "tree_map: the trees have different structures: {first} and {theirs}"
            )));
        }
    }
    let f = a[0].clone();
    let mut i = 0;
    map_leaves(&a[1], &mut |leaf| {
        let mut args = vec![leaf.clone()];
        args.extend(rest.iter().map(|r| r[i].clone()));
        i += 1;
        interp.call(&f, args, Vec::new())
    })
}

fn tree_unflatten(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = arr_runtime::eval::iter_items(&a[1])?;
    let mut it = items.into_iter();
    let out = map_leaves(&a[0], &mut |_| {
        it.next()
            .ok_or_else(|| Error::value_error("tree_unflatten: too few leaves"))
    })?;
    if it.next().is_some() {
        return Err(Error::value_error("tree_unflatten: too many leaves"));
    }
    Ok(out)
}
