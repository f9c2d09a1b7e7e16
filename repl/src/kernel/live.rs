//! The live per-device view in a notebook: while pmap/shard_map work keeps
//! the devices busy for more than about a second of a cell, one output
//! (a `display_id`) shows a line per busy device — steps, compute and
//! collective time, bytes sent — updated in place, and is left at the end of
//! the cell as a summary of what the devices did.
//!
//! A monitor thread runs for each cell and samples the devices' counters;
//! it sends its messages on the iopub queue itself (the evaluator thread is
//! busy running the cell) and is joined before the cell's result and reply,
//! so the summary never arrives after `idle`.

use super::wire::{Headers, Message};
use arr_kernels::devices::{self, DeviceSnapshot};
use serde_json::{json, Value as Json};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

const SHOW_AFTER: Duration = Duration::from_millis(1000);
const TICK: Duration = Duration::from_millis(100);
/// Updates in place at most this often (each is a message to the browser).
const UPDATE_EVERY: Duration = Duration::from_millis(250);

/// The monitor of one running cell.
pub struct CellMonitor {
    /// Dropped to stop the monitor at once (it waits on the channel between samples).
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl CellMonitor {
    pub fn start(headers: Headers, iopub: UnboundedSender<Message>, parent: Json) -> CellMonitor {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("notebook device view".into())
            .spawn(move || monitor(&stopped, &headers, &iopub, &parent))
            .ok();
        CellMonitor {
            stop: Some(stop),
            thread,
        }
    }

    /// The cell is done: the view (if shown) gets its final summary.
    pub fn finish(mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The view's text and HTML: a line per device that ran steps since `base`.
pub fn view(now: &[DeviceSnapshot], base: &[DeviceSnapshot], done: bool) -> (String, String) {
    let lines: Vec<String> = now
        .iter()
        .filter(|d| d.steps > base.get(d.id).map_or(0, |b| b.steps))
        .map(|d| crate::live::line(d, base.get(d.id)))
        .collect();
    let head = if done {
        format!("devices: {} ran (finished)", lines.len())
    } else {
        format!("devices: {} busy", lines.len())
    };
    let text = format!("{head}\n{}", lines.join("\n"));
    let html = format!(
        "<div><b>{}</b><pre style=\"margin: 0\">{}</pre></div>",
        arr_runtime::table::escape(&head),
        arr_runtime::table::escape(&lines.join("\n"))
    );
    (text, html)
}

fn steps(s: &[DeviceSnapshot]) -> u64 {
    s.iter().map(|d| d.steps).sum()
}

fn monitor(
    stop: &Receiver<()>,
    headers: &Headers,
    iopub: &UnboundedSender<Message>,
    parent: &Json,
) {
    let n = devices::count();
    let base = devices::snapshot(n);
    let start = Instant::now();
    let id = format!("arr-devices-{}", uuid::Uuid::new_v4());
    let mut shown = false;
    let mut last_sent = start;
    let send = |update: bool, done: bool| {
        let (text, html) = view(&devices::snapshot(n), &base, done);
        let msg_type = if update {
            "update_display_data"
        } else {
            "display_data"
        };
        let content = json!({
            "data": {"text/plain": text, "text/html": html},
            "metadata": {},
            "transient": {"display_id": id},
        });
        let _ = iopub.send(headers.publish(parent, msg_type, content));
    };
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
        let now = Instant::now();
        if !shown {
            // Shown once devices have been working for a second of this cell.
            if now - start >= SHOW_AFTER && steps(&devices::snapshot(n)) > steps(&base) {
                send(false, false);
                shown = true;
                last_sent = now;
            }
        } else if now - last_sent >= UPDATE_EVERY {
            send(true, false);
            last_sent = now;
        }
    }
    if shown {
        send(true, true);
    }
}
