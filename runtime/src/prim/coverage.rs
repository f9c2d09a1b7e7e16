//! Every primitive, for tests that must reach each one: `examples` lists a
//! primitive of every variant (one per op for those that carry an op), and
//! `record` notes which primitives' JVP, transpose, batching and
//! partitioning rules ran on this thread while a closure ran. Together they
//! let a test check mechanically that its tables exercise every rule.

use super::Prim;
use crate::transform::collective::{Collective, CollectiveOp};
use crate::transform::graph::{Graph, GraphRef};
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{
    ArgReduceOp, BinaryOp, DType, DotDims, Kernel, MatmulKernel, MatmulOperand, ReduceOp, ScanOp,
    ScatterMode, UnaryOp,
};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;

/// An interpretation with a rule per primitive (besides shapes and evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    Jvp,
    Transpose,
    Batch,
    Partition,
}

/// Which rules ran: the interpretation and the primitive's IR name.
pub type Ran = BTreeSet<(Rule, String)>;

thread_local! {
    /// `Some` while `record` runs on this thread.
    static RAN: RefCell<Option<Ran>> = const { RefCell::new(None) };
}

/// Called by each interpretation's dispatch: notes the rule when recording.
pub(super) fn ran(rule: Rule, prim: &Prim) {
    RAN.with(|r| {
        if let Some(ran) = r.borrow_mut().as_mut() {
            ran.insert((rule, prim.ir_name()));
        }
    });
}

/// Run `f`, and return with its result the rules that ran meanwhile on
/// this thread (an outer `record` sees them too).
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Ran) {
    /// Puts back the outer recording, with this one's rules added, also
    /// when `f` panics.
    struct Restore(Option<Ran>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let inner = RAN.with(RefCell::take).unwrap_or_default();
            let outer = self.0.take().map(|mut outer| {
                outer.extend(inner);
                outer
            });
            RAN.with(|r| r.replace(outer));
        }
    }
    let restore = Restore(RAN.with(|r| r.replace(Some(Ran::new()))));
    let out = f();
    let ran = RAN.with(|r| r.borrow().clone()).unwrap_or_default();
    drop(restore);
    (out, ran)
}

/// A primitive of every variant, and of every op of the variants that
/// carry one (each unary and binary op, each reduction, scan and scatter
/// mode, each kind of collective). The parameters are placeholders: these
/// are for naming (`ir_name`), not for binding.
pub fn examples() -> Vec<Prim> {
    let graph = || GraphRef(Arc::new(Graph::default()));
    let kernel = || Kernel {
        shape: Vec::new(),
        dtype: DType::F32,
        inputs: Vec::new(),
        body: Vec::new(),
        outputs: Vec::new(),
        reduce_axes: 0,
    };
    let operand = || MatmulOperand {
        dtype: DType::F32,
        shape: Vec::new(),
    };
    let dims = || DotDims {
        lhs_batch: Vec::new(),
        rhs_batch: Vec::new(),
        lhs_contract: Vec::new(),
        rhs_contract: Vec::new(),
    };
    let mesh = Mesh::new(vec![1], vec!["x".into()], vec![0]).expect("a one-device mesh");
    let placement = Placement::new(Arc::new(mesh), vec![Vec::new()], 1).expect("replicated");
    // One seed per variant, in declaration order; `every_op` expands each.
    let seeds = vec![
        Prim::Unary(UnaryOp::Neg),
        Prim::Binary(BinaryOp::Add),
        Prim::Select,
        Prim::Convert(DType::F32),
        Prim::Reduce {
            op: ReduceOp::Sum,
            axes: Vec::new(),
        },
        Prim::ArgReduce {
            op: ArgReduceOp::ArgMax,
            axis: 0,
        },
        Prim::Cumulative {
            op: ScanOp::Sum,
            axis: 0,
            reverse: false,
        },
        Prim::DotGeneral(dims()),
        Prim::Transpose(Vec::new()),
        Prim::BroadcastInDim {
            shape: Vec::new(),
            dims: Vec::new(),
        },
        Prim::Reshape(Vec::new()),
        Prim::Slice {
            start: Vec::new(),
            limit: Vec::new(),
            stride: Vec::new(),
        },
        Prim::Rev(Vec::new()),
        Prim::Pad {
            lo: Vec::new(),
            hi: Vec::new(),
            interior: Vec::new(),
        },
        Prim::Concatenate { axis: 0 },
        Prim::Gather { axis: 0, batch: 0 },
        Prim::Scatter {
            axis: 0,
            mode: ScatterMode::Set,
            batch: 0,
        },
        Prim::Iota {
            dtype: DType::I32,
            shape: Vec::new(),
            dim: 0,
        },
        Prim::Sort { axis: 0 },
        Prim::Fft {
            kind: arr_kernels::complex::FftKind::Fft,
            n: 4,
        },
        Prim::Argsort { axis: 0 },
        Prim::Threefry2x32,
        Prim::Cond {
            branches: Vec::new(),
        },
        Prim::While {
            cond: graph(),
            body: graph(),
            n_cond: 0,
            n_body: 0,
        },
        Prim::Scan {
            body: graph(),
            n_consts: 0,
            n_carry: 0,
            length: 0,
            reverse: false,
        },
        Prim::CustomVjp {
            bwd: graph(),
            n_res: 0,
        },
        Prim::CustomVjpCall {
            f: graph(),
            fwd: graph(),
            bwd: graph(),
            n_consts: [0; 3],
        },
        Prim::Fused(Arc::new(kernel())),
        Prim::FusedMatmul(Arc::new(MatmulKernel {
            lhs: operand(),
            rhs: operand(),
            dims: dims(),
            epilogue: kernel(),
            product: 0,
        })),
        Prim::Collective(Collective {
            op: CollectiveOp::AxisIndex,
            axis: "i".into(),
            size: 1,
        }),
        Prim::ShardingConstraint(Arc::new(placement)),
        super::debug::register(
            super::debug::Kind::Print,
            false,
            std::rc::Rc::new(|_, _| Ok(())),
        ),
        super::debug::register(
            super::debug::Kind::Callback,
            false,
            std::rc::Rc::new(|_, _| Ok(())),
        ),
        Prim::Check(Arc::new(crate::transform::checkify::Check {
            kind: crate::transform::checkify::CheckKind::Div,
        })),
    ];
    seeds.into_iter().flat_map(every_op).collect()
}

/// `p` with each op its variant can carry. An arm per variant: a new
/// primitive does not compile until it is handled here, and it then
/// belongs among the seeds of `examples`.
fn every_op(p: Prim) -> Vec<Prim> {
    match p {
        Prim::Unary(_) => UnaryOp::ALL.iter().map(|&op| Prim::Unary(op)).collect(),
        Prim::Binary(_) => BinaryOp::ALL.iter().map(|&op| Prim::Binary(op)).collect(),
        Prim::Reduce { axes, .. } => ReduceOp::ALL
            .iter()
            .map(|&op| Prim::Reduce {
                op,
                axes: axes.clone(),
            })
            .collect(),
        Prim::ArgReduce { axis, .. } => ArgReduceOp::ALL
            .iter()
            .map(|&op| Prim::ArgReduce { op, axis })
            .collect(),
        Prim::Cumulative { axis, reverse, .. } => ScanOp::ALL
            .iter()
            .map(|&op| Prim::Cumulative { op, axis, reverse })
            .collect(),
        Prim::Scatter { axis, batch, .. } => ScatterMode::ALL
            .iter()
            .map(|&mode| Prim::Scatter { axis, mode, batch })
            .collect(),
        Prim::Fft { n, .. } => {
            use arr_kernels::complex::FftKind::*;
            [Fft, Ifft, Rfft, Irfft]
                .into_iter()
                .map(|kind| Prim::Fft { kind, n })
                .collect()
        }
        Prim::Collective(c) => collective_ops()
            .into_iter()
            .map(|op| {
                Prim::Collective(Collective {
                    op,
                    axis: c.axis.clone(),
                    size: c.size,
                })
            })
            .collect(),
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
        | Prim::Argsort { .. }
        | Prim::Threefry2x32
        | Prim::Cond { .. }
        | Prim::While { .. }
        | Prim::Scan { .. }
        | Prim::CustomVjp { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Fused(_)
        | Prim::FusedMatmul(_)
        | Prim::ShardingConstraint(_)
        | Prim::DebugCallback(_)
        | Prim::Check(_) => vec![p],
    }
}

/// A collective of each kind the language offers: psum, pmax, pmin,
/// all_gather, psum_scatter, all_to_all, ppermute, axis_index.
fn collective_ops() -> Vec<CollectiveOp> {
    let seeds = vec![
        CollectiveOp::AllReduce(ReduceOp::Sum),
        CollectiveOp::AllGather {
            axis: 0,
            tiled: false,
        },
        CollectiveOp::ReduceScatter {
            axis: 0,
            tiled: false,
        },
        CollectiveOp::AllToAll {
            split_axis: 0,
            concat_axis: 0,
        },
        CollectiveOp::Permute(Vec::new()),
        CollectiveOp::AxisIndex,
    ];
    // An arm per kind, as in `every_op`. Of the all-reduces, psum, pmax and
    // pmin are offered (a sum stands for the other reductions' name).
    seeds
        .into_iter()
        .flat_map(|op| match op {
            CollectiveOp::AllReduce(_) => vec![
                CollectiveOp::AllReduce(ReduceOp::Sum),
                CollectiveOp::AllReduce(ReduceOp::Max),
                CollectiveOp::AllReduce(ReduceOp::Min),
            ],
            CollectiveOp::AllGather { .. }
            | CollectiveOp::ReduceScatter { .. }
            | CollectiveOp::AllToAll { .. }
            | CollectiveOp::Permute(_)
            | CollectiveOp::AxisIndex => vec![op],
        })
        .collect()
}
