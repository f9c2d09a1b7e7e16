//! `progress(...)` bars on a terminal: the runtime's `ProgressBar` interface
//! drawn by indicatif on stderr (position/total, rate, time left), cleared
//! when the loop ends; nothing is drawn when stderr is not a terminal.

use arr_runtime::progress::{ProgressBar, ProgressFactory};
use indicatif::{ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// The bar being drawn, so `print` can lift it around program output.
static CURRENT: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

struct Bar(indicatif::ProgressBar);

impl ProgressBar for Bar {
    fn set_position(&mut self, pos: u64) {
        self.0.set_position(pos);
    }
    fn finish(&mut self) {
        self.0.finish_and_clear();
        if let Ok(mut c) = CURRENT.lock() {
            *c = None;
        }
    }
}

/// The factory the REPL and scripts install when stderr is a terminal.
pub fn factory() -> Option<ProgressFactory> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Box::new(|total, desc| {
        let template = match total {
            Some(_) => "{prefix}{bar:30} {pos}/{len} [{elapsed_precise}<{eta_precise}, {per_sec}]",
            None => "{prefix}{spinner} {pos} [{elapsed_precise}, {per_sec}]",
        };
        let style = ProgressStyle::with_template(template)
            .expect("a valid template")
            .progress_chars("█▉▊▋▌▍▎▏ ");
        let bar = match total {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::no_length(),
        };
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(style);
        if let Some(d) = desc {
            bar.set_prefix(format!("{d}: "));
        }
        if let Ok(mut c) = CURRENT.lock() {
            *c = Some(bar.clone());
        }
        Some(Box::new(Bar(bar)) as Box<dyn ProgressBar>)
    }))
}

/// Run `write` with the current bar (if any) lifted off the screen.
pub fn suspend(write: impl FnOnce()) {
    let bar = CURRENT.lock().ok().and_then(|c| c.clone());
    match bar {
        Some(b) => b.suspend(write),
        None => write(),
    }
}
