//! `arr kernel install`: the kernelspec (`kernels/arr/kernel.json` and logos)
//! in a Jupyter data directory, so that Jupyter can start `arr kernel`.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const LOGO_32: &[u8] = include_bytes!("logo/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("logo/logo-64x64.png");

/// Where to install, from the command line's flags.
pub enum Target {
    /// The user's data directory (`JUPYTER_DATA_DIR`, else `~/.local/share/jupyter`).
    User,
    /// `sys.prefix/share/jupyter` of `python3` (a virtual environment's own).
    SysPrefix,
    /// `DIR/share/jupyter`.
    Prefix(PathBuf),
}

fn user_data_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("JUPYTER_DATA_DIR") {
        return Ok(d.into());
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set; use --prefix DIR")?;
    let home = Path::new(&home);
    Ok(if cfg!(target_os = "macos") {
        home.join("Library/Jupyter")
    } else {
        match std::env::var_os("XDG_DATA_HOME") {
            Some(x) if !x.is_empty() => Path::new(&x).join("jupyter"),
            _ => home.join(".local/share/jupyter"),
        }
    })
}

fn sys_prefix() -> Result<PathBuf, String> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .map_err(|e| format!("--sys-prefix needs python3: {e}"))?;
    if !out.status.success() {
        return Err("python3 could not report sys.prefix".into());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The data directory for a target (the kernelspec goes in `kernels/arr` below it).
pub fn data_dir(target: &Target) -> Result<PathBuf, String> {
    match target {
        Target::User => user_data_dir(),
        Target::SysPrefix => Ok(sys_prefix()?.join("share/jupyter")),
        Target::Prefix(dir) => Ok(dir.join("share/jupyter")),
    }
}

/// The kernel.json of the running binary (its absolute path: Jupyter must
/// not depend on PATH to find us).
pub fn kernel_json(exe: &Path) -> serde_json::Value {
    json!({
        "argv": [exe.to_string_lossy(), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "arr",
        "language": "arr",
        "interrupt_mode": "message",
        "metadata": {"debugger": false},
    })
}

pub fn install(target: Target) -> ExitCode {
    match try_install(&target) {
        Ok(dir) => {
            println!("installed the arr kernelspec in {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("arr kernel install: {e}");
            ExitCode::FAILURE
        }
    }
}

fn try_install(target: &Target) -> Result<PathBuf, String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot find the arr binary's path: {e}"))?;
    let dir = data_dir(target)?.join("kernels").join("arr");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let spec = serde_json::to_string_pretty(&kernel_json(&exe)).expect("JSON values serialise");
    for (name, bytes) in [
        ("kernel.json", spec.as_bytes()),
        ("logo-32x32.png", LOGO_32),
        ("logo-64x64.png", LOGO_64),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(dir)
}
