//! The compile cache: modules in memory by source (per device), and their
//! binaries on disk in the user's cache directory keyed by a hash of the
//! source and the compiler's and device's identity, so a second run of the
//! same program compiles nothing.

use super::render::Source;
use super::{Driver, Module};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Modules of one device by source text.
#[derive(Default)]
pub struct Cache {
    modules: Mutex<HashMap<Source, Module>>,
}

/// How modules were found, over every device of the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sources compiled by the runtime's compiler.
    pub compiles: u64,
    /// Found in memory.
    pub memory_hits: u64,
    /// Loaded from a binary on disk.
    pub disk_hits: u64,
}

impl Stats {
    /// The events after `before` was taken.
    pub fn since(&self, before: &Stats) -> Stats {
        Stats {
            compiles: self.compiles.saturating_sub(before.compiles),
            memory_hits: self.memory_hits.saturating_sub(before.memory_hits),
            disk_hits: self.disk_hits.saturating_sub(before.disk_hits),
        }
    }
}

static COMPILES: AtomicU64 = AtomicU64::new(0);
static MEMORY_HITS: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);

pub fn stats() -> Stats {
    Stats {
        compiles: COMPILES.load(Ordering::Relaxed),
        memory_hits: MEMORY_HITS.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
    }
}

/// `$ARR_CACHE_DIR`, else `$XDG_CACHE_HOME/arr/kernels`, else
/// `~/.cache/arr/kernels`; `ARR_CACHE_DIR=` (empty) turns the disk cache off.
pub fn directory() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ARR_CACHE_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("arr").join("kernels"))
}

fn disk_key(driver: &dyn Driver, src: &Source) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    h.update([0]);
    h.update(driver.compiler_id());
    h.update([0]);
    h.update(&src.name);
    h.update([0]);
    h.update(&src.text);
    hex::encode(h.finalize())
}

impl Cache {
    pub fn get(&self, driver: &dyn Driver, src: &Source) -> Result<Module, String> {
        let counted = !driver.records_only();
        if let Some(m) = self
            .modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(src)
        {
            if counted {
                MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(m.clone());
        }
        if !counted {
            return driver.build(src).map(|(m, _)| m);
        }
        let path = directory().map(|d| d.join(format!("{}.bin", disk_key(driver, src))));
        let from_disk = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bin| driver.load(src, &bin).ok());
        let module = match from_disk {
            Some(m) => {
                DISK_HITS.fetch_add(1, Ordering::Relaxed);
                m
            }
            None => {
                let (m, binary) = driver.build(src)?;
                COMPILES.fetch_add(1, Ordering::Relaxed);
                if let (Some(p), Some(bin)) = (&path, binary) {
                    // A cache that cannot be written is only slower: ignore.
                    if let Some(dir) = p.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                    if std::fs::write(&tmp, bin).is_ok() {
                        let _ = std::fs::rename(&tmp, p);
                    }
                }
                m
            }
        };
        self.modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(src.clone(), module.clone());
        Ok(module)
    }
}
