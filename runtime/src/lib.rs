//! arr's runtime: values, the evaluator, the primitive set and `bind`, and `Session`.
//!
//! Data flow: source text → `arr_lang::parse` → AST → `compile` (names
//! resolved) → `eval` (tree-walking). Every array operation is a primitive
//! applied through `prim::bind`; `numpy` and `index` are sugar over it.

pub mod at;
pub mod builtin;
pub mod class;
pub mod code;
pub mod compile;
pub mod display;
pub mod error;
pub mod eval;
pub mod exception;
pub mod index;
pub mod jit;
pub mod numpy;
pub mod output;
pub mod prim;
pub mod progress;
pub mod rich;
pub mod session;
pub mod set;
pub mod sharding;
pub mod spmd;
pub mod table;
pub mod tensor;
pub mod transform;
pub mod value;

pub use builtin::{bind_args, Builtin, Effect, NativeFn};
pub use error::{Error, ErrorKind, Result};
pub use eval::Interp;
pub use output::{RichOutput, RichSink};
pub use session::Session;
pub use tensor::Tensor;
pub use value::{Dict, Key, NativeClosure, Nesting, Value, MAX_NESTING};
