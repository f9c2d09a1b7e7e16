//! File I/O of arrays: NumPy's `.npy` format and `.npz` archives (`save`, `load`,
//! `savez`, `savez_compressed`, `loadz`), readable and writable by real NumPy.
//!
//! `.npy` is simple enough to read and write here (magic, version, a Python dict
//! literal for the header, raw data). `.npz` is a zip of `.npy` members; the
//! `zip` crate reads and writes it (stored and deflate only) rather than a
//! hand-written zip reader, which would be the riskiest code in this file.
//!
//! Reading never panics on malformed bytes: every length and offset is checked,
//! and the data size is validated against the file before anything is allocated.

use arr_kernels::{Array, Buffer, DType};
use arr_runtime::numpy;
use arr_runtime::Tensor;
use arr_runtime::{Dict, Error, ErrorKind, Interp, Key, Result, Value};
use std::io::{Cursor, Read, Write};

pub(crate) fn register(r: &mut crate::Registry) {
    r.effect_func(
        "save(file, arr)",
        "Write `arr` to `file` in NumPy's .npy format (\".npy\" is appended if missing); returns None.",
        save,
    );
    r.effect_func(
        "load(file)",
        "Read an array from a .npy file, or a dict name -> array from a .npz file. \
         int8/int16/uint8/uint16 load as int32 and uint64 as int64 (a value past int64 is an error).",
        load,
    );
    r.effect_func(
        "savez(file, *args, **kwds)",
        "Write arrays into an uncompressed .npz archive: positional ones as arr_0, arr_1, ..., \
         keyword ones under their names; returns None.",
        savez,
    );
    r.effect_func(
        "savez_compressed(file, *args, **kwds)",
        "Like savez, but the members are deflate-compressed; returns None.",
        savez_compressed,
    );
    r.effect_func(
        "loadz(file)",
        "Read a .npz archive: a dict name -> array (names without \".npy\").",
        loadz,
    );
}

fn io_error(message: String) -> Error {
    Error::new(ErrorKind::IOError, message)
}

/// The OS's reason without Rust's " (os error 2)" suffix, as Python prints it.
fn os_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn read_file(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_error(format!("cannot open '{path}': {}", os_reason(&e))))
}

fn write_file(path: &str, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| io_error(format!("cannot write '{path}': {}", os_reason(&e))))
}

fn path_arg(fname: &str, v: &Value) -> Result<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Error::type_error(format!(
            "{fname}: file must be a string path, got {}",
            other.type_name()
        ))),
    }
}

/// NumPy appends the extension when the name lacks it.
fn with_extension(path: String, ext: &str) -> String {
    if path.ends_with(ext) {
        path
    } else {
        path + ext
    }
}

const NPY_MAGIC: &[u8] = b"\x93NUMPY";
/// A zip starts with a local file header, or (when empty) the end-of-directory record.
fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

// ---------------------------------------------------------------------------
// Writing .npy

/// The `.npy` type of `dtype`; NumPy has none for bfloat16.
fn descr(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U32 => "<u4",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::BF16 => {
            return Err(Error::type_error(
                "NumPy's .npy format has no bfloat16 type; save x.astype(float32) instead",
            ))
        }
    })
}

/// The complete `.npy` file for `a`: version 1.0 unless the header needs 2.0's
/// 32-bit length, header padded so that the data starts at a multiple of 64 bytes.
fn npy_bytes(a: &Array) -> Result<Vec<u8>> {
    let buf = a.buffer()?;
    let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(a.dtype())?
    );
    let mut out = Vec::new();
    out.extend_from_slice(NPY_MAGIC);
    // Magic, version and length take 10 bytes in 1.0 and 12 in 2.0; the header ends with '\n'.
    let fixed_v1 = 10 + dict.len() + 1;
    let (prefix, version) = if fixed_v1.next_multiple_of(64) - 10 <= u16::MAX as usize {
        (10, 1u8)
    } else {
        (12, 2u8)
    };
    let header_len = (prefix + dict.len() + 1).next_multiple_of(64) - prefix;
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(prefix + header_len - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(&buf.to_le_bytes());
    Ok(out)
}

fn save(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let path = with_extension(path_arg("save", &args[0])?, ".npy");
    let a = numpy::to_tensor(&args[1])?;
    write_file(&path, &npy_bytes(a.concrete()?)?)?;
    Ok(Value::None)
}

// ---------------------------------------------------------------------------
// Reading .npy

/// A Python literal as found in `.npy` headers.
#[derive(Debug, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    None,
    Int(i64),
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

/// A small recursive-descent parser for the header's dict literal.
struct LitParser<'a> {
    s: &'a [char],
    pos: usize,
}

/// Nesting deeper than this is not a NumPy header (and would risk the stack).
const MAX_DEPTH: usize = 16;

impl LitParser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: char) -> std::result::Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{c}' at offset {} of the header",
                self.pos
            ))
        }
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err("the header is nested too deeply".into());
        }
        self.skip_ws();
        let Some(c) = self.peek() else {
            return Err("the header ends in the middle of a value".into());
        };
        match c {
            '{' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some('}') {
                        self.pos += 1;
                        return Ok(Lit::Dict(items));
                    }
                    let k = self.value(depth + 1)?;
                    self.expect(':')?;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some('}') => {}
                        _ => {
                            return Err(format!(
                                "expected ',' or '}}' at offset {} of the header",
                                self.pos
                            ))
                        }
                    }
                }
            }
            '(' | '[' => {
                let close = if c == '(' { ')' } else { ']' };
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        return Ok(Lit::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(x) if x == close => {}
                        _ => {
                            return Err(format!(
                                "expected ',' or '{close}' at offset {} of the header",
                                self.pos
                            ))
                        }
                    }
                }
            }
            '\'' | '"' => {
                self.pos += 1;
                let mut s = String::new();
                loop {
                    match self.peek() {
                        None => return Err("unterminated string in the header".into()),
                        Some(q) if q == c => {
                            self.pos += 1;
                            return Ok(Lit::Str(s));
                        }
                        Some('\\') => {
                            self.pos += 1;
                            let Some(e) = self.peek() else {
                                return Err("unterminated string in the header".into());
                            };
                            s.push(e);
                            self.pos += 1;
                        }
                        Some(ch) => {
                            s.push(ch);
                            self.pos += 1;
                        }
                    }
                }
            }
            c if c == '-' || c.is_ascii_digit() => {
                let start = self.pos;
                self.pos += 1;
                while self.peek().is_some_and(|d| d.is_ascii_digit()) {
                    self.pos += 1;
                }
                let text: String = self.s[start..self.pos].iter().collect();
                // Python 2 wrote long integers as `3L`.
                if self.peek() == Some('L') {
                    self.pos += 1;
                }
                text.parse()
                    .map(Lit::Int)
                    .map_err(|_| format!("bad integer '{text}' in the header"))
            }
            c if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|d| d.is_ascii_alphanumeric() || d == '_')
                {
                    self.pos += 1;
                }
                let word: String = self.s[start..self.pos].iter().collect();
                match word.as_str() {
                    "True" => Ok(Lit::Bool(true)),
                    "False" => Ok(Lit::Bool(false)),
                    "None" => Ok(Lit::None),
                    _ => Err(format!("unexpected '{word}' in the header")),
                }
            }
            c => Err(format!(
                "unexpected character {c:?} at offset {} of the header",
                self.pos
            )),
        }
    }
}

/// The element type stored in a file, before conversion to an arr dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FileType {
    Bool,
    Int(usize),
    UInt(usize),
    Float(usize),
    /// complex64 (8 bytes) or complex128 (16, loaded as complex64).
    Complex(usize),
}

impl FileType {
    fn size(self) -> usize {
        match self {
            FileType::Bool => 1,
            FileType::Int(n) | FileType::UInt(n) | FileType::Float(n) | FileType::Complex(n) => n,
        }
    }

    /// The arr dtype it loads as: the same, or the nearest supported one.
    fn dtype(self) -> DType {
        match self {
            FileType::Bool => DType::Bool,
            FileType::Int(8) | FileType::UInt(8) => DType::I64,
            FileType::Int(1) => DType::I8,
            FileType::Int(2) => DType::I16,
            FileType::UInt(1) => DType::U8,
            FileType::UInt(2) => DType::U16,
            FileType::UInt(4) => DType::U32,
            FileType::Int(_) | FileType::UInt(_) => DType::I32,
            FileType::Float(8) => DType::F64,
            FileType::Float(2) => DType::F16,
            FileType::Float(_) => DType::F32,
            FileType::Complex(_) => DType::C64,
        }
    }
}

/// A descr such as `<f4`: (element type, big-endian?).
fn parse_descr(d: &str) -> std::result::Result<(FileType, bool), String> {
    let unsupported = || {
        format!("unsupported dtype '{d}' (arr reads bool, int8-64, uint8-64 and float16-64 arrays)")
    };
    let (order, rest) = match d.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &d[1..]),
        _ => ('|', d),
    };
    let big = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    let ft = match rest {
        "b1" | "?" => FileType::Bool,
        "i1" | "b" => FileType::Int(1),
        "i2" => FileType::Int(2),
        "i4" => FileType::Int(4),
        "i8" => FileType::Int(8),
        "u1" | "B" => FileType::UInt(1),
        "u2" => FileType::UInt(2),
        "u4" => FileType::UInt(4),
        "u8" => FileType::UInt(8),
        "f2" | "e" => FileType::Float(2),
        "f4" => FileType::Float(4),
        "f8" => FileType::Float(8),
        "c8" => FileType::Complex(8),
        "c16" => FileType::Complex(16),
        _ => return Err(unsupported()),
    };
    Ok((ft, big))
}

/// Decode `data` (exactly `n * ft.size()` bytes) into a buffer of `ft.dtype()`.
fn decode(ft: FileType, big: bool, data: &[u8]) -> Buffer {
    let native = !big || ft.size() == 1;
    if native && ft.dtype().size_bytes() == ft.size() && !matches!(ft, FileType::UInt(8)) {
        if let Some(b) = Buffer::from_le_bytes(ft.dtype(), data) {
            return b;
        }
    }
    if let FileType::Complex(n) = ft {
        // Two floats of n / 2 bytes each, in the file's byte order.
        let part = |c: &[u8]| -> f64 {
            let mut b = c.to_vec();
            if big {
                b.reverse();
            }
            match b.len() {
                4 => f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64,
                _ => f64::from_le_bytes(b.try_into().expect("8 bytes")),
            }
        };
        let h = n / 2;
        return Buffer::C64(
            data.chunks_exact(n)
                .map(|c| arr_kernels::complex::C64::new(part(&c[..h]) as f32, part(&c[h..]) as f32))
                .collect(),
        );
    }
    let word = |c: &[u8]| -> u64 {
        let fold = |v: u64, &b: &u8| (v << 8) | b as u64;
        if big {
            c.iter().fold(0, fold)
        } else {
            c.iter().rev().fold(0, fold)
        }
    };
    let words = data.chunks_exact(ft.size()).map(word);
    match ft {
        FileType::Bool => Buffer::Bool(words.map(|v| v != 0).collect()),
        FileType::Int(1) => Buffer::I8(words.map(|v| v as u8 as i8).collect()),
        FileType::Int(2) => Buffer::I16(words.map(|v| v as u16 as i16).collect()),
        FileType::Int(4) => Buffer::I32(words.map(|v| v as u32 as i32).collect()),
        FileType::Int(_) => Buffer::I64(words.map(|v| v as i64).collect()),
        FileType::UInt(1) => Buffer::U8(words.map(|v| v as u8).collect()),
        FileType::UInt(2) => Buffer::U16(words.map(|v| v as u16).collect()),
        FileType::UInt(4) => Buffer::U32(words.map(|v| v as u32).collect()),
        // uint64 has no arr dtype: int64 (parse_npy refuses values above 2**63 - 1).
        FileType::UInt(_) => Buffer::I64(words.map(|v| v as i64).collect()),
        FileType::Float(2) => Buffer::F16(
            words
                .map(|v| arr_kernels::f16::from_bits(v as u16))
                .collect(),
        ),
        FileType::Float(4) => Buffer::F32(words.map(|v| f32::from_bits(v as u32)).collect()),
        FileType::Float(_) => Buffer::F64(words.map(f64::from_bits).collect()),
        FileType::Complex(_) => unreachable!("decoded above"),
    }
}

/// Parse a whole `.npy` file; errors are plain reasons, the caller names the file.
fn parse_npy(bytes: &[u8]) -> std::result::Result<Tensor, String> {
    if !bytes.starts_with(NPY_MAGIC) {
        return Err("not a .npy file (it does not start with the NumPy magic string)".into());
    }
    let (Some(&major), Some(&minor)) = (bytes.get(6), bytes.get(7)) else {
        return Err("the file ends inside the version number".into());
    };
    let (prefix, header_len) = match major {
        1 => match bytes.get(8..10) {
            Some(b) => (10, u16::from_le_bytes([b[0], b[1]]) as usize),
            None => return Err("the file ends inside the header length".into()),
        },
        2 | 3 => match bytes.get(8..12) {
            Some(b) => (12, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            None => return Err("the file ends inside the header length".into()),
        },
        _ => return Err(format!("unsupported .npy format version {major}.{minor}")),
    };
    let header_end = prefix + header_len;
    let Some(header) = bytes.get(prefix..header_end) else {
        return Err(format!(
            "the header is truncated: it declares {header_len} bytes, the file has {}",
            bytes.len() - prefix
        ));
    };
    // Versions 1 and 2 are latin-1, version 3 is UTF-8.
    let text: Vec<char> = if major == 3 {
        std::str::from_utf8(header)
            .map_err(|_| "the header is not valid UTF-8".to_string())?
            .chars()
            .collect()
    } else {
        header.iter().map(|&b| b as char).collect()
    };
    let mut p = LitParser { s: &text, pos: 0 };
    let Lit::Dict(items) = p.value(0)? else {
        return Err("the header is not a dict".into());
    };
    let field = |name: &str| {
        items
            .iter()
            .find(|(k, _)| matches!(k, Lit::Str(s) if s == name))
            .map(|(_, v)| v)
            .ok_or_else(|| format!("the header has no '{name}' entry"))
    };
    let descr = match field("descr")? {
        Lit::Str(s) => s.clone(),
        _ => {
            return Err(
                "structured dtypes are not supported (the header's descr is not a string)".into(),
            )
        }
    };
    let fortran = match field("fortran_order")? {
        Lit::Bool(b) => *b,
        _ => return Err("the header's fortran_order is not True or False".into()),
    };
    let shape: Vec<usize> = match field("shape")? {
        Lit::Seq(dims) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(n) if *n >= 0 => {
                    usize::try_from(*n).map_err(|_| format!("dimension {n} is too large"))
                }
                _ => Err("the header's shape is not a tuple of non-negative ints".to_string()),
            })
            .collect::<std::result::Result<_, _>>()?,
        _ => return Err("the header's shape is not a tuple".into()),
    };
    let (ft, big) = parse_descr(&descr)?;
    let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let nbytes = count
        .and_then(|n| n.checked_mul(ft.size()))
        .ok_or_else(|| format!("shape {shape:?} is too large"))?;
    let data = &bytes[header_end..];
    if data.len() < nbytes {
        return Err(format!(
            "the data is truncated: shape {shape:?} of '{descr}' needs {nbytes} bytes, the file has {}",
            data.len()
        ));
    }
    let buf = decode(ft, big, &data[..nbytes]);
    // A uint64 above 2**63 - 1 wrapped to a negative int64: refuse it
    // rather than load a wrong value.
    if let (FileType::UInt(8), Buffer::I64(v)) = (ft, &buf) {
        if let Some(&bad) = v.iter().find(|&&x| x < 0) {
            return Err(format!(
                "the uint64 value {} does not fit int64, arr's widest integer",
                bad as u64
            ));
        }
    }
    if fortran && shape.len() > 1 {
        // Column-major data is the row-major data of the transposed array.
        let reversed: Vec<usize> = shape.iter().rev().copied().collect();
        let perm: Vec<usize> = (0..shape.len()).rev().collect();
        numpy::transpose(Array::new(&reversed, buf).into(), &perm).map_err(|e| e.message.clone())
    } else {
        Ok(Array::new(&shape, buf).into())
    }
}

fn load(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let path = path_arg("load", &args[0])?;
    let bytes = read_file(&path)?;
    if is_zip(&bytes) {
        return read_npz(&path, bytes);
    }
    parse_npy(&bytes)
        .map(Value::Array)
        .map_err(|why| io_error(format!("cannot read '{path}': {why}")))
}

// ---------------------------------------------------------------------------
// .npz archives

fn write_npz(fname: &str, args: &[Value], compress: bool) -> Result<Value> {
    let path = with_extension(path_arg(fname, &args[0])?, ".npz");
    let mut members: Vec<(String, Tensor)> = Vec::new();
    if let Value::Tuple(items) = &args[1] {
        for (i, v) in items.iter().enumerate() {
            members.push((format!("arr_{i}"), numpy::to_tensor(v)?));
        }
    }
    if let Value::Dict(d) = &args[2] {
        for (k, v) in d.borrow().iter() {
            let Key::Str(name) = k else {
                return Err(Error::type_error(format!(
                    "{fname}: keyword names must be strings"
                )));
            };
            if members.iter().any(|(m, _)| **m == **name) {
                return Err(Error::value_error(format!(
                    "{fname}: cannot use un-named variables and keyword {name}"
                )));
            }
            members.push((name.to_string(), numpy::to_tensor(v)?));
        }
    }
    let zip_err = |e: zip::result::ZipError| io_error(format!("cannot write '{path}': {e}"));
    let mut zw = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, a) in &members {
        let bytes = npy_bytes(a.concrete()?)?;
        let method = if compress {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .large_file(bytes.len() >= u32::MAX as usize);
        zw.start_file(format!("{name}.npy"), options)
            .map_err(zip_err)?;
        zw.write_all(&bytes)
            .map_err(|e| io_error(format!("cannot write '{path}': {}", os_reason(&e))))?;
    }
    let out = zw.finish().map_err(zip_err)?.into_inner();
    write_file(&path, &out)?;
    Ok(Value::None)
}

fn savez(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    write_npz("savez", &args, false)
}

fn savez_compressed(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    write_npz("savez_compressed", &args, true)
}

/// Every member of an archive, as a dict name (without ".npy") -> array.
fn read_npz(path: &str, bytes: Vec<u8>) -> Result<Value> {
    let bad = |why: String| io_error(format!("cannot read '{path}': {why}"));
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| bad(format!("not a valid .npz (zip) file: {e}")))?;
    let mut dict = Dict::new();
    for i in 0..archive.len() {
        let mut member = archive
            .by_index(i)
            .map_err(|e| bad(format!("member {i}: {e}")))?;
        if member.is_dir() {
            continue;
        }
        let name = member.name().to_string();
        let mut data = Vec::new();
        member
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("member '{name}': {e}")))?;
        let a = parse_npy(&data).map_err(|why| bad(format!("member '{name}': {why}")))?;
        let key = name.strip_suffix(".npy").unwrap_or(&name);
        dict.insert(Key::Str(key.into()), Value::Array(a));
    }
    Ok(Value::dict(dict))
}

fn loadz(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let path = path_arg("loadz", &args[0])?;
    let bytes = read_file(&path)?;
    if !is_zip(&bytes) {
        return Err(io_error(format!(
            "cannot read '{path}': not an .npz file (use load for .npy files)"
        )));
    }
    read_npz(&path, bytes)
}
