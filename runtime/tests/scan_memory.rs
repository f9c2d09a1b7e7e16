//! Reverse mode through a long `scan` keeps only the residuals: their bytes
//! grow linearly with the number of steps, and the gradient is right.

use arr_kernels::{Array, Buffer, DType, UnaryOp};
use arr_runtime::transform::{control, linear, ops};
use arr_runtime::Tensor;

const WIDTH: usize = 64;

fn vector(x: f32) -> Tensor {
    let vals: Vec<f32> = (0..WIDTH).map(|i| x + i as f32 * 1e-3).collect();
    Tensor::Concrete(Array::new(&[WIDTH], Buffer::F32(vals)))
}

/// carry ← carry * 0.999 + 0.01 * sin(carry), `steps` times; the sum of the final carry.
fn run(x: Tensor, steps: usize) -> arr_runtime::Result<Vec<Tensor>> {
    let out = control::scan(
        |ts| {
            let c = &ts[0];
            let s = ops::unary(UnaryOp::Sin, c)?;
            let next = ops::add(&ops::mul_scalar(c, 0.999)?, &ops::mul_scalar(&s, 0.01)?)?;
            Ok(vec![next])
        },
        vec![x],
        Vec::new(),
        steps,
        false,
        &[false],
    )?;
    Ok(vec![ops::reduce_sum(&out[0], &[0])?])
}

fn residual_bytes(steps: usize) -> (usize, Vec<f64>) {
    let (_, lin) = linear::linearize(|xs| run(xs[0].clone(), steps), vec![vector(0.5)]).unwrap();
    let bytes = lin
        .consts
        .iter()
        .map(|c| c.len() * c.dtype().size_bytes())
        .sum();
    let one = ops::scalar(1.0, DType::F32);
    let g = lin.transpose(&[Some(one)]).unwrap();
    (bytes, g[0].concrete().unwrap().to_f64_vec().unwrap())
}

#[test]
fn scan_residuals_grow_linearly_over_1000_steps() {
    let (small, _) = residual_bytes(250);
    let (large, grad) = residual_bytes(1000);
    // Per step the body saves O(WIDTH) values (cos of the carry); nothing
    // quadratic in the number of steps.
    let per_step = large / 1000;
    eprintln!("residuals: {small} bytes for 250 steps, {large} for 1000 ({per_step} per step)");
    assert!(per_step <= 4 * WIDTH * 4, "{per_step} bytes saved per step");
    assert!(
        large <= 4 * small + 1024,
        "residuals: {small} bytes for 250 steps but {large} for 1000"
    );
    // The gradient is the product of the per-step derivatives
    // 0.999 + 0.01 cos(c_t), checked against a plain loop in f64.
    for (i, g) in grad.iter().enumerate() {
        let mut c = 0.5 + i as f64 * 1e-3;
        let mut d = 1.0;
        for _ in 0..1000 {
            d *= 0.999 + 0.01 * c.cos();
            c = c * 0.999 + 0.01 * c.sin();
        }
        assert!((g - d).abs() < 1e-3 * d.abs(), "element {i}: {g} vs {d}");
    }
}
