//! The operating system as Python's modules present it: `os` (the
//! environment, files and folders), `os.path`, `shutil.rmtree`, `tempfile`
//! and `warnings`, so a JAX program's preamble (`os.environ["XLA_FLAGS"] =
//! ...`, a checkpoint folder) runs as written. A path argument is a string
//! or a `pathlib.Path` (the library `pathlib.arr`, whose instances hold
//! their text in `_path`).
//!
//! `os.environ` is a dict of the environment as the program started:
//! setting a variable there changes what the program reads back, not the
//! process's environment (arr's devices are set up before any program runs,
//! so `XLA_FLAGS` has nothing left to configure: arr always has 8 CPU
//! devices).

use crate::args::*;
use crate::Registry;
use arr_runtime::{Dict, Error, ErrorKind, Key, Result, Value};
use std::path::{Path, PathBuf};

pub(crate) fn register(r: &mut Registry) {
    let environ: Dict = std::env::vars()
        .map(|(k, v)| (Key::Str(k.as_str().into()), Value::str(&v)))
        .collect();
    r.value("_os_environ", Value::dict(environ));
    r.value("_os_sep", Value::str("/"));
    r.func("_os_getcwd()", "The current folder.", |_, _| {
        let cwd = std::env::current_dir().map_err(|e| os_error("getcwd", "", e))?;
        Ok(text(&cwd))
    });
    r.func(
        "_os_getenv(key, default=None)",
        "The environment variable key (as os.environ has it), else default.",
        |interp, a| {
            let key = str_arg("getenv: key", &a[0])?;
            let env = crate::builtin_named(interp, "_os_environ")?;
            let Value::Dict(d) = env else {
                return Ok(a[1].clone());
            };
            let found = d.borrow().get(&Key::Str(key.into())).cloned();
            Ok(found.unwrap_or_else(|| a[1].clone()))
        },
    );
    r.func(
        "_file_read_text(path)",
        "The text of the file at path (open(path).read()).",
        |_, a| {
            let p = path_arg("open", &a[0])?;
            std::fs::read_to_string(&p)
                .map(|t| Value::str(&t))
                .map_err(|e| file_error(&p, e))
        },
    );
    r.effect_func(
        "_file_write_text(path, text, append=False)",
        "Write text to the file at path, replacing it or appended (what open(path, 'w'/'a') writes).",
        |_, a| {
            use std::io::Write;
            let p = path_arg("open", &a[0])?;
            let text = crate::args::str_arg("write", &a[1])?.to_string();
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(a[2].truthy()?)
                .truncate(!a[2].truthy()?)
                .open(&p)
                .map_err(|e| file_error(&p, e))?;
            file.write_all(text.as_bytes())
                .map_err(|e| file_error(&p, e))?;
            Ok(Value::None)
        },
    );
    r.func("_os_cpu_count()", "The number of CPUs.", |_, _| {
        Ok(Value::Int(
            std::thread::available_parallelism().map_or(1, |n| n.get()) as i64,
        ))
    });
    r.func("_os_getpid()", "This process's id.", |_, _| {
        Ok(Value::Int(std::process::id() as i64))
    });
    r.effect_func(
        "_os_listdir(path='.')",
        "The names in folder path, sorted.",
        |_, a| {
            let p = path_arg("listdir", &a[0])?;
            let entries = std::fs::read_dir(&p).map_err(|e| os_error("listdir", &p, e))?;
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            Ok(Value::list(names.iter().map(|n| Value::str(n)).collect()))
        },
    );
    r.effect_func(
        "_os_makedirs(name, mode=511, exist_ok=False)",
        "Make folder name and the folders above it; an existing one is an error unless exist_ok.",
        |_, a| {
            let p = path_arg("makedirs", &a[0])?;
            if Path::new(&p).is_dir() && !a[2].truthy()? {
                return Err(Error::new(
                    ErrorKind::IOError,
                    format!("[Errno 17] File exists: '{p}'"),
                ));
            }
            std::fs::create_dir_all(&p).map_err(|e| os_error("makedirs", &p, e))?;
            Ok(Value::None)
        },
    );
    r.effect_func("_os_mkdir(path, mode=511)", "Make folder path.", |_, a| {
        let p = path_arg("mkdir", &a[0])?;
        std::fs::create_dir(&p).map_err(|e| os_error("mkdir", &p, e))?;
        Ok(Value::None)
    });
    r.effect_func("_os_remove(path)", "Remove file path.", |_, a| {
        let p = path_arg("remove", &a[0])?;
        std::fs::remove_file(&p).map_err(|e| os_error("remove", &p, e))?;
        Ok(Value::None)
    });
    r.effect_func(
        "_os_truncate(path, length)",
        "Cut file path to length bytes (or extend it with zeros).",
        |_, a| {
            let p = path_arg("truncate", &a[0])?;
            let n = int_arg("length", &a[1])?;
            let n = u64::try_from(n).map_err(|_| {
                Error::value_error(format!("truncate: length must not be negative, got {n}"))
            })?;
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .and_then(|f| f.set_len(n))
                .map_err(|e| os_error("truncate", &p, e))?;
            Ok(Value::None)
        },
    );
    r.effect_func(
        "_shutil_rmtree(path, ignore_errors=False)",
        "Remove folder path and everything in it.",
        |_, a| {
            let p = path_arg("rmtree", &a[0])?;
            match std::fs::remove_dir_all(&p) {
                Err(e) if !a[1].truthy()? => Err(os_error("rmtree", &p, e)),
                _ => Ok(Value::None),
            }
        },
    );
    r.effect_func(
        "_tempfile_mkdtemp(suffix=None, prefix=None, dir=None)",
        "Make a new empty folder (in the system's temporary folder unless dir) and give its path.",
        |_, a| {
            let base = match &a[2] {
                Value::None => std::env::temp_dir(),
                v => PathBuf::from(path_arg("mkdtemp", v)?),
            };
            let prefix = match &a[1] {
                Value::None => "tmp",
                v => str_arg("mkdtemp: prefix", v)?,
            };
            let suffix = match &a[0] {
                Value::None => "",
                v => str_arg("mkdtemp: suffix", v)?,
            };
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            for attempt in 0..100u32 {
                let name = format!(
                    "{prefix}{:x}{attempt}{suffix}",
                    stamp ^ std::process::id() as u128
                );
                let dir = base.join(name);
                if std::fs::create_dir(&dir).is_ok() {
                    return Ok(text(&dir));
                }
            }
            Err(Error::new(
                ErrorKind::IOError,
                format!("mkdtemp: cannot make a folder in '{}'", base.display()),
            ))
        },
    );
    r.func(
        "_tempfile_gettempdir()",
        "The system's temporary folder.",
        |_, _| Ok(text(&std::env::temp_dir())),
    );
    r.func(
        "_os_path_join(a, *p)",
        "The paths joined with '/'.",
        |_, a| {
            let mut out = PathBuf::from(path_arg("path.join", &a[0])?);
            if let Value::Tuple(rest) = &a[1] {
                for part in rest.iter() {
                    out.push(path_arg("path.join", part)?);
                }
            }
            Ok(text(&out))
        },
    );
    r.func("_os_path_exists(path)", "Whether path exists.", |_, a| {
        Ok(Value::Bool(
            Path::new(&path_arg("path.exists", &a[0])?).exists(),
        ))
    });
    r.func(
        "_os_path_isdir(path)",
        "Whether path is a folder.",
        |_, a| {
            Ok(Value::Bool(
                Path::new(&path_arg("path.isdir", &a[0])?).is_dir(),
            ))
        },
    );
    r.func(
        "_os_path_isfile(path)",
        "Whether path is a file.",
        |_, a| {
            Ok(Value::Bool(
                Path::new(&path_arg("path.isfile", &a[0])?).is_file(),
            ))
        },
    );
    r.func(
        "_os_path_basename(path)",
        "The last part of path.",
        |_, a| {
            let p = path_arg("path.basename", &a[0])?;
            Ok(Value::str(p.rsplit('/').next().unwrap_or_default()))
        },
    );
    r.func(
        "_os_path_dirname(path)",
        "Path without its last part.",
        |_, a| {
            let p = path_arg("path.dirname", &a[0])?;
            Ok(Value::str(p.rsplit_once('/').map_or("", |(d, _)| d)))
        },
    );
    r.func(
        "_os_path_splitext(path)",
        "(root, extension): the extension from the last dot of the last part.",
        |_, a| {
            let p = path_arg("path.splitext", &a[0])?;
            let name_start = p.rfind('/').map_or(0, |i| i + 1);
            let (root, ext) = match p[name_start..].rfind('.') {
                Some(i) if i > 0 => p.split_at(name_start + i),
                _ => (p.as_str(), ""),
            };
            Ok(Value::tuple(vec![Value::str(root), Value::str(ext)]))
        },
    );
    r.func("_os_path_abspath(path)", "Path from the root.", |_, a| {
        let p = PathBuf::from(path_arg("path.abspath", &a[0])?);
        let cwd = std::env::current_dir().map_err(|e| os_error("path.abspath", "", e))?;
        Ok(text(&if p.is_absolute() { p } else { cwd.join(p) }))
    });
    r.func(
        "_os_path_expanduser(path)",
        "Path with a leading ~ as the home folder.",
        |_, a| {
            let p = path_arg("path.expanduser", &a[0])?;
            match (p.strip_prefix('~'), std::env::var("HOME")) {
                (Some(rest), Ok(home)) => Ok(Value::str(&format!("{home}{rest}"))),
                _ => Ok(Value::str(&p)),
            }
        },
    );
    r.effect_func(
        "_warnings_warn(message, category=None, stacklevel=1)",
        "Print the warning on stderr, as Python does (`UserWarning: message`).",
        |_, a| {
            let category = warning_category(&a[1]);
            if warning_ignored(&category) {
                return Ok(Value::None);
            }
            let message = match &a[0] {
                Value::Str(s) => s.to_string(),
                other => arr_runtime::display::str(other),
            };
            eprintln!("{category}: {message}");
            Ok(Value::None)
        },
    );
    r.func(
        "_warnings_filterwarnings(action, message='', category=None, module='', lineno=0, append=False)",
        "Ignore the warnings of a category (all, without one) after `'ignore'`; print them again after another action.",
        |_, a| filter_warnings(&a[0], &a[2]),
    );
    r.func(
        "_warnings_simplefilter(action, category=None, lineno=0, append=False)",
        "Ignore the warnings of a category (all, without one) after `'ignore'`; print them again after another action.",
        |_, a| filter_warnings(&a[0], &a[1]),
    );
}

thread_local! {
    /// The warning categories `warnings.filterwarnings('ignore', ...)` silenced
    /// (`Warning`: all of them).
    static IGNORED_WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether `warnings.filterwarnings('ignore', ...)` silenced `category`.
pub(crate) fn warning_ignored(category: &str) -> bool {
    IGNORED_WARNINGS.with(|w| {
        let w = w.borrow();
        w.iter().any(|c| c == "Warning" || c == category)
    })
}

/// A warning category's name (`UserWarning` when None).
fn warning_category(v: &Value) -> String {
    match v {
        Value::None => "UserWarning".to_string(),
        Value::Class(c) => c.name.to_string(),
        other => match arr_runtime::exception::as_class(other) {
            Some(c) => c.name.to_string(),
            None => arr_runtime::display::str(other),
        },
    }
}

fn filter_warnings(action: &Value, category: &Value) -> Result<Value> {
    let category = match category {
        Value::None => "Warning".to_string(),
        c => warning_category(c),
    };
    let ignore = matches!(action, Value::Str(s) if s.as_str() == "ignore");
    IGNORED_WARNINGS.with(|w| {
        let mut w = w.borrow_mut();
        w.retain(|c| *c != category);
        if ignore {
            w.push(category);
        }
    });
    Ok(Value::None)
}

/// The text of a path argument: a string, or a `pathlib.Path`.
pub(crate) fn path_arg(what: &str, v: &Value) -> Result<String> {
    if let Value::Instance(i) = v {
        if let Some(Value::Str(s)) = i.attrs.borrow().get("_path") {
            return Ok(s.to_string());
        }
    }
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Error::type_error(format!(
            "{what}: expected a path (str or pathlib.Path), not {}",
            other.type_name()
        ))),
    }
}

fn text(p: &Path) -> Value {
    Value::str(&p.to_string_lossy())
}

/// An error opening, reading or writing a file, as Python words it
/// (FileNotFoundError for a missing one).
fn file_error(path: &str, e: std::io::Error) -> Error {
    let (class, errno, what) = match e.kind() {
        std::io::ErrorKind::NotFound => ("FileNotFoundError", 2, "No such file or directory"),
        std::io::ErrorKind::PermissionDenied => ("PermissionError", 13, "Permission denied"),
        _ if std::path::Path::new(path).is_dir() => ("IsADirectoryError", 21, "Is a directory"),
        _ => return Error::new(ErrorKind::IOError, format!("{path}: {e}")).as_class("OSError"),
    };
    Error::new(
        ErrorKind::IOError,
        format!("[Errno {errno}] {what}: '{path}'"),
    )
    .as_class(class)
}

fn os_error(what: &str, path: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::IOError, format!("{what}: '{path}': {e}"))
}
