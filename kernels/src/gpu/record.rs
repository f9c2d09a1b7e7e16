//! A device that records the kernels a program would launch, in either
//! dialect, without a GPU: its memory is host memory (zeros until written),
//! its "compiler" keeps the source and its launches are recorded, not run.
//! `cuda_source(f, *args)` runs `jit(f)(*args)` on it; the tests compile
//! what it records with NVRTC.

use super::render::{Dialect, Source};
use super::{Arg, Driver, Mem, Module};
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

pub struct Recorder {
    pub dialect: Dialect,
}

thread_local! {
    static RECORDED: RefCell<Option<Vec<Source>>> = const { RefCell::new(None) };
}

fn bytes(m: &Mem) -> &Mutex<Vec<u8>> {
    m.downcast_ref::<Mutex<Vec<u8>>>().expect("a recorder buffer")
}

impl Driver for Recorder {
    fn dialect(&self) -> Dialect {
        self.dialect
    }
    fn describe(&self) -> String {
        format!("{} kernel recorder", self.dialect.name())
    }
    fn compiler_id(&self) -> String {
        "recorder".into()
    }
    fn records_only(&self) -> bool {
        true
    }
    fn build(&self, src: &Source) -> Result<(Module, Option<Vec<u8>>), String> {
        Ok((Arc::new(src.clone()), None))
    }
    fn load(&self, src: &Source, _: &[u8]) -> Result<Module, String> {
        Ok(Arc::new(src.clone()))
    }
    fn alloc(&self, n: usize) -> Result<Mem, String> {
        Ok(Box::new(Mutex::new(vec![0u8; n])))
    }
    fn upload(&self, m: &Mem, data: &[u8]) -> Result<(), String> {
        bytes(m).lock().unwrap_or_else(|e| e.into_inner())[..data.len()].copy_from_slice(data);
        Ok(())
    }
    fn download(&self, m: &Mem, out: &mut [u8]) -> Result<(), String> {
        out.copy_from_slice(&bytes(m).lock().unwrap_or_else(|e| e.into_inner())[..out.len()]);
        Ok(())
    }
    fn copy(&self, src: &Mem, dst: &Mem, n: usize) -> Result<(), String> {
        let s = bytes(src).lock().unwrap_or_else(|e| e.into_inner())[..n].to_vec();
        bytes(dst).lock().unwrap_or_else(|e| e.into_inner())[..n].copy_from_slice(&s);
        Ok(())
    }
    fn launch(&self, module: &Module, _: &[Arg], _: usize) -> Result<(), String> {
        let src = module.downcast_ref::<Source>().expect("a recorded source");
        RECORDED.with(|r| {
            if let Some(list) = &mut *r.borrow_mut() {
                if !list.contains(src) {
                    list.push(src.clone());
                }
            }
        });
        Ok(())
    }
    fn synchronize(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Run `f` with this thread's operations on the recorder of `dialect`;
/// the distinct kernels it launched, in order of first launch. The values
/// `f` computes are meaningless (nothing ran).
pub fn record<R>(dialect: Dialect, f: impl FnOnce() -> R) -> (R, Vec<Source>) {
    let before = super::swap_thread_default(Some(super::recorder(dialect).id + 1));
    let outer = RECORDED.with(|r| r.borrow_mut().replace(Vec::new()));
    let out = f();
    let list = RECORDED.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer)).unwrap_or_default();
    super::swap_thread_default(before);
    (out, list)
}
