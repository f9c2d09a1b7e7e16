//! `progress(iterable)`: an iterable that yields the same items and reports
//! how far a `for` loop over it got — an updating display in a notebook, a
//! bar drawn by the front end on a terminal, nothing otherwise.
//!
//! The evaluator owns the loop (`Interp::for_progress`), so it knows when an
//! item is done, when the loop breaks and when it fails; this module holds
//! the value, the text and HTML of a bar, and the interface a terminal front
//! end implements (the runtime draws nothing on a terminal itself).

use crate::output::RichOutput;
use crate::value::{Object, Value};
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `progress(xs, total=None, desc=None)`.
#[derive(Debug)]
pub struct ProgressValue {
    pub inner: Value,
    pub total: Option<u64>,
    pub desc: Option<String>,
}

impl Object for ProgressValue {
    fn type_name(&self) -> &'static str {
        "progress"
    }
    fn repr(&self) -> String {
        format!("progress({})", crate::display::repr(&self.inner))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The progress value behind `v`, if it is one.
pub fn of(v: &Value) -> Option<&ProgressValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<ProgressValue>(),
        _ => None,
    }
}

/// A bar for one loop, drawn by a terminal front end (the REPL uses indicatif).
pub trait ProgressBar {
    /// `pos` items are done.
    fn set_position(&mut self, pos: u64);
    /// The loop ended (normally, by `break`, or by an error).
    fn finish(&mut self);
}

/// Makes a bar for a loop of `total` items (if known) described by `desc`;
/// `None` when nothing should be drawn (stderr is not a terminal).
pub type ProgressFactory = Box<dyn Fn(Option<u64>, Option<&str>) -> Option<Box<dyn ProgressBar>>>;

/// Notebook updates come at most this often (and once at the end), so a
/// fast loop does not flood the front end with messages.
pub const NOTEBOOK_INTERVAL: Duration = Duration::from_millis(100);
const WIDTH: u64 = 20;

/// `desc: 37/100 [#######.............] 12.5 it/s`: the text/plain form.
pub fn text_line(desc: Option<&str>, pos: u64, total: Option<u64>, elapsed: Duration) -> String {
    let mut out = String::new();
    if let Some(d) = desc {
        out.push_str(d);
        out.push_str(": ");
    }
    match total {
        Some(t) => {
            let filled = (pos.min(t) * WIDTH).checked_div(t).unwrap_or(WIDTH);
            out.push_str(&format!(
                "{pos}/{t} [{}{}]",
                "#".repeat(filled as usize),
                ".".repeat((WIDTH - filled) as usize)
            ));
        }
        None => out.push_str(&format!("{pos} it")),
    }
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 && pos > 0 {
        out.push_str(&format!(" {:.1} it/s", pos as f64 / secs));
    }
    out
}

/// A small HTML bar (`<progress>`) with the same numbers as the text.
pub fn html_bar(desc: Option<&str>, pos: u64, total: Option<u64>, elapsed: Duration) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let label = desc.map(|d| format!("{} ", escape(d))).unwrap_or_default();
    let bar = match total {
        Some(t) => format!(
            "<progress value=\"{pos}\" max=\"{t}\" style=\"width: 16em\"></progress> {pos}/{t}"
        ),
        None => format!("<progress style=\"width: 16em\"></progress> {pos}"),
    };
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 && pos > 0 {
        format!(" {:.1} it/s", pos as f64 / secs)
    } else {
        String::new()
    };
    format!("<div style=\"font-family: monospace\">{label}{bar}{rate}</div>")
}

enum Draw {
    /// A notebook: one display, updated in place.
    Notebook {
        id: String,
        last: Instant,
    },
    Terminal(Box<dyn ProgressBar>),
    Nothing,
}

/// The progress of one running loop.
pub(crate) struct Reporter {
    draw: Draw,
    pos: u64,
    total: Option<u64>,
    desc: Option<String>,
    start: Instant,
}

impl Reporter {
    /// Start reporting: a rich sink (a notebook) gets a display; otherwise the
    /// front end's factory may draw a bar.
    pub(crate) fn start(
        interp: &mut crate::Interp,
        total: Option<u64>,
        desc: Option<String>,
    ) -> Reporter {
        static IDS: AtomicUsize = AtomicUsize::new(0);
        let start = Instant::now();
        let draw = if interp.rich.is_some() {
            let id = format!(
                "arr-progress-{}-{}",
                std::process::id(),
                IDS.fetch_add(1, Ordering::Relaxed)
            );
            Draw::Notebook { id, last: start }
        } else {
            match &interp.progress_bars {
                Some(make) => make(total, desc.as_deref()).map_or(Draw::Nothing, Draw::Terminal),
                None => Draw::Nothing,
            }
        };
        let r = Reporter {
            draw,
            pos: 0,
            total,
            desc,
            start,
        };
        r.send(interp, false);
        r
    }

    fn send(&self, interp: &mut crate::Interp, update: bool) {
        if let Draw::Notebook { id, .. } = &self.draw {
            let elapsed = self.start.elapsed();
            let desc = self.desc.as_deref();
            interp.emit(RichOutput::Mime {
                data: vec![
                    ("text/plain", text_line(desc, self.pos, self.total, elapsed)),
                    ("text/html", html_bar(desc, self.pos, self.total, elapsed)),
                ],
                display_id: Some(id.clone()),
                update,
            });
        }
    }

    /// One more item is done.
    pub(crate) fn step(&mut self, interp: &mut crate::Interp) {
        self.pos += 1;
        match &mut self.draw {
            Draw::Notebook { last, .. } => {
                if last.elapsed() >= NOTEBOOK_INTERVAL {
                    *last = Instant::now();
                    self.send(interp, true);
                }
            }
            Draw::Terminal(bar) => bar.set_position(self.pos),
            Draw::Nothing => {}
        }
    }

    /// The loop is over: the notebook's display shows the final count.
    pub(crate) fn finish(mut self, interp: &mut crate::Interp) {
        match &mut self.draw {
            Draw::Notebook { .. } => self.send(interp, true),
            Draw::Terminal(bar) => bar.finish(),
            Draw::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_bars() {
        let d = Duration::ZERO;
        assert_eq!(
            text_line(Some("train"), 37, Some(100), d),
            "train: 37/100 [#######.............]"
        );
        assert_eq!(text_line(None, 5, Some(5), d), "5/5 [####################]");
        assert_eq!(text_line(None, 3, None, d), "3 it");
        assert_eq!(text_line(None, 0, Some(0), d), "0/0 [####################]");
        assert!(text_line(None, 10, Some(20), Duration::from_secs(2)).ends_with(" 5.0 it/s"));
        assert!(html_bar(Some("<a>"), 1, Some(2), d)
            .contains("&lt;a&gt; <progress value=\"1\" max=\"2\""));
    }
}
