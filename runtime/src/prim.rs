//! The closed set of primitives, their shape rules, and `bind`.
//!
//! Every array operation in arr is one of these, applied through `bind`.
//! Broadcasting, dtype promotion and NumPy's conveniences are sugar on top
//! (see `numpy.rs` and the stdlib). Each primitive has one shape rule here,
//! used for eager checks now and for abstract evaluation under tracing.

use crate::display::sharding::PlacementText;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::transform::{
    self, collective, control,
    graph::{Graph, GraphRef},
};
use arr_kernels::{
    backend, broadcast_shapes, ArgReduceOp, Array, BinaryOp, DType, DotDims, Kernel, MatmulKernel,
    ReduceOp, ScanOp, ScatterMode, Shape, UnaryOp,
};
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
    Gather {
        axis: usize,
    },
    /// Operands: array, indices, updates.
    Scatter {
        axis: usize,
        mode: ScatterMode,
    },
    Iota {
        dtype: DType,
        shape: Vec<usize>,
        dim: usize,
    },
    Sort {
        axis: usize,
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
}

/// Operands of one primitive application (no heap allocation for up to four).
pub type Args = SmallVec<[Tensor; 4]>;
/// Results of one primitive application.
pub type Outs = SmallVec<[Tensor; 2]>;
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
        _ => "other",
    }
}

/// `f32[3,4]`
pub fn type_str(shape: &[usize], dtype: DType) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", dtype.short(), dims.join(","))
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
            Prim::Argsort { .. } => "argsort",
            Prim::Threefry2x32 => "threefry2x32",
            Prim::Cond { .. } => "cond",
            Prim::While { .. } => "while",
            Prim::Scan { .. } => "scan",
            Prim::CustomVjp { .. } => "custom_vjp",
            Prim::Fused(_) => "fused",
            Prim::FusedMatmul(_) => "fused_matmul",
            Prim::Collective(c) => c.name(),
            Prim::ShardingConstraint(_) => "sharding_constraint",
        }
    }

    /// The name in the IR text: the operation itself (`sin`, `mul`, `reduce_sum`).
    pub fn ir_name(&self) -> String {
        match self {
            Prim::Unary(op) => op.name().to_string(),
            Prim::Binary(op) => op.name().to_string(),
            Prim::Reduce { op, .. } => format!(
                "reduce_{}",
                arr_kernels::ops::snake_name(&format!("{op:?}"))
            ),
            Prim::ArgReduce { op, .. } => arr_kernels::ops::snake_name(&format!("{op:?}")),
            Prim::Cumulative { op, .. } => {
                format!("cum{}", arr_kernels::ops::snake_name(&format!("{op:?}")))
            }
            Prim::Scatter { mode, .. } => format!(
                "scatter_{}",
                arr_kernels::ops::snake_name(&format!("{mode:?}"))
            ),
            other => other.name().to_string(),
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
            Prim::Convert(d) => format!("dtype={}", d.name()),
            Prim::Reduce { axes, .. } => format!("axes={}", list(axes)),
            Prim::ArgReduce { axis, .. }
            | Prim::Concatenate { axis }
            | Prim::Gather { axis }
            | Prim::Scatter { axis, .. }
            | Prim::Sort { axis }
            | Prim::Argsort { axis } => format!("axis={axis}"),
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
            _ => Vec::new(),
        }
    }

    fn arity(&self) -> Option<usize> {
        Some(match self {
            Prim::Iota { .. } => 0,
            Prim::Binary(_) | Prim::Pad { .. } | Prim::Gather { .. } | Prim::DotGeneral(_) => 2,
            Prim::Select | Prim::Scatter { .. } => 3,
            Prim::Threefry2x32 => 4,
            Prim::Collective(c) => return c.arity(),
            Prim::Concatenate { .. }
            | Prim::Cond { .. }
            | Prim::While { .. }
            | Prim::Scan { .. }
            | Prim::CustomVjp { .. }
            | Prim::Fused(_)
            | Prim::FusedMatmul(_) => return None,
            _ => 1,
        })
    }

    /// The output types for these input types, or an error naming the shapes.
    /// The output types for these operand types, or why the operands do not
    /// fit. The single place shapes and dtypes are checked; an output type
    /// that no array can have (`check_shape`) is refused here too.
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
        let one = |shape: Shape, dtype: DType| Ok(smallvec![Aval { shape, dtype }]);
        match self {
            Prim::Unary(op) => {
                let a = &args[0];
                if !op.accepts(a.dtype) {
                    return Err(Error::type_error(format!(
                        "{} needs a {} array, got {}",
                        op.symbol(),
                        needs(|d| op.accepts(d)),
                        ty(a)
                    )));
                }
                one(
                    a.shape.clone(),
                    if op.is_predicate() {
                        DType::Bool
                    } else {
                        a.dtype
                    },
                )
            }
            Prim::Binary(op) => {
                let (a, b) = (&args[0], &args[1]);
                let shape = if a.shape == b.shape {
                    a.shape.clone()
                } else {
                    broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| {
                        Error::shape_error(format!("cannot broadcast {} with {}", ty(a), ty(b)))
                    })?
                };
                let dtype = if a.dtype == b.dtype {
                    a.dtype
                } else {
                    same_dtype(op.symbol(), args)?
                };
                if !op.accepts(dtype) {
                    return Err(Error::type_error(format!(
                        "{} needs {} operands, got {} and {}",
                        op.symbol(),
                        needs(|d| op.accepts(d)),
                        ty(a),
                        ty(b)
                    )));
                }
                one(
                    shape,
                    if op.is_comparison() {
                        DType::Bool
                    } else {
                        dtype
                    },
                )
            }
            Prim::Select => {
                let (c, a, b) = (&args[0], &args[1], &args[2]);
                if c.dtype != DType::Bool {
                    return Err(Error::type_error(format!(
                        "where: the condition must be bool, got {}",
                        ty(c)
                    )));
                }
                let ab = broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| {
                    Error::shape_error(format!("cannot broadcast {} with {}", ty(a), ty(b)))
                })?;
                let shape = broadcast_shapes(&c.shape, &ab).ok_or_else(|| {
                    Error::shape_error(format!(
                        "cannot broadcast condition {} with {}",
                        ty(c),
                        type_str(&ab, a.dtype)
                    ))
                })?;
                one(shape, same_dtype("where", &args[1..])?)
            }
            Prim::Convert(d) => one(args[0].shape.clone(), *d),
            Prim::Reduce { op, axes } => {
                let a = &args[0];
                for &ax in axes {
                    check_axis("reduce", ax, a.shape.len())?;
                }
                if matches!(op, ReduceOp::All | ReduceOp::Any) && a.dtype != DType::Bool {
                    return Err(Error::type_error(format!(
                        "all/any need a bool array, got {}",
                        ty(a)
                    )));
                }
                let shape = a
                    .shape
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !axes.contains(i))
                    .map(|(_, &d)| d)
                    .collect();
                one(shape, a.dtype)
            }
            Prim::ArgReduce { axis, .. } => {
                let a = &args[0];
                check_axis("argmax", *axis, a.shape.len())?;
                if a.shape[*axis] == 0 {
                    return Err(Error::value_error(
                        "attempt to get argmax/argmin of an empty sequence",
                    ));
                }
                let mut shape = a.shape.clone();
                shape.remove(*axis);
                one(shape, DType::I32)
            }
            Prim::Cumulative { axis, .. } => {
                check_axis("cumulative op", *axis, args[0].shape.len())?;
                one(args[0].shape.clone(), args[0].dtype)
            }
            Prim::DotGeneral(d) => {
                let (a, b) = (&args[0], &args[1]);
                let dtype = same_dtype("dot", args)?;
                let bad = || {
                    Error::shape_error(format!("dot: incompatible shapes {} and {}", ty(a), ty(b)))
                };
                for (&i, &j) in d
                    .lhs_batch
                    .iter()
                    .zip(&d.rhs_batch)
                    .chain(d.lhs_contract.iter().zip(&d.rhs_contract))
                {
                    if i >= a.shape.len() || j >= b.shape.len() || a.shape[i] != b.shape[j] {
                        return Err(bad());
                    }
                }
                if d.lhs_batch.len() != d.rhs_batch.len()
                    || d.lhs_contract.len() != d.rhs_contract.len()
                {
                    return Err(bad());
                }
                let mut shape: Shape = d.lhs_batch.iter().map(|&i| a.shape[i]).collect();
                let free = |s: &Shape, batch: &[usize], contract: &[usize]| -> Vec<usize> {
                    (0..s.len())
                        .filter(|i| !batch.contains(i) && !contract.contains(i))
                        .map(|i| s[i])
                        .collect()
                };
                shape.extend(free(&a.shape, &d.lhs_batch, &d.lhs_contract));
                shape.extend(free(&b.shape, &d.rhs_batch, &d.rhs_contract));
                one(shape, dtype)
            }
            Prim::Transpose(perm) => {
                let a = &args[0];
                let mut seen = vec![false; a.shape.len()];
                if perm.len() != a.shape.len()
                    || perm
                        .iter()
                        .any(|&p| p >= seen.len() || std::mem::replace(&mut seen[p], true))
                {
                    return Err(Error::value_error(format!(
                        "transpose: {perm:?} is not a permutation of the axes of {}",
                        ty(a)
                    )));
                }
                one(perm.iter().map(|&p| a.shape[p]).collect(), a.dtype)
            }
            Prim::BroadcastInDim { shape, dims } => {
                let a = &args[0];
                let ok = dims.len() == a.shape.len()
                    && dims.windows(2).all(|w| w[0] < w[1])
                    && dims
                        .iter()
                        .zip(&a.shape)
                        .all(|(&d, &s)| d < shape.len() && (s == 1 || s == shape[d]));
                if !ok {
                    return Err(Error::shape_error(format!(
                        "cannot broadcast {} to shape {:?}",
                        ty(a),
                        shape
                    )));
                }
                one(shape.as_slice().into(), a.dtype)
            }
            Prim::Reshape(shape) => {
                let a = &args[0];
                // (The operand's size fits: every type made passed `check_shape`.)
                let size = a.shape.iter().product::<usize>();
                if arr_kernels::limits::element_count(shape, a.dtype.size_bytes()) != Ok(size) {
                    return Err(Error::shape_error(format!(
                        "cannot reshape {} into shape {:?}",
                        ty(a),
                        shape
                    )));
                }
                one(shape.as_slice().into(), a.dtype)
            }
            Prim::Slice {
                start,
                limit,
                stride,
            } => {
                let a = &args[0];
                let n = a.shape.len();
                if start.len() != n || limit.len() != n || stride.len() != n {
                    return Err(Error::index_error(format!(
                        "slice of {} needs {n} bounds",
                        ty(a)
                    )));
                }
                let mut shape = Shape::new();
                for i in 0..n {
                    if start[i] > limit[i] || limit[i] > a.shape[i] || stride[i] == 0 {
                        return Err(Error::index_error(format!(
                            "slice {}:{}:{} out of bounds for axis {i} of {}",
                            start[i],
                            limit[i],
                            stride[i],
                            ty(a)
                        )));
                    }
                    shape.push((limit[i] - start[i]).div_ceil(stride[i]));
                }
                one(shape, a.dtype)
            }
            Prim::Rev(axes) => {
                for &ax in axes {
                    check_axis("flip", ax, args[0].shape.len())?;
                }
                one(args[0].shape.clone(), args[0].dtype)
            }
            Prim::Pad { lo, hi, interior } => {
                let a = &args[0];
                let n = a.shape.len();
                if lo.len() != n
                    || hi.len() != n
                    || interior.len() != n
                    || !args[1].shape.is_empty()
                {
                    return Err(Error::shape_error(format!(
                        "pad: bad padding for {}",
                        ty(a)
                    )));
                }
                same_dtype("pad", args)?;
                let shape = (0..n)
                    .map(|i| {
                        lo[i] + hi[i] + a.shape[i] + a.shape[i].saturating_sub(1) * interior[i]
                    })
                    .collect();
                one(shape, a.dtype)
            }
            Prim::Concatenate { axis } => {
                if args.is_empty() {
                    return Err(Error::value_error("need at least one array to concatenate"));
                }
                let first = &args[0];
                check_axis("concatenate", *axis, first.shape.len())?;
                let dtype = same_dtype("concatenate", args)?;
                let mut shape = first.shape.clone();
                shape[*axis] = 0;
                for a in args {
                    let compatible = a.shape.len() == first.shape.len()
                        && (0..a.shape.len()).all(|i| i == *axis || a.shape[i] == first.shape[i]);
                    if !compatible {
                        return Err(Error::shape_error(format!(
                            "concatenate: {} and {} differ outside axis {axis}",
                            ty(first),
                            ty(a)
                        )));
                    }
                    shape[*axis] += a.shape[*axis];
                }
                one(shape, dtype)
            }
            Prim::Gather { axis } => {
                let (a, idx) = (&args[0], &args[1]);
                check_axis("take", *axis, a.shape.len())?;
                if !idx.dtype.is_int() {
                    return Err(Error::type_error(format!(
                        "indices must be integers, got {}",
                        ty(idx)
                    )));
                }
                let mut shape: Shape = a.shape[..*axis].into();
                shape.extend_from_slice(&idx.shape);
                shape.extend_from_slice(&a.shape[*axis + 1..]);
                one(shape, a.dtype)
            }
            Prim::Scatter { axis, .. } => {
                let (a, idx, upd) = (&args[0], &args[1], &args[2]);
                check_axis("scatter", *axis, a.shape.len())?;
                let mut shape: Shape = a.shape[..*axis].into();
                shape.extend_from_slice(&idx.shape);
                shape.extend_from_slice(&a.shape[*axis + 1..]);
                if upd.shape != shape || upd.dtype != a.dtype || !idx.dtype.is_int() {
                    return Err(Error::shape_error(format!(
                        "scatter: updates {} do not match {} indexed by {}",
                        ty(upd),
                        ty(a),
                        ty(idx)
                    )));
                }
                one(a.shape.clone(), a.dtype)
            }
            Prim::Iota { dtype, shape, dim } => {
                check_axis("iota", *dim, shape.len())?;
                one(shape.as_slice().into(), *dtype)
            }
            Prim::Sort { axis } => {
                check_axis("sort", *axis, args[0].shape.len())?;
                one(args[0].shape.clone(), args[0].dtype)
            }
            Prim::Argsort { axis } => {
                check_axis("argsort", *axis, args[0].shape.len())?;
                one(args[0].shape.clone(), DType::I32)
            }
            Prim::Collective(c) => collective::shape_rule(c, args),
            Prim::ShardingConstraint(p) => {
                if p.spec.len() != args[0].shape.len() {
                    return Err(Error::value_error(format!(
                        "with_sharding_constraint: {} has {} entries for {}",
                        p.spec_text(),
                        p.spec.len(),
                        ty(&args[0])
                    )));
                }
                one(args[0].shape.clone(), args[0].dtype)
            }
            Prim::Threefry2x32 => {
                if args
                    .iter()
                    .any(|a| a.dtype != DType::U32 || a.shape != args[0].shape)
                {
                    return Err(Error::type_error(
                        "threefry2x32 needs four u32 arrays of one shape",
                    ));
                }
                let out = Aval {
                    shape: args[0].shape.clone(),
                    dtype: DType::U32,
                };
                Ok(smallvec![out.clone(), out])
            }
            Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. } => {
                control::shape_rule(self, args)
            }
            Prim::Fused(k) => {
                let fits = args.len() == k.inputs.len()
                    && args
                        .iter()
                        .zip(&k.inputs)
                        .all(|(a, i)| a.dtype == i.dtype && a.shape[..] == i.shape[..]);
                if !fits {
                    return Err(Error::type_error(
                        "fused kernel: operands do not match the kernel's inputs",
                    ));
                }
                Ok((0..k.outputs.len())
                    .map(|j| Aval {
                        shape: k.output_shape(j).into(),
                        dtype: k.dtype,
                    })
                    .collect())
            }
            Prim::FusedMatmul(k) => {
                let e = &k.epilogue;
                let matches = |a: &Aval, dtype: DType, shape: &[usize]| {
                    a.dtype == dtype && a.shape[..] == shape[..]
                };
                let fits = args.len() == e.inputs.len() + 1
                    && matches(&args[0], k.lhs.dtype, &k.lhs.shape)
                    && matches(&args[1], k.rhs.dtype, &k.rhs.shape)
                    && (0..e.inputs.len()).all(|i| {
                        k.operand_of_input(i).is_none_or(|o| {
                            matches(&args[o], e.inputs[i].dtype, &e.inputs[i].shape)
                        })
                    });
                if !fits {
                    return Err(Error::type_error(
                        "fused matmul: operands do not match the kernel's inputs",
                    ));
                }
                // The product's own type, as dot_general's rule gives it.
                let dot = Prim::DotGeneral(k.dims.clone()).shape_rule(&args[..2])?;
                if dot[0].dtype != e.dtype || dot[0].shape[..] != e.shape[..] {
                    return Err(Error::type_error(
                        "fused matmul: the product's type is not the epilogue's",
                    ));
                }
                Ok((0..e.outputs.len())
                    .map(|j| Aval {
                        shape: k.output_shape(j).into(),
                        dtype: e.dtype,
                    })
                    .collect())
            }
        }
    }

    /// Run on concrete arrays (already checked by `shape_rule`).
    fn eval(&self, args: Args) -> Result<Outs> {
        if matches!(
            self,
            Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. }
        ) {
            return control::eval(self, args);
        }
        let concrete = |t: Tensor| match t {
            Tensor::Concrete(a) => a,
            Tensor::Traced(_) => unreachable!("eager evaluation of a tracer"),
        };
        // The hot cases first, without collecting the operands again.
        if let Prim::Binary(op) = self {
            let mut it = args.into_iter();
            let (a, b) = (it.next().map(concrete), it.next().map(concrete));
            let (Some(a), Some(b)) = (a, b) else {
                unreachable!("checked arity")
            };
            let place = elementwise_placement(&[&a, &b]);
            return Ok(smallvec![keep_placement(
                backend::of(&[&a, &b]).binary(*op, a, b),
                place
            )
            .into()]);
        }
        if let Prim::Unary(op) = self {
            let a = args
                .into_iter()
                .next()
                .map(concrete)
                .expect("checked arity");
            let place = elementwise_placement(&[&a]);
            return Ok(smallvec![keep_placement(
                backend::of(&[&a]).unary(*op, a),
                place
            )
            .into()]);
        }
        if let Prim::Fused(k) = self {
            let arrays: Vec<Array> = args.into_iter().map(concrete).collect();
            let device = backend::of(&arrays.iter().collect::<Vec<_>>());
            return Ok(device
                .run_kernel(k, arrays)
                .into_iter()
                .map(Tensor::from)
                .collect());
        }
        if let Prim::FusedMatmul(k) = self {
            let arrays: Vec<Array> = args.into_iter().map(concrete).collect();
            let device = backend::of(&arrays.iter().collect::<Vec<_>>());
            return Ok(device
                .matmul_kernel(k, arrays)
                .into_iter()
                .map(Tensor::from)
                .collect());
        }
        let mut args: SmallVec<[Array; 4]> = args.into_iter().map(concrete).collect();
        let device = if args.is_empty() {
            backend::default()
        } else {
            backend::of(&args.iter().collect::<SmallVec<[&Array; 4]>>())
        };
        let out = match self {
            Prim::Unary(op) => device.unary(*op, args.pop().unwrap()),
            Prim::Binary(op) => {
                let b = args.pop().unwrap();
                let a = args.pop().unwrap();
                device.binary(*op, a, b)
            }
            Prim::Select => device.select(&args[0], &args[1], &args[2]),
            Prim::Convert(d) => {
                if args[0].dtype() == *d {
                    args.pop().unwrap()
                } else {
                    device.convert(&args[0], *d)
                }
            }
            Prim::Reduce { op, axes } => device.reduce(*op, &args[0], axes),
            Prim::ArgReduce { op, axis } => device.arg_reduce(*op, &args[0], *axis),
            Prim::Cumulative { op, axis, reverse } => device.scan(*op, &args[0], *axis, *reverse),
            Prim::DotGeneral(d) => device.dot_general(&args[0], &args[1], d),
            Prim::Transpose(perm) => device.transpose(&args[0], perm),
            Prim::BroadcastInDim { shape, dims } => device.broadcast_in_dim(&args[0], shape, dims),
            Prim::Reshape(shape) => args[0].reshape(shape),
            Prim::Slice {
                start,
                limit,
                stride,
            } => device.slice(&args[0], start, limit, stride),
            Prim::Rev(axes) => device.rev(&args[0], axes),
            Prim::Pad { lo, hi, interior } => device.pad(&args[0], &args[1], lo, hi, interior),
            Prim::Concatenate { axis } => device.concatenate(&args, *axis),
            Prim::Gather { axis } => device.gather(&args[0], &args[1], *axis),
            Prim::Scatter { axis, mode } => {
                device.scatter(&args[0], &args[1], &args[2], *axis, *mode)
            }
            Prim::Iota { dtype, shape, dim } => device.iota(*dtype, shape, *dim),
            Prim::Sort { axis } => device.sort(&args[0], *axis),
            Prim::Argsort { axis } => device.argsort(&args[0], *axis),
            Prim::Threefry2x32 => {
                let (a, b) = device.threefry2x32(&args[0], &args[1], &args[2], &args[3]);
                return Ok(smallvec![a.into(), b.into()]);
            }
            Prim::Collective(c) => {
                let outs = collective::eval(c, args.into_vec())?;
                return Ok(outs.into_iter().map(Tensor::from).collect());
            }
            Prim::ShardingConstraint(p) => args[0].with_placement(p.clone()),
            Prim::Cond { .. }
            | Prim::While { .. }
            | Prim::Scan { .. }
            | Prim::CustomVjp { .. }
            | Prim::Fused(_)
            | Prim::FusedMatmul(_) => unreachable!(),
        };
        Ok(smallvec![out.into()])
    }
}

/// An elementwise result keeps the layout of its sharded operands: the
/// placement of the first one (all sharded operands of the output's shape
/// must agree; otherwise the result is a plain host array).
fn elementwise_placement(
    args: &[&Array],
) -> Option<(Arc<arr_kernels::sharding::Placement>, Shape)> {
    let mut found: Option<(Arc<arr_kernels::sharding::Placement>, Shape)> = None;
    for a in args {
        if let Some(p) = a.placement() {
            match &found {
                None => found = Some((p.clone(), Shape::from_slice(a.shape()))),
                Some((q, _)) if **q == **p => {}
                Some(_) => return None,
            }
        }
    }
    found
}

fn keep_placement(
    out: Array,
    place: Option<(Arc<arr_kernels::sharding::Placement>, Shape)>,
) -> Array {
    match place {
        Some((p, shape)) if out.placement().is_none() && out.shape() == &shape[..] => {
            out.with_placement(p)
        }
        _ => out,
    }
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
    Error::new(
        crate::ErrorKind::MemoryError,
        format!("cannot allocate {} ({why})", type_str(shape, dtype)),
    )
}

/// Apply a primitive: the one entry point of every array operation. With
/// no transformation active and concrete operands, check the shape rule and
/// evaluate on the CPU; otherwise the innermost trace that owns an operand
/// interprets it (see `transform`).
pub fn bind(prim: &Prim, args: impl IntoArgs) -> Result<Outs> {
    let args = args.into_args();
    if let Prim::Collective(c) = prim {
        return collective::bind_collective(prim, c, args);
    }
    if let Some(level) = transform::top_level(&args)? {
        return transform::process(level, prim, args);
    }
    eval_concrete(prim, args)
}

/// Check the shape rule and evaluate on concrete operands, on the CPU.
#[inline]
pub fn eval_concrete(prim: &Prim, args: Args) -> Result<Outs> {
    for a in &args {
        if let Tensor::Concrete(a) = a {
            if a.deleted().is_some() {
                return Err(Error::deleted_array(a));
            }
        }
    }
    // The commonest operation, `x * y` or `x * 2.0` on one dtype, needs only
    // the dtype part of its shape rule, and its output is the size of an
    // operand that already exists, so no allocation check either.
    if let (Prim::Binary(op), [Tensor::Concrete(a), Tensor::Concrete(b)]) = (prim, &args[..]) {
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
    for out in prim.shape_rule(&avals)? {
        check_alloc(&out.shape, out.dtype)?;
    }
    prim.eval(args)
}

/// `bind` for primitives with one output.
pub fn bind1(prim: &Prim, args: impl IntoArgs) -> Result<Tensor> {
    Ok(bind(prim, args)?.swap_remove(0))
}
