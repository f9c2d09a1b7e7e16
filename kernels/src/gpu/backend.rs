//! The `Backend` of a GPU device, over any driver: every primitive becomes a
//! rendered `Loop` (elementwise, reductions, movement, fused kernels) or a
//! kernel template (gather, scatter, sort, scans, threefry, iota, pad, the
//! matrix product with its epilogue), launched on the device. Nothing runs
//! on the host: host arrays are uploaded once (the copy is kept with the
//! array) and results stay on the device until something reads them.

use super::render::{self, template, Dialect, Loop, Out, Source, Split, View};
use super::{Arg, DeviceBuffer, GpuDevice};
use crate::kernel::{Kernel, MatmulKernel, ScalarOp};
use crate::{
    broadcast_shapes, strides_of, ArgReduceOp, Array, Backend, BinaryOp, DType, DotDims, ReduceOp,
    ScanOp, ScatterMode, UnaryOp,
};
use std::sync::Arc;

fn one_pass() -> Split {
    Split { parts: 1, chunk: 1 }
}

fn row_major(shape: &[usize]) -> Vec<i64> {
    strides_of(shape).iter().map(|&s| s as i64).collect()
}

/// `[pre, n, post]` around `axis`.
fn around(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// A view that reads a group of axes as one axis, if it can: every axis
/// of size > 1 in the group is contiguous in the next one.
fn merged_stride(sizes: &[usize], strides: &[i64]) -> Option<i64> {
    let live: Vec<(usize, i64)> = sizes
        .iter()
        .copied()
        .zip(strides.iter().copied())
        .filter(|&(n, _)| n != 1)
        .collect();
    for w in live.windows(2) {
        if w[0].1 != w[1].1 * w[1].0 as i64 {
            return None;
        }
    }
    Some(live.last().map_or(0, |&(_, s)| s))
}

/// A `dot_general` as batched row-major products (`GpuDevice::gemm_layout`).
struct GemmLayout {
    a: Array,
    b: Array,
    sa: [i64; 3],
    sb: [i64; 3],
    shape: Vec<usize>,
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
}

impl GpuDevice {
    fn dialect(&self) -> Dialect {
        self.driver.dialect()
    }

    /// The kernel `make` renders in this device's dialect; while kernels
    /// are being collected for the other dialect (`record::shadow`), that
    /// rendering too.
    fn source(&self, make: impl Fn(Dialect) -> Source) -> Source {
        let own = self.dialect();
        if let Some(other) = super::record::shadowing(own) {
            super::record::shadow(make(other));
        }
        make(own)
    }

    /// The array's elements on this device: its own buffer, the copy kept
    /// from an earlier upload, or a new upload (kept with the array).
    pub(crate) fn input(&self, a: &Array) -> Arc<DeviceBuffer> {
        if let Some(b) = a.device_copy(self.id) {
            return b;
        }
        // An array of another device of this memory space (a peer's part
        // in a collective over virtual devices) comes without the host.
        if let Some(home) = a.home() {
            let from = super::device(home);
            let copied = a
                .device_copy(home)
                .and_then(|src| self.copy_from(from, &src));
            if let Some(b) = copied {
                return b;
            }
        }
        let b = self.upload(&a.live());
        a.keep_device_copy(b.clone());
        b
    }

    fn output(&self, dtype: DType, shape: &[usize]) -> Arc<DeviceBuffer> {
        self.alloc(shape.iter().product::<usize>() * dtype.size_bytes())
    }

    fn launch_with(
        &self,
        src: &Source,
        bufs: &[&Arc<DeviceBuffer>],
        scalars: &[i64],
        groups: usize,
    ) {
        let mut args: Vec<Arg> = bufs.iter().map(|b| Arg::Mem(b)).collect();
        args.extend(scalars.iter().map(|&x| Arg::I64(x)));
        self.launch(src, &args, groups);
    }

    /// Run a loop on these inputs into new arrays (one per output).
    fn run(&self, l: &Loop, inputs: &[&Array]) -> Vec<Array> {
        let ins: Vec<Arc<DeviceBuffer>> = inputs.iter().map(|a| self.input(a)).collect();
        let kept = l.space[..l.space.len() - l.reduce_axes].to_vec();
        let outs: Vec<(Vec<usize>, Arc<DeviceBuffer>)> = l
            .outputs
            .iter()
            .map(|o| {
                let shape = if o.reduce.is_some() {
                    kept.clone()
                } else {
                    l.space.clone()
                };
                let b = self.output(o.dtype, &shape);
                (shape, b)
            })
            .collect();
        let out_bufs: Vec<Arc<DeviceBuffer>> = outs.iter().map(|(_, b)| b.clone()).collect();
        self.run_into(l, &ins, &out_bufs);
        outs.into_iter()
            .zip(&l.outputs)
            .map(|((shape, b), o)| Array::on_gpu(&shape, o.dtype, b))
            .collect()
    }

    /// Run a loop from device buffers into device buffers; reductions of
    /// long rows in two passes (partials in the register type, then their
    /// reduction).
    fn run_into(&self, l: &Loop, ins: &[Arc<DeviceBuffer>], outs: &[Arc<DeviceBuffer>]) {
        let n: usize = l.space.iter().product();
        let kept: usize = l.space[..l.space.len() - l.reduce_axes].iter().product();
        if kept == 0 || (n == 0 && l.reduce_axes == 0) {
            return;
        }
        let nr: usize = l.space[l.space.len() - l.reduce_axes..].iter().product();
        let split = if l.reduce_axes > 0 {
            render::split(kept, nr)
        } else {
            one_pass()
        };
        let src = self.source(|d| l.render(d, split));
        let args = l.args(split);
        let partials: Vec<Option<Arc<DeviceBuffer>>> = l
            .outputs
            .iter()
            .map(|o| {
                (split.parts > 1 && o.reduce.is_some())
                    .then(|| self.output(l.reg, &[kept * split.parts]))
            })
            .collect();
        let mut bufs: Vec<&Arc<DeviceBuffer>> = ins.iter().collect();
        for (k, b) in outs.iter().enumerate() {
            bufs.push(partials[k].as_ref().unwrap_or(b));
        }
        self.launch_with(&src, &bufs, &args.scalars, args.groups);
        for (k, o) in l.outputs.iter().enumerate() {
            if let Some(p) = &partials[k] {
                let second = Loop {
                    space: vec![kept, split.parts],
                    reg: l.reg,
                    inputs: vec![View::contiguous(l.reg, &[kept, split.parts])],
                    body: vec![ScalarOp::Load(0)],
                    outputs: vec![Out {
                        reg: 0,
                        reduce: o.reduce,
                        dtype: o.dtype,
                        view: None,
                    }],
                    reduce_axes: 1,
                };
                self.run_into(
                    &second,
                    std::slice::from_ref(p),
                    std::slice::from_ref(&outs[k]),
                );
            }
        }
    }

    /// A copy of `a` read through `view` over `space` (movement ops).
    fn copy_view(&self, a: &Array, space: &[usize], view: View) -> Array {
        let l = Loop {
            space: space.to_vec(),
            reg: a.dtype(),
            inputs: vec![view],
            body: vec![ScalarOp::Load(0)],
            outputs: vec![Out {
                reg: 0,
                reduce: None,
                dtype: a.dtype(),
                view: None,
            }],
            reduce_axes: 0,
        };
        self.run(&l, &[a]).remove(0)
    }

    fn elementwise(
        &self,
        reg: DType,
        out: DType,
        space: &[usize],
        inputs: &[&Array],
        body: Vec<ScalarOp>,
    ) -> Array {
        let reg_out = body.len() - 1;
        let l = Loop {
            space: space.to_vec(),
            reg,
            inputs: inputs
                .iter()
                .map(|a| View::broadcast(a.dtype(), a.shape(), space))
                .collect(),
            body,
            outputs: vec![Out {
                reg: reg_out,
                reduce: None,
                dtype: out,
                view: None,
            }],
            reduce_axes: 0,
        };
        self.run(&l, inputs).remove(0)
    }

    /// The loop of a fused kernel of the IR.
    fn loop_of(k: &Kernel) -> Loop {
        Loop {
            space: k.shape.clone(),
            reg: k.dtype,
            inputs: k
                .inputs
                .iter()
                .map(|i| View {
                    dtype: i.dtype,
                    offset: 0,
                    strides: i.strides.iter().map(|&s| s as i64).collect(),
                })
                .collect(),
            body: k.body.clone(),
            outputs: k
                .outputs
                .iter()
                .map(|o| Out {
                    reg: o.reg,
                    reduce: o.reduce,
                    dtype: k.dtype,
                    view: None,
                })
                .collect(),
            reduce_axes: k.reduce_axes,
        }
    }

    /// The operands of a `dot_general` as (batch, rows, cols) with their
    /// strides, each copied into that layout when a group of its axes
    /// cannot be read as one, and the product's sizes and shape.
    fn gemm_layout(&self, a: &Array, b: &Array, dims: &DotDims) -> GemmLayout {
        let free = |nd: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
            (0..nd)
                .filter(|i| !batch.contains(i) && !contract.contains(i))
                .collect()
        };
        let lf = free(a.ndim(), &dims.lhs_batch, &dims.lhs_contract);
        let rf = free(b.ndim(), &dims.rhs_batch, &dims.rhs_contract);
        let size = |s: &[usize], axes: &[usize]| -> usize { axes.iter().map(|&i| s[i]).product() };
        let operand = |x: &Array, groups: [&[usize]; 3]| -> (Array, [i64; 3]) {
            let st = row_major(x.shape());
            let merged: Option<Vec<i64>> = groups
                .iter()
                .map(|g| {
                    merged_stride(
                        &g.iter().map(|&i| x.shape()[i]).collect::<Vec<_>>(),
                        &g.iter().map(|&i| st[i]).collect::<Vec<_>>(),
                    )
                })
                .collect();
            if let Some(s) = merged {
                return (x.clone(), [s[0], s[1], s[2]]);
            }
            let perm: Vec<usize> = groups.concat();
            let y = self.transpose(x, &perm);
            let sizes: Vec<usize> = groups.iter().map(|g| size(x.shape(), g)).collect();
            let rm = row_major(&sizes);
            (y, [rm[0], rm[1], rm[2]])
        };
        let (a2, sa) = operand(a, [&dims.lhs_batch, &lf, &dims.lhs_contract]);
        let (b2, sb) = operand(b, [&dims.rhs_batch, &dims.rhs_contract, &rf]);
        let mut shape: Vec<usize> = dims.lhs_batch.iter().map(|&i| a.shape()[i]).collect();
        shape.extend(lf.iter().map(|&i| a.shape()[i]));
        shape.extend(rf.iter().map(|&i| b.shape()[i]));
        GemmLayout {
            batch: size(a.shape(), &dims.lhs_batch),
            m: size(a.shape(), &lf),
            k: size(a.shape(), &dims.lhs_contract),
            n: size(b.shape(), &rf),
            a: a2,
            b: b2,
            sa,
            sb,
            shape,
        }
    }

    /// The product of `l` through the runtime's library into `out`, if it
    /// takes it.
    fn library_gemm(
        &self,
        l: &GemmLayout,
        a: &Arc<DeviceBuffer>,
        b: &Arc<DeviceBuffer>,
        out: &Arc<DeviceBuffer>,
    ) -> bool {
        let call = super::GemmCall {
            dtype: l.a.dtype(),
            a,
            b,
            c: out,
            batch: l.batch,
            m: l.m,
            n: l.n,
            k: l.k,
            a_strides: l.sa,
            b_strides: l.sb,
        };
        l.batch * l.m * l.n > 0 && matches!(self.driver.gemm(&call), Some(Ok(())))
    }

    /// `C[b] = A[b] · B[b]` of a `dot_general`, with an optional epilogue.
    fn gemm(
        &self,
        a: &Array,
        b: &Array,
        dims: &DotDims,
        epilogue: Option<(&Loop, usize, &[&Array])>,
    ) -> Vec<Array> {
        let t = a.dtype();
        let l = self.gemm_layout(a, b, dims);
        let (nb, m, n, kk, sa, sb, shape) = (l.batch, l.m, l.n, l.k, l.sa, l.sb, l.shape.clone());
        let mut scalars = vec![
            nb as i64, m as i64, n as i64, kk as i64, sa[0], sa[1], sa[2], sb[0], sb[1], sb[2],
        ];
        let mut bufs = vec![self.input(&l.a), self.input(&l.b)];
        let (src, outs) = match epilogue {
            None => {
                let out = self.output(t, &shape);
                // A library product where the runtime has one, else the template.
                if self.library_gemm(&l, &bufs[0], &bufs[1], &out) {
                    return vec![Array::on_gpu(&shape, t, out)];
                }
                bufs.push(out.clone());
                (self.source(|d| template::gemm(d, t, None)), vec![(out, t)])
            }
            Some((body, product, extra)) => {
                let e = template::Epilogue { body, product };
                bufs.extend(extra.iter().map(|x| self.input(x)));
                let outs: Vec<(Arc<DeviceBuffer>, DType)> = body
                    .outputs
                    .iter()
                    .map(|o| (self.output(o.dtype, &shape), o.dtype))
                    .collect();
                bufs.extend(outs.iter().map(|(b, _)| b.clone()));
                scalars.extend(template::epilogue_args(&e));
                (self.source(|d| template::gemm(d, t, Some(&e))), outs)
            }
        };
        let tiles = nb * m.div_ceil(16) * n.div_ceil(16);
        if tiles > 0 {
            let refs: Vec<&Arc<DeviceBuffer>> = bufs.iter().collect();
            self.launch_with(&src, &refs, &scalars, tiles.min(65535));
        }
        outs.into_iter()
            .map(|(b, d)| Array::on_gpu(&shape, d, b))
            .collect()
    }

    /// Launch a template over `total` elements (one thread each).
    fn template(&self, src: &Source, bufs: &[&Arc<DeviceBuffer>], scalars: &[i64], total: usize) {
        if total > 0 {
            self.launch_with(src, bufs, scalars, render::elementwise_groups(total));
        }
    }
}

impl Backend for GpuDevice {
    fn name(&self) -> &'static str {
        self.kind()
    }

    fn matmul_library(&self) -> String {
        format!(
            "{} tiled GEMM kernel on {}",
            self.kind(),
            self.driver.describe()
        )
    }

    fn release_cached_buffers(&self) {
        self.release_cached();
    }

    fn unary(&self, op: UnaryOp, a: Array) -> Array {
        if crate::backend::narrow_of([&a]).is_some() {
            return crate::backend::Dispatch(self).unary(op, a);
        }
        let out = if op.is_predicate() {
            DType::Bool
        } else {
            a.dtype()
        };
        self.elementwise(
            a.dtype(),
            out,
            a.shape(),
            &[&a],
            vec![ScalarOp::Load(0), ScalarOp::Unary(op, 0)],
        )
    }

    fn binary(&self, op: BinaryOp, a: Array, b: Array) -> Array {
        if crate::backend::narrow_of([&a, &b]).is_some() {
            return crate::backend::Dispatch(self).binary(op, a, b);
        }
        let space = broadcast_shapes(a.shape(), b.shape()).expect("the shape rule broadcast them");
        let out = if op.is_comparison() {
            DType::Bool
        } else {
            a.dtype()
        };
        self.elementwise(
            a.dtype(),
            out,
            &space,
            &[&a, &b],
            vec![
                ScalarOp::Load(0),
                ScalarOp::Load(1),
                ScalarOp::Binary(op, 0, 1),
            ],
        )
    }

    fn select(&self, cond: &Array, a: &Array, b: &Array) -> Array {
        let ab = broadcast_shapes(a.shape(), b.shape()).expect("broadcast");
        let space = broadcast_shapes(cond.shape(), &ab).expect("broadcast");
        self.elementwise(
            a.dtype(),
            a.dtype(),
            &space,
            &[cond, a, b],
            vec![
                ScalarOp::Load(0),
                ScalarOp::Load(1),
                ScalarOp::Load(2),
                ScalarOp::Select(0, 1, 2),
            ],
        )
    }

    fn convert(&self, a: &Array, dtype: DType) -> Array {
        // 16-bit float registers hold bits: those convert through float.
        let reg = if a.dtype().is_half() && dtype != a.dtype() {
            DType::F32
        } else {
            a.dtype()
        };
        self.elementwise(reg, dtype, a.shape(), &[a], vec![ScalarOp::Load(0)])
    }

    fn reduce(&self, op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
        if crate::backend::narrow_of([a]).is_some() {
            return crate::backend::Dispatch(self).reduce(op, a, axes);
        }
        let out = if matches!(op, ReduceOp::All | ReduceOp::Any) {
            DType::Bool
        } else {
            a.dtype()
        };
        if axes.is_empty() {
            return self.convert(a, out);
        }
        let st = row_major(a.shape());
        let keep: Vec<usize> = (0..a.ndim()).filter(|i| !axes.contains(i)).collect();
        let order: Vec<usize> = keep.iter().chain(axes).copied().collect();
        let l = Loop {
            space: order.iter().map(|&i| a.shape()[i]).collect(),
            reg: a.dtype(),
            inputs: vec![View {
                dtype: a.dtype(),
                offset: 0,
                strides: order.iter().map(|&i| st[i]).collect(),
            }],
            body: vec![ScalarOp::Load(0)],
            outputs: vec![Out {
                reg: 0,
                reduce: Some(op),
                dtype: out,
                view: None,
            }],
            reduce_axes: axes.len(),
        };
        self.run(&l, &[a]).remove(0)
    }

    fn arg_reduce(&self, op: ArgReduceOp, a: &Array, axis: usize) -> Array {
        if crate::backend::narrow_of([a]).is_some() {
            return crate::backend::Dispatch(self).arg_reduce(op, a, axis);
        }
        let (pre, n, post) = around(a.shape(), axis);
        let mut shape = a.shape().to_vec();
        shape.remove(axis);
        let out = self.output(DType::I32, &shape);
        let src = self.source(|d| template::arg_reduce(d, a.dtype(), op == ArgReduceOp::ArgMax));
        self.template(
            &src,
            &[&self.input(a), &out],
            &[(pre * post) as i64, n as i64, post as i64],
            pre * post,
        );
        Array::on_gpu(&shape, DType::I32, out)
    }

    fn scan(&self, op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
        if crate::backend::narrow_of([a]).is_some() {
            return crate::backend::Dispatch(self).scan(op, a, axis, reverse);
        }
        let (pre, n, post) = around(a.shape(), axis);
        let out = self.output(a.dtype(), a.shape());
        let src = self.source(|d| template::scan(d, a.dtype(), op, reverse));
        self.template(
            &src,
            &[&self.input(a), &out],
            &[(pre * post) as i64, n as i64, post as i64],
            pre * post,
        );
        Array::on_gpu(a.shape(), a.dtype(), out)
    }

    fn dot_general(&self, a: &Array, b: &Array, dims: &DotDims) -> Array {
        if crate::backend::narrow_of([a, b]).is_some() {
            return crate::backend::Dispatch(self).dot_general(a, b, dims);
        }
        self.gemm(a, b, dims, None).remove(0)
    }

    fn half_dot(&self, a: &Array, b: &Array, dims: &DotDims) -> Option<Array> {
        if !self.driver.has_gemm(a.dtype()) {
            return None;
        }
        let l = self.gemm_layout(a, b, dims);
        let (ia, ib) = (self.input(&l.a), self.input(&l.b));
        let out = self.output(a.dtype(), &l.shape);
        self.library_gemm(&l, &ia, &ib, &out)
            .then(|| Array::on_gpu(&l.shape, a.dtype(), out))
    }

    fn transpose(&self, a: &Array, perm: &[usize]) -> Array {
        let st = row_major(a.shape());
        let space: Vec<usize> = perm.iter().map(|&p| a.shape()[p]).collect();
        let view = View {
            dtype: a.dtype(),
            offset: 0,
            strides: perm.iter().map(|&p| st[p]).collect(),
        };
        self.copy_view(a, &space, view)
    }

    fn broadcast_in_dim(&self, a: &Array, shape: &[usize], dims: &[usize]) -> Array {
        let st = row_major(a.shape());
        let mut strides = vec![0i64; shape.len()];
        for (i, &d) in dims.iter().enumerate() {
            if a.shape()[i] != 1 {
                strides[d] = st[i];
            }
        }
        self.copy_view(
            a,
            shape,
            View {
                dtype: a.dtype(),
                offset: 0,
                strides,
            },
        )
    }

    fn slice(&self, a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array {
        let st = row_major(a.shape());
        let space: Vec<usize> = (0..a.ndim())
            .map(|i| (limit[i] - start[i]).div_ceil(stride[i]))
            .collect();
        let offset = (0..a.ndim()).map(|i| start[i] as i64 * st[i]).sum();
        let strides = (0..a.ndim()).map(|i| st[i] * stride[i] as i64).collect();
        self.copy_view(
            a,
            &space,
            View {
                dtype: a.dtype(),
                offset,
                strides,
            },
        )
    }

    fn rev(&self, a: &Array, axes: &[usize]) -> Array {
        let st = row_major(a.shape());
        let mut offset = 0;
        let mut strides = st.clone();
        for &ax in axes {
            if a.shape()[ax] > 0 {
                offset += (a.shape()[ax] as i64 - 1) * st[ax];
            }
            strides[ax] = -st[ax];
        }
        self.copy_view(
            a,
            a.shape(),
            View {
                dtype: a.dtype(),
                offset,
                strides,
            },
        )
    }

    fn pad(
        &self,
        a: &Array,
        value: &Array,
        lo: &[usize],
        hi: &[usize],
        interior: &[usize],
    ) -> Array {
        let shape: Vec<usize> = (0..a.ndim())
            .map(|i| {
                let n = a.shape()[i];
                lo[i] + hi[i] + n + n.saturating_sub(1) * interior[i]
            })
            .collect();
        let out = self.output(a.dtype(), &shape);
        let mut sc = vec![shape.iter().product::<usize>() as i64];
        for i in 0..a.ndim() {
            sc.extend([
                shape[i] as i64,
                a.shape()[i] as i64,
                lo[i] as i64,
                interior[i] as i64 + 1,
            ]);
        }
        let src = self.source(|d| template::pad(d, a.dtype(), a.ndim()));
        self.template(
            &src,
            &[&self.input(a), &self.input(value), &out],
            &sc,
            shape.iter().product(),
        );
        Array::on_gpu(&shape, a.dtype(), out)
    }

    fn concatenate(&self, arrays: &[Array], axis: usize) -> Array {
        let mut shape = arrays[0].shape().to_vec();
        shape[axis] = arrays.iter().map(|a| a.shape()[axis]).sum();
        let dtype = arrays[0].dtype();
        let out = self.output(dtype, &shape);
        let ost = row_major(&shape);
        let mut at = 0usize;
        for a in arrays {
            let l = Loop {
                space: a.shape().to_vec(),
                reg: dtype,
                inputs: vec![View::contiguous(dtype, a.shape())],
                body: vec![ScalarOp::Load(0)],
                outputs: vec![Out {
                    reg: 0,
                    reduce: None,
                    dtype,
                    view: Some(View {
                        dtype,
                        offset: at as i64 * ost[axis],
                        strides: ost.clone(),
                    }),
                }],
                reduce_axes: 0,
            };
            self.run_into(&l, &[self.input(a)], std::slice::from_ref(&out));
            at += a.shape()[axis];
        }
        Array::on_gpu(&shape, dtype, out)
    }

    fn gather(&self, a: &Array, indices: &Array, axis: usize) -> Array {
        let (_, n, post) = around(a.shape(), axis);
        let mut shape = a.shape()[..axis].to_vec();
        shape.extend(indices.shape());
        shape.extend(&a.shape()[axis + 1..]);
        let out = self.output(a.dtype(), &shape);
        let total: usize = shape.iter().product();
        let src = self.source(|d| template::gather(d, a.dtype(), indices.dtype()));
        self.template(
            &src,
            &[&self.input(a), &self.input(indices), &out],
            &[total as i64, n as i64, indices.len() as i64, post as i64],
            total,
        );
        Array::on_gpu(&shape, a.dtype(), out)
    }

    fn scatter(
        &self,
        a: &Array,
        indices: &Array,
        updates: &Array,
        axis: usize,
        mode: ScatterMode,
    ) -> Array {
        if crate::backend::narrow_of([a, updates]).is_some() {
            return crate::backend::Dispatch(self).scatter(a, indices, updates, axis, mode);
        }
        let (_, n, post) = around(a.shape(), axis);
        let out = self.output(a.dtype(), a.shape());
        let src = self
            .source(|d| template::scatter(d, a.dtype(), indices.dtype(), mode == ScatterMode::Add));
        let bufs = [
            &self.input(a),
            &self.input(indices),
            &self.input(updates),
            &out,
        ];
        self.template(
            &src,
            &bufs,
            &[a.len() as i64, n as i64, indices.len() as i64, post as i64],
            a.len(),
        );
        Array::on_gpu(a.shape(), a.dtype(), out)
    }

    fn iota(&self, dtype: DType, shape: &[usize], dim: usize) -> Array {
        if dtype.is_half() {
            return crate::backend::Dispatch(self).iota(dtype, shape, dim);
        }
        let out = self.output(dtype, shape);
        let total: usize = shape.iter().product();
        let inner: usize = shape[dim + 1..].iter().product();
        let src = self.source(|d| template::iota(d, dtype));
        self.template(
            &src,
            &[&out],
            &[total as i64, shape[dim] as i64, inner as i64],
            total,
        );
        Array::on_gpu(shape, dtype, out)
    }

    fn sort(&self, a: &Array, axis: usize) -> Array {
        if crate::backend::narrow_of([a]).is_some() {
            return crate::backend::Dispatch(self).sort(a, axis);
        }
        self.sorted(a, axis, false)
    }

    fn argsort(&self, a: &Array, axis: usize) -> Array {
        if crate::backend::narrow_of([a]).is_some() {
            return crate::backend::Dispatch(self).argsort(a, axis);
        }
        self.sorted(a, axis, true)
    }

    fn threefry2x32(&self, k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array) {
        let inputs = [k0, k1, x0, x1];
        let big = inputs.iter().max_by_key(|a| a.len()).unwrap();
        let shape = big.shape().to_vec();
        let n = big.len();
        let y0 = self.output(DType::U32, &shape);
        let y1 = self.output(DType::U32, &shape);
        let ins: Vec<Arc<DeviceBuffer>> = inputs.iter().map(|a| self.input(a)).collect();
        let mut sc = vec![n as i64];
        sc.extend(inputs.iter().map(|a| a.len() as i64));
        let src = self.source(template::threefry);
        self.template(
            &src,
            &[&ins[0], &ins[1], &ins[2], &ins[3], &y0, &y1],
            &sc,
            n,
        );
        (
            Array::on_gpu(&shape, DType::U32, y0),
            Array::on_gpu(&shape, DType::U32, y1),
        )
    }

    fn run_kernel(&self, k: &Kernel, inputs: Vec<Array>) -> Vec<Array> {
        if crate::backend::narrow_of(&inputs).is_some() {
            return crate::backend::Dispatch(self).run_kernel(k, inputs);
        }
        if k.reads_row_values() {
            return k.in_phases(inputs, &|k, inputs| self.run_kernel(k, inputs));
        }
        let refs: Vec<&Array> = inputs.iter().collect();
        self.run(&GpuDevice::loop_of(k), &refs)
    }

    fn matmul_kernel(&self, k: &MatmulKernel, inputs: Vec<Array>) -> Vec<Array> {
        if crate::backend::narrow_of(&inputs).is_some() {
            return crate::backend::Dispatch(self).matmul_kernel(k, inputs);
        }
        let body = GpuDevice::loop_of(&k.epilogue);
        let extra: Vec<&Array> = (0..k.epilogue.inputs.len())
            .filter_map(|i| k.operand_of_input(i))
            .map(|o| &inputs[o])
            .collect();
        self.gemm(
            &inputs[0],
            &inputs[1],
            &k.dims,
            Some((&body, k.product, &extra)),
        )
    }
}

impl GpuDevice {
    /// Stable sort or argsort: merge passes of doubling width, from
    /// buffer to buffer, carrying the original indices.
    fn sorted(&self, a: &Array, axis: usize, indices: bool) -> Array {
        let (_, n, post) = around(a.shape(), axis);
        let mut keys = self.input(a);
        let mut idx = self.input(&self.iota(DType::I32, a.shape(), axis));
        let src = self.source(|d| template::merge_pass(d, a.dtype()));
        let mut width = 1;
        while width < n {
            let (k2, i2) = (
                self.output(a.dtype(), a.shape()),
                self.output(DType::I32, a.shape()),
            );
            self.template(
                &src,
                &[&keys, &idx, &k2, &i2],
                &[a.len() as i64, n as i64, post as i64, width as i64],
                a.len(),
            );
            (keys, idx) = (k2, i2);
            width *= 2;
        }
        if indices {
            Array::on_gpu(a.shape(), DType::I32, idx)
        } else {
            Array::on_gpu(a.shape(), a.dtype(), keys)
        }
    }
}
