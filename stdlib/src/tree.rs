//! Pytrees: nested lists, tuples and dicts of leaves, flattened in JAX's order
//! (sequences in order, dict keys sorted; None is an empty subtree), and
//! instances of registered classes and named tuples (`arr_runtime::class`).
//! Their structures (`PyTreeDef`), key paths (`DictKey`, `SequenceKey`) and
//! `is_leaf`. Every walk of a pytree is one of the walks here.

use crate::Registry;
use arr_runtime::class;
use arr_runtime::display;
use arr_runtime::eval::attr::{properties, property, AttrKind, Attribute, Property};
use arr_runtime::value::Object;
use arr_runtime::{Dict, Error, Interp, Key, Nesting, Result, Value};
use std::any::Any;
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    key_constructors(r);
    r.func(
        "tree_leaves(tree, is_leaf=None)",
        "The leaves of a pytree, in order (dict keys sorted); is_leaf(node) true makes a node a leaf.",
        |interp, a| Ok(Value::list(flatten(interp, &a[0], &a[1])?.0)),
    );
    r.func(
        "tree_map(f, tree, *rest, is_leaf=None)",
        "A pytree of the same structure with f applied to each leaf (and the matching subtrees of rest).",
        |interp, a| tree_map(interp, &a[0], &a[1], &a[2], &a[3], false),
    );
    r.func(
        "tree_map_with_path(f, tree, *rest, is_leaf=None)",
        "tree_map where f also gets each leaf's key path first: f(path, leaf, *others).",
        |interp, a| tree_map(interp, &a[0], &a[1], &a[2], &a[3], true),
    );
    r.func(
        "tree_structure(tree, is_leaf=None)",
        "The pytree's structure (a PyTreeDef: num_leaves, num_nodes, unflatten).",
        |interp, a| Ok(treedef(flatten(interp, &a[0], &a[1])?.1)),
    );
    r.func(
        "tree_flatten(tree, is_leaf=None)",
        "(leaves, treedef): the leaves in order and the structure to rebuild the tree with tree_unflatten.",
        |interp, a| {
            let (leaves, skeleton) = flatten(interp, &a[0], &a[1])?;
            Ok(Value::tuple(vec![Value::list(leaves), treedef(skeleton)]))
        },
    );
    r.func(
        "tree_flatten_with_path(tree, is_leaf=None)",
        "([(path, leaf), ...], treedef): each leaf with its key path (a tuple of DictKey/SequenceKey).",
        |interp, a| {
            let (leaves, skeleton) = flatten(interp, &a[0], &a[1])?;
            Ok(Value::tuple(vec![with_paths(&skeleton, leaves)?, treedef(skeleton)]))
        },
    );
    r.func(
        "tree_leaves_with_path(tree, is_leaf=None)",
        "[(path, leaf), ...]: each leaf with its key path.",
        |interp, a| {
            let (leaves, skeleton) = flatten(interp, &a[0], &a[1])?;
            with_paths(&skeleton, leaves)
        },
    );
    r.func(
        "tree_unflatten(treedef, leaves)",
        "Rebuild a pytree from a treedef and its leaves.",
        |_, a| unflatten(&a[0], &a[1]),
    );
    r.func(
        "tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)",
        "Turn a tree of structure outer holding trees of structure inner into inner holding outers.",
        tree_transpose,
    );
    r.func(
        "keystr(keys, simple=False, separator='')",
        "A key path as text: \"['a'][0]\", or with simple=True the keys joined by separator.",
        keystr,
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
        // Rebuilt in sorted key order, as JAX rebuilds dicts from their leaves.
        Value::Dict(d) => Value::dict(
            sorted_entries(&d.borrow())
                .into_iter()
                .map(|(k, _)| k)
                .zip(mapped)
                .collect(),
        ),
        Value::Instance(i) => class::rebuild_node(i, mapped)?,
        _ => unreachable!("containers only"),
    })
}

/// The leaves of `tree` and its skeleton: the tree with every leaf (every
/// non-container, and every node `is_leaf` accepts) replaced by `...`,
/// dicts in sorted key order.
fn flatten(interp: &mut Interp, tree: &Value, is_leaf: &Value) -> Result<(Vec<Value>, Value)> {
    let mut out = Vec::new();
    let skeleton = flatten_in(interp, tree, is_leaf, &mut out, &mut Nesting::default())?;
    Ok((out, skeleton))
}

fn flatten_in(
    interp: &mut Interp,
    tree: &Value,
    is_leaf: &Value,
    out: &mut Vec<Value>,
    walk: &mut Nesting,
) -> Result<Value> {
    if !matches!(is_leaf, Value::None)
        && interp
            .call(is_leaf, vec![tree.clone()], Vec::new())?
            .truthy()?
    {
        out.push(tree.clone());
        return Ok(Value::Ellipsis);
    }
    if !matches!(tree, Value::List(_) | Value::Tuple(_) | Value::Dict(_)) && !class::is_node(tree) {
        if matches!(tree, Value::None) {
            return Ok(Value::None);
        }
        out.push(tree.clone());
        return Ok(Value::Ellipsis);
    }
    walk.enter(tree, WHAT)?;
    let kids = children(tree)?
        .iter()
        .map(|x| flatten_in(interp, x, is_leaf, out, walk))
        .collect::<Result<Vec<_>>>()?;
    walk.leave(tree);
    rebuild(tree, kids)
}

/// A container of `tree`'s kind (and keys, sorted) holding `kids`.
fn rebuild(tree: &Value, kids: Vec<Value>) -> Result<Value> {
    Ok(match tree {
        Value::List(_) => Value::list(kids),
        Value::Dict(d) => Value::dict(
            sorted_entries(&d.borrow())
                .into_iter()
                .map(|(k, _)| k)
                .zip(kids)
                .collect(),
        ),
        Value::Instance(i) => class::rebuild_node(i, kids)?,
        _ => Value::tuple(kids),
    })
}

/// The subtrees of `tree` at the leaves of `skeleton` (JAX's flatten_up_to):
/// the containers above them must match.
fn flatten_up_to(skeleton: &Value, tree: &Value, out: &mut Vec<Value>) -> Result<()> {
    let mismatch = || {
        Error::value_error(format!(
            "tree_map: the trees have different structures: {} and {}",
            structure(skeleton).unwrap_or_default(),
            structure(tree).unwrap_or_else(|_| "a tree that contains itself".into())
        ))
    };
    match (skeleton, tree) {
        (Value::Ellipsis, _) => out.push(tree.clone()),
        (Value::None, Value::None) => {}
        (Value::Instance(a), Value::Instance(b))
            if class::is_node(skeleton) && Rc::ptr_eq(&a.class, &b.class) =>
        {
            let (a, b) = (children(skeleton)?, children(tree)?);
            if a.len() != b.len() {
                return Err(mismatch());
            }
            for (s, t) in a.iter().zip(&b) {
                flatten_up_to(s, t, out)?;
            }
        }
        (Value::List(_), Value::List(_))
        | (Value::Tuple(_), Value::Tuple(_))
        | (Value::Dict(_), Value::Dict(_)) => {
            if let (Value::Dict(a), Value::Dict(b)) = (skeleton, tree) {
                let (a, b) = (a.borrow(), b.borrow());
                if a.len() != b.len() || a.keys().any(|k| !b.contains_key(k)) {
                    return Err(mismatch());
                }
            }
            let (a, b) = (children(skeleton)?, children(tree)?);
            if a.len() != b.len() {
                return Err(mismatch());
            }
            for (s, t) in a.iter().zip(&b) {
                flatten_up_to(s, t, out)?;
            }
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

fn tree_map(
    interp: &mut Interp,
    f: &Value,
    tree: &Value,
    rest: &Value,
    is_leaf: &Value,
    with_path: bool,
) -> Result<Value> {
    let (first, skeleton) = flatten(interp, tree, is_leaf)?;
    let mut others = Vec::new();
    for other in arr_runtime::numpy::sequence_items(rest)? {
        let mut leaves = Vec::new();
        flatten_up_to(&skeleton, &other, &mut leaves)?;
        others.push(leaves);
    }
    let paths = if with_path {
        key_paths(&skeleton)?
    } else {
        Vec::new()
    };
    let mut results = Vec::with_capacity(first.len());
    for (i, leaf) in first.into_iter().enumerate() {
        let mut args = Vec::new();
        if with_path {
            args.push(paths[i].clone());
        }
        args.push(leaf);
        args.extend(others.iter().map(|o| o[i].clone()));
        results.push(interp.call(f, args, Vec::new())?);
    }
    fill(&skeleton, results)
}

/// `skeleton` with its `...` leaves replaced by `leaves`, in order.
fn fill(skeleton: &Value, leaves: Vec<Value>) -> Result<Value> {
    let want = leaves.len();
    let mut it = leaves.into_iter();
    let out = map_leaves(skeleton, &mut |_| {
        it.next().ok_or_else(|| {
            Error::value_error(format!(
                "tree_unflatten: too few leaves: {want} for a structure with more"
            ))
        })
    })?;
    if it.next().is_some() {
        return Err(Error::value_error(format!(
            "tree_unflatten: too many leaves: {want} for the structure {}",
            structure(skeleton)?
        )));
    }
    Ok(out)
}

/// `jax.tree_util.PyTreeDef`: a tree's structure without its leaves.
#[derive(Debug)]
pub struct TreeDef {
    skeleton: Value,
}

fn treedef(skeleton: Value) -> Value {
    Value::object(TreeDef { skeleton })
}

impl TreeDef {
    fn num_leaves(&self) -> usize {
        leaves(&self.skeleton).map_or(0, |l| l.len())
    }
    fn num_nodes(&self) -> usize {
        fn count(v: &Value) -> usize {
            1 + children(v)
                .unwrap_or_default()
                .iter()
                .map(count)
                .sum::<usize>()
        }
        count(&self.skeleton)
    }
}

const TREEDEF_PROPERTIES: &[Property<TreeDef>] = &[
    Property {
        name: "num_leaves",
        doc: "How many leaves the structure holds.",
        get: |t| Ok(Value::Int(t.num_leaves() as i64)),
    },
    Property {
        name: "num_nodes",
        doc: "How many nodes (containers, None and leaves) the structure has.",
        get: |t| Ok(Value::Int(t.num_nodes() as i64)),
    },
    Property {
        name: "unflatten",
        doc: "unflatten(leaves): the tree of this structure holding leaves.",
        get: |t| {
            let skeleton = t.skeleton.clone();
            Ok(arr_runtime::NativeClosure::value(
                "PyTreeDef.unflatten",
                move |_, args, _| match &args[..] {
                    [leaves] => unflatten_skeleton(&skeleton, leaves),
                    _ => Err(Error::type_error(
                        "unflatten() takes one argument (the leaves)",
                    )),
                },
            ))
        },
    },
];

impl Object for TreeDef {
    fn type_name(&self) -> &'static str {
        "PyTreeDef"
    }
    fn repr(&self) -> String {
        format!(
            "PyTreeDef({})",
            structure(&self.skeleton).unwrap_or_default()
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(TREEDEF_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(TREEDEF_PROPERTIES)
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<TreeDef>()
            .is_some_and(|o| structure(&o.skeleton).ok() == structure(&self.skeleton).ok())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The skeleton of a treedef argument: a `PyTreeDef`, or (as `tree_flatten`
/// used to return) a tree with `...` leaves.
fn skeleton_of(v: &Value) -> Value {
    match v {
        Value::Object(o) => match o.as_any().downcast_ref::<TreeDef>() {
            Some(t) => t.skeleton.clone(),
            None => v.clone(),
        },
        other => other.clone(),
    }
}

fn unflatten_skeleton(skeleton: &Value, leaves: &Value) -> Result<Value> {
    fill(skeleton, arr_runtime::eval::iter_items(leaves)?)
}

fn unflatten(def: &Value, leaves: &Value) -> Result<Value> {
    unflatten_skeleton(&skeleton_of(def), leaves)
}

fn tree_transpose(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (outer, inner) = (skeleton_of(&a[0]), skeleton_of(&a[1]));
    let flat = leaves(&a[2])?;
    let (n_outer, n_inner) = (leaves(&outer)?.len(), leaves(&inner)?.len());
    if flat.len() != n_outer * n_inner {
        return Err(Error::type_error(format!(
            "tree_transpose: the tree has {} leaves, not {n_outer} (outer) x {n_inner} (inner)",
            flat.len()
        )));
    }
    let subtrees = (0..n_inner)
        .map(|j| {
            fill(
                &outer,
                (0..n_outer)
                    .map(|i| flat[i * n_inner + j].clone())
                    .collect(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    fill(&inner, subtrees)
}

/// A key of a path: `DictKey(key=...)` or `SequenceKey(idx=...)`.
#[derive(Debug)]
pub struct PathKey {
    kind: KeyKind,
    key: Value,
}

/// JAX's four key classes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum KeyKind {
    Dict,
    Sequence,
    GetAttr,
    FlattenedIndex,
}

impl PathKey {
    fn field(&self) -> &'static str {
        match self.kind {
            KeyKind::Dict => "key",
            KeyKind::Sequence | KeyKind::FlattenedIndex => "idx",
            KeyKind::GetAttr => "name",
        }
    }
}

impl Object for PathKey {
    fn type_name(&self) -> &'static str {
        match self.kind {
            KeyKind::Dict => "DictKey",
            KeyKind::Sequence => "SequenceKey",
            KeyKind::GetAttr => "GetAttrKey",
            KeyKind::FlattenedIndex => "FlattenedIndexKey",
        }
    }
    fn repr(&self) -> String {
        format!(
            "{}({}={})",
            self.type_name(),
            self.field(),
            display::repr(&self.key)
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        (name == self.field()).then(|| self.key.clone())
    }
    fn attributes(&self) -> Vec<Attribute> {
        vec![Attribute {
            name: self.field().to_string(),
            kind: AttrKind::Property,
            doc: "The dict key, sequence index, attribute name or flattened index this step of \
                  the path takes."
                .to_string(),
        }]
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<PathKey>().is_some_and(|o| {
            o.kind == self.kind && display::repr(&o.key) == display::repr(&self.key)
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The key classes as constructors (`jax.tree_util.DictKey('a')`, ...).
fn key_constructors(r: &mut Registry) {
    const DOC: &str = "A step of a key path, as JAX's key class of this name.";
    fn key(kind: KeyKind, a: Vec<Value>) -> Result<Value> {
        Ok(Value::object(PathKey {
            kind,
            key: a[0].clone(),
        }))
    }
    r.func("DictKey(key)", DOC, |_, a| key(KeyKind::Dict, a));
    r.func("SequenceKey(idx)", DOC, |_, a| key(KeyKind::Sequence, a));
    r.func("GetAttrKey(name)", DOC, |_, a| key(KeyKind::GetAttr, a));
    r.func("FlattenedIndexKey(idx)", DOC, |_, a| {
        key(KeyKind::FlattenedIndex, a)
    });
}

/// The key path (a tuple of keys) of each leaf of `skeleton`, in leaf order.
fn key_paths(skeleton: &Value) -> Result<Vec<Value>> {
    fn step(kind: KeyKind, key: Value) -> Value {
        Value::object(PathKey { kind, key })
    }
    fn walk(v: &Value, path: &mut Vec<Value>, out: &mut Vec<Value>) -> Result<()> {
        let steps: Vec<(Value, Value)> = match v {
            Value::Ellipsis => {
                out.push(Value::tuple(path.clone()));
                return Ok(());
            }
            Value::List(_) | Value::Tuple(_) => children(v)?
                .into_iter()
                .enumerate()
                .map(|(i, c)| (step(KeyKind::Sequence, Value::Int(i as i64)), c))
                .collect(),
            Value::Dict(d) => sorted_entries(&d.borrow())
                .into_iter()
                .map(|(k, c)| (step(KeyKind::Dict, k.to_value()), c))
                .collect(),
            Value::Instance(i) if class::is_node(v) => class::node_child_keys(i)?
                .into_iter()
                .zip(class::node_children(i)?)
                .map(|(k, c)| match k {
                    class::ChildKey::Attr(name) => (step(KeyKind::GetAttr, Value::str(&name)), c),
                    class::ChildKey::Index(n) => {
                        (step(KeyKind::FlattenedIndex, Value::Int(n as i64)), c)
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        for (k, c) in steps {
            path.push(k);
            walk(&c, path, out)?;
            path.pop();
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(skeleton, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn with_paths(skeleton: &Value, leaves: Vec<Value>) -> Result<Value> {
    let paths = key_paths(skeleton)?;
    Ok(Value::list(
        paths
            .into_iter()
            .zip(leaves)
            .map(|(p, l)| Value::tuple(vec![p, l]))
            .collect(),
    ))
}

fn keystr(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let simple = a[1].truthy()?;
    let separator = match &a[2] {
        Value::Str(s) => s.to_string(),
        _ => String::new(),
    };
    let mut parts = Vec::new();
    for k in arr_runtime::eval::iter_items(&a[0])? {
        let key = match &k {
            Value::Object(o) => match o.as_any().downcast_ref::<PathKey>() {
                Some(p) => p,
                None => {
                    return Err(Error::type_error(format!(
                        "keystr: {} is not a path key",
                        o.type_name()
                    )))
                }
            },
            other => {
                return Err(Error::type_error(format!(
                    "keystr: expected a tuple of path keys, got {}",
                    other.type_name()
                )))
            }
        };
        parts.push(match (simple, key.kind, &key.key) {
            (true, _, Value::Str(s)) => s.to_string(),
            (true, _, v) => display::repr(v),
            (false, KeyKind::GetAttr, Value::Str(s)) => format!(".{s}"),
            (false, _, v) => format!("[{}]", display::repr(v)),
        });
    }
    Ok(Value::str(&parts.join(if simple {
        &separator
    } else {
        ""
    })))
}
