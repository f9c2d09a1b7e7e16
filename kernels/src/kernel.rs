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
//! Registers hold the kernel's float `dtype`; comparisons give 0 or 1 and
//! `Select` picks where its condition is non-zero; bool inputs load as 0/1.

use crate::{BinaryOp, DType, ReduceOp, UnaryOp};
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
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelOutput {
    pub reg: usize,
    /// None: the register at every index; Some: reduced over the trailing
    /// `reduce_axes` axes.
    pub reduce: Option<ReduceOp>,
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
        for (i, input) in self.inputs.iter().enumerate() {
            writeln!(
                f,
                "  in{i}: {}[{}] strides ({})",
                input.dtype.short(),
                dims(&input.shape),
                dims(&input.strides)
            )?;
        }
        for (i, op) in self.body.iter().enumerate() {
            let rhs = match op {
                ScalarOp::Load(n) => format!("load in{n}"),
                ScalarOp::Const(x) => format!("const {x}"),
                ScalarOp::Unary(op, a) => {
                    format!("{} r{a}", crate::ops::snake_name(&format!("{op:?}")))
                }
                ScalarOp::Binary(op, a, b) => {
                    format!("{} r{a} r{b}", crate::ops::snake_name(&format!("{op:?}")))
                }
                ScalarOp::Select(c, a, b) => format!("select r{c} r{a} r{b}"),
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
        write!(f, "}}")
    }
}
