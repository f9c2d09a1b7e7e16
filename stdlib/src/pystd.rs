//! Functions of Python's standard library that JAX programs import:
//! `functools.partial`/`reduce`/`wraps`/`cache`, `math.*` on Python numbers,
//! `time.time`/`sleep` and `operator.*`. The module table (`modules.rs`) puts
//! them under their Python names; here they are builtins with prefixed names
//! where arr's own name means something else (`math_sqrt` is not `sqrt`,
//! which makes an array).

use crate::{f64_arg, int_arg, Registry};
use arr_runtime::value::{Key, NativeClosure};
use arr_runtime::{Error, ErrorKind, Interp, Result, Value};
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    // abc: a base class and a decorator that mark what subclasses define;
    // arr does not refuse to instantiate a class with abstract methods.
    let abc = arr_runtime::class::Class::new(
        "ABC",
        Vec::new(),
        Some("A base class for abstract classes (abc.ABC).".into()),
    )
    .expect("a class without bases");
    r.value("_abc_ABC", Value::Class(std::rc::Rc::new(abc)));
    r.func(
        "_abc_abstractmethod(funcobj)",
        "funcobj itself, marked abstract in name only (abc.abstractmethod).",
        |_, a| Ok(a[0].clone()),
    );
    r.func(
        "partial(func, *args, **keywords)",
        "func with the leading positional arguments and the keywords given now \
         (as functools.partial); later keywords override these.",
        partial,
    );
    r.func(
        "functools_reduce(function, iterable, initial=None)",
        "Fold iterable from the left with function(acc, item), as functools.reduce.",
        reduce,
    );
    r.func(
        "wraps(wrapped)",
        "A decorator that returns the wrapper unchanged (as functools.wraps, for arr's \
         purposes: names and docs are not copied).",
        |_, _| Ok(identity_decorator("wraps")),
    );
    r.func(
        "cache(func)",
        "func itself: arr does not memoise (as functools.cache, minus the memory).",
        |_, a| Ok(a[0].clone()),
    );
    r.func(
        "lru_cache(maxsize=128, typed=False)",
        "A decorator that returns the function unchanged (as functools.lru_cache minus \
         the memoisation); `@lru_cache` without arguments works too.",
        |_, a| match &a[0] {
            f @ (Value::Function(_) | Value::Native(_) | Value::Builtin(_)) => Ok(f.clone()),
            _ => Ok(identity_decorator("lru_cache")),
        },
    );
    r.effect_func(
        "time_time()",
        "Seconds since the Unix epoch, as time.time.",
        |_, _| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| Error::new(ErrorKind::RuntimeError, e.to_string()))?;
            Ok(Value::Float(now.as_secs_f64()))
        },
    );
    r.effect_func(
        "sleep(seconds)",
        "Wait this many seconds (as time.sleep); Ctrl-C interrupts the wait.",
        sleep,
    );
    for &(name, doc, f) in MATH {
        r.func_from(&format!("{name}(x)"), doc, move |_, a| {
            Ok(Value::Float(f(f64_arg("x", &a[0])?)))
        });
    }
    r.func(
        "math_atan2(y, x)",
        "atan(y / x) in the right quadrant, as math.atan2.",
        |_, a| {
            Ok(Value::Float(
                f64_arg("y", &a[0])?.atan2(f64_arg("x", &a[1])?),
            ))
        },
    );
    r.func("hypot(x, y)", "sqrt(x*x + y*y), as math.hypot.", |_, a| {
        Ok(Value::Float(
            f64_arg("x", &a[0])?.hypot(f64_arg("y", &a[1])?),
        ))
    });
    r.func(
        "copysign(x, y)",
        "x with the sign of y, as math.copysign.",
        |_, a| {
            Ok(Value::Float(
                f64_arg("x", &a[0])?.copysign(f64_arg("y", &a[1])?),
            ))
        },
    );
    r.func(
        "math_log(x, base=None)",
        "The natural logarithm of x, or its logarithm to `base`, as math.log.",
        |_, a| {
            let x = domain(f64_arg("x", &a[0])?, |x| x > 0.0)?;
            Ok(Value::Float(match &a[1] {
                Value::None => x.ln(),
                b => x.ln() / f64_arg("base", b)?.ln(),
            }))
        },
    );
    r.func(
        "math_isclose(a, b, rel_tol=1e-09, abs_tol=0.0)",
        "Whether a and b are close, as math.isclose.",
        |_, a| {
            let (x, y) = (f64_arg("a", &a[0])?, f64_arg("b", &a[1])?);
            let (rel, abs) = (f64_arg("rel_tol", &a[2])?, f64_arg("abs_tol", &a[3])?);
            Ok(Value::Bool(
                x == y || (x - y).abs() <= (rel * x.abs().max(y.abs())).max(abs),
            ))
        },
    );
    for (name, doc, test) in [
        (
            "math_isnan(x)",
            "Whether x is NaN, as math.isnan.",
            f64::is_nan as fn(f64) -> bool,
        ),
        (
            "math_isinf(x)",
            "Whether x is infinite, as math.isinf.",
            f64::is_infinite,
        ),
        (
            "math_isfinite(x)",
            "Whether x is finite, as math.isfinite.",
            f64::is_finite,
        ),
    ] {
        r.func_from(name, doc, move |_, a| {
            Ok(Value::Bool(test(f64_arg("x", &a[0])?)))
        });
    }
    r.func(
        "math_floor(x)",
        "The largest int <= x, as math.floor.",
        |_, a| round_to_int(&a[0], f64::floor),
    );
    r.func(
        "math_ceil(x)",
        "The smallest int >= x, as math.ceil.",
        |_, a| round_to_int(&a[0], f64::ceil),
    );
    r.func(
        "math_trunc(x)",
        "x without its fraction, an int, as math.trunc.",
        |_, a| round_to_int(&a[0], f64::trunc),
    );
    r.func(
        "math_prod(iterable, start=1)",
        "The product of the numbers of iterable, as math.prod.",
        |interp, a| fold_numbers(interp, &a[0], a[1].clone(), arr_lang::ast::BinOp::Mul),
    );
    r.func(
        "math_fsum(iterable)",
        "The sum of the numbers of iterable, as math.fsum (exactly rounded).",
        |interp, a| {
            let xs = interp
                .items(&a[0])?
                .iter()
                .map(|x| f64_arg("item", x))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::Float(fsum(&xs)))
        },
    );
    r.func(
        "gcd(*integers)",
        "The greatest common divisor, as math.gcd.",
        |_, a| {
            let mut g = 0i64;
            for x in tuple_items(&a[0]) {
                g = gcd(g, int_arg("gcd", &x)?);
            }
            Ok(Value::Int(g))
        },
    );
    r.func(
        "lcm(*integers)",
        "The least common multiple, as math.lcm.",
        |_, a| {
            let mut l = 1i64;
            for x in tuple_items(&a[0]) {
                let x = int_arg("lcm", &x)?;
                if x == 0 {
                    return Ok(Value::Int(0));
                }
                l = checked(l.checked_mul(x.abs() / gcd(l, x)))?;
            }
            Ok(Value::Int(l))
        },
    );
    r.func("factorial(n)", "n!, as math.factorial.", |_, a| {
        let n = nonnegative("factorial", &a[0])?;
        (1..=n)
            .try_fold(1i64, |acc, k| checked(acc.checked_mul(k)))
            .map(Value::Int)
    });
    r.func(
        "comb(n, k)",
        "The number of ways to choose k of n items, as math.comb.",
        |_, a| {
            let (n, k) = (nonnegative("comb", &a[0])?, nonnegative("comb", &a[1])?);
            if k > n {
                return Ok(Value::Int(0));
            }
            let k = k.min(n - k);
            (0..k)
                .try_fold(
                    1i64,
                    |acc, i| Ok(checked(acc.checked_mul(n - i))? / (i + 1)),
                )
                .map(Value::Int)
        },
    );
    r.func(
        "perm(n, k=None)",
        "The number of ordered choices of k of n items, as math.perm.",
        |_, a| {
            let n = nonnegative("perm", &a[0])?;
            let k = match &a[1] {
                Value::None => n,
                k => nonnegative("perm", k)?,
            };
            if k > n {
                return Ok(Value::Int(0));
            }
            (n - k + 1..=n)
                .try_fold(1i64, |acc, i| checked(acc.checked_mul(i)))
                .map(Value::Int)
        },
    );
    for (name, doc, op) in OPERATORS {
        let op = *op;
        r.func_from(&format!("{name}(a, b)"), doc, move |_, a| {
            arr_runtime::eval::binary_op(op, a[0].clone(), a[1].clone())
        });
    }
    r.func("operator_neg(a)", "-a, as operator.neg.", |_, a| {
        arr_runtime::eval::unary_op(arr_lang::ast::UnaryOp::Neg, a[0].clone())
    });
    r.func(
        "operator_getitem(a, b)",
        "a[b], as operator.getitem.",
        |_, a| arr_runtime::eval::get_item(&a[0], &a[1]),
    );
    r.func(
        "itemgetter(*items)",
        "A function that returns x[item] (a tuple of them for several items), as operator.itemgetter.",
        |_, a| {
            let items = tuple_items(&a[0]);
            Ok(NativeClosure::value("itemgetter", move |_, args, _| {
                let x = args
                    .first()
                    .ok_or_else(|| Error::type_error("itemgetter expected 1 argument, got 0"))?;
                let mut got = items
                    .iter()
                    .map(|i| arr_runtime::eval::get_item(x, i))
                    .collect::<Result<Vec<_>>>()?;
                Ok(if got.len() == 1 {
                    got.remove(0)
                } else {
                    Value::tuple(got)
                })
            }))
        },
    );
}

/// The one-argument functions of `math`: (builtin name, doc, function).
#[allow(clippy::type_complexity)]
const MATH: &[(&str, &str, fn(f64) -> f64)] = &[
    (
        "math_sqrt",
        "The square root of x, as math.sqrt.",
        f64::sqrt,
    ),
    ("math_exp", "e ** x, as math.exp.", f64::exp),
    (
        "math_log2",
        "The base-2 logarithm of x, as math.log2.",
        f64::log2,
    ),
    (
        "math_log10",
        "The base-10 logarithm of x, as math.log10.",
        f64::log10,
    ),
    (
        "math_log1p",
        "log(1 + x), accurate for small x, as math.log1p.",
        f64::ln_1p,
    ),
    (
        "math_sin",
        "The sine of x (radians), as math.sin.",
        f64::sin,
    ),
    (
        "math_cos",
        "The cosine of x (radians), as math.cos.",
        f64::cos,
    ),
    (
        "math_tan",
        "The tangent of x (radians), as math.tan.",
        f64::tan,
    ),
    (
        "math_tanh",
        "The hyperbolic tangent of x, as math.tanh.",
        f64::tanh,
    ),
    (
        "math_atan",
        "The arc tangent of x, as math.atan.",
        f64::atan,
    ),
    (
        "fabs",
        "The absolute value of x as a float, as math.fabs.",
        f64::abs,
    ),
    (
        "degrees",
        "x radians in degrees, as math.degrees.",
        f64::to_degrees,
    ),
    (
        "radians",
        "x degrees in radians, as math.radians.",
        f64::to_radians,
    ),
    (
        "math_erf",
        "The error function of x, as math.erf.",
        libm::erf,
    ),
    (
        "gamma",
        "The gamma function of x, as math.gamma.",
        libm::tgamma,
    ),
    (
        "math_lgamma",
        "log |gamma(x)|, as math.lgamma.",
        libm::lgamma,
    ),
];

/// Binary operators as functions (`operator.add`).
const OPERATORS: &[(&str, &str, arr_lang::ast::BinOp)] = &[
    (
        "operator_add",
        "a + b, as operator.add.",
        arr_lang::ast::BinOp::Add,
    ),
    (
        "operator_sub",
        "a - b, as operator.sub.",
        arr_lang::ast::BinOp::Sub,
    ),
    (
        "operator_mul",
        "a * b, as operator.mul.",
        arr_lang::ast::BinOp::Mul,
    ),
    (
        "operator_truediv",
        "a / b, as operator.truediv.",
        arr_lang::ast::BinOp::Div,
    ),
    (
        "operator_matmul",
        "a @ b, as operator.matmul.",
        arr_lang::ast::BinOp::MatMul,
    ),
];

/// `partial(f, *args, **kw)`: a callable with `.func`, `.args` and
/// `.keywords`, as functools.partial has. A partial of a partial flattens, as
/// in Python, so `jit` and friends see the original function.
fn partial(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let func = a[0].clone();
    if !func.is_callable() {
        return Err(Error::type_error(
            "the first argument of partial must be callable",
        ));
    }
    let args = tuple_items(&a[1]);
    let keywords: Vec<(Rc<str>, Value)> = crate::kwargs_of(&a[2]);
    let name = format!("partial({})", crate::transforms::func_name(&func));
    let (f2, args2, kw2) = (func.clone(), args.clone(), keywords.clone());
    let value = NativeClosure::value(name, move |interp, more, more_kw| {
        let mut all = args2.clone();
        all.extend(more);
        let mut kw: Vec<(Rc<str>, Value)> = kw2
            .iter()
            .filter(|(k, _)| !more_kw.iter().any(|(m, _)| m == k))
            .cloned()
            .collect();
        kw.extend(more_kw);
        interp.call(&f2, all, kw)
    });
    if let Value::Native(n) = &value {
        let keywords = keywords
            .into_iter()
            .map(|(k, v)| (Key::Str(k), v))
            .collect();
        let mut attrs = n.attrs.borrow_mut();
        attrs.push(("func".into(), func));
        attrs.push(("args".into(), Value::tuple(args)));
        attrs.push(("keywords".into(), Value::dict(keywords)));
    }
    Ok(value)
}

fn identity_decorator(name: &str) -> Value {
    NativeClosure::value(name, |_, args, _| {
        args.into_iter()
            .next()
            .ok_or_else(|| Error::type_error("a decorator takes the function"))
    })
}

fn reduce(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut items = interp.items(&a[1])?.into_iter();
    let mut acc = match &a[2] {
        Value::None => items
            .next()
            .ok_or_else(|| Error::type_error("reduce() of empty iterable with no initial value"))?,
        v => v.clone(),
    };
    for x in items {
        acc = interp.call(&a[0], vec![acc, x], Vec::new())?;
    }
    Ok(acc)
}

fn sleep(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let seconds = f64_arg("seconds", &a[0])?;
    if seconds.is_nan() || seconds < 0.0 {
        return Err(Error::value_error("sleep length must be non-negative"));
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.min(1e9));
    // In slices, so that Ctrl-C stops a long sleep within a fraction of a second.
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        interp.check_interrupt()?;
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
    Ok(Value::None)
}

fn fold_numbers(
    interp: &mut Interp,
    items: &Value,
    start: Value,
    op: arr_lang::ast::BinOp,
) -> Result<Value> {
    let mut acc = start;
    for x in interp.items(items)? {
        acc = arr_runtime::eval::binary_op(op, acc, x)?;
    }
    Ok(acc)
}

/// Neumaier's compensated sum: math.fsum's correctly rounded result for
/// everything but adversarial inputs.
fn fsum(xs: &[f64]) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for &x in xs {
        let t = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    sum + comp
}

fn domain(x: f64, ok: impl Fn(f64) -> bool) -> Result<f64> {
    if ok(x) || x.is_nan() {
        Ok(x)
    } else {
        Err(Error::value_error("math domain error"))
    }
}

fn round_to_int(v: &Value, f: fn(f64) -> f64) -> Result<Value> {
    if let Value::Int(i) = v {
        return Ok(Value::Int(*i));
    }
    let x = f(f64_arg("x", v)?);
    if x.is_nan() {
        return Err(Error::value_error("cannot convert float NaN to integer"));
    }
    if !(-9.223372036854776e18..9.223372036854776e18).contains(&x) {
        return Err(Error::new(
            ErrorKind::OverflowError,
            "cannot convert float infinity or a float past int64 to integer",
        ));
    }
    Ok(Value::Int(x as i64))
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

fn nonnegative(name: &str, v: &Value) -> Result<i64> {
    let n = int_arg(name, v)?;
    if n < 0 {
        return Err(Error::value_error(format!(
            "{name}() not defined for negative values"
        )));
    }
    Ok(n)
}

fn checked(v: Option<i64>) -> Result<i64> {
    v.ok_or_else(|| {
        Error::new(
            ErrorKind::OverflowError,
            "the result does not fit in a 64-bit int",
        )
    })
}

/// The items of a `*args` tuple.
fn tuple_items(v: &Value) -> Vec<Value> {
    match v {
        Value::Tuple(t) => t.to_vec(),
        other => vec![other.clone()],
    }
}
