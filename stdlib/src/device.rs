//! GPU devices as builtins: choosing the default device, the kernels a
//! jitted call launches in CUDA C or OpenCL C, and the compile counters.
//! (`devices()` and `device_put` live with the mesh builtins.)

use crate::args::*;
use crate::Registry;
use arr_kernels::gpu::{self, record, render::Dialect};
use arr_runtime::{Dict, Error, Interp, Key, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "set_default_device(device)",
        "Run operations on device from now on ('cpu', 'cuda', 'opencl', 'cuda:1', ...): \
         arrays made on the host go there when first used, results stay there until read.",
        |_, a| {
            let label = match &a[0] {
                Value::Object(o) => o
                    .as_any()
                    .downcast_ref::<arr_runtime::sharding::DeviceValue>()
                    .map(|d| d.label.clone()),
                _ => None,
            };
            let name = match &label {
                Some(l) => l.as_str(),
                None => str_arg("device", &a[0])?,
            };
            gpu::set_thread_default(parse_device(name)?);
            Ok(Value::None)
        },
    );
    r.func(
        "default_device()",
        "The device operations run on when no operand lives on a GPU.",
        |_, _| {
            Ok(Value::str(
                &gpu::default_device().map_or("cpu".to_string(), |d| d.label()),
            ))
        },
    );
    r.func(
        "default_backend()",
        "The platform operations run on by default, as jax.default_backend: 'cpu', or \
         'gpu' when the default device is a GPU.",
        |_, _| {
            Ok(Value::str(if gpu::default_device().is_some() {
                "gpu"
            } else {
                "cpu"
            }))
        },
    );
    r.func(
        "kernel_stats()",
        "GPU kernel compiles so far: a dict of compiles, memory_hits and disk_hits (modules \
         loaded from the on-disk cache), launches, and device_copies (arrays copied between \
         the virtual devices of one GPU without the host).",
        |_, _| Ok(kernel_stats()),
    );
    r.effect_func(
        "cuda_source(f, *args)",
        "The CUDA C of every kernel that jit(f)(*args) would launch on a CUDA device, in \
         launch order (rendered, not run: no GPU needed).",
        |interp, a| source_of(interp, a, Dialect::Cuda),
    );
    r.effect_func(
        "opencl_source(f, *args)",
        "The OpenCL C of every kernel that jit(f)(*args) would launch on an OpenCL device, \
         in launch order (rendered, not run: no device needed).",
        |interp, a| source_of(interp, a, Dialect::OpenCl),
    );
}

/// `cpu` is `None`; a GPU name is looked up (an error says what was
/// looked for when there is none).
pub fn parse_device(name: &str) -> Result<Option<&'static gpu::GpuDevice>> {
    if name == "cpu" || name.starts_with("cpu:") {
        return Ok(None);
    }
    gpu::find(name).map(Some).map_err(Error::value_error)
}

/// A per-device counter summed over every GPU device.
fn total(count: fn(&gpu::GpuDevice) -> &std::sync::atomic::AtomicU64) -> u64 {
    gpu::devices()
        .iter()
        .map(|d| count(d).load(std::sync::atomic::Ordering::Relaxed))
        .sum()
}

fn kernel_stats() -> Value {
    let s = gpu::compile_stats();
    let launches = total(|d| &d.launches);
    let device_copies = total(|d| &d.device_copies);
    let mut d = Dict::default();
    for (k, v) in [
        ("compiles", s.compiles),
        ("memory_hits", s.memory_hits),
        ("disk_hits", s.disk_hits),
        ("launches", launches),
        ("device_copies", device_copies),
    ] {
        d.insert(Key::Str(k.into()), Value::Int(v as i64));
    }
    Value::Dict(std::rc::Rc::new(std::cell::RefCell::new(d)))
}

/// The text of `kernel_stats()` for `:kernels`.
pub fn kernel_stats_line() -> String {
    let s = gpu::compile_stats();
    let copies = total(|d| &d.device_copies);
    format!(
        "GPU kernel compiles: {}, memory cache hits: {}, disk cache hits: {}, device-to-device copies: {copies}",
        s.compiles, s.memory_hits, s.disk_hits
    )
}

fn source_of(interp: &mut Interp, a: Vec<Value>, dialect: Dialect) -> Result<Value> {
    let f = crate::jit::jit_of(a[0].clone());
    let args = match &a[1] {
        Value::Tuple(t) => t.to_vec(),
        _ => Vec::new(),
    };
    let (out, sources) = record::record(dialect, || interp.call(&f, args, Vec::new()));
    out?;
    let n = sources.len();
    let text: Vec<String> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| format!("// kernel {} of {n}: {}\n{}", i + 1, s.name, s.text))
        .collect();
    Ok(Value::str(&text.join("\n")))
}
