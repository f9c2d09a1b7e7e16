//! Element types and their names (`float32`, short form `f32`).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    /// The narrow integers: stored as 8 or 16 bits, computed in i32 and
    /// wrapped back (`backend::Dispatch`), as NumPy's arithmetic wraps.
    I8,
    I16,
    U8,
    U16,
    I32,
    I64,
    U32,
    /// bfloat16: stored as 16 bits, computed in f32.
    BF16,
    /// IEEE float16: stored as 16 bits, computed in f32.
    F16,
    F32,
    F64,
    /// complex64: an (f32, f32) pair (`complex::C64`). Its arithmetic runs
    /// on the CPU backend (`complex.rs`); the fused kernels never see it.
    C64,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::U8,
        DType::U16,
        DType::I32,
        DType::I64,
        DType::U32,
        DType::BF16,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::C64,
    ];

    /// NumPy's name: `float32`, `int64`, `bool`.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U32 => "uint32",
            DType::BF16 => "bfloat16",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
        }
    }

    /// The short form used in types such as `f32[3,4]`.
    pub fn short(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U32 => "u32",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" | "bool_" => DType::Bool,
            "int8" | "i8" => DType::I8,
            "int16" | "i16" => DType::I16,
            "uint8" | "u8" => DType::U8,
            "uint16" | "u16" => DType::U16,
            "int32" | "i32" => DType::I32,
            "int64" | "i64" | "int" => DType::I64,
            "uint32" | "u32" => DType::U32,
            "bfloat16" | "bf16" => DType::BF16,
            "float16" | "f16" | "half" => DType::F16,
            "float32" | "f32" => DType::F32,
            "float64" | "f64" | "float" => DType::F64,
            "complex64" | "c64" | "complex" => DType::C64,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::BF16 | DType::F16 | DType::F32 | DType::F64)
    }

    /// The 16-bit floats, which every backend computes in f32
    /// (`backend::Dispatch` widens their operands and rounds results back).
    pub fn is_half(self) -> bool {
        matches!(self, DType::BF16 | DType::F16)
    }

    pub fn is_complex(self) -> bool {
        self == DType::C64
    }

    /// Floats and complex numbers: the dtypes that have derivatives.
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::U32) || self.is_narrow_int()
    }

    /// The 8- and 16-bit integers, which every backend computes in i32.
    pub fn is_narrow_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::U8 | DType::U16)
    }

    /// Whether rendered (GPU) kernels load, convert or compute on this
    /// dtype; complex numbers and narrow integers are converted and computed
    /// on the CPU (`backend::Dispatch`).
    pub fn in_gpu_kernels(self) -> bool {
        !self.is_complex() && !self.is_narrow_int()
    }

    /// The dtype arithmetic on this one runs in: f32 for 16-bit floats,
    /// i32 for narrow integers; None for the dtypes kernels compute on.
    pub fn computed_as(self) -> Option<DType> {
        if self.is_half() {
            Some(DType::F32)
        } else if self.is_narrow_int() {
            Some(DType::I32)
        } else {
            None
        }
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::BF16 | DType::F16 | DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
        }
    }
}

/// `x` rounded to the nearest bfloat16 (ties to even), once.
pub fn bf16_from_f64(x: f64) -> half::bf16 {
    half::bf16::from_f32(f32_round_to_odd(x))
}

/// `x` rounded to the nearest float16 (ties to even), once.
pub fn f16_from_f64(x: f64) -> half::f16 {
    half::f16::from_f32(f32_round_to_odd(x))
}

/// `x` rounded to f32 with round-to-odd: an inexact result has its last
/// bit set. Rounding that to a format at least two bits narrower (bf16,
/// f16) gives the correctly rounded result of `x`, where rounding to
/// nearest twice could not (and `half`'s own f64 conversions drop the
/// low half of the mantissa before rounding).
fn f32_round_to_odd(x: f64) -> f32 {
    let f = x as f32;
    if f.is_nan() || f.is_infinite() || f as f64 == x || f.to_bits() & 1 == 1 {
        return f;
    }
    // `f` is even and inexact: its neighbour on `x`'s side is odd. The bits
    // are sign-magnitude, so one less is one ulp nearer zero.
    let bits = f.to_bits();
    f32::from_bits(if (f as f64).abs() > x.abs() {
        bits - 1
    } else {
        bits + 1
    })
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
