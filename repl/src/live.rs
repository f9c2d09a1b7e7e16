//! The live per-device view: while pmap or shard_map programs keep running
//! for more than about a second (a training loop, say), the terminal shows
//! one line per busy device, updated in place — steps, time computing and in
//! collectives, bytes sent — and the lines disappear when the work stops.
//!
//! A monitor thread samples the devices' counters; indicatif draws the lines
//! on stderr (and draws nothing when stderr is not a terminal). Text the
//! program prints meanwhile goes through `print`, which lifts the lines,
//! writes, and puts them back, so output and view never interleave.

use arr_kernels::devices::{self, DeviceSnapshot};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long devices must stay busy before the view appears.
const SHOW_AFTER: Duration = Duration::from_millis(1000);
/// How long without a new step before the view is taken away.
const HIDE_AFTER: Duration = Duration::from_millis(400);
const TICK: Duration = Duration::from_millis(100);

struct View {
    multi: MultiProgress,
    bars: Vec<(usize, ProgressBar)>,
    /// The counters when the busy period began (the view shows what it did since).
    base: Vec<DeviceSnapshot>,
}

fn view() -> &'static Mutex<Option<View>> {
    static VIEW: OnceLock<Mutex<Option<View>>> = OnceLock::new();
    VIEW.get_or_init(|| Mutex::new(None))
}

/// Start the monitor (once), if stderr is a terminal.
pub fn start() {
    static STARTED: OnceLock<()> = OnceLock::new();
    if !std::io::stderr().is_terminal() {
        return;
    }
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("live view".into())
            .spawn(monitor);
    });
}

/// Write program output to stdout, with the view (if shown) lifted around it.
pub fn print(text: &str) {
    let write = || {
        crate::progress::suspend(|| {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        })
    };
    match view().lock() {
        Ok(guard) => match guard.as_ref() {
            Some(v) => v.multi.suspend(write),
            None => write(),
        },
        Err(_) => write(),
    }
}

/// Take the view away now (the program finished, the prompt is back).
pub fn stop() {
    RESET.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut guard) = view().lock() {
        if let Some(v) = guard.take() {
            clear(v);
        }
    }
}

static RESET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn clear(v: View) {
    for (_, bar) in &v.bars {
        bar.finish_and_clear();
    }
    let _ = v.multi.clear();
}

fn total_steps(s: &[DeviceSnapshot]) -> u64 {
    s.iter().map(|d| d.steps).sum()
}

pub fn line(now: &DeviceSnapshot, base: Option<&DeviceSnapshot>) -> String {
    let b = base.copied().unwrap_or_default();
    format!(
        "cpu:{:<3} steps {:>6}  compute {:>8.1} ms  collectives {:>8.1} ms  sent {:>10}",
        now.id,
        now.steps - b.steps,
        now.compute_ms - b.compute_ms,
        now.collective_ms - b.collective_ms,
        arr_runtime::display::sharding::human_bytes((now.bytes_sent - b.bytes_sent) as usize)
    )
}

fn monitor() {
    let mut prev = devices::snapshot(devices::count());
    let mut busy_since: Option<(Instant, Vec<DeviceSnapshot>)> = None;
    let mut last_change = Instant::now();
    loop {
        std::thread::sleep(TICK);
        let snap = devices::snapshot(devices::count());
        let now = Instant::now();
        if total_steps(&snap) != total_steps(&prev) {
            // A busy period starts from the counters of the tick before it.
            busy_since.get_or_insert_with(|| (now - TICK, prev.clone()));
            last_change = now;
        }
        prev = snap.clone();
        if RESET.swap(false, std::sync::atomic::Ordering::Relaxed) {
            busy_since = None;
        }
        let Ok(mut guard) = view().lock() else {
            return;
        };
        match (&busy_since, guard.as_mut()) {
            (Some(_), Some(v)) if now - last_change < HIDE_AFTER => {
                for (id, bar) in &v.bars {
                    bar.set_message(line(&snap[*id], v.base.get(*id)));
                }
            }
            (Some((since, base)), None)
                if now - *since >= SHOW_AFTER && now - last_change < HIDE_AFTER =>
            {
                let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
                let style = ProgressStyle::with_template("{msg}").expect("a valid template");
                let bars = snap
                    .iter()
                    .filter(|d| d.steps > base.get(d.id).map_or(0, |b| b.steps))
                    .map(|d| {
                        let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                        bar.set_message(line(d, base.get(d.id)));
                        (d.id, bar)
                    })
                    .collect();
                *guard = Some(View {
                    multi,
                    bars,
                    base: base.clone(),
                });
            }
            (Some(_), _) if now - last_change >= HIDE_AFTER => {
                if let Some(v) = guard.take() {
                    clear(v);
                }
                busy_since = None;
            }
            _ => {}
        }
    }
}
