//! Expressions: constants, variables, operators, containers, f-strings,
//! comprehensions, function definitions, call expressions, and subscripts.

use super::scalar::{binary_op, compare_op, float_fast, int_fast, unary_op};
use super::{at_call, name_error, Frame, Interp};
use crate::code::*;
use crate::display;
use crate::error::{Error, ErrorKind, Result};
use crate::index;
use crate::numpy;
use crate::tensor::Tensor;
use crate::value::{range_len, Dict, Function, Key, SliceValue, Value};
use arr_kernels::Flavour;
use arr_lang::ast::{BoolOpKind, CmpOp};
use std::rc::Rc;

impl Interp {
    pub(crate) fn eval(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        match &e.kind {
            // The hot cases first, without any wrapping.
            ExprKind::Const(v) => Ok(v.clone()),
            ExprKind::Load(var, name) => self
                .load(*var, name, f)
                .map_err(|err| err.at(|| f.loc(e.span))),
            ExprKind::Binary(op, l, r) => {
                let a = self.eval_operand(l, f)?;
                let b = self.eval_operand(r, f)?;
                // Python numbers in the interpreter's inner loops, without a call.
                let fast = match (&a, &b) {
                    (Value::Float(x), Value::Float(y)) => float_fast(*op, *x, *y),
                    (Value::Int(x), Value::Float(y)) => float_fast(*op, *x as f64, *y),
                    (Value::Float(x), Value::Int(y)) => float_fast(*op, *x, *y as f64),
                    (Value::Int(x), Value::Int(y)) => int_fast(*op, *x, *y),
                    _ => None,
                };
                if let Some(v) = fast {
                    return Ok(v);
                }
                if matches!(a, Value::Instance(_)) || matches!(b, Value::Instance(_)) {
                    return self
                        .instance_binary(*op, a, b)
                        .map_err(|err| at_call(err, f.loc(e.span)));
                }
                binary_op(*op, a, b).map_err(|err| err.at(|| f.loc(e.span)))
            }
            _ => self
                .eval_other(e, f)
                .map_err(|err| err.at(|| f.loc(e.span))),
        }
    }

    /// An operand of an operator: constants and local numbers are read here,
    /// without a recursive `eval` call (the common leaves of arithmetic).
    #[inline(always)]
    fn eval_operand(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        match &e.kind {
            ExprKind::Const(Value::Float(x)) => Ok(Value::Float(*x)),
            ExprKind::Const(Value::Int(x)) => Ok(Value::Int(*x)),
            ExprKind::Load(Var::Local(i), _) => match &f.locals[*i as usize] {
                Some(Value::Float(x)) => Ok(Value::Float(*x)),
                Some(Value::Int(x)) => Ok(Value::Int(*x)),
                _ => self.eval(e, f),
            },
            _ => self.eval(e, f),
        }
    }

    #[inline]
    fn load(&mut self, var: Var, name: &str, f: &Frame) -> Result<Value> {
        if self.auto.tracing.is_some() {
            self.note_read(var, f)?;
        }
        match var {
            Var::Local(i) => match &f.locals[i as usize] {
                // Numbers are copied without the out-of-line `Value::clone`.
                Some(Value::Float(x)) => Ok(Value::Float(*x)),
                Some(Value::Int(x)) => Ok(Value::Int(*x)),
                Some(v) => Ok(v.clone()),
                None => Err(Error::new(
                    ErrorKind::NameError,
                    format!("local variable '{name}' referenced before assignment"),
                )
                .as_class("UnboundLocalError")),
            },
            Var::Cell(i) => f.cells[i as usize].borrow().clone().ok_or_else(|| {
                Error::new(
                    ErrorKind::NameError,
                    format!("free variable '{name}' referenced before assignment"),
                )
            }),
            Var::Global(id) => {
                let id = id as usize;
                if let Some(Some(v)) = self.globals.get(id) {
                    return Ok(v.clone());
                }
                if let Some(Some(v)) = self.builtins.get(id) {
                    return Ok(v.clone());
                }
                Err(name_error(name))
            }
            Var::Builtin(id) => self.load_builtin(id as usize, name),
        }
    }

    /// A name of the library's own code (`Var::Builtin`), out of the hot path.
    #[inline(never)]
    fn load_builtin(&self, id: usize, name: &str) -> Result<Value> {
        match self.builtins.get(id) {
            Some(Some(v)) => Ok(v.clone()),
            _ => Err(name_error(name)),
        }
    }

    /// `f"{v}"`: a 0-d array as the Python number it holds, else `str(v)`.
    #[inline(never)]
    fn format_plain(&mut self, v: &Value) -> Result<String> {
        match display::scalar_to_format(v) {
            Some(x) => Ok(display::str(&x)),
            None => self.str_of(v),
        }
    }

    pub(super) fn eval_all(&mut self, items: &[Expr], f: &mut Frame) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            if let ExprKind::Starred(inner) = &item.kind {
                let v = self.eval(inner, f)?;
                out.extend(self.items(&v).map_err(|e| e.at(|| f.loc(item.span)))?);
            } else {
                out.push(self.eval(item, f)?);
            }
        }
        Ok(out)
    }

    fn eval_other(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        Ok(match &e.kind {
            ExprKind::Const(_) | ExprKind::Load(..) | ExprKind::Binary(..) => {
                unreachable!("handled in eval")
            }
            ExprKind::Import { path, top } => self.import(path, *top)?,
            ExprKind::ImportFrom { module, name } => self.import_from(module, name)?,
            ExprKind::List(items) => Value::list(self.eval_all(items, f)?),
            ExprKind::Tuple(items) => Value::tuple(self.eval_all(items, f)?),
            ExprKind::Dict(items) => {
                let mut d = Dict::default();
                for (k, v) in items {
                    let Some(k) = k else {
                        // `**other`: its items, in order, replacing earlier keys.
                        match self.eval(v, f)? {
                            Value::Dict(other) => {
                                for (key, value) in other.borrow().iter() {
                                    d.insert(key.clone(), value.clone());
                                }
                            }
                            other => {
                                return Err(Error::type_error(format!(
                                    "'{}' object is not a mapping",
                                    other.type_name()
                                ))
                                .at(|| f.loc(v.span)))
                            }
                        }
                        continue;
                    };
                    let key = self
                        .eval(k, f)?
                        .to_key()
                        .map_err(|err| err.at(|| f.loc(k.span)))?;
                    let value = self.eval(v, f)?;
                    d.insert(key, value);
                }
                Value::dict(d)
            }
            ExprKind::Set(items) => crate::set::from_values(self.eval_all(items, f)?)?,
            ExprKind::NamedExpr(target, value) => {
                let v = self.eval(value, f)?;
                self.assign(target, v.clone(), f)?;
                v
            }
            ExprKind::Yield(value, from) => {
                let items = match value {
                    None => vec![Value::None],
                    Some(v) if !*from => vec![self.eval(v, f)?],
                    Some(v) => {
                        let it = self.eval(v, f)?;
                        self.items(&it).map_err(|e| e.at(|| f.loc(v.span)))?
                    }
                };
                self.yielded
                    .last_mut()
                    .expect("a yield runs inside a generator body")
                    .extend(items);
                Value::None
            }
            ExprKind::Starred(_) => {
                return Err(Error::new(
                    ErrorKind::SyntaxError,
                    "can't use starred expression here",
                ))
            }
            ExprKind::FString(parts) => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        FPart::Literal(l) => s.push_str(l),
                        FPart::Hole {
                            expr,
                            conversion,
                            spec,
                        } => {
                            let v = self.eval(expr, f)?;
                            // `!r`/`!s` convert to a string first; the spec formats that.
                            let v = match conversion {
                                Some('r' | 'a') => match &v {
                                    _ if super::is_instance_like(&v) => {
                                        Value::str(&self.repr_of(&v)?)
                                    }
                                    _ => Value::str(&display::item_repr(&v)),
                                },
                                Some(_) => Value::str(&self.str_of(&v)?),
                                None => v,
                            };
                            let text = match spec {
                                Some(spec) => display::format_spec(&v, spec)
                                    .map_err(|err| err.at(|| f.loc(expr.span)))?,
                                None => self.format_plain(&v)?,
                            };
                            s.push_str(&text);
                        }
                    }
                }
                Value::str(&s)
            }
            ExprKind::Unary(op, operand) => {
                let v = self.eval(operand, f)?;
                if let Value::Instance(_) = v {
                    return self.instance_unary(*op, v);
                }
                unary_op(*op, v)?
            }
            ExprKind::BoolOp(op, values) => {
                let mut last = Value::None;
                for (i, v) in values.iter().enumerate() {
                    last = self.eval(v, f)?;
                    // The last operand is the result as it is: Python never asks
                    // its truth (`None or x` works for an array `x`).
                    if i + 1 == values.len() {
                        break;
                    }
                    let t = last.truthy()?;
                    if (*op == BoolOpKind::And && !t) || (*op == BoolOpKind::Or && t) {
                        return Ok(last);
                    }
                }
                last
            }
            ExprKind::Compare(left, rest) => {
                let mut a = self.eval(left, f)?;
                if let [(op, right)] = rest.as_slice() {
                    let b = self.eval(right, f)?;
                    return self.compare(*op, &a, &b);
                }
                for (op, right) in rest {
                    let b = self.eval(right, f)?;
                    let r = self.compare(*op, &a, &b)?;
                    if !self.truthy(&r)? {
                        return Ok(Value::Bool(false));
                    }
                    a = b;
                }
                Value::Bool(true)
            }
            ExprKind::IfExp(test, body, orelse) => {
                let t = self.eval(test, f)?;
                if t.truthy()? {
                    self.eval(body, f)?
                } else {
                    self.eval(orelse, f)?
                }
            }
            ExprKind::MakeFunction {
                code,
                defaults,
                captures,
                decorators,
                annotations,
            } => {
                let decos = self.eval_all(decorators, f)?;
                let annotations = self.annotations(annotations, f)?;
                let mut dvals = Vec::with_capacity(defaults.len());
                for d in defaults {
                    dvals.push(match d {
                        Some(d) => Some(self.eval(d, f)?),
                        None => None,
                    });
                }
                let free_cells = captures
                    .iter()
                    .map(|&c| f.cells[c as usize].clone())
                    .collect();
                let mut v = Value::Function(Rc::new(Function {
                    code: code.clone(),
                    defaults: dvals,
                    free_cells,
                    annotations,
                }));
                for d in decos.iter().rev() {
                    v = self
                        .call(d, vec![v], Vec::new())
                        .map_err(|err| at_call(err, f.loc(e.span)))?;
                }
                v
            }
            ExprKind::Call(func, args) => {
                let fv = self.eval(func, f)?;
                let mut pos = Vec::with_capacity(args.len());
                let mut kw = Vec::new();
                for a in args {
                    match a {
                        CallArg::Positional(x) => pos.push(self.eval(x, f)?),
                        CallArg::Starred(x) => {
                            let v = self.eval(x, f)?;
                            pos.extend(self.items(&v).map_err(|err| err.at(|| f.loc(x.span)))?);
                        }
                        CallArg::Keyword(name, x) => kw.push((name.clone(), self.eval(x, f)?)),
                        CallArg::DoubleStarred(x) => match self.eval(x, f)? {
                            Value::Dict(d) => {
                                for (k, v) in d.borrow().iter() {
                                    match k {
                                        Key::Str(s) => kw.push((s.clone(), v.clone())),
                                        _ => {
                                            return Err(Error::type_error(
                                                "keywords must be strings",
                                            ))
                                        }
                                    }
                                }
                            }
                            other => {
                                return Err(Error::type_error(format!(
                                    "argument after ** must be a dict, not {}",
                                    other.type_name()
                                )))
                            }
                        },
                    }
                }
                return self
                    .call(&fv, pos, kw)
                    .map_err(|err| at_call(err, f.loc(e.span)));
            }
            ExprKind::Attribute(obj, attr) => {
                let o = self.eval(obj, f)?;
                return self
                    .attr(&o, attr)
                    .map_err(|err| at_call(err, f.loc(e.span)));
            }
            ExprKind::Subscript(obj, index) => {
                let o = self.eval(obj, f)?;
                let mut i = self.eval(index, f)?;
                // An instance with `__index__` (an IntEnum) indexes as its int.
                if matches!(i, Value::Instance(_)) && !crate::eval::is_instance_like(&o) {
                    if let Some(m) = self.method_of(&i, "__index__") {
                        i = self.call(&m, Vec::new(), Vec::new())?;
                    }
                }
                match &o {
                    _ if crate::eval::is_instance_like(&o) => {
                        return self
                            .instance_item(&o, &i)
                            .map_err(|err| at_call(err, f.loc(e.span)));
                    }
                    Value::Array(a)
                        if self.jax_rules
                            || a.as_concrete().is_some_and(|c| c.flavour() != Flavour::Jax) =>
                    {
                        array_item(a, &i, self.jax_rules)?
                    }
                    _ => get_item(&o, &i)?,
                }
            }
            ExprKind::Slice(a, b, c) => {
                let mut part = |p: &Option<Box<Expr>>| -> Result<Option<i64>> {
                    match p {
                        None => Ok(None),
                        Some(x) => match self.eval(x, f)? {
                            Value::None => Ok(None),
                            v => v.to_int()?.map(Some).ok_or_else(|| {
                                Error::type_error("slice indices must be integers or None")
                            }),
                        },
                    }
                };
                let (start, stop, step) = (part(a)?, part(b)?, part(c)?);
                Value::Slice(Rc::new(SliceValue { start, stop, step }))
            }
            ExprKind::Comprehension {
                elt,
                value,
                generators,
            } => {
                let mut out_list = Vec::new();
                let mut out_dict = Dict::default();
                self.comprehend(
                    generators,
                    elt,
                    value.as_deref(),
                    f,
                    &mut out_list,
                    &mut out_dict,
                )?;
                if value.is_some() {
                    Value::dict(out_dict)
                } else {
                    Value::list(out_list)
                }
            }
        })
    }

    /// A function's annotations as a dict, evaluated as the definition runs
    /// (as Python does before 3.14); one whose expression fails (a type
    /// that is not defined, `int | None` on a builtin) keeps its source text.
    fn annotations(
        &mut self,
        annotations: &[(Rc<str>, Expr, Rc<str>)],
        f: &mut Frame,
    ) -> Result<Value> {
        if annotations.is_empty() {
            return Ok(Value::None);
        }
        let mut d = Dict::default();
        for (name, e, text) in annotations {
            let v = match self.eval(e, f) {
                Ok(v) => v,
                Err(err)
                    if matches!(
                        err.kind,
                        ErrorKind::NameError | ErrorKind::AttributeError | ErrorKind::TypeError
                    ) =>
                {
                    Value::str(text)
                }
                Err(err) => return Err(err),
            };
            d.insert(Key::Str(name.clone()), v);
        }
        Ok(Value::dict(d))
    }

    /// A comparison; instances answer through their methods.
    pub(crate) fn compare(
        &mut self,
        op: arr_lang::ast::CmpOp,
        a: &Value,
        b: &Value,
    ) -> Result<Value> {
        if matches!(a, Value::Instance(_))
            || matches!(b, Value::Instance(_))
            || (matches!(op, CmpOp::In | CmpOp::NotIn) && crate::class::has_metaclass(b))
        {
            return self.instance_compare(op, a, b);
        }
        if let (CmpOp::In | CmpOp::NotIn, Some(_)) = (op, super::generator::generator_of(b)) {
            // Membership in a generator steps it up to the first equal item.
            let mut items = self.iterate(b)?;
            while let Some(x) = self.next_item(&mut items)? {
                if compare_op(CmpOp::Eq, &x, a)?.truthy()? {
                    return Ok(Value::Bool(op == CmpOp::In));
                }
            }
            return Ok(Value::Bool(op == CmpOp::NotIn));
        }
        compare_op(op, a, b)
    }

    fn comprehend(
        &mut self,
        gens: &[Generator],
        elt: &Expr,
        value: Option<&Expr>,
        f: &mut Frame,
        list: &mut Vec<Value>,
        dict: &mut Dict,
    ) -> Result<()> {
        let Some((g, rest)) = gens.split_first() else {
            let k = self.eval(elt, f)?;
            match value {
                Some(v) => {
                    let key = k.to_key()?;
                    let val = self.eval(v, f)?;
                    if dict.len() == dict.capacity() {
                        // A dict entry: key, value and hash, ~3 values.
                        let want = dict.len().max(4) * 2;
                        crate::value::check_len("dict", "items", &[want], 48)?;
                        dict.try_reserve(want - dict.len()).map_err(|_| {
                            Error::new(
                                crate::ErrorKind::MemoryError,
                                format!("cannot allocate a dict of {want} items"),
                            )
                        })?;
                    }
                    dict.insert(key, val);
                }
                None => crate::value::push_item(list, k)?,
            }
            return Ok(());
        };
        let it = self.eval(&g.iter, f)?;
        let mut items = self.iterate(&it)?;
        'items: while let Some(item) = self.next_item(&mut items)? {
            self.check_interrupt()?;
            self.assign(&g.target, item, f)?;
            for cond in &g.ifs {
                if !self.eval(cond, f)?.truthy()? {
                    continue 'items;
                }
            }
            self.comprehend(rest, elt, value, f, list, dict)?;
        }
        Ok(())
    }
}

/// A Python sequence index (negative from the end), bounds-checked.
pub fn seq_index(idx: &Value, len: usize) -> Result<usize> {
    let i = idx.to_int()?.ok_or_else(|| {
        Error::type_error(format!(
            "indices must be integers or slices, not {}",
            idx.type_name()
        ))
    })?;
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(Error::index_error(format!(
            "index {i} out of range for length {len}"
        )));
    }
    Ok(j as usize)
}

fn slice_items<T: Clone>(items: &[T], s: &SliceValue) -> Result<Vec<T>> {
    let n = items.len() as i64;
    let step = s.step.unwrap_or(1);
    if step == 0 {
        return Err(Error::value_error("slice step cannot be zero"));
    }
    let norm = |v: i64, lo: i64, hi: i64| (if v < 0 { v + n } else { v }).clamp(lo, hi);
    let mut out = Vec::new();
    if step > 0 {
        let (mut i, stop) = (
            s.start.map_or(0, |v| norm(v, 0, n)),
            s.stop.map_or(n, |v| norm(v, 0, n)),
        );
        while i < stop {
            out.push(items[i as usize].clone());
            i += step;
        }
    } else {
        let (mut i, stop) = (
            s.start.map_or(n - 1, |v| norm(v, -1, n - 1)),
            s.stop.map_or(-1, |v| norm(v, -1, n - 1)),
        );
        while i > stop {
            out.push(items[i as usize].clone());
            i += step;
        }
    }
    Ok(out)
}

/// `a[i]` of a program that follows JAX's rules (`jax_rules`: integer
/// indices clamp) or of a NumPy array (indices checked, a NumPy result).
fn array_item(a: &Tensor, i: &Value, jax_rules: bool) -> Result<Value> {
    let ndarray = matches!(a, Tensor::Concrete(x) if matches!(x.flavour(), Flavour::NumPy { .. }));
    let bounds = match jax_rules && !ndarray {
        true => index::Bounds::Clamp,
        false => index::Bounds::Check,
    };
    if let Some(shape) = numpy::key_shape(a) {
        // Keys index along the axes they show, never into a key's words.
        let n = match i {
            Value::Tuple(t) => t.iter().filter(|v| !matches!(v, Value::None)).count(),
            _ => 1,
        };
        if n > shape.len() || matches!(i, Value::Ellipsis) {
            return Err(Error::index_error(format!(
                "too many indices for a key array of shape {shape:?}"
            )));
        }
    }
    Ok(numpy::part_of(a, index::get_index_as(a, i, bounds)?))
}

/// The built-in types that annotations subscript (`list[int]`).
const GENERIC_TYPES: &[&str] = &["tuple", "list", "dict", "set", "frozenset", "type"];

/// `o[i]` for every subscriptable value.
pub fn get_item(o: &Value, i: &Value) -> Result<Value> {
    match (o, i) {
        (Value::Array(a), _) => Ok(Value::Array(index::get_index(a, i)?)),
        (Value::List(l), Value::Slice(s)) => Ok(Value::list(slice_items(&l.borrow(), s)?)),
        (Value::Tuple(t), Value::Slice(s)) => Ok(Value::tuple(slice_items(t, s)?)),
        (Value::Str(st), Value::Slice(s)) => {
            let chars: Vec<char> = st.chars().collect();
            Ok(Value::str(
                &slice_items(&chars, s)?.into_iter().collect::<String>(),
            ))
        }
        (Value::List(l), _) => {
            let l = l.borrow();
            Ok(l[seq_index(i, l.len())?].clone())
        }
        (Value::Tuple(t), _) => Ok(t[seq_index(i, t.len())?].clone()),
        (Value::Str(s), _) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(Value::str(&chars[seq_index(i, chars.len())?].to_string()))
        }
        (Value::Range(r), _) => Ok(Value::Int(
            r.start + r.step * seq_index(i, range_len(o))? as i64,
        )),
        (Value::Dict(d), _) => {
            let k = i.to_key()?;
            d.borrow()
                .get(&k)
                .cloned()
                .ok_or_else(|| crate::exception::key_error(i))
        }
        // `tuple[int, ...]`, `dict[str, Array]`: a generic alias of a
        // built-in type, as annotations write it; annotations are not
        // enforced, so the alias is the type itself.
        (Value::Builtin(b), _) if GENERIC_TYPES.contains(&&*b.name) => Ok(o.clone()),
        (Value::Object(ob), _) => ob.get_item(i).unwrap_or_else(|| {
            Err(Error::type_error(format!(
                "'{}' object is not subscriptable",
                o.type_name()
            )))
        }),
        _ => Err(Error::type_error(format!(
            "'{}' object is not subscriptable",
            o.type_name()
        ))),
    }
}
