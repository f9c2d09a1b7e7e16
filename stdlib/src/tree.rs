//! Pytrees: nested lists, tuples and dicts of leaves, flattened in JAX's order
//! (sequences in order, dict keys sorted; None is an empty subtree).

use crate::Registry;
use arr_runtime::display;
use arr_runtime::{Dict, Error, Interp, Key, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "tree_leaves(tree)",
        "The leaves of a pytree, in order (dict keys sorted).",
        |_, a| Ok(Value::list(leaves(&a[0]))),
    );
    r.func(
        "tree_map(f, tree, *rest)",
        "A pytree of the same structure with f applied to each leaf (and the matching leaves of rest).",
        tree_map,
    );
    r.func(
        "tree_structure(tree)",
        "A description of the pytree's structure, with * for each leaf.",
        |_, a| Ok(Value::str(&format!("PyTreeDef({})", structure(&a[0])))),
    );
    r.func(
        "tree_flatten(tree)",
        "(leaves, treedef): treedef is the tree with every leaf replaced by ... (use it with tree_unflatten).",
        |_, a| Ok(Value::tuple(vec![Value::list(leaves(&a[0])), skeleton(&a[0])])),
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

pub fn leaves(tree: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    collect(tree, &mut out);
    out
}

fn collect(tree: &Value, out: &mut Vec<Value>) {
    match tree {
        Value::None => {}
        Value::List(l) => l.borrow().iter().for_each(|x| collect(x, out)),
        Value::Tuple(t) => t.iter().for_each(|x| collect(x, out)),
        Value::Dict(d) => sorted_entries(&d.borrow())
            .iter()
            .for_each(|(_, v)| collect(v, out)),
        leaf => out.push(leaf.clone()),
    }
}

pub fn structure(tree: &Value) -> String {
    match tree {
        Value::None => "None".into(),
        Value::List(l) => format!(
            "[{}]",
            l.borrow()
                .iter()
                .map(structure)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tuple(t) if t.len() == 1 => format!("({},)", structure(&t[0])),
        Value::Tuple(t) => format!(
            "({})",
            t.iter().map(structure).collect::<Vec<_>>().join(", ")
        ),
        Value::Dict(d) => {
            let items: Vec<String> = sorted_entries(&d.borrow())
                .iter()
                .map(|(k, v)| format!("{}: {}", display::repr(&k.to_value()), structure(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        _ => "*".into(),
    }
}

fn skeleton(tree: &Value) -> Value {
    map_leaves(tree, &mut |_| Ok(Value::Ellipsis)).expect("replacing leaves cannot fail")
}

/// Rebuild `tree` with each leaf replaced by `f(leaf)`, keeping containers' kinds.
pub fn map_leaves(tree: &Value, f: &mut dyn FnMut(&Value) -> Result<Value>) -> Result<Value> {
    Ok(match tree {
        Value::None => Value::None,
        Value::List(l) => Value::list(
            l.borrow()
                .iter()
                .map(|x| map_leaves(x, f))
                .collect::<Result<_>>()?,
        ),
        Value::Tuple(t) => Value::tuple(t.iter().map(|x| map_leaves(x, f)).collect::<Result<_>>()?),
        Value::Dict(d) => {
            // Visit in sorted order (the leaf order), but keep the dict's own order.
            let mut mapped: Dict = Dict::default();
            for (k, v) in sorted_entries(&d.borrow()) {
                mapped.insert(k, map_leaves(&v, f)?);
            }
            let ordered = d
                .borrow()
                .keys()
                .map(|k| (k.clone(), mapped[k].clone()))
                .collect();
            Value::dict(ordered)
        }
        leaf => f(leaf)?,
    })
}

fn tree_map(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let rest: Vec<Vec<Value>> = arr_runtime::numpy::sequence_items(&a[2])?
        .iter()
        .map(leaves)
        .collect();
    let n = leaves(&a[1]).len();
    if let Some(bad) = rest.iter().find(|r| r.len() != n) {
        return Err(Error::value_error(format!(
            "tree_map: the trees have different numbers of leaves ({n} and {}): structures {} and another",
            bad.len(),
            structure(&a[1])
        )));
    }
    // Equal leaf counts are not enough: {'a': 1} and {'b': 1} differ.
    let first = structure(&a[1]);
    for other in arr_runtime::numpy::sequence_items(&a[2])?.iter() {
        let theirs = structure(other);
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
