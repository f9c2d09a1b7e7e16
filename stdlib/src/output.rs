//! Output builtins beyond `print`: `eprint` (stderr), `display`,
//! `update_display`, `clear_output`, `display_image` and `progress` — requests that the
//! front end renders (a notebook shows rich output; a terminal prints text) —
//! and NumPy's print options (`set_printoptions`, `get_printoptions`).

use crate::args::str_arg;
use crate::Registry;
use arr_runtime::display;
use arr_runtime::numpy;
use arr_runtime::progress::ProgressValue;
use arr_runtime::{Error, ErrorKind, Interp, Result, RichOutput, Value};

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, suppress=None, nanstr=None, infstr=None, formatter=None, sign=None, floatmode=None, *, legacy=None, override_repr=None)",
        "How arrays print from now on, as NumPy's: at most precision digits after the point \
         (8), summarised past threshold elements (1000) with edgeitems at each end (3), lines \
         of linewidth columns (75), suppress: no exponent form for small numbers. Options \
         left None keep their value; the others of NumPy's are accepted at their defaults.",
        set_printoptions,
    );
    r.func(
        "get_printoptions()",
        "The print options in force, as a dict (NumPy's keys).",
        |_, _| Ok(printoptions_dict(display::print_options())),
    );

    r.effect_func(
        "eprint(*args, sep=' ', end='\\n')",
        "Print values to standard error, like print (in a notebook: the stderr stream).",
        eprint,
    );
    r.effect_func(
        "display(x, display_id=None)",
        "Show x as a cell output now (in a notebook arrays show as HTML tables). \
         A display_id string names the output so update_display can replace it.",
        display_,
    );
    r.effect_func(
        "update_display(x, display_id)",
        "Replace the output shown earlier by display(..., display_id=display_id) with x.",
        update_display,
    );
    r.effect_func(
        "clear_output(wait=False)",
        "Clear the output of the current notebook cell; with wait=True, only once new output arrives.",
        clear_output,
    );
    r.effect_func(
        "progress(iterable, total=None, desc=None)",
        "The items of iterable, showing how many a for loop has done: a bar with the \
         rate and time left on a terminal, an updating display in a notebook. total \
         defaults to the iterable's length; desc labels the bar.",
        progress,
    );
    r.effect_func(
        "display_image(path, display_id=None)",
        "Show the PNG (.png) or SVG (.svg) image in the file at path as a cell output.",
        display_image,
    );
}

fn eprint(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let items = numpy::sequence_items(&a[0])?;
    let sep = display::str(&a[1]);
    let mut out = items
        .iter()
        .map(display::str)
        .collect::<Vec<_>>()
        .join(&sep);
    out.push_str(&display::str(&a[2]));
    interp.emit(RichOutput::Stderr(out));
    Ok(Value::None)
}

fn display_id_arg(v: &Value) -> Result<Option<String>> {
    match v {
        Value::None => Ok(None),
        other => Ok(Some(str_arg("display_id", other)?.to_string())),
    }
}

fn display_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let display_id = display_id_arg(&a[1])?;
    interp.emit(RichOutput::Display {
        value: a[0].clone(),
        display_id,
        update: false,
    });
    Ok(Value::None)
}

fn update_display(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let display_id = Some(str_arg("display_id", &a[1])?.to_string());
    interp.emit(RichOutput::Display {
        value: a[0].clone(),
        display_id,
        update: true,
    });
    Ok(Value::None)
}

fn clear_output(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let wait = a[0].truthy()?;
    interp.emit(RichOutput::ClearOutput { wait });
    Ok(Value::None)
}

fn progress(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // Fail now, not at the loop, when the value cannot be iterated.
    let iterable = matches!(
        a[0],
        Value::Range(_)
            | Value::List(_)
            | Value::Tuple(_)
            | Value::Dict(_)
            | Value::Str(_)
            | Value::Array(_)
    ) || arr_runtime::progress::of(&a[0]).is_some();
    if !iterable {
        return Err(Error::type_error(format!(
            "'{}' object is not iterable",
            a[0].type_name()
        )));
    }
    let total = match &a[1] {
        Value::None => None,
        Value::Int(n) if *n >= 0 => Some(*n as u64),
        other => {
            return Err(Error::type_error(format!(
                "progress: total must be a non-negative int, not {}",
                display::repr(other)
            )))
        }
    };
    let desc = match &a[2] {
        Value::None => None,
        other => Some(str_arg("desc", other)?.to_string()),
    };
    Ok(Value::object(ProgressValue {
        inner: a[0].clone(),
        total,
        desc,
    }))
}

fn display_image(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let path = str_arg("path", &a[0])?;
    let display_id = display_id_arg(&a[1])?;
    let lower = path.to_ascii_lowercase();
    let mime = if lower.ends_with(".png") {
        "image/png"
    } else if lower.ends_with(".svg") {
        "image/svg+xml"
    } else {
        return Err(Error::value_error(format!(
            "display_image: '{path}' is neither a .png nor an .svg file"
        )));
    };
    let data = std::fs::read(path)
        .map_err(|e| Error::new(ErrorKind::IOError, format!("cannot open '{path}': {e}")))?;
    if mime == "image/png" && !data.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(Error::value_error(format!(
            "display_image: '{path}' is not a PNG file"
        )));
    }
    interp.emit(RichOutput::Image {
        formats: vec![(mime, data)],
        display_id,
        update: false,
    });
    Ok(Value::None)
}

fn set_printoptions(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut o = display::print_options();
    let count = |v: &Value, what: &str| -> Result<Option<usize>> {
        match v {
            Value::None => Ok(None),
            v => match v.to_int()? {
                Some(n) if n >= 0 => Ok(Some(n as usize)),
                _ => Err(Error::value_error(format!(
                    "set_printoptions: {what} must be a non-negative integer"
                ))),
            },
        }
    };
    if let Some(p) = count(&a[0], "precision")? {
        o.precision = p.min(1000);
    }
    if let Some(t) = count(&a[1], "threshold")? {
        o.threshold = t;
    }
    if let Some(e) = count(&a[2], "edgeitems")? {
        o.edgeitems = e;
    }
    if let Some(w) = count(&a[3], "linewidth")? {
        o.linewidth = w;
    }
    if !matches!(a[4], Value::None) {
        o.suppress = a[4].truthy()?;
    }
    // The options arr does not implement are accepted at NumPy's defaults
    // (what get_printoptions gives back), refused otherwise.
    let defaults: [(&str, &Value, Option<&str>); 5] = [
        ("nanstr", &a[5], Some("nan")),
        ("infstr", &a[6], Some("inf")),
        ("formatter", &a[7], None),
        ("sign", &a[8], Some("-")),
        ("floatmode", &a[9], Some("maxprec")),
    ];
    for (name, v, default) in defaults {
        let fine = match (v, default) {
            (Value::None, _) => true,
            (Value::Str(s), Some(d)) => s.as_str() == d,
            _ => false,
        };
        if !fine {
            return Err(Error::new(
                ErrorKind::ValueError,
                format!(
                    "set_printoptions: {name}={} is not supported",
                    display::repr(v)
                ),
            ));
        }
    }
    display::set_print_options(o);
    Ok(Value::None)
}

fn printoptions_dict(o: display::PrintOptions) -> Value {
    let entries = [
        ("edgeitems", Value::Int(o.edgeitems as i64)),
        ("threshold", Value::Int(o.threshold as i64)),
        ("floatmode", Value::str("maxprec")),
        ("precision", Value::Int(o.precision as i64)),
        ("suppress", Value::Bool(o.suppress)),
        ("linewidth", Value::Int(o.linewidth as i64)),
        ("nanstr", Value::str("nan")),
        ("infstr", Value::str("inf")),
        ("sign", Value::str("-")),
        ("formatter", Value::None),
        ("legacy", Value::Bool(false)),
        ("override_repr", Value::None),
    ];
    Value::dict(
        entries
            .into_iter()
            .map(|(k, v)| (arr_runtime::Key::Str(k.into()), v))
            .collect(),
    )
}
