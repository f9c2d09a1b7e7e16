//! The kernel IR: one fused loop over an iteration space, as data.
//!
//! A `Kernel` visits every index of `shape` once and evaluates `body`, a
//! list of scalar operations each defining one register, in order. Inputs
//! are read through explicit strides (0 on broadcast axes), so index
//! arithmetic is part of the IR and a backend needs nothing else: the CPU
//! executor (`cpu::fused`) runs it over cache-sized blocks on all cores,
//! and a CUDA backend renders the same IR to C. Outputs store a register at
//! every index, or reduce it over the trailing `reduce_axes` axes.
//!
//! A reducing kernel may also read a reduction's finished value for the
//! current row (`ScalarOp::Reduced`): softmax and layer norm become one
//! kernel that visits each row in order (reduce, then use the result), with
//! the row in registers. Backends that do not run such kernels directly run
//! `Kernel::in_phases`, plain kernels that compute the same values.
//!
//! Registers hold the kernel's float `dtype`; comparisons give 0 or 1 and
//! `Select` picks where its condition is non-zero; bool inputs load as 0/1.
//!
//! A `MatmulKernel` is a matrix product (`dot_general`) with an elementwise
//! `Kernel` as its epilogue: the epilogue's iteration space is the product's
//! shape and one designated input is the product itself, so a backend can
//! apply the epilogue to each tile of the product as it is computed (CPU:
//! each thread's rows, `cpu::linalg`; CUDA: the accumulator tile before its
//! store) instead of in a second pass over the stored product.

use crate::{BinaryOp, DType, DotDims, ReduceOp, UnaryOp};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The iteration space.
    pub shape: Vec<usize>,
    /// The register type (f32 or f64).
    pub dtype: DType,
    pub inputs: Vec<KernelInput>,
    /// Register `i` is defined by `body[i]`.
    pub body: Vec<ScalarOp>,
    pub outputs: Vec<KernelOutput>,
    /// How many trailing axes of `shape` the reducing outputs reduce.
    pub reduce_axes: usize,
}

/// An input array: its dtype and shape, and the element stride of each
/// axis of the iteration space (0 where the input is broadcast).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelInput {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub strides: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarOp {
    /// The current element of input `n`.
    Load(usize),
    Const(f64),
    Unary(UnaryOp, usize),
    Binary(BinaryOp, usize, usize),
    /// `Select(c, a, b)`: a where c != 0, else b.
    Select(usize, usize, usize),
    /// The value of reducing output `j` over the current row (the trailing
    /// `reduce_axes` axes), the same at every element of the row. Output
    /// `j`'s register must come before this one.
    Reduced(usize),
}

impl ScalarOp {
    /// The registers the operation reads.
    pub fn operands(&self) -> smallvec::SmallVec<[usize; 3]> {
        match *self {
            ScalarOp::Load(_) | ScalarOp::Const(_) | ScalarOp::Reduced(_) => Default::default(),
            ScalarOp::Unary(_, a) => smallvec::smallvec![a],
            ScalarOp::Binary(_, a, b) => smallvec::smallvec![a, b],
            ScalarOp::Select(c, a, b) => smallvec::smallvec![c, a, b],
        }
    }

    /// The same operation reading register `f(r)` wherever it reads `r`
    /// (what passes that move registers around renumber with).
    pub fn map_regs(self, f: impl Fn(usize) -> usize) -> ScalarOp {
        match self {
            ScalarOp::Unary(u, a) => ScalarOp::Unary(u, f(a)),
            ScalarOp::Binary(b, x, y) => ScalarOp::Binary(b, f(x), f(y)),
            ScalarOp::Select(c, x, y) => ScalarOp::Select(f(c), f(x), f(y)),
            op @ (ScalarOp::Load(_) | ScalarOp::Const(_) | ScalarOp::Reduced(_)) => op,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelOutput {
    pub reg: usize,
    /// None: the register at every index; Some: reduced over the trailing
    /// `reduce_axes` axes.
    pub reduce: Option<ReduceOp>,
}

/// A matrix product whose result is read by an elementwise kernel.
///
/// Operands of the operation are `lhs`, `rhs`, then the epilogue's inputs
/// other than `product`, in order. The epilogue stores every output (it
/// has no reductions) and its `product` input is the product's result:
/// `epilogue.shape` and that input's shape are the product's shape and the
/// input is read at every index (row-major strides).
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulKernel {
    pub lhs: MatmulOperand,
    pub rhs: MatmulOperand,
    pub dims: DotDims,
    pub epilogue: Kernel,
    /// Which input of `epilogue` is the product.
    pub product: usize,
}

/// An operand of a matrix product: its dtype and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulOperand {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl KernelInput {
    /// An input of `shape` read at every index of `space` with NumPy
    /// broadcasting (trailing axes aligned).
    pub fn broadcast(dtype: DType, shape: &[usize], space: &[usize]) -> KernelInput {
        let offset = space.len() - shape.len();
        let mut strides = vec![0; space.len()];
        let mut s = 1;
        for i in (0..shape.len()).rev() {
            if shape[i] != 1 {
                strides[offset + i] = s;
            }
            s *= shape[i];
        }
        KernelInput {
            dtype,
            shape: shape.to_vec(),
            strides,
        }
    }

    /// Whether element `i` of the iteration space is element `i` of the input.
    pub fn is_contiguous(&self, space: &[usize]) -> bool {
        self.shape == space
    }

    pub fn is_scalar(&self) -> bool {
        self.shape.iter().product::<usize>() == 1
    }
}

impl Kernel {
    /// The shape of output `k`.
    pub fn output_shape(&self, k: usize) -> Vec<usize> {
        match self.outputs[k].reduce {
            None => self.shape.clone(),
            Some(_) => self.shape[..self.shape.len() - self.reduce_axes].to_vec(),
        }
    }

    /// Elements of one row (the trailing `reduce_axes` axes).
    pub fn row_len(&self) -> usize {
        self.shape[self.shape.len() - self.reduce_axes..]
            .iter()
            .product()
    }

    /// Whether the body reads a finished reduction (`ScalarOp::Reduced`).
    pub fn reads_row_values(&self) -> bool {
        self.body
            .iter()
            .any(|op| matches!(op, ScalarOp::Reduced(_)))
    }

    /// Whether every `Reduced(j)` names a reducing output whose register
    /// comes earlier, in a kernel that reduces.
    pub fn row_values_well_formed(&self) -> bool {
        self.body.iter().enumerate().all(|(i, op)| match *op {
            ScalarOp::Reduced(j) => {
                self.reduce_axes > 0
                    && self
                        .outputs
                        .get(j)
                        .is_some_and(|o| o.reduce.is_some() && o.reg < i)
            }
            _ => true,
        })
    }

    /// Run a kernel that reads row values as plain kernels, for backends
    /// without a row-at-a-time executor: the reductions that the first
    /// `Reduced` register needs are computed by a kernel of the body before
    /// it; then the kernel runs again with those reductions as inputs
    /// (broadcast along the row) in place of the `Reduced` registers, which
    /// repeats until none is left. `run` runs a plain kernel.
    pub fn in_phases(
        &self,
        inputs: Vec<crate::Array>,
        run: &dyn Fn(&Kernel, Vec<crate::Array>) -> Vec<crate::Array>,
    ) -> Vec<crate::Array> {
        let Some(first) = self
            .body
            .iter()
            .position(|op| matches!(op, ScalarOp::Reduced(_)))
        else {
            return run(self, inputs);
        };
        // The reductions computable before `first`, as their own kernel.
        let ready: Vec<usize> = (0..self.outputs.len())
            .filter(|&j| self.outputs[j].reduce.is_some() && self.outputs[j].reg < first)
            .collect();
        let head = Kernel {
            shape: self.shape.clone(),
            dtype: self.dtype,
            inputs: self.inputs.clone(),
            body: self.body[..first].to_vec(),
            outputs: ready.iter().map(|&j| self.outputs[j]).collect(),
            reduce_axes: self.reduce_axes,
        };
        let reduced = run(&head, inputs.clone());
        // Their values, read along each row with stride 0.
        let outer = &self.shape[..self.shape.len() - self.reduce_axes];
        let mut strides = vec![0; self.shape.len()];
        let mut step = 1;
        for d in (0..outer.len()).rev() {
            strides[d] = step;
            step *= outer[d];
        }
        let mut rest = self.clone();
        let mut rest_inputs = inputs;
        for (&j, value) in ready.iter().zip(reduced) {
            rest.inputs.push(KernelInput {
                dtype: self.dtype,
                shape: outer.to_vec(),
                strides: strides.clone(),
            });
            rest_inputs.push(value);
            let n = rest.inputs.len() - 1;
            for op in rest.body.iter_mut() {
                if *op == ScalarOp::Reduced(j) {
                    *op = ScalarOp::Load(n);
                }
            }
        }
        rest.in_phases(rest_inputs, run)
    }
}

impl MatmulKernel {
    /// The product's shape (the epilogue's iteration space).
    pub fn product_shape(&self) -> &[usize] {
        &self.epilogue.shape
    }

    /// The shape of output `k`.
    pub fn output_shape(&self, k: usize) -> Vec<usize> {
        self.epilogue.output_shape(k)
    }

    /// Which operand of the operation feeds epilogue input `i` (`None` for
    /// the product): lhs and rhs are operands 0 and 1.
    pub fn operand_of_input(&self, i: usize) -> Option<usize> {
        use std::cmp::Ordering::*;
        match i.cmp(&self.product) {
            Less => Some(2 + i),
            Equal => None,
            Greater => Some(1 + i),
        }
    }

    /// Whether the epilogue has the form the backends run: stores only, and
    /// the product input read at every index of the product's shape.
    pub fn is_well_formed(&self) -> bool {
        let e = &self.epilogue;
        let p = e.inputs.get(self.product);
        e.reduce_axes == 0
            && e.outputs.iter().all(|o| o.reduce.is_none())
            && p.is_some_and(|p| {
                p.dtype == e.dtype
                    && p.shape == e.shape
                    && p.strides == KernelInput::broadcast(e.dtype, &e.shape, &e.shape).strides
            })
            && self.lhs.dtype == e.dtype
            && self.rhs.dtype == e.dtype
    }
}

fn dims(v: &[usize]) -> String {
    let d: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    d.join(",")
}

impl fmt::Display for Kernel {
    /// ```text
    /// kernel f32[1000] reduce 0 {
    ///   in0: f32[1000] strides (1)
    ///   r0 = load in0
    ///   r1 = mul r0 r0
    ///   out0 = sum r1
    /// }
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(
            f,
            "kernel {}[{}] reduce {} {{",
            self.dtype.short(),
            dims(&self.shape),
            self.reduce_axes
        )?;
        self.fmt_body(f, None)?;
        write!(f, "}}")
    }
}

impl Kernel {
    /// The lines between the braces: inputs (`product` marks the one that is
    /// a matrix product's result), registers, outputs.
    fn fmt_body(&self, f: &mut fmt::Formatter, product: Option<usize>) -> fmt::Result {
        for (i, input) in self.inputs.iter().enumerate() {
            writeln!(
                f,
                "  in{i}: {}[{}] strides ({}){}",
                input.dtype.short(),
                dims(&input.shape),
                dims(&input.strides),
                if product == Some(i) { " = product" } else { "" }
            )?;
        }
        for (i, op) in self.body.iter().enumerate() {
            let rhs = match op {
                ScalarOp::Load(n) => format!("load in{n}"),
                ScalarOp::Const(x) => format!("const {x}"),
                ScalarOp::Unary(op, a) => {
                    format!("{} r{a}", op.name())
                }
                ScalarOp::Binary(op, a, b) => {
                    format!("{} r{a} r{b}", op.name())
                }
                ScalarOp::Select(c, a, b) => format!("select r{c} r{a} r{b}"),
                ScalarOp::Reduced(j) => format!("reduced out{j}"),
            };
            writeln!(f, "  r{i} = {rhs}")?;
        }
        for (k, out) in self.outputs.iter().enumerate() {
            match out.reduce {
                None => writeln!(f, "  out{k} = r{}", out.reg)?,
                Some(op) => writeln!(
                    f,
                    "  out{k} = {} r{}",
                    crate::ops::snake_name(&format!("{op:?}")),
                    out.reg
                )?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for MatmulKernel {
    /// The product, then its epilogue's body; `= product` marks the input
    /// that is the product's result:
    ///
    /// ```text
    /// matmul f32[256,512] = dot f32[256,784] f32[784,512] contract (1) (0) batch () () {
    ///   in0: f32[256,512] strides (512,1) = product
    ///   in1: f32[512] strides (0,1)
    ///   r0 = load in0
    ///   r1 = load in1
    ///   r2 = add r0 r1
    ///   r3 = tanh r2
    ///   out0 = r3
    /// }
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let d = &self.dims;
        writeln!(
            f,
            "matmul {}[{}] = dot {}[{}] {}[{}] contract ({}) ({}) batch ({}) ({}) {{",
            self.epilogue.dtype.short(),
            dims(&self.epilogue.shape),
            self.lhs.dtype.short(),
            dims(&self.lhs.shape),
            self.rhs.dtype.short(),
            dims(&self.rhs.shape),
            dims(&d.lhs_contract),
            dims(&d.rhs_contract),
            dims(&d.lhs_batch),
            dims(&d.rhs_batch),
        )?;
        self.epilogue.fmt_body(f, Some(self.product))?;
        write!(f, "}}")
    }
}
