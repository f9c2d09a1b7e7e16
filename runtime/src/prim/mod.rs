//! The closed set of primitives, `bind`, and one dispatch per interpretation.
//!
//! Every array operation in arr is one of these, applied through `bind`.
//! Broadcasting, dtype promotion and NumPy's conveniences are sugar on top
//! (see `numpy.rs` and the stdlib). Everything known about a primitive —
//! its shape rule, its evaluation, its JVP, transpose and batching rules,
//! and how the SPMD partitioner lays it out — lives side by side in its
//! family's file, as JAX's `lax.py` registers them:
//!
//! * `elementwise` — unary, binary, select, convert;
//! * `reduce` — reduce, arg-reduce, cumulative;
//! * `movement` — transpose, broadcast_in_dim, reshape, slice, rev, pad, concatenate;
//! * `indexing` — gather, scatter, iota, sort, argsort;
//! * `random` — threefry2x32;
//! * `dot` — dot_general;
//! * `fused` — fused kernels and products (no transformation applies);
//! * `debug` — debug_callback, the primitive with an effect (`jax.debug.print`);
//! * `transform::checkify` — check (`checkify.check`);
//! * `transform::control`, `transform::custom` — cond, while, scan, custom_vjp;
//! * `transform::collective` — collectives and sharding constraints.
//!
//! Each interpretation below is one exhaustive `match` over every variant
//! with no catch-all arm, so a new primitive does not compile until each of
//! its rules is written, and a primitive without meaning in an
//! interpretation says so in its family (an explicit error, or an explicit
//! choice to run replicated).

pub mod coverage;
pub mod debug;
pub mod dot;
pub mod elementwise;
pub mod fft;
pub mod fused;
pub mod indexing;
pub mod layout;
pub mod movement;
pub mod random;
pub mod reduce;

use crate::display::sharding::PlacementText;
use crate::error::{Error, ErrorKind, Result};
use crate::jit::partition::{Local, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::Bdims;
use crate::transform::jvp::Tangents;
use crate::transform::linear::LinIn;
use crate::transform::{
    self, checkify, collective, control, custom,
    graph::{Graph, GraphRef},
    ops::add,
};
use arr_kernels::{
    backend, ArgReduceOp, Array, BinaryOp, DType, DotDims, Kernel, MatmulKernel, ReduceOp, ScanOp,
    ScatterMode, Shape, UnaryOp,
};
use coverage::Rule;
use smallvec::{smallvec, SmallVec};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum Prim {
    Unary(UnaryOp),
    /// Elementwise with NumPy broadcasting; operands share a dtype.
    Binary(BinaryOp),
    /// `select(cond, a, b)` with broadcasting.
    Select,
    Convert(DType),
    Reduce {
        op: ReduceOp,
        axes: Vec<usize>,
    },
    ArgReduce {
        op: ArgReduceOp,
        axis: usize,
    },
    /// Inclusive cumulative sum/product/max/min along an axis.
    Cumulative {
        op: ScanOp,
        axis: usize,
        reverse: bool,
    },
    DotGeneral(DotDims),
    Transpose(Vec<usize>),
    BroadcastInDim {
        shape: Vec<usize>,
        dims: Vec<usize>,
    },
    Reshape(Vec<usize>),
    Slice {
        start: Vec<usize>,
        limit: Vec<usize>,
        stride: Vec<usize>,
    },
    Rev(Vec<usize>),
    /// Operands: array, 0-d padding value.
    Pad {
        lo: Vec<usize>,
        hi: Vec<usize>,
        interior: Vec<usize>,
    },
    Concatenate {
        axis: usize,
    },
    /// Operands: array, indices.
    /// The first `batch` dimensions of the array and the indices are one
    /// (each row of indices reads its own row of the array: `take_along_axis`);
    /// `axis` is after them.
    Gather {
        axis: usize,
        batch: usize,
    },
    /// Operands: array, indices, updates.
    Scatter {
        axis: usize,
        mode: ScatterMode,
        batch: usize,
    },
    Iota {
        dtype: DType,
        shape: Vec<usize>,
        dim: usize,
    },
    Sort {
        axis: usize,
    },
    /// The 1-D discrete Fourier transform of length `n` along the last axis
    /// (`fft.rs`).
    Fft {
        kind: arr_kernels::complex::FftKind,
        n: usize,
    },
    Argsort {
        axis: usize,
    },
    /// Operands: k0, k1, x0, x1 (u32, one shape); two outputs.
    Threefry2x32,
    /// Operands: a 0-d i32 branch index (clamped), then the operands every
    /// branch takes. Outputs: the chosen branch's.
    Cond {
        branches: Vec<GraphRef>,
    },
    /// Operands: `n_cond` constants of `cond`, `n_body` constants of `body`,
    /// then the loop carry. `cond(consts, carry) -> bool[]`,
    /// `body(consts, carry) -> carry`.
    While {
        cond: GraphRef,
        body: GraphRef,
        n_cond: usize,
        n_body: usize,
    },
    /// Operands: `n_consts` constants, `n_carry` carry values, then arrays
    /// scanned along their leading axis (of `length`). The body maps
    /// (consts, carry, x slices) to (carry, y slices); the outputs are the
    /// final carry and the stacked ys.
    Scan {
        body: GraphRef,
        n_consts: usize,
        n_carry: usize,
        length: usize,
        reverse: bool,
    },
    /// The tangent of a `custom_vjp` function: operands are `n_res`
    /// residuals, then the inputs' tangents. It is only ever transposed,
    /// by running `bwd` (residuals, output cotangents) → input cotangents.
    CustomVjp {
        bwd: GraphRef,
        n_res: usize,
    },
    /// A `custom_vjp` function called inside another's backward pass while
    /// that is traced (JAX's `fixed_point` example): the function, its
    /// forward pass (outputs, then residuals) and its backward pass as
    /// graphs, so that differentiating the backward pass (grad of grad)
    /// runs the rule rather than the function's body. Operands: the three
    /// graphs' constants (`n_consts`), then the arguments.
    CustomVjpCall {
        f: GraphRef,
        fwd: GraphRef,
        bwd: GraphRef,
        n_consts: [usize; 3],
    },
    /// A fused kernel (`arr_kernels::Kernel`): made by `jit`'s fusion pass
    /// from a run of elementwise operations and reductions; operands are the
    /// kernel's inputs. Exists only in compiled graphs, after every
    /// transformation has run.
    Fused(Arc<Kernel>),
    /// A matrix product with an elementwise epilogue
    /// (`arr_kernels::MatmulKernel`): made by the fusion pass from a
    /// `dot_general` whose result only elementwise operations read.
    /// Operands: lhs, rhs, then the epilogue's other inputs. Exists only in
    /// compiled graphs, like `Fused`.
    FusedMatmul(Arc<MatmulKernel>),
    /// A collective over a named axis (`psum`, `all_gather`, `ppermute`...;
    /// see `transform::collective`).
    Collective(collective::Collective),
    /// `with_sharding_constraint`: the value itself, laid out as given (what
    /// a sharded jit's partitioner must produce here; eagerly, the array
    /// gets that placement).
    ShardingConstraint(Arc<arr_kernels::sharding::Placement>),
    /// `jax.debug.print` / `jax.debug.callback`: calls back into the
    /// interpreter with the operands' values; no outputs (`debug`).
    DebugCallback(Arc<debug::Callback>),
    /// `checkify.check`: fails where its boolean operand is true; the other
    /// operands are the message's payload; no outputs (`transform::checkify`).
    Check(Arc<checkify::Check>),
}

/// Operands of one primitive application (no heap allocation for up to four).
pub type Args = SmallVec<[Tensor; 4]>;
/// Results of one primitive application.
pub type Outs = SmallVec<[Tensor; 2]>;
/// Concrete operands, as evaluation rules receive them.
pub type Arrays = SmallVec<[Array; 4]>;
/// What `bind` accepts as operands: tensors or arrays, in a vector or an array.
pub trait IntoArgs {
    fn into_args(self) -> Args;
}

impl IntoArgs for Args {
    fn into_args(self) -> Args {
        self
    }
}

impl IntoArgs for Vec<Tensor> {
    fn into_args(self) -> Args {
        Args::from_vec(self)
    }
}

impl<const N: usize> IntoArgs for [Tensor; N] {
    fn into_args(self) -> Args {
        self.into_iter().collect()
    }
}

impl IntoArgs for Vec<Array> {
    fn into_args(self) -> Args {
        self.into_iter().map(Tensor::Concrete).collect()
    }
}

impl<const N: usize> IntoArgs for [Array; N] {
    fn into_args(self) -> Args {
        self.into_iter().map(Tensor::Concrete).collect()
    }
}

/// Output types from a shape rule.
pub type Avals = SmallVec<[Aval; 2]>;

/// An abstract value: what the shape rules see.
#[derive(Clone, Debug, PartialEq)]
pub struct Aval {
    pub shape: Shape,
    pub dtype: DType,
}

impl Aval {
    pub fn of(a: &Array) -> Aval {
        Aval {
            shape: Shape::from_slice(a.shape()),
            dtype: a.dtype(),
        }
    }
}

/// `f32[3,4]`
pub fn type_str(shape: &[usize], dtype: DType) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", dtype.short(), dims.join(","))
}

impl Prim {
    pub fn name(&self) -> &'static str {
        match self {
            Prim::Unary(_) => "unary",
            Prim::Binary(_) => "binary",
            Prim::Select => "select",
            Prim::Convert(_) => "convert",
            Prim::Reduce { .. } => "reduce",
            Prim::ArgReduce { .. } => "arg_reduce",
            Prim::Cumulative { .. } => "cumulative",
            Prim::DotGeneral(_) => "dot_general",
            Prim::Transpose(_) => "transpose",
            Prim::BroadcastInDim { .. } => "broadcast_in_dim",
            Prim::Reshape(_) => "reshape",
            Prim::Slice { .. } => "slice",
            Prim::Rev(_) => "rev",
            Prim::Pad { .. } => "pad",
            Prim::Concatenate { .. } => "concatenate",
            Prim::Gather { .. } => "gather",
            Prim::Scatter { .. } => "scatter",
            Prim::Iota { .. } => "iota",
            Prim::Sort { .. } => "sort",
            Prim::Fft { .. } => "fft",
            Prim::Argsort { .. } => "argsort",
            Prim::Threefry2x32 => "threefry2x32",
            Prim::Cond { .. } => "cond",
            Prim::While { .. } => "while",
            Prim::Scan { .. } => "scan",
            Prim::CustomVjp { .. } => "custom_vjp",
            Prim::CustomVjpCall { .. } => "custom_vjp_call",
            Prim::Fused(_) => "fused",
            Prim::FusedMatmul(_) => "fused_matmul",
            Prim::Collective(c) => c.name(),
            Prim::ShardingConstraint(_) => "sharding_constraint",
            Prim::DebugCallback(cb) => debug::name(cb),
            Prim::Check(_) => checkify::name(),
        }
    }

    /// The name in the IR text: the operation itself (`sin`, `mul`,
    /// `reduce_sum`); for primitives without an op, `name()`.
    pub fn ir_name(&self) -> String {
        let snake = |debug: String| arr_kernels::ops::snake_name(&debug);
        match self {
            Prim::Unary(op) => op.name().to_string(),
            Prim::Binary(op) => op.name().to_string(),
            Prim::Reduce { op, .. } => format!("reduce_{}", snake(format!("{op:?}"))),
            Prim::ArgReduce { op, .. } => snake(format!("{op:?}")),
            Prim::Cumulative { op, .. } => format!("cum{}", snake(format!("{op:?}"))),
            Prim::Scatter { mode, .. } => format!("scatter_{}", snake(format!("{mode:?}"))),
            Prim::Select
            | Prim::Convert(_)
            | Prim::DotGeneral(_)
            | Prim::Transpose(_)
            | Prim::BroadcastInDim { .. }
            | Prim::Reshape(_)
            | Prim::Slice { .. }
            | Prim::Rev(_)
            | Prim::Pad { .. }
            | Prim::Concatenate { .. }
            | Prim::Gather { .. }
            | Prim::Iota { .. }
            | Prim::Sort { .. }
            | Prim::Fft { .. }
            | Prim::Argsort { .. }
            | Prim::Threefry2x32
            | Prim::Cond { .. }
            | Prim::While { .. }
            | Prim::Scan { .. }
            | Prim::CustomVjp { .. }
            | Prim::CustomVjpCall { .. }
            | Prim::Fused(_)
            | Prim::FusedMatmul(_)
            | Prim::Collective(_)
            | Prim::ShardingConstraint(_)
            | Prim::DebugCallback(_)
            | Prim::Check(_) => self.name().to_string(),
        }
    }

    /// The name and parameters, as the IR text shows them.
    pub fn ir_text(&self) -> String {
        let list = |v: &[usize]| {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(","))
            }
        };
        let params = match self {
            Prim::Unary(_) | Prim::Binary(_) | Prim::Select | Prim::Threefry2x32 => String::new(),
            Prim::Collective(c) => c.params(),
            Prim::ShardingConstraint(p) => format!("sharding={}", p.spec_text()),
            Prim::DebugCallback(cb) => debug::params(cb),
            Prim::Check(c) => checkify::params(c),
            Prim::Convert(d) => format!("dtype={}", d.name()),
            Prim::Reduce { axes, .. } => format!("axes={}", list(axes)),
            Prim::ArgReduce { axis, .. }
            | Prim::Concatenate { axis }
            | Prim::Sort { axis }
            | Prim::Argsort { axis } => format!("axis={axis}"),
            Prim::Fft { kind, n } => format!("fft_type={} n={n}", kind.name()),
            Prim::Gather { axis, batch } | Prim::Scatter { axis, batch, .. } => match batch {
                0 => format!("axis={axis}"),
                b => format!("axis={axis} batch={b}"),
            },
            Prim::Cumulative { axis, reverse, .. } => format!("axis={axis} reverse={reverse}"),
            Prim::DotGeneral(d) => format!(
                "contract=({},{}) batch=({},{})",
                list(&d.lhs_contract),
                list(&d.rhs_contract),
                list(&d.lhs_batch),
                list(&d.rhs_batch)
            ),
            Prim::Transpose(p) => format!("perm={}", list(p)),
            Prim::BroadcastInDim { shape, dims } => {
                format!("shape={} dims={}", list(shape), list(dims))
            }
            Prim::Reshape(shape) => format!("shape={}", list(shape)),
            Prim::Slice {
                start,
                limit,
                stride,
            } => format!(
                "start={} limit={} stride={}",
                list(start),
                list(limit),
                list(stride)
            ),
            Prim::Rev(axes) => format!("axes={}", list(axes)),
            Prim::Pad { lo, hi, interior } => {
                format!(
                    "lo={} hi={} interior={}",
                    list(lo),
                    list(hi),
                    list(interior)
                )
            }
            Prim::Iota { dtype, shape, dim } => {
                format!("dtype={} shape={} dim={dim}", dtype.name(), list(shape))
            }
            Prim::Cond { .. } => String::new(),
            Prim::CustomVjp { n_res, .. } => format!("n_res={n_res}"),
            Prim::CustomVjpCall { .. } => String::new(),
            Prim::Fused(k) => format!(
                "ops={} inputs={} outputs={}",
                k.body.len(),
                k.inputs.len(),
                k.outputs.len()
            ),
            Prim::FusedMatmul(k) => format!(
                "ops={} inputs={} outputs={}",
                k.epilogue.body.len(),
                k.epilogue.inputs.len() + 1,
                k.epilogue.outputs.len()
            ),
            Prim::While { n_cond, n_body, .. } => format!("n_cond={n_cond} n_body={n_body}"),
            Prim::Scan {
                n_consts,
                n_carry,
                length,
                reverse,
                ..
            } => format!("length={length} n_consts={n_consts} n_carry={n_carry} reverse={reverse}"),
        };
        if params.is_empty() {
            self.ir_name()
        } else {
            format!("{}[{params}]", self.ir_name())
        }
    }

    /// Whether running the primitive does more than compute its outputs
    /// (a debug callback, or control flow around one): the jit passes never
    /// remove, merge or fold it.
    pub fn has_effect(&self) -> bool {
        matches!(self, Prim::DebugCallback(_) | Prim::Check(_))
            || self
                .subgraphs()
                .iter()
                .any(|g| g.eqns.iter().any(|e| e.prim.has_effect()))
    }

    /// The graphs a control-flow primitive holds.
    pub fn subgraphs(&self) -> Vec<&Graph> {
        self.subgraphs_named()
            .into_iter()
            .map(|(_, g, _)| g)
            .collect()
    }

    /// The held graphs with their names in the IR text, and how many of
    /// their leading inputs are constants.
    pub fn subgraphs_named(&self) -> Vec<(String, &Graph, usize)> {
        match self {
            Prim::Cond { branches } => branches
                .iter()
                .enumerate()
                .map(|(i, g)| (format!("branch{i}"), &**g, 0))
                .collect(),
            Prim::While {
                cond,
                body,
                n_cond,
                n_body,
            } => vec![
                ("cond".into(), &**cond, *n_cond),
                ("body".into(), &**body, *n_body),
            ],
            Prim::Scan { body, n_consts, .. } => vec![("body".into(), &**body, *n_consts)],
            Prim::CustomVjp { bwd, .. } => vec![("bwd".into(), &**bwd, 0)],
            Prim::CustomVjpCall {
                f,
                fwd,
                bwd,
                n_consts,
            } => vec![
                ("f".into(), &**f, n_consts[0]),
                ("fwd".into(), &**fwd, n_consts[1]),
                ("bwd".into(), &**bwd, n_consts[2]),
            ],
            Prim::Unary(_)
            | Prim::Binary(_)
            | Prim::Select
            | Prim::Convert(_)
            | Prim::Reduce { .. }
            | Prim::ArgReduce { .. }
            | Prim::Cumulative { .. }
            | Prim::DotGeneral(_)
            | Prim::Transpose(_)
            | Prim::BroadcastInDim { .. }
            | Prim::Reshape(_)
            | Prim::Slice { .. }
            | Prim::Rev(_)
            | Prim::Pad { .. }
            | Prim::Concatenate { .. }
            | Prim::Gather { .. }
            | Prim::Scatter { .. }
            | Prim::Iota { .. }
            | Prim::Sort { .. }
            | Prim::Fft { .. }
            | Prim::Argsort { .. }
            | Prim::Threefry2x32
            | Prim::Fused(_)
            | Prim::FusedMatmul(_)
            | Prim::Collective(_)
            | Prim::ShardingConstraint(_)
            | Prim::DebugCallback(_)
            | Prim::Check(_) => Vec::new(),
        }
    }

    /// How many operands the primitive takes; `None` when that depends on
    /// its parameters (its shape rule checks them).
    fn arity(&self) -> Option<usize> {
        Some(match self {
            Prim::Iota { .. } => 0,
            Prim::Unary(_)
            | Prim::Convert(_)
            | Prim::Reduce { .. }
            | Prim::ArgReduce { .. }
            | Prim::Cumulative { .. }
            | Prim::Transpose(_)
            | Prim::BroadcastInDim { .. }
            | Prim::Reshape(_)
            | Prim::Slice { .. }
            | Prim::Rev(_)
            | Prim::Sort { .. }
            | Prim::Fft { .. }
            | Prim::Argsort { .. }
            | Prim::ShardingConstraint(_) => 1,
            Prim::Binary(_) | Prim::Pad { .. } | Prim::Gather { .. } | Prim::DotGeneral(_) => 2,
            Prim::Select | Prim::Scatter { .. } => 3,
            Prim::Threefry2x32 => 4,
            Prim::Collective(c) => return c.arity(),
            Prim::Concatenate { .. }
            | Prim::Cond { .. }
            | Prim::While { .. }
            | Prim::Scan { .. }
            | Prim::CustomVjp { .. }
            | Prim::CustomVjpCall { .. }
            | Prim::Fused(_)
            | Prim::FusedMatmul(_)
            | Prim::DebugCallback(_)
            | Prim::Check(_) => return None,
        })
    }

    /// The output types for these input types, or an error naming the shapes.
    /// The single place shapes and dtypes are checked; an output type that
    /// no array can have (`check_shape`) is refused here too.
    pub fn shape_rule(&self, args: &[Aval]) -> Result<Avals> {
        let outs = self.output_types(args)?;
        for o in &outs {
            check_shape(&o.shape, o.dtype)?;
        }
        Ok(outs)
    }

    fn output_types(&self, args: &[Aval]) -> Result<Avals> {
        if let Some(n) = self.arity() {
            if args.len() != n {
                return Err(Error::type_error(format!(
                    "{} takes {n} operands, got {}",
                    self.name(),
                    args.len()
                )));
            }
        }
        match self {
            Prim::Unary(op) => elementwise::shape_unary(*op, args),
            Prim::Binary(op) => elementwise::shape_binary(*op, args),
            Prim::Select => elementwise::shape_select(args),
            Prim::Convert(d) => elementwise::shape_convert(*d, args),
            Prim::Reduce { op, axes } => reduce::shape_reduce(*op, axes, args),
            Prim::ArgReduce { axis, .. } => reduce::shape_arg_reduce(*axis, args),
            Prim::Cumulative { op, axis, .. } => reduce::shape_cumulative(*op, *axis, args),
            Prim::DotGeneral(d) => dot::shape_dot_general(d, args),
            Prim::Transpose(perm) => movement::shape_transpose(perm, args),
            Prim::BroadcastInDim { shape, dims } => {
                movement::shape_broadcast_in_dim(shape, dims, args)
            }
            Prim::Reshape(shape) => movement::shape_reshape(shape, args),
            Prim::Slice {
                start,
                limit,
                stride,
            } => movement::shape_slice(start, limit, stride, args),
            Prim::Rev(axes) => movement::shape_rev(axes, args),
            Prim::Pad { lo, hi, interior } => movement::shape_pad(lo, hi, interior, args),
            Prim::Concatenate { axis } => movement::shape_concatenate(*axis, args),
            Prim::Gather { axis, batch } => indexing::shape_gather(*axis, *batch, args),
            Prim::Scatter { axis, batch, .. } => indexing::shape_scatter(*axis, *batch, args),
            Prim::Iota { dtype, shape, dim } => indexing::shape_iota(*dtype, shape, *dim),
            Prim::Sort { axis } => indexing::shape_sort(*axis, args),
            Prim::Fft { kind, n } => fft::shape_fft(*kind, *n, args),
            Prim::Argsort { axis } => indexing::shape_argsort(*axis, args),
            Prim::Threefry2x32 => random::shape_threefry2x32(args),
            Prim::Cond { branches } => control::shape_cond(branches, args),
            Prim::While {
                cond,
                body,
                n_cond,
                n_body,
            } => control::shape_while(cond, body, *n_cond, *n_body, args),
            Prim::Scan {
                body,
                n_consts,
                n_carry,
                length,
                ..
            } => control::shape_scan(body, *n_consts, *n_carry, *length, args),
            Prim::CustomVjp { bwd, n_res } => custom::shape_custom_vjp(bwd, *n_res, args),
            Prim::CustomVjpCall { f, n_consts, .. } => {
                custom::shape_custom_vjp_call(f, n_consts, args)
            }
            Prim::Fused(k) => fused::shape_fused(k, args),
            Prim::FusedMatmul(k) => fused::shape_fused_matmul(k, args),
            Prim::Collective(c) => collective::shape_collective(c, args),
            Prim::ShardingConstraint(p) => collective::shape_sharding_constraint(p, args),
            Prim::DebugCallback(_) => debug::shape_debug_callback(),
            Prim::Check(_) => checkify::shape_check(args),
        }
    }

    /// Run on concrete operands (already checked by `shape_rule`).
    fn eval(&self, args: Args) -> Result<Outs> {
        match self {
            Prim::Unary(op) => elementwise::eval_unary(*op, args),
            Prim::Binary(op) => elementwise::eval_binary(*op, args),
            Prim::Select => elementwise::eval_select(&arrays(args)),
            Prim::Convert(d) => elementwise::eval_convert(*d, arrays(args)),
            Prim::Reduce { op, axes } => reduce::eval_reduce(*op, axes, &arrays(args)),
            Prim::ArgReduce { op, axis } => reduce::eval_arg_reduce(*op, *axis, &arrays(args)),
            Prim::Cumulative { op, axis, reverse } => {
                reduce::eval_cumulative(*op, *axis, *reverse, &arrays(args))
            }
            Prim::DotGeneral(d) => dot::eval_dot_general(d, &arrays(args)),
            Prim::Transpose(perm) => movement::eval_transpose(perm, &arrays(args)),
            Prim::BroadcastInDim { shape, dims } => {
                movement::eval_broadcast_in_dim(shape, dims, &arrays(args))
            }
            Prim::Reshape(shape) => movement::eval_reshape(shape, &arrays(args)),
            Prim::Slice {
                start,
                limit,
                stride,
            } => movement::eval_slice(start, limit, stride, &arrays(args)),
            Prim::Rev(axes) => movement::eval_rev(axes, &arrays(args)),
            Prim::Pad { lo, hi, interior } => movement::eval_pad(lo, hi, interior, &arrays(args)),
            Prim::Concatenate { axis } => movement::eval_concatenate(*axis, &arrays(args)),
            Prim::Gather { axis, batch } => indexing::eval_gather(*axis, *batch, &arrays(args)),
            Prim::Scatter { axis, mode, batch } => {
                indexing::eval_scatter(*axis, *mode, *batch, &arrays(args))
            }
            Prim::Iota { dtype, shape, dim } => indexing::eval_iota(*dtype, shape, *dim),
            Prim::Sort { axis } => indexing::eval_sort(*axis, &arrays(args)),
            Prim::Fft { kind, n } => fft::eval_fft(*kind, *n, &arrays(args)),
            Prim::Argsort { axis } => indexing::eval_argsort(*axis, &arrays(args)),
            Prim::Threefry2x32 => random::eval_threefry2x32(&arrays(args)),
            Prim::Cond { branches } => control::eval_cond(branches, args),
            Prim::While {
                cond,
                body,
                n_cond,
                n_body,
            } => control::eval_while(cond, body, *n_cond, *n_body, args),
            Prim::Scan {
                body,
                n_consts,
                n_carry,
                length,
                reverse,
            } => control::eval_scan(body, *n_consts, *n_carry, *length, *reverse, args),
            Prim::CustomVjp { .. } => custom::eval_custom_vjp(),
            Prim::CustomVjpCall { f, n_consts, .. } => {
                custom::eval_custom_vjp_call(f, n_consts, &args)
            }
            Prim::Fused(k) => fused::eval_fused(k, arrays(args)),
            Prim::FusedMatmul(k) => fused::eval_fused_matmul(k, arrays(args)),
            Prim::Collective(c) => collective::eval_collective(c, arrays(args)),
            Prim::ShardingConstraint(p) => collective::eval_sharding_constraint(p, &arrays(args)),
            Prim::DebugCallback(cb) => debug::eval_debug_callback(cb, args),
            Prim::Check(c) => checkify::eval_check(c, args),
        }
    }
}

/// The JVP rule of each primitive: the primal outputs and their tangents,
/// given the primal operands and their tangents (`None` is a symbolic zero).
pub fn jvp(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    coverage::ran(Rule::Jvp, prim);
    match prim {
        Prim::Unary(op) => elementwise::jvp_unary(prim, *op, p, t),
        Prim::Binary(op) => elementwise::jvp_binary(prim, *op, p, t),
        Prim::Select => elementwise::jvp_select(prim, p, t),
        Prim::Convert(d) => elementwise::jvp_convert(prim, *d, p, t),
        Prim::Reduce { op, axes } => reduce::jvp_reduce(prim, *op, axes, p, t),
        Prim::ArgReduce { .. } => reduce::jvp_arg_reduce(prim, p),
        Prim::Cumulative { op, axis, reverse } => {
            reduce::jvp_cumulative(prim, *op, *axis, *reverse, p, t)
        }
        Prim::DotGeneral(_) => dot::jvp_dot_general(prim, p, t),
        Prim::Transpose(_)
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape(_)
        | Prim::Slice { .. }
        | Prim::Rev(_) => movement::jvp_linear(prim, p, t),
        Prim::Pad { .. } => movement::jvp_pad(prim, p, t),
        Prim::Concatenate { .. } => movement::jvp_concatenate(prim, p, t),
        Prim::Gather { .. } => indexing::jvp_gather(prim, p, t),
        Prim::Scatter { .. } => indexing::jvp_scatter(prim, p, t),
        Prim::Iota { .. } => indexing::jvp_iota(prim, p),
        Prim::Sort { axis } => indexing::jvp_sort(prim, *axis, p, t),
        Prim::Fft { .. } => movement::jvp_linear(prim, p, t),
        Prim::Argsort { .. } => indexing::jvp_argsort(prim, p),
        Prim::Threefry2x32 => random::jvp_threefry2x32(prim, p),
        Prim::Cond { branches } => control::jvp_cond(branches, p, t),
        Prim::While {
            cond,
            body,
            n_cond,
            n_body,
        } => control::jvp_while(prim, cond, body, *n_cond, *n_body, p, t),
        Prim::Scan {
            body,
            n_consts,
            n_carry,
            length,
            reverse,
        } => control::jvp_scan(body, *n_consts, *n_carry, *length, *reverse, p, t),
        Prim::CustomVjp { .. } => custom::jvp_custom_vjp(),
        Prim::CustomVjpCall {
            f,
            fwd,
            bwd,
            n_consts,
        } => custom::jvp_custom_vjp_call(f, fwd, bwd, n_consts, p, t),
        Prim::Fused(_) | Prim::FusedMatmul(_) => fused::jvp_fused(),
        Prim::Collective(c) => collective::jvp_collective(prim, c, p, t),
        Prim::ShardingConstraint(_) => collective::jvp_sharding_constraint(prim, p, t),
        Prim::DebugCallback(_) => debug::jvp_debug_callback(prim, p),
        Prim::Check(_) => checkify::jvp_check(prim, p),
    }
}

/// The transpose rule of each primitive: given the cotangents of the
/// outputs (`None` is zero; at least one is given) and the operands (linear
/// ones by type, the others by value), the cotangent of each linear operand
/// (`None` for the others). Non-linear primitives say so with an error.
pub fn transpose(
    prim: &Prim,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    coverage::ran(Rule::Transpose, prim);
    // The cotangent of a primitive with one output (which is given).
    let ct = || cts[0].clone().expect("a cotangent");
    match prim {
        Prim::Unary(op) => elementwise::transpose_unary(prim, *op, ct(), ins),
        Prim::Binary(op) => elementwise::transpose_binary(prim, *op, ct(), ins),
        Prim::Select => elementwise::transpose_select(ct(), ins),
        Prim::Convert(_) => elementwise::transpose_convert(ct(), ins),
        Prim::Reduce { op, axes } => reduce::transpose_reduce(prim, *op, axes, ct(), ins),
        Prim::ArgReduce { .. } => reduce::transpose_arg_reduce(prim),
        Prim::Cumulative { op, axis, reverse } => {
            reduce::transpose_cumulative(prim, *op, *axis, *reverse, ct(), ins)
        }
        Prim::DotGeneral(d) => dot::transpose_dot_general(d, ct(), ins),
        Prim::Transpose(perm) => movement::transpose_transpose(perm, ct(), ins),
        Prim::BroadcastInDim { shape, dims } => {
            movement::transpose_broadcast_in_dim(shape, dims, ct(), ins)
        }
        Prim::Reshape(_) => movement::transpose_reshape(ct(), ins),
        Prim::Slice { start, stride, .. } => movement::transpose_slice(start, stride, ct(), ins),
        Prim::Rev(axes) => movement::transpose_rev(axes, ct(), ins),
        Prim::Pad { lo, interior, .. } => movement::transpose_pad(lo, interior, ct(), ins),
        Prim::Concatenate { axis } => movement::transpose_concatenate(*axis, ct(), ins),
        Prim::Gather { axis, batch } => indexing::transpose_gather(*axis, *batch, ct(), ins),
        Prim::Scatter { axis, mode, batch } => {
            indexing::transpose_scatter(prim, *axis, *mode, *batch, ct(), ins)
        }
        Prim::Iota { .. } => indexing::transpose_iota(prim),
        Prim::Sort { .. } => indexing::transpose_sort(prim),
        Prim::Fft { kind, n } => fft::transpose_fft(*kind, *n, ct(), ins),
        Prim::Argsort { .. } => indexing::transpose_argsort(prim),
        Prim::Threefry2x32 => random::transpose_threefry2x32(prim),
        Prim::Cond { branches } => control::transpose_cond(branches, cts, ins),
        Prim::While { .. } => control::transpose_while(),
        Prim::Scan {
            body,
            n_consts,
            n_carry,
            length,
            reverse,
        } => control::transpose_scan(body, *n_consts, *n_carry, *length, *reverse, cts, ins),
        Prim::CustomVjp { bwd, n_res } => custom::transpose_custom_vjp(bwd, *n_res, cts, ins),
        Prim::CustomVjpCall { .. } => custom::transpose_custom_vjp_call(),
        Prim::Fused(_) | Prim::FusedMatmul(_) => fused::transpose_fused(),
        Prim::Collective(c) => collective::transpose_collective(c, cts, ins),
        Prim::ShardingConstraint(_) => collective::transpose_sharding_constraint(prim, ct(), ins),
        Prim::DebugCallback(_) => debug::transpose_debug_callback(ins),
        Prim::Check(_) => checkify::transpose_check(ins),
    }
}

/// The batching rule of each primitive, for a `vmap` of `size` examples
/// (named `axis_name`, for collectives): the outputs and their batch axes,
/// given the operands and theirs (`None`: the same for every example).
pub fn batch(
    prim: &Prim,
    size: usize,
    axis_name: Option<&str>,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    coverage::ran(Rule::Batch, prim);
    match prim {
        Prim::Unary(_) | Prim::Convert(_) => elementwise::batch_keeping_axis(prim, v, d),
        Prim::Binary(_) | Prim::Select => elementwise::batch_broadcasting(prim, v, d),
        Prim::Reduce { op, axes } => reduce::batch_reduce(*op, axes, size, v, d),
        Prim::ArgReduce { op, axis } => reduce::batch_arg_reduce(*op, *axis, size, v, d),
        Prim::Cumulative { op, axis, reverse } => {
            reduce::batch_cumulative(*op, *axis, *reverse, size, v, d)
        }
        Prim::DotGeneral(dims) => dot::batch_dot_general(dims, v, d),
        Prim::Transpose(perm) => movement::batch_transpose(perm, size, v, d),
        Prim::BroadcastInDim { shape, dims } => {
            movement::batch_broadcast_in_dim(shape, dims, size, v, d)
        }
        Prim::Reshape(shape) => movement::batch_reshape(shape, size, v, d),
        Prim::Slice {
            start,
            limit,
            stride,
        } => movement::batch_slice(start, limit, stride, size, v, d),
        Prim::Rev(axes) => movement::batch_rev(axes, size, v, d),
        Prim::Pad { lo, hi, interior } => movement::batch_pad(prim, lo, hi, interior, size, v, d),
        Prim::Concatenate { axis } => movement::batch_concatenate(*axis, size, v, d),
        Prim::Gather { axis, batch } => indexing::batch_gather(prim, *axis, *batch, size, v, d),
        Prim::Scatter { axis, mode, batch } => {
            indexing::batch_scatter(*axis, *mode, *batch, size, v, d)
        }
        Prim::Iota { .. } => indexing::batch_iota(prim),
        Prim::Sort { axis } => indexing::batch_sort(*axis, size, v, d),
        Prim::Fft { kind, n } => fft::batch_fft(*kind, *n, size, v, d),
        Prim::Argsort { axis } => indexing::batch_argsort(*axis, size, v, d),
        Prim::Threefry2x32 => random::batch_threefry2x32(prim, size, v, d),
        Prim::Cond { branches } => control::batch_cond(branches, size, v, d),
        Prim::While {
            cond,
            body,
            n_cond,
            n_body,
        } => control::batch_while(cond, body, *n_cond, *n_body, size, v, d),
        Prim::Scan {
            body,
            n_consts,
            n_carry,
            length,
            reverse,
        } => control::batch_scan(body, *n_consts, *n_carry, *length, *reverse, size, v, d),
        Prim::CustomVjp { .. } => custom::batch_custom_vjp(),
        Prim::CustomVjpCall { f, n_consts, .. } => {
            custom::batch_custom_vjp_call(f, n_consts, size, v, d)
        }
        Prim::Fused(_) | Prim::FusedMatmul(_) => fused::batch_fused(),
        Prim::Collective(c) => collective::batch_collective(c, size, axis_name, v, d),
        Prim::ShardingConstraint(p) => collective::batch_sharding_constraint(p, size, v, d),
        Prim::DebugCallback(_) => debug::batch_debug_callback(prim, size, v, d),
        Prim::Check(_) => checkify::batch_check(prim, size, v, d),
    }
}

/// The partitioning rule of each primitive, for sharded `jit`: the local
/// outputs and their layouts, given the local operands and theirs (what it
/// may reshard and which collectives it may insert are `Spmd`'s).
pub fn partition(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    coverage::ran(Rule::Partition, prim);
    match prim {
        Prim::Unary(_) | Prim::Convert(_) => elementwise::partition_keeping_layout(prim, ins),
        Prim::Binary(_) | Prim::Select => elementwise::partition_broadcasting(prim, cx, ins),
        Prim::Reduce { op, axes } => reduce::partition_reduce(prim, cx, *op, axes, ins),
        Prim::ArgReduce { .. } => reduce::partition_arg_reduce(prim, cx, ins),
        Prim::Cumulative { axis, .. } => reduce::partition_cumulative(prim, *axis, cx, ins),
        Prim::DotGeneral(dd) => dot::partition_dot_general(prim, cx, dd, ins),
        Prim::Transpose(perm) => movement::partition_transpose(prim, perm, ins),
        Prim::BroadcastInDim { shape, dims } => {
            movement::partition_broadcast_in_dim(cx, shape, dims, ins)
        }
        Prim::Reshape(shape) => movement::partition_reshape(prim, cx, shape, ins),
        Prim::Slice {
            start,
            limit,
            stride,
        } => movement::partition_slice(cx, start, limit, stride, ins),
        Prim::Rev(dims) => movement::partition_rev(prim, dims, cx, ins),
        Prim::Pad { lo, hi, interior } => movement::partition_pad(cx, lo, hi, interior, ins),
        Prim::Concatenate { .. } => movement::partition_concatenate(prim, cx, ins),
        Prim::Gather { .. } => indexing::partition_gather(prim, cx, ins),
        Prim::Scatter { .. } => indexing::partition_scatter(prim, cx, ins),
        Prim::Iota { .. } => indexing::partition_iota(prim, cx, ins),
        Prim::Sort { axis } => indexing::partition_sort(prim, *axis, cx, ins),
        Prim::Fft { .. } => fft::partition_fft(prim, cx, ins),
        Prim::Argsort { axis } => indexing::partition_argsort(prim, *axis, cx, ins),
        Prim::Threefry2x32 => random::partition_threefry2x32(prim, cx, ins),
        Prim::Cond { .. } => control::partition_cond(prim, cx, ins),
        Prim::While { .. } => control::partition_while(prim, cx, ins),
        Prim::Scan { .. } => control::partition_scan(prim, cx, ins),
        Prim::CustomVjp { .. } | Prim::CustomVjpCall { .. } => {
            custom::partition_custom_vjp(prim, cx, ins)
        }
        Prim::Fused(_) | Prim::FusedMatmul(_) => fused::partition_fused(),
        Prim::Collective(_) => collective::partition_collective(prim, cx, ins),
        Prim::ShardingConstraint(p) => collective::partition_sharding_constraint(cx, p, ins),
        Prim::DebugCallback(cb) => debug::partition_debug_callback(cb, cx, ins),
        Prim::Check(_) => checkify::partition_check(),
    }
}

// ---------------------------------------------------------------------------
// Shared by the families' rules.

/// The operands an op accepts, from its op-table row, for `needs float operands`.
fn needs(accepts: impl Fn(DType) -> bool) -> &'static str {
    match (
        accepts(DType::Bool),
        accepts(DType::I32),
        accepts(DType::F32),
    ) {
        (false, false, true) => "float",
        (true, true, false) => "bool or integer",
        (false, true, false) => "integer",
        (false, true, true) => "numeric (non-bool)",
        // Every real dtype: what failed is a complex operand.
        (true, true, true) if !accepts(DType::C64) => "real (non-complex)",
        (false, false, false) | (true, false, false) | (true, false, true) | (true, true, true) => {
            "other"
        }
    }
}

fn ty(a: &Aval) -> String {
    type_str(&a.shape, a.dtype)
}

fn same_dtype(name: &str, args: &[Aval]) -> Result<DType> {
    let d = args[0].dtype;
    if let Some(b) = args.iter().find(|a| a.dtype != d) {
        return Err(Error::type_error(format!(
            "{name}: operands must share a dtype, got {} and {}",
            ty(&args[0]),
            ty(b)
        )));
    }
    Ok(d)
}

fn check_axis(name: &str, axis: usize, ndim: usize) -> Result<()> {
    if axis >= ndim {
        return Err(Error::value_error(format!(
            "{name}: axis {axis} is out of bounds for an array of rank {ndim}"
        )));
    }
    Ok(())
}

/// A shape rule's one output.
fn one_type(shape: Shape, dtype: DType) -> Result<Avals> {
    Ok(smallvec![Aval { shape, dtype }])
}

/// Concrete operands: evaluation never sees a tracer (`bind` hands those
/// to their trace).
fn arrays(args: Args) -> Arrays {
    args.into_iter()
        .map(|t| match t {
            Tensor::Concrete(a) => a,
            Tensor::Traced(_) => unreachable!("eager evaluation of a tracer"),
        })
        .collect()
}

/// The backend that holds these operands (the default one for none).
fn device(args: &[Array]) -> backend::Dispatch<'static> {
    backend::of(args)
}

/// An evaluation's one output.
fn one_out(a: Array) -> Result<Outs> {
    Ok(smallvec![a.into()])
}

/// A JVP rule's one output and its tangent.
fn one(p: Tensor, t: Option<Tensor>) -> Result<(Outs, Tangents)> {
    Ok((smallvec![p], vec![t]))
}

fn map(t: &Option<Tensor>, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Option<Tensor>> {
    t.as_ref().map(f).transpose()
}

fn add_opt(a: Option<Tensor>, b: Option<Tensor>) -> Result<Option<Tensor>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(add(&a, &b)?),
        (a, None) => a,
        (None, b) => b,
    })
}

/// The JVP of a primitive whose outputs have no tangent (integers, bools):
/// the primal outputs, each with a zero tangent.
fn zero_tangents(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    let avals: Vec<Aval> = p.iter().map(Tensor::aval).collect();
    Ok((
        bind(prim, p.to_vec())?,
        vec![None; prim.shape_rule(&avals)?.len()],
    ))
}

/// The error of a transpose rule for a primitive that is not linear.
fn not_linear(prim: &Prim) -> Error {
    Error::new(
        ErrorKind::TransformError,
        format!(
            "reverse-mode differentiation: no transpose rule for {} applied to a tangent",
            prim.ir_name()
        ),
    )
}

/// The cotangent for each linear input, `None` for known ones.
fn for_linear(
    ins: &[LinIn],
    mut f: impl FnMut(usize) -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    (0..ins.len())
        .map(|i| {
            if ins[i].is_linear() {
                f(i).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect()
}

/// Axis parameters of a primitive whose operands got a batch axis in front.
fn shift(axes: &[usize]) -> Vec<usize> {
    axes.iter().map(|a| a + 1).collect()
}

/// A batching rule's one output, batched at the front.
fn batched_at_front(p: Prim, x: Tensor) -> Result<(Outs, Bdims)> {
    Ok((bind(&p, [x])?, vec![Some(0)]))
}

/// Fail cleanly, instead of aborting the process, when an array of this type
/// cannot be allocated: sizes that overflow, or more than one allocation may
/// take (`arr_kernels::limits`, the rule strings and lists follow too).
/// Every primitive's outputs are checked (`eval_concrete`), and so is every
/// array made outside a primitive.
pub fn check_alloc(shape: &[usize], dtype: DType) -> Result<()> {
    arr_kernels::limits::array_bytes(shape, dtype.size_bytes())
        .map(|_| ())
        .map_err(|why| too_large(shape, dtype, why))
}

/// The number of elements of an array type, if the type can exist at all
/// (`arr_kernels::limits::element_count`): every shape rule's outputs are
/// checked, so sizes are never computed with wrapping products, traced or not.
pub fn check_shape(shape: &[usize], dtype: DType) -> Result<usize> {
    arr_kernels::limits::element_count(shape, dtype.size_bytes())
        .map_err(|why| too_large(shape, dtype, why))
}

fn too_large(shape: &[usize], dtype: DType, why: arr_kernels::limits::TooLarge) -> Error {
    match why {
        // Not a matter of memory: no such array exists, as NumPy's "array is too big".
        arr_kernels::limits::TooLarge::Extent => Error::value_error(format!(
            "array is too big: {} cannot exist, even empty ({why})",
            type_str(shape, dtype)
        )),
        _ => Error::new(
            crate::ErrorKind::MemoryError,
            format!("cannot allocate {} ({why})", type_str(shape, dtype)),
        ),
    }
}

/// Apply a primitive: the one entry point of every array operation. With
/// no transformation active and concrete operands, check the shape rule and
/// evaluate on the CPU; otherwise the innermost trace that owns an operand
/// interprets it (see `transform`).
pub fn bind(prim: &Prim, args: impl IntoArgs) -> Result<Outs> {
    // Every operation, eager, traced or compiled, on the session's thread
    // or a device worker, is a point where an interrupt stops the program.
    check_interrupt()?;
    let args = args.into_args();
    if let Prim::Collective(c) = prim {
        return collective::bind_collective(prim, c, args);
    }
    let weak = weak_outputs(prim, &args);
    if let Some(level) = transform::top_level(&args)? {
        return Ok(weak.mark(transform::process(level, prim, args)?));
    }
    let outs = weak.mark(eval_concrete(prim, args)?);
    // A kernel that saw the interrupt stopped early: its outputs are
    // unfinished and must not reach a variable.
    check_interrupt()?;
    if debug_nans() {
        check_nans(prim, &outs)?;
    }
    Ok(outs)
}

/// Which outputs of one application are weakly typed (JAX's `weak_type`).
enum WeakOuts {
    None,
    All,
    Each(SmallVec<[bool; 4]>),
}

impl WeakOuts {
    fn mark(self, outs: Outs) -> Outs {
        match self {
            WeakOuts::None => outs,
            WeakOuts::All => outs.into_iter().map(|o| o.weakened(true)).collect(),
            WeakOuts::Each(w) => crate::tensor::weakened_each(outs, &w).collect(),
        }
    }
}

/// JAX's weak-type rule of each primitive: an elementwise result, a product
/// or a selection is weak when every operand that gives it its values is
/// (`x * 2.0` of a weak `x`), movement keeps its operand's, a loop's
/// outputs are its body's; conversions, reductions (as `jnp.sum` gives
/// them), random bits and index results are strong.
fn weak_outputs(prim: &Prim, args: &[Tensor]) -> WeakOuts {
    let all = |ts: &[Tensor]| {
        if !ts.is_empty() && ts.iter().all(Tensor::is_weak) {
            WeakOuts::All
        } else {
            WeakOuts::None
        }
    };
    // A loop's outputs are as its body gives them (its carry began so);
    // marked either way, as a concrete loop or branch may run on weaker values.
    let body = |g: &GraphRef| WeakOuts::Each(g.weak_outs.iter().copied().collect());
    match prim {
        Prim::Unary(_) | Prim::Binary(_) | Prim::DotGeneral(_) | Prim::Concatenate { .. } => {
            all(args)
        }
        Prim::Select => all(args.get(1..).unwrap_or(&[])),
        Prim::Pad { .. } => all(args),
        Prim::Transpose(_)
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape(_)
        | Prim::Slice { .. }
        | Prim::Rev(_)
        | Prim::Gather { .. }
        | Prim::Sort { .. }
        | Prim::ShardingConstraint(_) => all(args.get(..1).unwrap_or(&[])),
        Prim::Scatter { .. } => match args {
            [x, _, u, ..] if x.is_weak() && u.is_weak() => WeakOuts::All,
            _ => WeakOuts::None,
        },
        Prim::While { body: b, .. } | Prim::Scan { body: b, .. } => body(b),
        // A cond's output is weak where every branch gives it weak.
        Prim::Cond { branches } => {
            let n = branches.iter().map(|b| b.outvars.len()).max().unwrap_or(0);
            WeakOuts::Each(
                (0..n)
                    .map(|i| branches.iter().all(|b| b.weak_outs.get(i) == Some(&true)))
                    .collect(),
            )
        }
        Prim::Convert(_)
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Iota { .. }
        | Prim::Fft { .. }
        | Prim::Argsort { .. }
        | Prim::Threefry2x32
        | Prim::CustomVjp { .. }
        | Prim::Fused(_)
        | Prim::FusedMatmul(_)
        | Prim::Collective(_)
        | Prim::DebugCallback(_)
        | Prim::Check(_) => WeakOuts::None,
        Prim::CustomVjpCall { f, .. } => WeakOuts::Each(f.weak_outs.iter().copied().collect()),
    }
}

// JAX's `jax_debug_nans`: while set, every operation run eagerly checks
// its floating-point outputs and raises FloatingPointError at the first
// NaN (a jitted function whose outputs hold one runs again op by op, to
// name the operation that made it). A setting of the interpreter's
// thread: its session's eager operations run there.
thread_local! {
    /// Whether `jax_debug_nans` is set (see above).
    static DEBUG_NANS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Set `jax_debug_nans`; returns the previous setting.
pub fn set_debug_nans(on: bool) -> bool {
    DEBUG_NANS.with(|d| d.replace(on))
}

#[inline]
pub fn debug_nans() -> bool {
    DEBUG_NANS.with(|d| d.get())
}

/// Whether any floating-point output holds a NaN.
pub fn any_nan(outs: &[Tensor]) -> bool {
    outs.iter().any(|o| match o {
        Tensor::Concrete(a) if a.dtype().is_float() => {
            a.to_f64_vec().is_ok_and(|v| v.iter().any(|x| x.is_nan()))
        }
        _ => false,
    })
}

fn check_nans(prim: &Prim, outs: &[Tensor]) -> Result<()> {
    // A compiled program's kernels are checked by its jit, at its outputs.
    if matches!(prim, Prim::Fused(_) | Prim::FusedMatmul(_)) {
        return Ok(());
    }
    if any_nan(outs) {
        return Err(Error::new(
            ErrorKind::FloatingPointError,
            format!("invalid value (nan) encountered in {}", prim.ir_name()),
        ));
    }
    Ok(())
}

/// KeyboardInterrupt if an interrupt was requested for this thread's work;
/// MemoryError if the program's values have spent the memory budget.
#[inline]
pub fn check_interrupt() -> Result<()> {
    if arr_kernels::interrupt::requested() {
        return Err(Error::interrupted());
    }
    if let Some(why) = arr_kernels::memory::exhausted() {
        return Err(Error::out_of_memory(why));
    }
    Ok(())
}

/// Check the shape rule and evaluate on concrete operands, on the CPU.
#[inline]
pub fn eval_concrete(prim: &Prim, args: Args) -> Result<Outs> {
    let mut on_gpu = false;
    for a in &args {
        if let Tensor::Concrete(a) = a {
            if a.deleted().is_some() {
                return Err(Error::deleted_array(a));
            }
            on_gpu |= a.home().is_some();
        }
    }
    if on_gpu {
        let arrays = args.iter().filter_map(|a| match a {
            Tensor::Concrete(a) => Some(a),
            Tensor::Traced(_) => None,
        });
        arr_kernels::backend::check_devices(arrays).map_err(Error::value_error)?;
    }
    // (A device worker runs one device's part of a program: its blocks
    // have no layout of their own, whatever the constants it reads carry.)
    let placed = args
        .iter()
        .any(|a| matches!(a, Tensor::Concrete(x) if x.placement().is_some()))
        && !arr_kernels::devices::on_device_worker();
    // The commonest operation, `x * y` or `x * 2.0` on one dtype, needs only
    // the dtype part of its shape rule, and its output is the size of an
    // operand that already exists, so no allocation check either.
    if let (Prim::Binary(op), [Tensor::Concrete(a), Tensor::Concrete(b)], false) =
        (prim, &args[..], placed)
    {
        let d = a.dtype();
        let simple = d == b.dtype() && (a.shape() == b.shape() || b.ndim() == 0) && op.accepts(d);
        if simple {
            return prim.eval(args);
        }
    }
    let mut avals: SmallVec<[Aval; 4]> = SmallVec::new();
    for a in &args {
        avals.push(a.aval());
    }
    let out_avals = prim.shape_rule(&avals)?;
    for out in &out_avals {
        check_alloc(&out.shape, out.dtype)?;
    }
    if !placed {
        return prim.eval(args);
    }
    // Sharded operands: the results carry the layouts JAX's types give them.
    let ins: Vec<_> = args.iter().map(Tensor::placement).collect();
    let layouts = layout::out_layouts(prim, &ins, &avals, &out_avals)?;
    let outs = prim.eval(args)?;
    Ok(outs
        .into_iter()
        .zip(layouts)
        .map(|(o, p)| match (o, p) {
            (Tensor::Concrete(a), Some(p)) if a.placement() != Some(&p) => {
                Tensor::Concrete(a.with_placement(p))
            }
            (o, _) => o,
        })
        .collect())
}

/// `bind` for primitives with one output.
pub fn bind1(prim: &Prim, args: impl IntoArgs) -> Result<Tensor> {
    Ok(bind(prim, args)?.swap_remove(0))
}
