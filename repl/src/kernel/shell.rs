//! Shell requests, served one at a time on the evaluator thread that owns the
//! `Session`: execute, complete, inspect, is_complete, history, comms, shutdown.
//!
//! Every request is framed by `status: busy` and `status: idle` on iopub with
//! the request as parent; its outputs go to iopub in between (one queue, so
//! their order is the order they were produced), and the reply to shell
//! before idle. Cells' `print`, `eprint`, `display` and `clear_output` reach
//! iopub through the session's output sinks, tagged with the running request.

use super::display;
use super::history::History;
use super::wire::{Headers, Message};
use crate::repl::CommandOutput;
use arr_lang::Completeness;
use arr_runtime::{RichOutput, Session};
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// How long, after a failed cell, execute requests still in flight from the
/// client are awaited so that they are aborted too ("Run All" stops). Only
/// requests received before the error reply is sent can have been queued
/// behind the failed cell, so waiting longer would not change the answer.
const ABORT_GRACE: Duration = Duration::from_millis(10);

/// A cell's failure as Jupyter shows it.
struct CellError {
    ename: String,
    evalue: String,
    traceback: Vec<String>,
}

/// Run `f`, turning an arr error or a panic in a builtin into a `CellError`.
fn guarded<T>(f: impl FnOnce() -> arr_runtime::Result<T>) -> Result<T, CellError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CellError {
            ename: e.type_name(),
            evalue: e.message.clone(),
            traceback: e.render().lines().map(str::to_string).collect(),
        }),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(CellError {
                ename: "InternalError".into(),
                evalue: msg.clone(),
                traceback: vec![format!(
                    "internal error (a bug in arr, please report it): {msg}"
                )],
            })
        }
    }
}

/// What a cell asks for: code to run, documentation for the pager, or one
/// of the REPL's `:commands` (`:time`, `:ir`, `:why`, `:jit`...).
enum Cell<'a> {
    Code(&'a str),
    Help(&'a str),
    Command(&'a str),
}

/// `?name`, `name?` and a cell that is just `help(name)` open the pager, as in IPython.
fn classify(code: &str) -> Cell<'_> {
    let t = code.trim();
    if let Some(command) = t.strip_prefix(':') {
        return Cell::Command(command);
    }
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    };
    if let Some(name) = t.strip_prefix('?').or_else(|| t.strip_suffix('?')) {
        let name = name.trim_matches('?').trim();
        if is_name(name) {
            return Cell::Help(name);
        }
    }
    if let Some(inner) = t.strip_prefix("help(").and_then(|r| r.strip_suffix(')')) {
        if is_name(inner.trim()) {
            return Cell::Help(inner.trim());
        }
    }
    Cell::Code(code)
}

pub struct Kernel {
    session: Session,
    headers: Headers,
    iopub: UnboundedSender<Message>,
    shell: UnboundedSender<Message>,
    /// The header of the request being served: the parent of every output.
    parent: Rc<RefCell<Json>>,
    execution_count: u64,
    history: History,
}

impl Kernel {
    pub fn new(
        mut session: Session,
        headers: Headers,
        iopub: UnboundedSender<Message>,
        shell: UnboundedSender<Message>,
    ) -> Kernel {
        let parent = Rc::new(RefCell::new(json!({})));
        let stream = {
            let (headers, iopub, parent) = (headers.clone(), iopub.clone(), parent.clone());
            move |name: &str, text: &str| {
                let m = headers.publish(
                    &parent.borrow(),
                    "stream",
                    json!({"name": name, "text": text}),
                );
                let _ = iopub.send(m);
            }
        };
        let out = stream.clone();
        session.set_output(Box::new(move |text| out("stdout", text)));
        {
            let (headers, iopub, parent) = (headers.clone(), iopub.clone(), parent.clone());
            session.set_rich_output(Box::new(move |output| {
                let (msg_type, content) = match output {
                    RichOutput::Stderr(text) => return stream("stderr", &text),
                    RichOutput::ClearOutput { wait } => ("clear_output", json!({"wait": wait})),
                    RichOutput::Display {
                        value,
                        display_id,
                        update,
                    } => display_message(display::bundle(&value), display_id, update),
                    RichOutput::Image {
                        formats,
                        display_id,
                        update,
                    } => display_message(display::image_bundle(&formats), display_id, update),
                    RichOutput::Mime {
                        data,
                        display_id,
                        update,
                    } => display_message(display::mime_bundle(&data), display_id, update),
                };
                let _ = iopub.send(headers.publish(&parent.borrow(), msg_type, content));
            }));
        }
        Kernel {
            session,
            headers,
            iopub,
            shell,
            parent,
            execution_count: 0,
            history: History::default(),
        }
    }

    /// Serve shell requests until the channel closes or a shutdown request comes.
    pub fn serve(mut self, requests: Receiver<Message>) {
        // Requests taken from the channel early (after a failed cell), with
        // whether an execute request among them is to be aborted.
        let mut queued: VecDeque<(Message, bool)> = VecDeque::new();
        loop {
            let (request, abort) = match queued.pop_front() {
                Some(r) => r,
                None => match requests.recv() {
                    Ok(r) => (r, false),
                    Err(_) => return,
                },
            };
            self.status(&request, "busy");
            let keep_going = if abort && request.msg_type() == "execute_request" {
                self.reply(&request, "execute_reply", json!({"status": "aborted"}));
                true
            } else {
                // A bug in serving one request must not end the kernel: log
                // it and go on (the evaluation itself is already guarded).
                let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.handle(&request, &requests, &mut queued)
                }));
                served.unwrap_or_else(|_| {
                    eprintln!("arr kernel: internal error serving {}", request.msg_type());
                    true
                })
            };
            self.status(&request, "idle");
            if !keep_going {
                return;
            }
        }
    }

    fn publish(&self, parent: &Message, msg_type: &str, content: Json) {
        let _ = self
            .iopub
            .send(self.headers.publish(&parent.header, msg_type, content));
    }

    fn status(&self, parent: &Message, state: &str) {
        self.publish(parent, "status", json!({"execution_state": state}));
    }

    fn reply(&self, parent: &Message, msg_type: &str, content: Json) {
        let _ = self
            .shell
            .send(self.headers.reply(parent, msg_type, content));
    }

    /// Serve one request (between busy and idle); false means shut down.
    fn handle(
        &mut self,
        request: &Message,
        requests: &Receiver<Message>,
        queued: &mut VecDeque<(Message, bool)>,
    ) -> bool {
        let c = &request.content;
        match request.msg_type() {
            "execute_request" => {
                let reply = self.execute(request);
                let stop_on_error = c
                    .get("stop_on_error")
                    .and_then(Json::as_bool)
                    .unwrap_or(true);
                if reply["status"] == "error" && stop_on_error {
                    // Everything the client sent before it could see this
                    // reply was queued behind the failed cell: collect it
                    // now, so that its execute requests are aborted.
                    for (_, abort) in queued.iter_mut() {
                        *abort = true;
                    }
                    while let Ok(r) = requests.recv_timeout(ABORT_GRACE) {
                        queued.push_back((r, true));
                    }
                }
                self.reply(request, "execute_reply", reply);
            }
            "kernel_info_request" => self.reply(request, "kernel_info_reply", super::kernel_info()),
            "complete_request" => {
                let content = self.complete(c);
                self.reply(request, "complete_reply", content);
            }
            "inspect_request" => {
                let content = self.inspect(c);
                self.reply(request, "inspect_reply", content);
            }
            "is_complete_request" => {
                let code = c.get("code").and_then(Json::as_str).unwrap_or("");
                self.reply(request, "is_complete_reply", is_complete(code));
            }
            "history_request" => {
                let history = self.history.request(c);
                self.reply(
                    request,
                    "history_reply",
                    json!({"status": "ok", "history": history}),
                );
            }
            "comm_info_request" => {
                self.reply(
                    request,
                    "comm_info_reply",
                    json!({"status": "ok", "comms": {}}),
                );
            }
            "comm_open" => {
                // No comm targets exist: close the comm so the front end does not wait on it.
                let id = c.get("comm_id").cloned().unwrap_or(Json::Null);
                self.publish(request, "comm_close", json!({"comm_id": id, "data": {}}));
            }
            "comm_msg" | "comm_close" => {}
            "shutdown_request" => {
                let restart = c.get("restart").and_then(Json::as_bool).unwrap_or(false);
                self.reply(
                    request,
                    "shutdown_reply",
                    json!({"status": "ok", "restart": restart}),
                );
                return false;
            }
            other => eprintln!("arr kernel: ignoring unknown shell message type '{other}'"),
        }
        true
    }

    /// Run a cell, publishing its input and outputs; returns the execute_reply content.
    fn execute(&mut self, request: &Message) -> Json {
        let c = &request.content;
        let code = c
            .get("code")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let silent = c.get("silent").and_then(Json::as_bool).unwrap_or(false);
        let store_history = !silent
            && c.get("store_history")
                .and_then(Json::as_bool)
                .unwrap_or(true);
        if store_history {
            self.execution_count += 1;
        }
        let count = self.execution_count;
        if !silent {
            self.publish(
                request,
                "execute_input",
                json!({"code": code, "execution_count": count}),
            );
        }
        *self.parent.borrow_mut() = request.header.clone();
        // An interrupt that arrived while idle must not stop this cell.
        self.session
            .interrupt_handle()
            .store(false, Ordering::Relaxed);
        let mut payload = Vec::new();
        let monitor = super::live::CellMonitor::start(
            self.headers.clone(),
            self.iopub.clone(),
            request.header.clone(),
        );
        let session = &mut self.session;
        let result = match classify(&code) {
            Cell::Help(name) => guarded(|| session.help_text(name)).map(|text| {
                payload.push(json!({"source": "page", "data": {"text/plain": text}, "start": 0}));
                None
            }),
            Cell::Code(code) => guarded(|| session.run_entry(code)),
            Cell::Command(command) => match crate::repl::run_command(session, command) {
                CommandOutput::Text(text) => {
                    self.publish(request, "stream", json!({"name": "stdout", "text": text}));
                    Ok(None)
                }
                CommandOutput::Value(v) => Ok(Some(v)),
                CommandOutput::Quit => {
                    let text = "(:quit does nothing in a notebook: shut the kernel down from the front end)\n";
                    self.publish(request, "stream", json!({"name": "stdout", "text": text}));
                    Ok(None)
                }
                CommandOutput::Error(msg) => Err(CellError {
                    ename: "CommandError".into(),
                    evalue: msg.lines().next().unwrap_or("").to_string(),
                    traceback: msg.lines().map(str::to_string).collect(),
                }),
            },
        };
        // The device view's summary comes before the cell's result and reply.
        monitor.finish();
        // A figure drawn by the cell shows as its output, as matplotlib's inline backend does.
        if let Err(e) = arr_stdlib::plot::show_pending(&mut self.session.interp) {
            eprintln!("arr kernel: cannot show the figure: {}", e.render());
        }
        let mut output_text = None;
        let reply = match result {
            Ok(value) => {
                // As IPython: a cell whose last line ends in `;` shows no result.
                let value = value.filter(|_| !ends_in_semicolon(&code));
                if let Some(v) = value {
                    let data = display::bundle(&v);
                    output_text = data
                        .get("text/plain")
                        .and_then(Json::as_str)
                        .map(str::to_string);
                    if !silent {
                        self.publish(
                            request,
                            "execute_result",
                            json!({"execution_count": count, "data": data, "metadata": {}}),
                        );
                    }
                }
                let user_expressions = self.user_expressions(c.get("user_expressions"));
                json!({
                    "status": "ok",
                    "execution_count": count,
                    "payload": payload,
                    "user_expressions": user_expressions,
                })
            }
            Err(e) => {
                let error = json!({"ename": e.ename, "evalue": e.evalue, "traceback": e.traceback});
                if !silent {
                    self.publish(request, "error", error.clone());
                }
                let mut reply = error;
                reply["status"] = json!("error");
                reply["execution_count"] = json!(count);
                reply
            }
        };
        if store_history {
            self.history.push(count, &code, output_text);
        }
        *self.parent.borrow_mut() = json!({});
        reply
    }

    /// `user_expressions`: each expression's value as a mime bundle, or its error.
    fn user_expressions(&mut self, exprs: Option<&Json>) -> Json {
        let mut out = serde_json::Map::new();
        let Some(Json::Object(exprs)) = exprs else {
            return Json::Object(out);
        };
        // Evaluating them must not change `_`, the cell's own result.
        let underscore = self.session.get("_");
        for (name, expr) in exprs {
            let Some(expr) = expr.as_str() else { continue };
            let session = &mut self.session;
            let r = match guarded(|| session.run_entry_named("<user_expression>", expr)) {
                Ok(v) => {
                    let v = v.unwrap_or(arr_runtime::Value::None);
                    json!({"status": "ok", "data": display::bundle(&v), "metadata": {}})
                }
                Err(e) => json!({
                    "status": "error", "ename": e.ename, "evalue": e.evalue, "traceback": e.traceback
                }),
            };
            out.insert(name.clone(), r);
        }
        if let Some(v) = underscore {
            self.session.set("_", v);
        }
        Json::Object(out)
    }

    /// complete_request: the REPL's completion at the cursor. Jupyter counts
    /// `cursor_pos` in Unicode code points, the session in bytes.
    fn complete(&self, c: &Json) -> Json {
        let code = c.get("code").and_then(Json::as_str).unwrap_or("");
        let cursor = cursor_chars(c, code);
        let byte = byte_offset(code, cursor);
        let (start, matches) = self.session.complete(&code[..byte]);
        json!({
            "status": "ok",
            "matches": matches,
            "cursor_start": code[..start].chars().count(),
            "cursor_end": cursor,
            "metadata": {},
        })
    }

    /// inspect_request: `help` of the (dotted) name around the cursor.
    fn inspect(&mut self, c: &Json) -> Json {
        let code = c.get("code").and_then(Json::as_str).unwrap_or("");
        let byte = byte_offset(code, cursor_chars(c, code));
        let name = name_at(code, byte);
        let session = &mut self.session;
        match (!name.is_empty()).then(|| guarded(|| session.help_text(name))) {
            Some(Ok(text)) => json!({
                "status": "ok", "found": true, "data": {"text/plain": text}, "metadata": {}
            }),
            _ => json!({"status": "ok", "found": false, "data": {}, "metadata": {}}),
        }
    }
}

fn cursor_chars(c: &Json, code: &str) -> usize {
    let n = code.chars().count();
    c.get("cursor_pos")
        .and_then(Json::as_u64)
        .map_or(n, |p| (p as usize).min(n))
}

fn byte_offset(code: &str, chars: usize) -> usize {
    code.char_indices()
        .nth(chars)
        .map_or(code.len(), |(i, _)| i)
}

/// The identifier or dotted chain (`random.normal`) that touches byte `at`.
fn name_at(code: &str, at: usize) -> &str {
    let is_part = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let start = code[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_part(*c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = code[at..]
        .char_indices()
        .find(|(_, c)| !is_part(*c))
        .map_or(code.len(), |(i, _)| at + i);
    code[start..end].trim_matches('.')
}

/// is_complete_request: the REPL's multi-line check (the same parser).
fn is_complete(code: &str) -> Json {
    let t = code.trim_start();
    if t.starts_with('?') || t.starts_with(':') {
        return json!({"status": "complete"});
    }
    match arr_lang::check_complete(code) {
        Completeness::Complete => json!({"status": "complete"}),
        Completeness::Incomplete { indent } => json!({"status": "incomplete", "indent": indent}),
        Completeness::Invalid(_) => json!({"status": "invalid"}),
    }
}

/// The content of a display_data or update_display_data message.
fn display_message(data: Json, display_id: Option<String>, update: bool) -> (&'static str, Json) {
    let mut content = json!({"data": data, "metadata": {}});
    if let Some(id) = display_id {
        content["transient"] = json!({"display_id": id});
    }
    let msg_type = if update {
        "update_display_data"
    } else {
        "display_data"
    };
    (msg_type, content)
}

/// Whether the last line of code (its comment aside) ends in `;`: IPython's
/// sign that the cell's value is not to be shown.
fn ends_in_semicolon(code: &str) -> bool {
    let Some(line) = code.lines().rev().find(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    }) else {
        return false;
    };
    // Cut a trailing comment: the first `#` outside a string literal.
    let mut quote: Option<char> = None;
    let mut end = line.len();
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') => {
                end = i;
                break;
            }
            _ => {}
        }
        escaped = false;
    }
    line[..end].trim_end().ends_with(';')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_semicolon_hides_the_result() {
        assert!(ends_in_semicolon("f(1.0);"));
        assert!(ends_in_semicolon("x = 1\nf(x);  # quiet\n\n"));
        assert!(!ends_in_semicolon("f(1.0)"));
        assert!(!ends_in_semicolon("print('a;')"));
        assert!(!ends_in_semicolon("s = 'x # y;'"));
        assert!(!ends_in_semicolon("f(x)  # a; b;"));
    }

    #[test]
    fn pager_cells() {
        assert!(matches!(classify("?sum"), Cell::Help("sum")));
        assert!(matches!(
            classify("random.normal?\n"),
            Cell::Help("random.normal")
        ));
        assert!(matches!(classify("help(print)"), Cell::Help("print")));
        assert!(matches!(classify("help(f(x))"), Cell::Code(_)));
        assert!(matches!(classify("x = 1"), Cell::Code(_)));
        assert!(matches!(
            classify(":time 1 + 1"),
            Cell::Command("time 1 + 1")
        ));
    }

    #[test]
    fn names_at_the_cursor() {
        assert_eq!(name_at("print", 5), "print");
        assert_eq!(name_at("y = random.nor", 14), "random.nor");
        assert_eq!(name_at("sum(x)", 1), "sum");
        assert_eq!(byte_offset("é = 1", 1), 2);
    }

    #[test]
    fn completeness_uses_the_parser() {
        assert_eq!(is_complete("x = 1")["status"], "complete");
        assert_eq!(is_complete("def f(x):")["status"], "incomplete");
        assert_eq!(is_complete("(1,")["status"], "incomplete");
        assert_eq!(is_complete("x = = 1")["status"], "invalid");
    }
}
