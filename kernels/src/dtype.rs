//! Element types and their names (`float32`, short form `f32`).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I32,
    I64,
    U32,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 6] = [
        DType::Bool,
        DType::I32,
        DType::I64,
        DType::U32,
        DType::F32,
        DType::F64,
    ];

    /// NumPy's name: `float32`, `int64`, `bool`.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U32 => "uint32",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The short form used in types such as `f32[3,4]`.
    pub fn short(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U32 => "u32",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" | "bool_" => DType::Bool,
            "int32" | "i32" => DType::I32,
            "int64" | "i64" | "int" => DType::I64,
            "uint32" | "u32" => DType::U32,
            "float32" | "f32" => DType::F32,
            "float64" | "f64" | "float" => DType::F64,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::U32)
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
