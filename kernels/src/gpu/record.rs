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
    m.downcast_ref::<Mutex<Vec<u8>>>()
        .expect("a recorder buffer")
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
    fn as_any(&self) -> &dyn std::any::Any {
        self
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
    /// Puts the thread's default device and the outer recording back
    /// however `f` ends (a panic too): nothing may go on computing on a
    /// recorder.
    struct Restore {
        before: Option<usize>,
        outer: Option<Option<Vec<Source>>>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            super::swap_thread_default(self.before);
            if let Some(outer) = self.outer.take() {
                RECORDED.with(|r| *r.borrow_mut() = outer);
            }
        }
    }
    let before = super::swap_thread_default(Some(super::recorder(dialect).id + 1));
    let outer = RECORDED.with(|r| r.borrow_mut().replace(Vec::new()));
    let restore = Restore {
        before,
        outer: Some(outer),
    };
    let out = f();
    let list = RECORDED.with(|r| r.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (out, list)
}

/// Kernels rendered for the other dialect while a program runs on a real
/// device: every launch on OpenCL also renders its CUDA C here, so the
/// tests compile with NVRTC exactly the kernels the OpenCL runs executed.
/// On from the start when `ARR_SHADOW_KERNELS` names a directory (each
/// distinct kernel is written there as `<hash>.cu` or `.cl`), or between
/// `start_shadow` and `take_shadow` in this process.
struct Shadow {
    dialect: Dialect,
    seen: std::collections::HashSet<Source>,
    dir: Option<std::path::PathBuf>,
}

static SHADOW: Mutex<Option<Shadow>> = Mutex::new(None);
static SHADOW_ENV: std::sync::Once = std::sync::Once::new();

fn shadow_state() -> std::sync::MutexGuard<'static, Option<Shadow>> {
    SHADOW_ENV.call_once(|| {
        if let Some(dir) = std::env::var_os("ARR_SHADOW_KERNELS").filter(|d| !d.is_empty()) {
            let dir = std::path::PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            *SHADOW.lock().unwrap_or_else(|e| e.into_inner()) = Some(Shadow {
                dialect: Dialect::Cuda,
                seen: Default::default(),
                dir: Some(dir),
            });
        }
    });
    SHADOW.lock().unwrap_or_else(|e| e.into_inner())
}

/// Collect every kernel launched from now on, rendered in `dialect`.
pub fn start_shadow(dialect: Dialect) {
    *shadow_state() = Some(Shadow {
        dialect,
        seen: Default::default(),
        dir: None,
    });
}

/// The kernels collected since `start_shadow` (collection stops).
pub fn take_shadow() -> Vec<Source> {
    shadow_state()
        .take()
        .map(|s| s.seen.into_iter().collect())
        .unwrap_or_default()
}

/// The dialect to render shadows in for a device of dialect `own`, if any.
pub(crate) fn shadowing(own: Dialect) -> Option<Dialect> {
    shadow_state()
        .as_ref()
        .map(|s| s.dialect)
        .filter(|&d| d != own)
}

pub(crate) fn shadow(src: Source) {
    let mut g = shadow_state();
    let Some(s) = g.as_mut() else { return };
    if s.seen.contains(&src) {
        return;
    }
    if let Some(dir) = &s.dir {
        use sha2::Digest;
        let hash = hex::encode(sha2::Sha256::digest(src.text.as_bytes()));
        let ext = if s.dialect == Dialect::Cuda {
            "cu"
        } else {
            "cl"
        };
        let _ = std::fs::write(
            dir.join(format!("{}.{ext}", &hash[..16])),
            format!("// {}\n{}", src.name, src.text),
        );
    }
    s.seen.insert(src);
}
