//! Python builtins (print, len, range, containers, conversions, sorting, timing)
//! and the methods of lists, dicts and strings.

use crate::args::*;
use crate::Registry;
use arr_lang::ast::BinOp;
use arr_runtime::display;
use arr_runtime::eval::generator::{generator_of, stop_iteration, Input, Resumed};
use arr_runtime::eval::{binary_op, iter_items, seq_index, values_equal, IterValue};
use arr_runtime::numpy;
use arr_runtime::session::help_for;
use arr_runtime::{exception, set};
use arr_runtime::{Dict, Error, ErrorKind, Interp, Key, Result, Tensor, Value};
use std::cmp::Ordering;
use std::time::Instant;

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "set_memory_limit(limit)",
        "Bound the session's memory (with MemoryError): any one array, list or string larger \
         than limit, and values that together hold more. limit is a number of bytes, or a \
         string such as '8G' or '512M'; None lifts the limit. ARR_MEMORY_LIMIT sets it at \
         start-up. Returns the previous limit in bytes (or None).",
        set_memory_limit,
    );
    r.effect_func(
        "print(*args, sep=' ', end='\\n', file=None, flush=False, all_processes=False)",
        "Print values separated by sep and followed by end (output is written a line at a \
         time, so flush is accepted and changes nothing); file: an object with a write \
         method (sys.stderr, sys.stdout, an open file) instead of the output. In a job of \
         several processes only process 0 prints, unless all_processes (or ARR_PRINT_ALL=1): \
         then every process prints, the lines of processes after 0 prefixed with their index.",
        print,
    );
    r.effect_func(
        "_stream_write(fd, text)",
        "Write text to the output (fd 1) or to standard error (fd 2): sys.stdout and \
         sys.stderr write through this.",
        |interp, a| {
            let text = str_arg("write", &a[1])?.to_string();
            match &a[0] {
                Value::Int(2) => {
                    use std::io::Write;
                    let mut err = std::io::stderr();
                    let _ = err.write_all(text.as_bytes());
                    let _ = err.flush();
                }
                _ => interp.write_out(&text),
            }
            Ok(Value::Int(text.chars().count() as i64))
        },
    );
    r.func(
        "_traceback_format_exc(limit=None, chain=True)",
        "The exception being handled, as the text of its traceback (traceback.format_exc).",
        |interp, _| {
            Ok(Value::str(&match interp.handled_error() {
                // (Python's text always starts so, even for one frame.)
                Some(e) => match e.render() {
                    r if r.starts_with("Traceback") => r,
                    r => format!("Traceback (most recent call last):\n{r}"),
                },
                None => "NoneType: None\n".to_string(),
            }))
        },
    );
    r.func(
        "len(x)",
        "Number of items of a sequence, dict or string; the first axis of an array.",
        len,
    );
    r.func(
        "range(start, stop=None, step=1)",
        "The integers from start (default 0) up to stop, by step.",
        range,
    );
    r.func(
        "slice(*args)",
        "A slice object, as `a:b:c` in an index: slice(stop), slice(start, stop[, step]).",
        slice,
    );
    r.func(
        "enumerate(xs, start=0)",
        "Pairs (i, x) for the items of xs, counting from start.",
        enumerate,
    );
    r.func(
        "zip(*iterables)",
        "Tuples of corresponding items, as long as the shortest input.",
        zip,
    );
    r.func("list(xs=())", "A new list of the items of xs.", list);
    r.func("tuple(xs=())", "A tuple of the items of xs.", tuple);
    r.func(
        "dict(pairs=None, **kwargs)",
        "A new dict from (key, value) pairs or another dict, plus keyword entries.",
        dict,
    );
    r.func(
        "str(x='')",
        "The string form of x (what print shows).",
        str_,
    );
    r.func(
        "repr(x)",
        "The printable representation of x (what the REPL shows; in a program that imports \
         jax, an array's is JAX's: Array([1., 2.], dtype=float32)).",
        repr,
    );
    r.func(
        "int(x=0)",
        "x as a Python int (truncates floats; parses strings).",
        int,
    );
    r.func(
        "float(x=0.0)",
        "x as a Python float (parses strings such as 'inf').",
        float,
    );
    r.func("bool(x=False)", "The truth value of x.", bool_);
    r.func(
        "sorted(xs, key=None, reverse=False)",
        "A new sorted list of the items of xs.",
        sorted,
    );
    r.func(
        "iter(xs)",
        "An iterator over the items of xs, for next (an iterator is its own iterator).",
        |interp, a| {
            if IterValue::of(&a[0]).is_some() || generator_of(&a[0]).is_some() {
                return Ok(a[0].clone());
            }
            // An instance's `__iter__` is called once: its iterator, or its items.
            if let Value::Instance(_) = &a[0] {
                return Ok(match interp.instance_iterator(&a[0])? {
                    Ok(items) => IterValue::value(items),
                    Err(iterator) => iterator,
                });
            }
            Ok(IterValue::value(items_of(interp, &a[0])?))
        },
    );
    r.func(
        "next(it, *default)",
        "The next item of the iterator it; at the end, default if given, else StopIteration.",
        |interp, a| {
            let default = numpy::sequence_items(&a[1])?;
            // A generator's return value goes with its StopIteration.
            let end = match generator_of(&a[0]) {
                Some(g) => match interp.resume(g, Input::Send(Value::None))? {
                    Resumed::Yield(v) => return Ok(v),
                    Resumed::Return(v) => v,
                },
                None => match interp.next_of(&a[0])? {
                    Some(v) => return Ok(v),
                    None => Value::None,
                },
            };
            match default.first() {
                Some(d) => Ok(d.clone()),
                None => Err(stop_iteration(end)),
            }
        },
    );
    register_generator_methods(r);
    r.func(
        "reversed(xs)",
        "The items of xs in reverse order, as a list.",
        reversed,
    );
    r.func(
        "map(f, *iterables)",
        "A list of f applied to corresponding items.",
        map,
    );
    r.func(
        "filter(f, xs)",
        "A list of the items of xs for which f is true (truthy items if f is None).",
        filter,
    );
    r.func("isinstance(x, types)", "Whether x is of one of the given types (int, float, str, list, tuple, dict, bool, ndarray).", isinstance);
    r.func(
        "type(x, bases=None, dict=None)",
        "The class of an instance; for other values their type as arr writes it, e.g. \
         'int' or 'f32[3,4]' (whose __name__ is Python's name: 'int', 'ArrayImpl'). With \
         three arguments, type(name, bases, dict) makes a class, as a class statement does.",
        type_,
    );
    r.func("callable(x)", "Whether x can be called.", callable);
    r.func(
        "dir(obj=None)",
        "The sorted names of obj's attributes; without obj, the names defined at the \
         top level of the program (arr's functions see the same list: it does not \
         list a function's locals).",
        dir,
    );
    r.effect_func(
        "help(x)",
        "Show the signature and documentation of x.",
        help,
    );
    r.func(
        "format(x, spec='')",
        "Format x with a format spec such as '.3f'.",
        format,
    );
    r.effect_func(
        "perf_counter()",
        "Seconds from a monotonic clock, for timing.",
        perf_counter,
    );
    r.effect_func(
        "timeit(f, number=None, repeat=5)",
        "Time f() and return the best seconds per call over `repeat` runs of `number` calls (number chosen automatically if None).",
        timeit,
    );
    r.func(
        "block_until_ready(x)",
        "Wait until every array in the pytree x is computed and return x.",
        block_until_ready,
    );
    r.method(
        "array",
        "block_until_ready(self)",
        "Wait until the array is computed and return it.",
        block_until_ready,
    );

    r.method(
        "array",
        "is_deleted(self)",
        "Whether the array's buffer is gone: donated to a jitted function \
         (jit(f, donate_argnums=...)) or freed with x.delete().",
        |_, a| {
            Ok(Value::Bool(matches!(
                &a[0],
                Value::Array(Tensor::Concrete(x)) if x.deleted().is_some()
            )))
        },
    );
    r.method(
        "array",
        "delete(self)",
        "Free the array's buffer now; every later use of the array is an error.",
        |_, a| {
            if let Value::Array(Tensor::Concrete(x)) = &a[0] {
                x.donate("it was freed with delete()");
            }
            Ok(Value::None)
        },
    );
    r.method(
        "array",
        "unsafe_buffer_pointer(self)",
        "The address of the array's first element: arrays with the same address \
         share storage (to check that a donated buffer was reused).",
        |_, a| {
            let x = array_arg(&a[0])?;
            Ok(Value::Int(x.concrete()?.buffer_address()? as i64))
        },
    );

    r.mutating_method(
        "list",
        "append(self, x)",
        "Add x at the end of the list.",
        list_append,
    );
    r.mutating_method(
        "list",
        "extend(self, xs)",
        "Add the items of xs at the end of the list.",
        list_extend,
    );
    r.mutating_method(
        "list",
        "pop(self, i=-1)",
        "Remove and return the item at i (default the last).",
        list_pop,
    );
    r.mutating_method(
        "list",
        "insert(self, i, x)",
        "Insert x before position i.",
        list_insert,
    );
    r.method(
        "list",
        "index(self, x)",
        "The position of the first item equal to x.",
        list_index,
    );
    r.method(
        "list",
        "count(self, x)",
        "How many items equal x.",
        list_count,
    );
    r.method(
        "tuple",
        "index(self, x)",
        "The position of the first item equal to x.",
        list_index,
    );
    r.method(
        "tuple",
        "count(self, x)",
        "How many items equal x.",
        list_count,
    );
    r.method(
        "list",
        "copy(self)",
        "A shallow copy of the list.",
        list_copy,
    );
    r.mutating_method(
        "list",
        "reverse(self)",
        "Reverse the list in place.",
        list_reverse,
    );
    r.mutating_method(
        "list",
        "sort(self, key=None, reverse=False)",
        "Sort the list in place.",
        list_sort,
    );
    r.mutating_method(
        "list",
        "remove(self, x)",
        "Remove the first item equal to x.",
        list_remove,
    );
    r.mutating_method("list", "clear(self)", "Remove every item.", list_clear);
    r.method("dict", "keys(self)", "The keys, as a list.", dict_keys);
    r.method(
        "dict",
        "values(self)",
        "The values, as a list.",
        dict_values,
    );
    r.method(
        "dict",
        "items(self)",
        "The (key, value) pairs, as a list.",
        dict_items,
    );
    r.method(
        "dict",
        "get(self, key, default=None)",
        "The value for key, or default.",
        dict_get,
    );
    r.mutating_method(
        "dict",
        "update(self, other=None, **kwargs)",
        "Insert every entry of other (a dict, or (key, value) pairs), then the keyword entries.",
        dict_update,
    );
    r.mutating_method(
        "dict",
        "pop(self, key, default=...)",
        "Remove key and return its value (or default).",
        dict_pop,
    );
    r.method(
        "dict",
        "copy(self)",
        "A shallow copy of the dict.",
        dict_copy,
    );
    r.mutating_method("dict", "clear(self)", "Remove every item.", |_, a| {
        the_dict(&a[0]).borrow_mut().clear();
        Ok(Value::None)
    });
    r.mutating_method(
        "dict",
        "popitem(self)",
        "Remove and return the last (key, value) pair inserted.",
        |_, a| match the_dict(&a[0]).borrow_mut().pop() {
            Some((k, v)) => Ok(Value::tuple(vec![k.to_value(), v])),
            None => Err(Error::new(
                ErrorKind::KeyError,
                "'popitem(): dictionary is empty'",
            )),
        },
    );
    r.mutating_method(
        "dict",
        "setdefault(self, key, default=None)",
        "The value for key, inserting default first if missing.",
        dict_setdefault,
    );
    r.method(
        "str",
        "join(self, xs)",
        "The strings of xs joined by this string.",
        str_join,
    );
    r.method(
        "str",
        "split(self, sep=None, maxsplit=-1)",
        "The words of the string (split at sep, or at whitespace), at most maxsplit splits \
         (all when negative).",
        str_split,
    );
    r.method(
        "str",
        "rsplit(self, sep=None, maxsplit=-1)",
        "The words of the string split from the right: at most maxsplit splits, the last ones.",
        str_rsplit,
    );
    r.method(
        "str",
        "splitlines(self, keepends=False)",
        "The lines of the string (split at \\n, \\r\\n or \\r; no empty last line).",
        |_, a| {
            let (t, keep) = (s(&a[0])?, a[1].truthy()?);
            let mut lines = Vec::new();
            let mut rest = t;
            while !rest.is_empty() {
                let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
                let sep = match &rest[end..] {
                    r if r.starts_with("\r\n") => 2,
                    "" => 0,
                    _ => 1,
                };
                let line = if keep {
                    &rest[..end + sep]
                } else {
                    &rest[..end]
                };
                lines.push(Value::str(line));
                rest = &rest[end + sep..];
            }
            Ok(Value::list(lines))
        },
    );
    r.method("str", "upper(self)", "Upper-case copy.", |_, a| {
        Ok(Value::str(&s(&a[0])?.to_uppercase()))
    });
    r.method("str", "lower(self)", "Lower-case copy.", |_, a| {
        Ok(Value::str(&s(&a[0])?.to_lowercase()))
    });
    r.method(
        "str",
        "strip(self, chars=None)",
        "Copy without leading and trailing whitespace (or the characters of chars).",
        |_, a| strip(&a, true, true),
    );
    r.method(
        "str",
        "replace(self, old, new)",
        "Copy with every old replaced by new.",
        str_replace,
    );
    r.method(
        "str",
        "ljust(self, width, fillchar=' ')",
        "The string padded on the right with fillchar to width characters.",
        |_, a| pad_str(s(&a[0])?, &a[1], &a[2], |_, _| 0),
    );
    r.method(
        "str",
        "rjust(self, width, fillchar=' ')",
        "The string padded on the left with fillchar to width characters.",
        |_, a| pad_str(s(&a[0])?, &a[1], &a[2], |pad, _| pad),
    );
    r.method(
        "str",
        "center(self, width, fillchar=' ')",
        "The string centred in width characters of fillchar.",
        // Python's rule: an odd padding puts the extra character on the
        // left when the width is odd.
        |_, a| {
            pad_str(s(&a[0])?, &a[1], &a[2], |pad, width| {
                pad / 2 + (pad & width & 1)
            })
        },
    );
    r.method(
        "str",
        "zfill(self, width)",
        "The string padded on the left with zeros to width characters (after a sign).",
        str_zfill,
    );
    r.method(
        "str",
        "startswith(self, prefix)",
        "Whether the string starts with prefix.",
        |_, a| Ok(Value::Bool(s(&a[0])?.starts_with(s(&a[1])?))),
    );
    r.method(
        "str",
        "endswith(self, suffix)",
        "Whether the string ends with suffix.",
        |_, a| Ok(Value::Bool(s(&a[0])?.ends_with(s(&a[1])?))),
    );
    register_more(r);
    r.method(
        "str",
        "format(self, *args, **kwargs)",
        "Replace {} / {0} / {name} fields (with optional :spec).",
        str_format,
    );
}

fn s(v: &Value) -> Result<&str> {
    str_arg("argument", v)
}

/// Sets, `divmod`, and the string methods beyond the basic ones.
fn register_more(r: &mut Registry) {
    register_str_more(r);
    r.func(
        "set(xs=())",
        "A new set of the items of xs (iterated in sorted order).",
        |interp, a| set::from_values(items_of(interp, &a[0])?),
    );
    r.func(
        "frozenset(xs=())",
        "A set of the items of xs (arr's sets: the same type as set).",
        |interp, a| set::from_values(interp.items(&a[0])?),
    );
    r.func(
        "hex(x)",
        "The integer x in base 16, prefixed '0x'.",
        |_, a| int_in_base(&a[0], "0x", 16),
    );
    r.func(
        "oct(x)",
        "The integer x in base 8, prefixed '0o'.",
        |_, a| int_in_base(&a[0], "0o", 8),
    );
    r.func(
        "bin(x)",
        "The integer x in base 2, prefixed '0b'.",
        |_, a| int_in_base(&a[0], "0b", 2),
    );
    r.func(
        "_function_parameters(f)",
        "The parameters of a function written in arr, for inspect.signature: a list of \
         (name, kind, has_default, default), kind one of 'POSITIONAL_OR_KEYWORD', \
         'KEYWORD_ONLY', 'VAR_POSITIONAL', 'VAR_KEYWORD'; a bound method without its first.",
        |_, a| function_parameters(&a[0]),
    );
    r.func(
        "hash(x)",
        "x's hash: an integer equal for equal values (an int's is itself), by identity for \
         objects; TypeError for lists, dicts and sets.",
        |interp, a| python_hash(interp, &a[0]),
    );
    r.func(
        "pow(base, exp, mod=None)",
        "base ** exp; with mod, (base ** exp) % mod for integers, computed without the \
         huge power.",
        |_, a| match &a[2] {
            Value::None => binary_op(BinOp::Pow, a[0].clone(), a[1].clone()),
            m => {
                let (b, e, m) = (
                    int_arg("pow", &a[0])?,
                    int_arg("pow", &a[1])?,
                    int_arg("pow", m)?,
                );
                if m == 0 {
                    return Err(Error::value_error("pow() 3rd argument cannot be 0"));
                }
                if e < 0 {
                    return Err(Error::value_error(
                        "pow() with a negative exponent and a modulus is not supported",
                    ));
                }
                let m128 = m as i128;
                let (mut result, mut base, mut e) = (1i128, (b as i128).rem_euclid(m128), e);
                while e > 0 {
                    if e & 1 == 1 {
                        result = (result * base).rem_euclid(m128);
                    }
                    base = (base * base).rem_euclid(m128);
                    e >>= 1;
                }
                // Python's result has the modulus's sign.
                let r = result.rem_euclid(m128);
                Ok(Value::Int(if m < 0 && r != 0 {
                    (r + m128) as i64
                } else {
                    r as i64
                }))
            }
        },
    );
    r.func("divmod(a, b)", "The pair (a // b, a % b).", |_, a| {
        let q = binary_op(BinOp::FloorDiv, a[0].clone(), a[1].clone())?;
        let m = binary_op(BinOp::Mod, a[0].clone(), a[1].clone())?;
        Ok(Value::tuple(vec![q, m]))
    });
    r.mutating_method("set", "add(self, x)", "Add x to the set.", |_, a| {
        let k = a[1].to_key()?;
        the_set(&a[0])?.items.borrow_mut().insert(k);
        Ok(Value::None)
    });
    r.mutating_method(
        "set",
        "remove(self, x)",
        "Remove x from the set (KeyError if it is missing).",
        |_, a| {
            let k = a[1].to_key()?;
            if !the_set(&a[0])?.items.borrow_mut().remove(&k) {
                return Err(exception::key_error(&a[1]));
            }
            Ok(Value::None)
        },
    );
    r.mutating_method(
        "set",
        "discard(self, x)",
        "Remove x from the set if it is there.",
        |_, a| {
            let k = a[1].to_key()?;
            the_set(&a[0])?.items.borrow_mut().remove(&k);
            Ok(Value::None)
        },
    );
    r.mutating_method("set", "update(self, xs)", "Add the items of xs.", |_, a| {
        let keys = iter_items(&a[1])?
            .iter()
            .map(|v| v.to_key())
            .collect::<Result<Vec<Key>>>()?;
        the_set(&a[0])?.items.borrow_mut().extend(keys);
        Ok(Value::None)
    });
    r.mutating_method("set", "clear(self)", "Remove every item.", |_, a| {
        the_set(&a[0])?.items.borrow_mut().clear();
        Ok(Value::None)
    });
    r.method(
        "set",
        "copy(self)",
        "A new set of the same items.",
        |_, a| Ok(set::value(the_set(&a[0])?.items.borrow().clone())),
    );
    for (sig, doc, op) in [
        (
            "union(self, other)",
            "The items in either set.",
            BinOp::BitOr,
        ),
        (
            "intersection(self, other)",
            "The items in both sets.",
            BinOp::BitAnd,
        ),
        (
            "difference(self, other)",
            "The items not in other.",
            BinOp::Sub,
        ),
        (
            "symmetric_difference(self, other)",
            "The items in exactly one of the sets.",
            BinOp::BitXor,
        ),
    ] {
        r.method_from("set", sig, doc, move |_, a| {
            let other = set::from_values(iter_items(&a[1])?)?;
            binary_op(op, a[0].clone(), other)
        });
    }
    for (sig, doc, op) in [
        (
            "difference_update(self, other)",
            "Remove the items in other.",
            BinOp::Sub,
        ),
        (
            "intersection_update(self, other)",
            "Keep only the items also in other.",
            BinOp::BitAnd,
        ),
        (
            "symmetric_difference_update(self, other)",
            "Keep the items in exactly one of the sets.",
            BinOp::BitXor,
        ),
    ] {
        r.mutating_method_from("set", sig, doc, move |_, a| {
            let other = set::from_values(iter_items(&a[1])?)?;
            let result = binary_op(op, a[0].clone(), other)?;
            let items = the_set(&result)?.items.borrow().clone();
            *the_set(&a[0])?.items.borrow_mut() = items;
            Ok(Value::None)
        });
    }
    r.mutating_method(
        "set",
        "pop(self)",
        "Remove and return an item (KeyError when the set is empty).",
        |_, a| match the_set(&a[0])?.items.borrow_mut().pop_first() {
            Some(k) => Ok(k.to_value()),
            None => Err(Error::new(ErrorKind::KeyError, "'pop from an empty set'")),
        },
    );
    r.method(
        "set",
        "isdisjoint(self, other)",
        "Whether the sets have no item in common.",
        |_, a| {
            let other = set::from_values(iter_items(&a[1])?)?;
            let o = the_set(&other)?.items.borrow().clone();
            Ok(Value::Bool(the_set(&a[0])?.items.borrow().is_disjoint(&o)))
        },
    );
    r.method(
        "set",
        "issubset(self, other)",
        "Whether every item is in other.",
        |_, a| {
            let other = set::from_values(iter_items(&a[1])?)?;
            let o = the_set(&other)?.items.borrow().clone();
            Ok(Value::Bool(the_set(&a[0])?.items.borrow().is_subset(&o)))
        },
    );
    r.method(
        "set",
        "issuperset(self, other)",
        "Whether every item of other is in the set.",
        |_, a| {
            let other = set::from_values(iter_items(&a[1])?)?;
            let o = the_set(&other)?.items.borrow().clone();
            Ok(Value::Bool(the_set(&a[0])?.items.borrow().is_superset(&o)))
        },
    );
    r.method(
        "str",
        "count(self, sub)",
        "How many times sub occurs, not overlapping.",
        |_, a| {
            let (t, sub) = (s(&a[0])?, s(&a[1])?);
            Ok(Value::Int(if sub.is_empty() {
                t.chars().count() as i64 + 1
            } else {
                t.matches(sub).count() as i64
            }))
        },
    );
    r.method(
        "str",
        "index(self, sub, start=None, end=None)",
        "The index of the first sub in self[start:end]; ValueError when there is none.",
        |_, a| match str_search(&a, false)? {
            Some(i) => Ok(Value::Int(i)),
            None => Err(Error::value_error("substring not found")),
        },
    );
    r.method(
        "str",
        "find(self, sub, start=None, end=None)",
        "The index of the first sub in self[start:end], or -1.",
        |_, a| Ok(Value::Int(str_search(&a, false)?.unwrap_or(-1))),
    );
    r.method(
        "str",
        "rfind(self, sub, start=None, end=None)",
        "The index of the last sub in self[start:end], or -1.",
        |_, a| Ok(Value::Int(str_search(&a, true)?.unwrap_or(-1))),
    );
    r.method(
        "str",
        "title(self)",
        "Copy with each word capitalised.",
        |_, a| {
            let mut out = String::new();
            let mut after_letter = false;
            for c in s(&a[0])?.chars() {
                if after_letter {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
                after_letter = c.is_alphabetic();
            }
            Ok(Value::str(&out))
        },
    );
    r.method(
        "str",
        "capitalize(self)",
        "Copy with the first character upper-case, the rest lower-case.",
        |_, a| {
            let t = s(&a[0])?;
            let mut chars = t.chars();
            let out: String = match chars.next() {
                Some(c) => c
                    .to_uppercase()
                    .chain(chars.as_str().to_lowercase().chars())
                    .collect(),
                None => String::new(),
            };
            Ok(Value::str(&out))
        },
    );
    r.method(
        "str",
        "lstrip(self, chars=None)",
        "Copy without leading whitespace (or the characters of chars).",
        |_, a| strip(&a, true, false),
    );
    r.method(
        "str",
        "rstrip(self, chars=None)",
        "Copy without trailing whitespace (or the characters of chars).",
        |_, a| strip(&a, false, true),
    );
    r.method(
        "str",
        "isdigit(self)",
        "Whether the string is non-empty and all digits.",
        |_, a| {
            let t = s(&a[0])?;
            Ok(Value::Bool(
                !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()),
            ))
        },
    );
}

fn the_set(v: &Value) -> Result<&set::SetValue> {
    set::as_set(v)
        .ok_or_else(|| Error::type_error(format!("expected a set, got {}", v.type_name())))
}

fn print(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = numpy::sequence_items(&a[0])?;
    // As Python: None means the default, anything but a string is a TypeError.
    let text = |what: &str, v: &Value, default: &str| match v {
        Value::None => Ok(default.to_string()),
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Error::type_error(format!(
            "{what} must be None or a string, not {}",
            other.type_name()
        ))),
    };
    let sep = text("sep", &a[1], " ")?;
    let end = text("end", &a[2], "\n")?;
    if matches!(a[3], Value::None)
        && items
            .iter()
            .any(|v| matches!(v, Value::Array(Tensor::Traced(_))))
    {
        if let Some(mesh) = arr_runtime::spmd::shard_map::printing_mesh() {
            return print_per_device(interp, mesh, &items, sep, end);
        }
    }
    let mut out = items
        .iter()
        .map(|v| interp.str_of(v))
        .collect::<Result<Vec<_>>>()?
        .join(&sep);
    out.push_str(&end);
    if !matches!(a[3], Value::None) {
        let write = interp.attr(&a[3], "write")?;
        interp.call(&write, vec![Value::str(&out)], Vec::new())?;
        return Ok(Value::None);
    }
    if a[5].truthy()? {
        interp.write_out_always(&out);
    } else {
        interp.write_out(&out);
    }
    Ok(Value::None)
}

/// `print` of traced values in an eager shard_map: staged as a callback
/// that, each time the program runs, prints every device's block of them
/// (as JAX's eager shard_map prints its values).
fn print_per_device(
    interp: &mut Interp,
    mesh: std::sync::Arc<arr_kernels::sharding::Mesh>,
    items: &[Value],
    sep: String,
    end: String,
) -> Result<Value> {
    enum Part {
        Text(String),
        Operand(usize),
    }
    let mut parts = Vec::new();
    let mut operands = Vec::new();
    for v in items {
        match v {
            Value::Array(t @ Tensor::Traced(_)) => {
                parts.push(Part::Operand(operands.len()));
                operands.push(t.clone());
            }
            other => parts.push(Part::Text(interp.str_of(other)?)),
        }
    }
    let show: arr_runtime::prim::debug::GatherFun = std::rc::Rc::new(move |interp, devices| {
        let text: Vec<String> = parts
            .iter()
            .map(|p| match p {
                Part::Text(s) => s.clone(),
                Part::Operand(i) => {
                    let blocks: Vec<_> = devices
                        .iter()
                        .filter_map(|(d, arrays)| arrays.get(*i).map(|a| (*d, a.clone())))
                        .collect();
                    arr_runtime::spmd::shard_map::device_blocks_text(&mesh, &blocks)
                }
            })
            .collect();
        interp.write_out(&format!("{}{end}", text.join(&sep)));
        Ok(())
    });
    arr_runtime::prim::bind(&arr_runtime::prim::debug::register_gathered(show), operands)?;
    Ok(Value::None)
}

fn len(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if let Some(n) = interp.len_of(&a[0])? {
        return Ok(Value::Int(n));
    }
    Ok(Value::Int(match &a[0] {
        Value::Array(x) => match numpy::key_shape(x).unwrap_or(x.shape()) {
            [] => return Err(Error::type_error("len() of a 0-d array")),
            [n, ..] => *n as i64,
        },
        Value::Str(st) => st.chars().count() as i64,
        Value::Dict(d) => d.borrow().len() as i64,
        Value::List(l) => l.borrow().len() as i64,
        Value::Tuple(t) => t.len() as i64,
        v @ Value::Range(..) => arr_runtime::value::range_len(v) as i64,
        v @ Value::Object(_) if set::as_set(v).is_some() => {
            set::as_set(v).map_or(0, |s| s.items.borrow().len()) as i64
        }
        Value::Object(o) if o.len().is_some() => o.len().expect("checked") as i64,
        other => {
            return Err(Error::type_error(format!(
                "object of type '{}' has no len()",
                other.type_name()
            )))
        }
    }))
}

fn range(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (start, stop) = match &a[1] {
        Value::None => (0, int_arg("range stop", &a[0])?),
        stop => (int_arg("range start", &a[0])?, int_arg("range stop", stop)?),
    };
    let step = int_arg("range step", &a[2])?;
    if step == 0 {
        return Err(Error::value_error("range() arg 3 must not be zero"));
    }
    Ok(Value::Range(std::rc::Rc::new(
        arr_runtime::value::RangeValue { start, stop, step },
    )))
}

/// Whether any of `values` is a generator: `zip`, `enumerate`, `map` and
/// `filter` then step it lazily (an endless one included) through their
/// versions written as generators (`_lazy_zip`... in surface.arr), instead
/// of making a list.
fn lazy_call(
    interp: &mut Interp,
    values: &[Value],
    name: &str,
    args: Vec<Value>,
) -> Option<Result<Value>> {
    if !values.iter().any(|v| generator_of(v).is_some()) {
        return None;
    }
    Some(crate::builtin_named(interp, name).and_then(|f| interp.call(&f, args, Vec::new())))
}

fn enumerate(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let start = int_arg("start", &a[1])?;
    if let Some(r) = lazy_call(interp, &a[..1], "_lazy_enumerate", a.clone()) {
        return r;
    }
    Ok(Value::list(
        items_of(interp, &a[0])?
            .into_iter()
            .enumerate()
            .map(|(i, v)| Value::tuple(vec![Value::Int(start + i as i64), v]))
            .collect(),
    ))
}

fn zip(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let iterables = numpy::sequence_items(&a[0])?;
    if let Some(r) = lazy_call(interp, &iterables, "_lazy_zip", iterables.clone()) {
        return r;
    }
    let lists: Vec<Vec<Value>> = iterables
        .iter()
        .map(|v| items_of(interp, v))
        .collect::<Result<_>>()?;
    let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
    Ok(Value::list(
        (0..n)
            .map(|i| Value::tuple(lists.iter().map(|l| l[i].clone()).collect()))
            .collect(),
    ))
}

/// The items of any iterable, instances of user classes (`__iter__`,
/// `__getitem__` and `__len__`) included.
fn items_of(interp: &mut Interp, v: &Value) -> Result<Vec<Value>> {
    interp.items(v)
}

fn list(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::list(items_of(interp, &a[0])?))
}

fn tuple(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::tuple(items_of(interp, &a[0])?))
}

fn dict(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut d = Dict::default();
    match &a[0] {
        Value::None => {}
        Value::Dict(other) => d.extend(other.borrow().iter().map(|(k, v)| (k.clone(), v.clone()))),
        // A mapping of a user class: its keys() and items, as Python's dict().
        m @ Value::Instance(_) if interp.attr(m, "keys").is_ok() => {
            let keys = interp.attr(m, "keys")?;
            let keys = interp.call(&keys, Vec::new(), Vec::new())?;
            let get = interp.attr(m, "__getitem__")?;
            for k in items_of(interp, &keys)? {
                let v = interp.call(&get, vec![k.clone()], Vec::new())?;
                d.insert(k.to_key()?, v);
            }
        }
        other => {
            for pair in items_of(interp, other)? {
                let kv = interp.items(&pair)?;
                if kv.len() != 2 {
                    return Err(Error::value_error("dict() needs (key, value) pairs"));
                }
                d.insert(kv[0].to_key()?, kv[1].clone());
            }
        }
    }
    if let Value::Dict(kw) = &a[1] {
        d.extend(kw.borrow().iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(Value::dict(d))
}

fn str_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::str(&interp.str_of(&a[0])?))
}

fn repr(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // A JAX program's `repr(x)` is JAX's (`Array([1., 2.], dtype=float32)`,
    // as in a container); arr's is the REPL's line.
    if let (true, Value::Array(x)) = (interp.jax_rules, &a[0]) {
        return Ok(Value::str(&display::jax_repr(x)));
    }
    Ok(Value::str(&interp.repr_of(&a[0])?))
}

/// What an instance's conversion method (`__int__`, `__float__`, ...) gives,
/// when its class has the first of `names`.
fn converted(interp: &mut Interp, v: &Value, names: &[&str]) -> Result<Option<Value>> {
    if !matches!(v, Value::Instance(_)) {
        return Ok(None);
    }
    for name in names {
        if let Ok(m) = interp.attr(v, name) {
            return interp.call(&m, Vec::new(), Vec::new()).map(Some);
        }
    }
    Ok(None)
}

fn int(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match converted(interp, &a[0], &["__int__", "__index__"])? {
        Some(Value::Int(i)) => return Ok(Value::Int(i)),
        Some(other) => {
            return Err(Error::type_error(format!(
                "__int__ returned non-int (type {})",
                other.type_name()
            )))
        }
        None => {}
    }
    Ok(Value::Int(match &a[0] {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        Value::Float(f) => float_to_int(f.trunc())?,
        Value::Str(st) => st.trim().replace('_', "").parse().map_err(|_| {
            Error::value_error(format!(
                "invalid literal for int(): {}",
                display::repr(&a[0])
            ))
        })?,
        Value::Array(x) => match numpy::item(x)? {
            Value::Float(f) => float_to_int(f.trunc())?,
            v => v.as_int().unwrap_or(0),
        },
        other => {
            return Err(Error::type_error(format!(
                "int() argument must be a number or string, not {}",
                other.type_name()
            )))
        }
    }))
}

fn float(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match converted(interp, &a[0], &["__float__", "__index__"])? {
        Some(Value::Float(f)) => return Ok(Value::Float(f)),
        Some(Value::Int(i)) => return Ok(Value::Float(i as f64)),
        Some(other) => {
            return Err(Error::type_error(format!(
                "__float__ returned non-float (type {})",
                other.type_name()
            )))
        }
        None => {}
    }
    Ok(Value::Float(match &a[0] {
        Value::Str(st) => {
            let t = st.trim().to_lowercase();
            match t.as_str() {
                "inf" | "+inf" | "infinity" => f64::INFINITY,
                "-inf" | "-infinity" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                _ => t.parse().map_err(|_| {
                    Error::value_error(format!(
                        "could not convert string to float: {}",
                        display::repr(&a[0])
                    ))
                })?,
            }
        }
        // (As Python's float() of a complex number.)
        Value::Array(x) if x.dtype() == arr_kernels::DType::C64 => {
            return Err(Error::type_error(
                "float() argument must be a string or a real number, not 'complex'",
            ))
        }
        Value::Array(x) => numpy::item(x)?.as_f64().unwrap_or(f64::NAN),
        v => v.to_f64()?.ok_or_else(|| {
            Error::type_error(format!(
                "float() argument must be a number or string, not {}",
                v.type_name()
            ))
        })?,
    }))
}

fn bool_(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::Bool(a[0].truthy()?))
}

/// Sort values with an optional key function, Python's way (stable).
pub(crate) fn sort_values(
    interp: &mut Interp,
    items: Vec<Value>,
    key: &Value,
    reverse: bool,
) -> Result<Vec<Value>> {
    let keys = key_values(interp, &items, key)?;
    let mut order: Vec<usize> = (0..items.len()).collect();
    let mut error = None;
    // Python's reverse sort keeps equal items in their order too: reverse,
    // sort (stably), reverse.
    if reverse {
        order.reverse();
    }
    order.sort_by(|&i, &j| {
        interp.order_values(&keys[i], &keys[j]).unwrap_or_else(|e| {
            error.get_or_insert(e);
            Ordering::Equal
        })
    });
    if let Some(e) = error {
        return Err(e);
    }
    if reverse {
        order.reverse();
    }
    Ok(order.into_iter().map(|i| items[i].clone()).collect())
}

fn sorted(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = items_of(interp, &a[0])?;
    Ok(Value::list(sort_values(
        interp,
        items,
        &a[1],
        a[2].truthy()?,
    )?))
}

fn reversed(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut items = items_of(interp, &a[0])?;
    items.reverse();
    Ok(Value::list(items))
}

fn map(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let iterables = numpy::sequence_items(&a[1])?;
    let mut args = vec![a[0].clone()];
    args.extend(iterables.iter().cloned());
    if let Some(r) = lazy_call(interp, &iterables, "_lazy_map", args) {
        return r;
    }
    let lists: Vec<Vec<Value>> = iterables
        .iter()
        .map(|v| items_of(interp, v))
        .collect::<Result<_>>()?;
    let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(interp.call(
            &a[0],
            lists.iter().map(|l| l[i].clone()).collect(),
            Vec::new(),
        )?);
    }
    Ok(Value::list(out))
}

fn filter(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if let Some(r) = lazy_call(interp, &a[1..], "_lazy_filter", a.clone()) {
        return r;
    }
    let mut out = Vec::new();
    for x in items_of(interp, &a[1])? {
        let keep = match &a[0] {
            Value::None => x.truthy()?,
            f => interp.call(f, vec![x.clone()], Vec::new())?.truthy()?,
        };
        if keep {
            out.push(x);
        }
    }
    Ok(Value::list(out))
}

pub(crate) fn type_matches(x: &Value, t: &Value) -> Result<bool> {
    // `isinstance(x, type(y))`: the type of a value that is no instance.
    if let Value::Object(o) = t {
        if let Some(t) = o.as_any().downcast_ref::<arr_runtime::class::TypeName>() {
            return Ok(match t.name {
                "ArrayImpl" => matches!(x, Value::Array(_)) && !numpy::is_ndarray(x),
                "ndarray" => numpy::is_ndarray(x),
                "NoneType" => matches!(x, Value::None),
                "bool" => matches!(x, Value::Bool(_)),
                "int" => matches!(x, Value::Int(_) | Value::Bool(_)),
                name => arr_runtime::class::python_type_name(x) == name,
            });
        }
    }
    let name = match t {
        Value::Class(c) if arr_runtime::class::is_object(c) => return Ok(true),
        Value::Class(c) => {
            return Ok(matches!(x, Value::Instance(i) if i.class.is_subclass(c)));
        }
        Value::Builtin(b) if &*b.name == "object" => return Ok(true),
        Value::Builtin(b) if &*b.name == "tuple" => {
            return Ok(matches!(x, Value::Tuple(_))
                || matches!(x, Value::Instance(i) if i.items.is_some()))
        }
        Value::Builtin(b) => b.name.to_string(),
        Value::Tuple(ts) => {
            for t in ts.iter() {
                if type_matches(x, t)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        Value::DType(d) => return Ok(matches!(x, Value::Array(a) if a.dtype() == *d)),
        class if exception::as_class(class).is_some() => {
            return Ok(
                exception::as_instance(x).is_some_and(|e| exception::is_subclass(&e.class, class))
            )
        }
        other => {
            return Err(Error::type_error(format!(
                "isinstance() arg 2 must be a type, not {}",
                other.type_name()
            )))
        }
    };
    Ok(match name.as_str() {
        "int" => matches!(x, Value::Int(_) | Value::Bool(_)),
        "float" => matches!(x, Value::Float(_)),
        "bool" => matches!(x, Value::Bool(_)),
        "str" => matches!(x, Value::Str(_)),
        "list" => matches!(x, Value::List(_)),
        "tuple" => matches!(x, Value::Tuple(_)),
        "dict" => matches!(x, Value::Dict(_)),
        // jax.Array (and arr's arrays); NumPy's ndarray apart.
        "array" | "asarray" => matches!(x, Value::Array(_)) && !numpy::is_ndarray(x),
        "_np_asarray" | "_np_array" => numpy::is_ndarray(x),
        "range" => matches!(x, Value::Range(..)),
        "slice" => matches!(x, Value::Slice(..)),
        "dtype" => matches!(x, Value::DType(_)),
        "set" | "frozenset" => set::as_set(x).is_some(),
        // The sharding types (`isinstance(s, P)`), by the objects' type names.
        "P" | "PartitionSpec" => matches!(x, Value::Object(o) if o.type_name() == "PartitionSpec"),
        "NamedSharding" | "Mesh" | "SingleDeviceSharding" => {
            matches!(x, Value::Object(o) if o.type_name() == name.as_str())
        }
        // Classes (and the types standing for builtins: `int`, `jax.Array`).
        "type" => {
            matches!(x, Value::Class(_) | Value::Builtin(_) | Value::DType(_))
                || exception::as_class(x).is_some()
        }
        other => {
            return Err(Error::type_error(format!(
                "isinstance() arg 2: {other} is not a type"
            )))
        }
    })
}

fn slice(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let Value::Tuple(args) = &a[0] else {
        unreachable!("*args binds a tuple")
    };
    let part = |v: &Value| -> Result<Option<i64>> {
        match v {
            Value::None => Ok(None),
            v => Ok(Some(int_arg("slice: indices", v)?)),
        }
    };
    // slice(stop) alone, or slice(start, stop[, step]), as in Python.
    let (start, stop, step) = match &args[..] {
        [stop] => (None, part(stop)?, None),
        [start, stop] => (part(start)?, part(stop)?, None),
        [start, stop, step] => (part(start)?, part(stop)?, part(step)?),
        _ => {
            return Err(Error::type_error(format!(
                "slice expected 1 to 3 arguments, got {}",
                args.len()
            )))
        }
    };
    if step == Some(0) {
        return Err(Error::value_error("slice step cannot be zero"));
    }
    Ok(Value::Slice(std::rc::Rc::new(
        arr_runtime::value::SliceValue { start, stop, step },
    )))
}

fn isinstance(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::Bool(type_matches(&a[0], &a[1])?))
}

fn type_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if !matches!(a[1], Value::None) {
        return new_class(interp, &a);
    }
    // An exception's class is a value (`type(e).__name__`, `type(e) is ValueError`).
    if let Some(e) = exception::as_instance(&a[0]) {
        return Ok(e.class.clone());
    }
    let t = arr_runtime::class::type_of(&a[0]);
    // A JAX program's types print as Python's: <class 'int'>, and JAX's
    // and NumPy's array classes.
    if !interp.jax_rules || matches!(a[0], Value::Instance(_)) {
        return Ok(t);
    }
    let name = arr_runtime::class::python_type_name(&a[0]);
    let qualified = match name {
        "ArrayImpl" => "jaxlib._jax.ArrayImpl",
        "ndarray" => "numpy.ndarray",
        other => other,
    };
    Ok(Value::object(arr_runtime::class::TypeName {
        text: format!("<class '{qualified}'>"),
        name,
    }))
}

/// `type(name, bases, dict)`: the class a `class name(*bases):` statement
/// whose body bound `dict` makes.
fn new_class(interp: &mut Interp, a: &[Value]) -> Result<Value> {
    let name = str_arg("type(name, bases, dict): name", &a[0])?;
    let Value::Tuple(bases) = &a[1] else {
        return Err(Error::type_error(format!(
            "type(name, bases, dict): bases must be a tuple, got {}",
            a[1].type_name()
        )));
    };
    let Value::Dict(namespace) = &a[2] else {
        return Err(Error::type_error(format!(
            "type(name, bases, dict): dict must be a dict, got {}",
            a[2].type_name()
        )));
    };
    let mut attrs = Vec::new();
    let mut doc = None;
    for (k, v) in namespace.borrow().iter() {
        let Key::Str(k) = k else {
            return Err(Error::type_error(
                "type(name, bases, dict): the dict's keys must be strings",
            ));
        };
        if &**k == "__doc__" {
            if let Value::Str(d) = v {
                doc = Some(d.to_string());
            }
        }
        attrs.push((k.clone(), v.clone()));
    }
    let class = interp.make_class(name, doc, bases.to_vec(), attrs)?;
    interp.init_subclass(&class, Vec::new())?;
    Ok(class)
}

fn callable(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::Bool(
        a[0].is_callable() || matches!(a[0], Value::DType(_)),
    ))
}

fn help(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let text = help_for(&a[0]);
    interp.write_out(&format!("{text}\n"));
    Ok(Value::None)
}

fn format(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::str(&display::format_spec(
        &a[0],
        str_arg("spec", &a[1])?,
    )?))
}

thread_local! {
    static CLOCK_START: Instant = Instant::now();
}

fn perf_counter(_: &mut Interp, _: Vec<Value>) -> Result<Value> {
    Ok(Value::Float(
        CLOCK_START.with(|s| s.elapsed().as_secs_f64()),
    ))
}

fn timeit(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = &a[0];
    let repeat = int_arg("repeat", &a[2])?.max(1);
    let number = match opt_int_arg("number", &a[1])? {
        Some(n) => n.max(1),
        None => {
            // Grow the call count until one run takes at least 0.2 s, as Python's timeit.
            let mut n = 1;
            loop {
                let t = Instant::now();
                for _ in 0..n {
                    interp.call(f, Vec::new(), Vec::new())?;
                }
                if t.elapsed().as_secs_f64() >= 0.2 || n >= 1 << 20 {
                    break n;
                }
                n *= 2;
            }
        }
    };
    let mut best = f64::INFINITY;
    for _ in 0..repeat {
        let t = Instant::now();
        for _ in 0..number {
            interp.call(f, Vec::new(), Vec::new())?;
        }
        best = best.min(t.elapsed().as_secs_f64() / number as f64);
    }
    Ok(Value::Float(best))
}

fn block_until_ready(_: &mut Interp, mut a: Vec<Value>) -> Result<Value> {
    // Eager CPU arrays are always ready; a GPU array waits for its device's
    // queue. Waiting for a deleted array's buffer is its error, as in JAX.
    for leaf in crate::tree::leaves(&a[0])? {
        if let Value::Array(Tensor::Concrete(x)) = leaf {
            x.wait()?;
        }
    }
    Ok(a.swap_remove(0))
}

fn the_list(v: &Value) -> &std::rc::Rc<std::cell::RefCell<Vec<Value>>> {
    match v {
        Value::List(l) => l,
        _ => unreachable!("list methods receive lists"),
    }
}

fn the_dict(v: &Value) -> &std::rc::Rc<std::cell::RefCell<Dict>> {
    match v {
        Value::Dict(d) => d,
        _ => unreachable!("dict methods receive dicts"),
    }
}

fn list_append(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    arr_runtime::value::push_item(&mut the_list(&a[0]).borrow_mut(), a[1].clone())?;
    Ok(Value::None)
}

fn list_extend(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = interp.items(&a[1])?;
    let list = the_list(&a[0]);
    let mut list = list.borrow_mut();
    arr_runtime::value::reserve_items(&mut list, items.len())?;
    list.extend(items);
    Ok(Value::None)
}

fn list_pop(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let l = the_list(&a[0]);
    let n = l.borrow().len();
    if n == 0 {
        return Err(Error::index_error("pop from empty list"));
    }
    let i = seq_index(&a[1], n)?;
    Ok(l.borrow_mut().remove(i))
}

fn list_insert(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let l = the_list(&a[0]);
    let n = l.borrow().len() as i64;
    let i = int_arg("index", &a[1])?;
    let i = if i < 0 { (i + n).max(0) } else { i.min(n) };
    l.borrow_mut().insert(i as usize, a[2].clone());
    Ok(Value::None)
}

/// The positions in a list of the items equal to `x`.
fn positions(list: &Value, x: &Value) -> Result<Vec<usize>> {
    let items = match list {
        Value::Tuple(t) => t.to_vec(),
        _ => the_list(list).borrow().clone(),
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if values_equal(item, x)? {
            out.push(i);
        }
    }
    Ok(out)
}

/// `str.strip/lstrip/rstrip(chars=None)`: whitespace, or any of `chars`,
/// removed from the start and/or the end.
fn strip(a: &[Value], start: bool, end: bool) -> Result<Value> {
    let text = s(&a[0])?;
    let set: Option<Vec<char>> = match &a[1] {
        Value::None => None,
        v => Some(s(v)?.chars().collect()),
    };
    let drop = |c: char| {
        set.as_ref()
            .map_or(c.is_whitespace(), |set| set.contains(&c))
    };
    let mut t = text;
    if start {
        t = t.trim_start_matches(drop);
    }
    if end {
        t = t.trim_end_matches(drop);
    }
    Ok(Value::str(t))
}

fn list_index(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let kind = if matches!(a[0], Value::Tuple(_)) {
        "tuple"
    } else {
        "list"
    };
    positions(&a[0], &a[1])?
        .first()
        .map(|&i| Value::Int(i as i64))
        .ok_or_else(|| Error::value_error(format!("{} is not in {kind}", display::repr(&a[1]))))
}

fn list_count(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::Int(positions(&a[0], &a[1])?.len() as i64))
}

fn list_copy(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::list(the_list(&a[0]).borrow().clone()))
}

fn list_reverse(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    the_list(&a[0]).borrow_mut().reverse();
    Ok(Value::None)
}

fn list_sort(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = the_list(&a[0]).borrow().clone();
    let sorted = sort_values(interp, items, &a[1], a[2].truthy()?)?;
    *the_list(&a[0]).borrow_mut() = sorted;
    Ok(Value::None)
}

fn list_remove(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let l = the_list(&a[0]);
    let pos = positions(&a[0], &a[1])?.first().copied();
    match pos {
        Some(i) => {
            l.borrow_mut().remove(i);
            Ok(Value::None)
        }
        None => Err(Error::value_error("list.remove(x): x not in list")),
    }
}

fn list_clear(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    the_list(&a[0]).borrow_mut().clear();
    Ok(Value::None)
}

fn dict_keys(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::list(
        the_dict(&a[0]).borrow().keys().map(Key::to_value).collect(),
    ))
}

fn dict_values(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::list(
        the_dict(&a[0]).borrow().values().cloned().collect(),
    ))
}

fn dict_items(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::list(
        the_dict(&a[0])
            .borrow()
            .iter()
            .map(|(k, v)| Value::tuple(vec![k.to_value(), v.clone()]))
            .collect(),
    ))
}

fn dict_get(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(the_dict(&a[0])
        .borrow()
        .get(&a[1].to_key()?)
        .cloned()
        .unwrap_or_else(|| a[2].clone()))
}

fn dict_update(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // What dict(other, **kwargs) would hold: a mapping, (key, value) pairs.
    let entries = dict(interp, vec![a[1].clone(), a[2].clone()])?;
    let other = the_dict(&entries).borrow().clone();
    the_dict(&a[0]).borrow_mut().extend(other);
    Ok(Value::None)
}

fn dict_pop(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let k = a[1].to_key()?;
    match the_dict(&a[0]).borrow_mut().shift_remove(&k) {
        Some(v) => Ok(v),
        // `...` stands for "no default" (`d.pop(k, None)` returns None).
        None if !matches!(a[2], Value::Ellipsis) => Ok(a[2].clone()),
        None => Err(exception::key_error(&a[1])),
    }
}

fn dict_copy(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::dict(the_dict(&a[0]).borrow().clone()))
}

fn dict_setdefault(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let k = a[1].to_key()?;
    Ok(the_dict(&a[0])
        .borrow_mut()
        .entry(k)
        .or_insert_with(|| a[2].clone())
        .clone())
}

fn str_join(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let parts: Vec<String> = interp
        .items(&a[1])?
        .iter()
        .map(|v| match v {
            Value::Str(x) => Ok(x.to_string()),
            other => Err(Error::type_error(format!(
                "join() expects strings, found {}",
                other.type_name()
            ))),
        })
        .collect::<Result<_>>()?;
    let sep = s(&a[0])?;
    let total = parts
        .iter()
        .map(String::len)
        .sum::<usize>()
        .saturating_add(sep.len().saturating_mul(parts.len().saturating_sub(1)));
    arr_runtime::value::check_str(&[total])?;
    Ok(Value::str(&parts.join(sep)))
}

fn str_split(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let text = s(&a[0])?;
    let max = int_arg("maxsplit", &a[2])?;
    let parts: Vec<String> = match &a[1] {
        Value::None => whitespace_split(text, max),
        sep => {
            let sep = nonempty_sep(sep)?;
            match usize::try_from(max) {
                Ok(n) => text.splitn(n + 1, sep).map(str::to_string).collect(),
                Err(_) => text.split(sep).map(str::to_string).collect(),
            }
        }
    };
    Ok(Value::list(parts.iter().map(|p| Value::str(p)).collect()))
}

fn str_rsplit(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let text = s(&a[0])?;
    let max = int_arg("maxsplit", &a[2])?;
    let mut parts: Vec<String> = match &a[1] {
        // Whitespace splitting from the right: split the reversed text.
        Value::None => {
            let reversed: String = text.chars().rev().collect();
            whitespace_split(&reversed, max)
                .into_iter()
                .map(|p| p.chars().rev().collect())
                .collect()
        }
        sep => {
            let sep = nonempty_sep(sep)?;
            match usize::try_from(max) {
                Ok(n) => text.rsplitn(n + 1, sep).map(str::to_string).collect(),
                Err(_) => text.rsplit(sep).map(str::to_string).collect(),
            }
        }
    };
    parts.reverse();
    Ok(Value::list(parts.iter().map(|p| Value::str(p)).collect()))
}

fn nonempty_sep(sep: &Value) -> Result<&str> {
    let sep = s(sep)?;
    if sep.is_empty() {
        return Err(Error::value_error("empty separator"));
    }
    Ok(sep)
}

/// Python's split at runs of whitespace: at most `max` splits (all when
/// negative), the rest of the text (its leading whitespace removed) last.
fn whitespace_split(text: &str, max: i64) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if max >= 0 && parts.len() as i64 == max {
            parts.push(rest.to_string());
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        parts.push(rest[..end].to_string());
        rest = rest[end..].trim_start();
    }
    parts
}

/// Python's str predicates: non-empty (unless `empty` answers for the
/// empty string) and every character passing `test`.
fn str_all(a: &[Value], empty: bool, test: fn(char) -> bool) -> Result<Value> {
    let t = s(&a[0])?;
    Ok(Value::Bool(if t.is_empty() {
        empty
    } else {
        t.chars().all(test)
    }))
}

/// isupper / islower: some cased character, and none of the other case.
fn str_cased(a: &[Value], upper: bool) -> Result<Value> {
    let t = s(&a[0])?;
    let cased = t.chars().filter(|c| c.is_uppercase() || c.is_lowercase());
    let (mut any, mut all) = (false, true);
    for c in cased {
        any = true;
        all &= if upper {
            c.is_uppercase()
        } else {
            c.is_lowercase()
        };
    }
    Ok(Value::Bool(any && all))
}

/// partition / rpartition: (head, sep, tail) around the first or last sep.
fn str_partition(a: &[Value], last: bool) -> Result<Value> {
    let (t, sep) = (s(&a[0])?, nonempty_sep(&a[1])?);
    let found = if last { t.rfind(sep) } else { t.find(sep) };
    let parts = match found {
        Some(i) => [&t[..i], sep, &t[i + sep.len()..]],
        None if last => ["", "", t],
        None => [t, "", ""],
    };
    Ok(Value::tuple(parts.iter().map(|p| Value::str(p)).collect()))
}

fn register_str_more(r: &mut Registry) {
    r.method(
        "str",
        "isalpha(self)",
        "Whether the string is non-empty and all letters.",
        |_, a| str_all(&a, false, char::is_alphabetic),
    );
    r.method(
        "str",
        "isalnum(self)",
        "Whether the string is non-empty and all letters or digits.",
        |_, a| str_all(&a, false, char::is_alphanumeric),
    );
    r.method(
        "str",
        "isspace(self)",
        "Whether the string is non-empty and all whitespace.",
        |_, a| str_all(&a, false, char::is_whitespace),
    );
    r.method(
        "str",
        "isdecimal(self)",
        "Whether the string is non-empty and all decimal digits.",
        |_, a| str_all(&a, false, |c| c.is_ascii_digit()),
    );
    r.method(
        "str",
        "isnumeric(self)",
        "Whether the string is non-empty and all numeric characters.",
        |_, a| str_all(&a, false, char::is_numeric),
    );
    r.method(
        "str",
        "isascii(self)",
        "Whether every character is ASCII.",
        |_, a| str_all(&a, true, |c| c.is_ascii()),
    );
    r.method(
        "str",
        "isprintable(self)",
        "Whether every character is printable.",
        |_, a| str_all(&a, true, |c| !c.is_control()),
    );
    r.method(
        "str",
        "isidentifier(self)",
        "Whether the string is a valid identifier.",
        |_, a| {
            let t = s(&a[0])?;
            let mut chars = t.chars();
            Ok(Value::Bool(
                chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && chars.all(|c| c.is_alphanumeric() || c == '_'),
            ))
        },
    );
    r.method(
        "str",
        "isupper(self)",
        "Whether the string has cased characters and all are upper-case.",
        |_, a| str_cased(&a, true),
    );
    r.method(
        "str",
        "islower(self)",
        "Whether the string has cased characters and all are lower-case.",
        |_, a| str_cased(&a, false),
    );
    r.method(
        "str",
        "partition(self, sep)",
        "(head, sep, tail) around the first sep, or (self, '', '').",
        |_, a| str_partition(&a, false),
    );
    r.method(
        "str",
        "rpartition(self, sep)",
        "(head, sep, tail) around the last sep, or ('', '', self).",
        |_, a| str_partition(&a, true),
    );
    r.method(
        "str",
        "removeprefix(self, prefix)",
        "Copy without prefix at the start, if it is there.",
        |_, a| {
            let (t, p) = (s(&a[0])?, s(&a[1])?);
            Ok(Value::str(t.strip_prefix(p).unwrap_or(t)))
        },
    );
    r.method(
        "str",
        "removesuffix(self, suffix)",
        "Copy without suffix at the end, if it is there.",
        |_, a| {
            let (t, p) = (s(&a[0])?, s(&a[1])?);
            Ok(Value::str(t.strip_suffix(p).unwrap_or(t)))
        },
    );
    r.method(
        "str",
        "rindex(self, sub, start=None, end=None)",
        "The index of the last sub in self[start:end] (ValueError when there is none).",
        |_, a| match str_search(&a, true)? {
            Some(i) => Ok(Value::Int(i)),
            None => Err(Error::value_error("substring not found")),
        },
    );
    r.method(
        "str",
        "expandtabs(self, tabsize=8)",
        "Copy with each tab replaced by spaces up to the next multiple of tabsize columns.",
        |_, a| {
            let (t, size) = (s(&a[0])?, int_arg("tabsize", &a[1])?.max(0) as usize);
            let mut out = String::new();
            let mut column = 0;
            for c in t.chars() {
                match c {
                    '\t' if size > 0 => {
                        let n = size - column % size;
                        out.extend(std::iter::repeat_n(' ', n));
                        column += n;
                    }
                    '\t' => {}
                    '\n' | '\r' => {
                        out.push(c);
                        column = 0;
                    }
                    _ => {
                        out.push(c);
                        column += 1;
                    }
                }
            }
            Ok(Value::str(&out))
        },
    );
    r.method(
        "str",
        "casefold(self)",
        "Copy for caseless comparison.",
        |_, a| Ok(Value::str(&s(&a[0])?.to_lowercase())),
    );
    r.method(
        "str",
        "swapcase(self)",
        "Copy with upper-case letters lower-cased and lower-case ones upper-cased.",
        |_, a| {
            let out: String = s(&a[0])?
                .chars()
                .flat_map(|c| {
                    let swapped: Vec<char> = if c.is_uppercase() {
                        c.to_lowercase().collect()
                    } else {
                        c.to_uppercase().collect()
                    };
                    swapped
                })
                .collect();
            Ok(Value::str(&out))
        },
    );
}

fn str_replace(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (text, old, new) = (s(&a[0])?, s(&a[1])?, s(&a[2])?);
    // Each match grows the text by what replaces it (an empty `old`
    // matches between every two characters and at both ends).
    let matches = text.matches(old).count();
    arr_runtime::value::check_str(&[text.len().saturating_add(matches.saturating_mul(new.len()))])?;
    Ok(Value::str(&text.replace(old, new)))
}

/// `s` padded with `fill` to `width` characters: `left` of the padding
/// before it and the rest after (ljust, rjust, center).
fn pad_str(
    text: &str,
    width: &Value,
    fill: &Value,
    left: fn(usize, usize) -> usize,
) -> Result<Value> {
    let width = int_arg("width", width)?.max(0) as usize;
    let fill = s(fill)?;
    let mut fills = fill.chars();
    let (Some(c), None) = (fills.next(), fills.next()) else {
        return Err(Error::type_error(
            "The fill character must be exactly one character long",
        ));
    };
    let len = text.chars().count();
    if width <= len {
        return Ok(Value::str(text));
    }
    let pad = width - len;
    arr_runtime::value::check_str(&[pad.saturating_mul(c.len_utf8()).saturating_add(text.len())])?;
    let before = left(pad, width);
    let mut out = String::with_capacity(text.len() + pad * c.len_utf8());
    out.extend(std::iter::repeat_n(c, before));
    out.push_str(text);
    out.extend(std::iter::repeat_n(c, pad - before));
    Ok(Value::str(&out))
}

fn str_zfill(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let text = s(&a[0])?;
    let width = int_arg("width", &a[1])?.max(0) as usize;
    let len = text.chars().count();
    if width <= len {
        return Ok(a[0].clone());
    }
    arr_runtime::value::check_str(&[width - len + text.len()])?;
    // The zeros go after a leading sign, as Python's do.
    let (sign, digits) = match text.strip_prefix(['+', '-']) {
        Some(rest) => text.split_at(text.len() - rest.len()),
        None => ("", text),
    };
    Ok(Value::str(&format!(
        "{sign}{}{digits}",
        "0".repeat(width - len)
    )))
}

pub(crate) fn str_format(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let template = s(&a[0])?;
    let args = numpy::sequence_items(&a[1])?;
    let kwargs = match &a[2] {
        Value::Dict(d) => d.borrow().clone(),
        _ => Dict::default(),
    };
    Ok(Value::str(&display::str_format(template, &args, &kwargs)?))
}

fn set_memory_limit(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    use arr_kernels::limits;
    let bad = || {
        Error::value_error(format!(
            "set_memory_limit: limit must be a positive number of bytes, a string such as '8G', or None, not {}",
            display::repr(&a[0])
        ))
    };
    let limit = match &a[0] {
        Value::None => None,
        Value::Int(n) if *n > 0 => Some(*n as usize),
        Value::Str(s) => Some(limits::parse_bytes(s).filter(|&b| b > 0).ok_or_else(bad)?),
        _ => return Err(bad()),
    };
    let before = limits::user_limit();
    limits::set_user_limit(limit);
    Ok(before.map_or(Value::None, |b| Value::Int(b as i64)))
}

/// `dir(obj)`: the attributes completion lists; `dir()`: the global names.
fn dir(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut names: Vec<String> = match &a[0] {
        Value::None => interp
            .globals
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_some())
            .map(|(id, _)| interp.interner.name(id as u32).to_string())
            .collect(),
        obj => interp
            .attributes(obj)
            .into_iter()
            .map(|at| at.name)
            .collect(),
    };
    names.sort();
    names.dedup();
    Ok(Value::list(names.iter().map(|n| Value::str(n)).collect()))
}

/// Python's hex/oct/bin: an integer's digits in `radix` after `prefix`.
fn int_in_base(x: &Value, prefix: &str, radix: u32) -> Result<Value> {
    let n = match x {
        Value::Int(n) => *n,
        Value::Bool(b) => *b as i64,
        other => {
            return Err(Error::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                other.type_name()
            )))
        }
    };
    let m = n.unsigned_abs();
    let digits = match radix {
        16 => format!("{m:x}"),
        8 => format!("{m:o}"),
        _ => format!("{m:b}"),
    };
    let sign = if n < 0 { "-" } else { "" };
    Ok(Value::str(&format!("{sign}{prefix}{digits}")))
}

/// `_function_parameters`: what inspect.signature reads of a function.
fn function_parameters(f: &Value) -> Result<Value> {
    use arr_lang::ast::ParamKind;
    let (func, skip) = match f {
        Value::Function(func) => (func.clone(), 0),
        Value::BoundMethod(m) => match &m.1 {
            Value::Function(func) => (func.clone(), 1),
            _ => {
                return Err(Error::value_error(
                    "no signature found for a builtin method",
                ))
            }
        },
        other => {
            return Err(Error::value_error(format!(
                "no signature found for {}",
                display::repr(other)
            )))
        }
    };
    let params = func.code.params.iter().zip(&func.defaults).skip(skip);
    let out = params
        .map(|(p, default)| {
            let kind = match p.kind {
                ParamKind::Normal => "POSITIONAL_OR_KEYWORD",
                ParamKind::KeywordOnly => "KEYWORD_ONLY",
                ParamKind::VarArgs => "VAR_POSITIONAL",
                ParamKind::VarKwargs => "VAR_KEYWORD",
            };
            Value::tuple(vec![
                Value::str(&p.name),
                Value::str(kind),
                Value::Bool(default.is_some()),
                default.clone().unwrap_or(Value::None),
            ])
        })
        .collect();
    Ok(Value::list(out))
}

/// `hash(x)`: Python's value for integers (and floats equal to them); a
/// fixed hash of other hashable values (the same in every run, unlike
/// Python's strings); objects by identity.
fn python_hash(interp: &mut Interp, x: &Value) -> Result<Value> {
    use std::hash::{Hash, Hasher};
    let by_identity = |p: usize| Value::Int((p >> 4) as i64);
    if let Value::Instance(i) = x {
        if let Some(method) = i.class.lookup("__hash__") {
            let h = interp.call(&method, vec![x.clone()], Vec::new())?;
            return match h {
                Value::Int(_) => Ok(h),
                other => Err(Error::type_error(format!(
                    "__hash__ method should return an integer, not {}",
                    other.type_name()
                ))),
            };
        }
    }
    match x {
        Value::Instance(i) if i.items.is_some() => {}
        Value::Instance(_) | Value::Function(_) | Value::Class(_) => {
            return Ok(by_identity(x.address().unwrap_or(0)))
        }
        _ => {}
    }
    Ok(Value::Int(match x.to_key()? {
        Key::Int(-1) => -2,
        Key::Int(i) => i,
        key => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            key.hash(&mut h);
            (h.finish() >> 1) as i64
        }
    }))
}

/// find/rfind/index/rindex: the character index of the first (or last)
/// `sub` within `self[start:end]` (Python's slice bounds, negatives from
/// the end).
fn str_search(a: &[Value], last: bool) -> Result<Option<i64>> {
    let (t, sub) = (s(&a[0])?, s(&a[1])?);
    let chars: Vec<(usize, char)> = t.char_indices().collect();
    let n = chars.len() as i64;
    let bound = |v: &Value, default: i64| -> Result<usize> {
        let i = match v {
            Value::None => default,
            v => int_arg("index", v)?,
        };
        Ok((if i < 0 { i + n } else { i }).clamp(0, n) as usize)
    };
    let (start, end) = (bound(&a[2], 0)?, bound(&a[3], n)?);
    if start > end {
        return Ok(None);
    }
    let byte = |c: usize| chars.get(c).map_or(t.len(), |(b, _)| *b);
    let window = &t[byte(start)..byte(end)];
    let found = if last {
        window.rfind(sub)
    } else {
        window.find(sub)
    };
    Ok(found.map(|i| (start + window[..i].chars().count()) as i64))
}

/// The methods of generators: `send`, `throw`, `close` and the iterator
/// protocol's `__next__`/`__iter__`. A generator whose body ran at its call
/// (`code::resumable`) answers them from the items it kept.
fn register_generator_methods(r: &mut Registry) {
    fn resumed(interp: &mut Interp, g: &Value, input: Input) -> Result<Value> {
        match generator_of(g) {
            Some(gen) => match interp.resume(gen, input)? {
                Resumed::Yield(v) => Ok(v),
                Resumed::Return(v) => Err(stop_iteration(v)),
            },
            None => match input {
                Input::Throw(e) => Err(e),
                Input::Send(_) => interp
                    .next_of(g)?
                    .ok_or_else(|| stop_iteration(Value::None)),
            },
        }
    }
    r.method(
        "generator",
        "send(self, value)",
        "Resume the generator: the `yield` it stopped at evaluates to value; returns \
         what it yields next (StopIteration at its end).",
        |interp, a| resumed(interp, &a[0], Input::Send(a[1].clone())),
    );
    r.method(
        "generator",
        "throw(self, exc)",
        "Raise exc (a class or an instance) at the `yield` the generator stopped at; \
         returns what it yields next if it handles it.",
        |interp, a| {
            let e = exception::raise(a[1].clone(), None).unwrap_or_else(|e| e);
            resumed(interp, &a[0], Input::Throw(e))
        },
    );
    r.method(
        "generator",
        "close(self)",
        "Finish the generator: GeneratorExit is raised at its `yield`, so its finally \
         blocks and context managers run.",
        |interp, a| {
            if let Some(g) = generator_of(&a[0]) {
                interp.close_generator(g)?;
            }
            Ok(Value::None)
        },
    );
    r.method(
        "generator",
        "__next__(self)",
        "The next item (StopIteration at the end), as next(g).",
        |interp, a| resumed(interp, &a[0], Input::Send(Value::None)),
    );
    r.method(
        "generator",
        "__iter__(self)",
        "The generator itself.",
        |_, a| Ok(a[0].clone()),
    );
}
