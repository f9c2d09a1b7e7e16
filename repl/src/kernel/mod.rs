//! `arr kernel`: a Jupyter kernel over the same `Session` as the REPL.
//!
//! Two threads. The network thread runs a small tokio runtime that owns the
//! five ZeroMQ sockets: it checks and forwards shell requests, writes
//! replies and iopub messages (one writer per socket, fed by queues), echoes
//! heartbeats and serves control — `kernel_info`, `interrupt` and `shutdown`
//! — itself, so a running cell never blocks them. The evaluator thread (the
//! caller's, which has the big stack) owns the `Session` and serves shell
//! requests one at a time (`shell.rs`).

mod display;
mod history;
pub mod install;
mod live;
mod shell;
mod wire;

use crate::runner::new_session;
use serde_json::{json, Value as Json};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use wire::{Connection, Headers, Message, Signer};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// How long a shutdown waits for the last replies to leave before exiting.
const EXIT_GRACE: Duration = Duration::from_millis(150);

/// The kernel_info_reply content (shell and control).
pub fn kernel_info() -> Json {
    let version = env!("CARGO_PKG_VERSION");
    json!({
        "status": "ok",
        "protocol_version": wire::PROTOCOL_VERSION,
        "implementation": "arr",
        "implementation_version": version,
        "language_info": {
            "name": "arr",
            "version": version,
            "mimetype": "text/x-arr",
            "file_extension": ".arr",
            // arr is Python syntax: Python's lexer and editor mode fit.
            "pygments_lexer": "python",
            "codemirror_mode": "python",
            "nbconvert_exporter": "script",
        },
        "banner": format!(
            "arr {version} — a NumPy-flavoured array language with grad, vmap and jit.\n\
             help(name) or ?name shows documentation."
        ),
        // arr has no web documentation of its own (help(name) is it); its
        // names and semantics are NumPy's and JAX's, so those references apply.
        "help_links": [
            {"text": "NumPy reference", "url": "https://numpy.org/doc/stable/reference/"},
            {"text": "JAX documentation", "url": "https://docs.jax.dev/"}
        ],
        "debugger": false,
    })
}

/// Run the kernel for a connection file until a shutdown request.
pub fn run(connection_file: &str) -> ExitCode {
    watch_parent();
    let text = match std::fs::read_to_string(connection_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("arr kernel: cannot read '{connection_file}': {e}");
            return ExitCode::from(2);
        }
    };
    let conn = match Connection::parse(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("arr kernel: {connection_file}: {e}");
            return ExitCode::from(2);
        }
    };
    let headers = Headers::new();
    // The session is made here, on the evaluator thread (it is not Send);
    // its Ctrl-C handler (SIGINT) and interrupt_request set the same flag.
    let session = new_session();
    let interrupt = session.interrupt_handle();
    let (iopub_tx, iopub_rx) = unbounded_channel();
    let (shell_tx, shell_rx) = unbounded_channel();
    let (request_tx, request_rx) = std::sync::mpsc::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let net = Network {
        signer: Signer::new(&conn.key),
        conn,
        headers: headers.clone(),
        interrupt,
        iopub: iopub_tx.clone(),
    };
    let spawned = std::thread::Builder::new()
        .name("arr-kernel-net".into())
        .spawn(move || net.run(iopub_rx, shell_rx, request_tx, ready_tx));
    if let Err(e) = spawned {
        eprintln!("arr kernel: cannot start the network thread: {e}");
        return ExitCode::FAILURE;
    }
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("arr kernel: {e}");
            return ExitCode::FAILURE;
        }
        Err(_) => {
            eprintln!("arr kernel: the network thread failed");
            return ExitCode::FAILURE;
        }
    }
    let _ = iopub_tx.send(headers.publish(
        &json!({}),
        "status",
        json!({"execution_state": "starting"}),
    ));
    shell::Kernel::new(session, headers, iopub_tx, shell_tx).serve(request_rx);
    // A shutdown request (or the network thread ending): let the last
    // reply and idle status leave, then end the process (closing the ports).
    std::thread::sleep(EXIT_GRACE);
    ExitCode::SUCCESS
}

/// End the kernel when the process that started it dies without shutting
/// it down (a crashed notebook server), as ipykernel does: Jupyter names
/// itself in `JPY_PARENT_PID`, and an orphan is re-parented to another process.
fn watch_parent() {
    #[cfg(unix)]
    {
        let Some(parent) = std::env::var("JPY_PARENT_PID")
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        else {
            return;
        };
        // Started through a wrapper (a shell script): there is no parent to watch.
        if std::os::unix::process::parent_id() != parent {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("arr-kernel-parent".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(500));
                if std::os::unix::process::parent_id() != parent {
                    eprintln!("arr kernel: the process that started the kernel is gone; exiting");
                    std::process::exit(0);
                }
            });
    }
}

struct Network {
    conn: Connection,
    signer: Signer,
    headers: Headers,
    interrupt: Arc<AtomicBool>,
    iopub: UnboundedSender<Message>,
}

fn to_zmq(frames: Vec<Vec<u8>>) -> ZmqMessage {
    let mut it = frames.into_iter();
    let mut m = ZmqMessage::from(it.next().unwrap_or_default());
    for f in it {
        m.push_back(f.into());
    }
    m
}

/// Decode a received message, logging and dropping it if it is malformed or badly signed.
fn decode(socket: &str, m: &ZmqMessage, signer: &Signer) -> Option<Message> {
    let frames: Vec<&[u8]> = m.iter().map(|b| b.as_ref()).collect();
    match Message::decode(&frames, signer) {
        Ok(msg) => Some(msg),
        Err(e) => {
            eprintln!("arr kernel: dropped a message on {socket}: {e}");
            None
        }
    }
}

impl Network {
    fn run(
        self,
        iopub_rx: UnboundedReceiver<Message>,
        shell_rx: UnboundedReceiver<Message>,
        requests: std::sync::mpsc::Sender<Message>,
        ready: std::sync::mpsc::Sender<Result<(), String>>,
    ) {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready.send(Err(format!("cannot start the I/O runtime: {e}")));
                return;
            }
        };
        rt.block_on(async move {
            let bound = self.bind().await;
            let (shell, control, stdin, iopub, hb) = match bound {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let (shell_send, shell_recv) = shell.split();
            tokio::spawn(heartbeat(hb));
            tokio::spawn(write_iopub(iopub, iopub_rx, self.signer.clone()));
            tokio::spawn(write_shell(shell_send, shell_rx, self.signer.clone()));
            tokio::spawn(read_shell(shell_recv, requests, self.signer.clone()));
            // stdin is bound so clients can connect; input() is not offered.
            let _stdin = stdin;
            let _ = ready.send(Ok(()));
            self.serve_control(control).await;
        });
    }

    async fn bind(
        &self,
    ) -> Result<
        (
            zeromq::RouterSocket,
            zeromq::RouterSocket,
            zeromq::RouterSocket,
            zeromq::PubSocket,
            zeromq::RepSocket,
        ),
        String,
    > {
        let c = &self.conn;
        let fail = |name: &str, port: u16, e: zeromq::ZmqError| {
            format!("cannot bind the {name} socket to {}: {e}", c.endpoint(port))
        };
        let mut shell = zeromq::RouterSocket::new();
        shell
            .bind(&c.endpoint(c.shell_port))
            .await
            .map_err(|e| fail("shell", c.shell_port, e))?;
        let mut control = zeromq::RouterSocket::new();
        control
            .bind(&c.endpoint(c.control_port))
            .await
            .map_err(|e| fail("control", c.control_port, e))?;
        let mut stdin = zeromq::RouterSocket::new();
        stdin
            .bind(&c.endpoint(c.stdin_port))
            .await
            .map_err(|e| fail("stdin", c.stdin_port, e))?;
        let mut iopub = zeromq::PubSocket::new();
        iopub
            .bind(&c.endpoint(c.iopub_port))
            .await
            .map_err(|e| fail("iopub", c.iopub_port, e))?;
        let mut hb = zeromq::RepSocket::new();
        hb.bind(&c.endpoint(c.hb_port))
            .await
            .map_err(|e| fail("heartbeat", c.hb_port, e))?;
        Ok((shell, control, stdin, iopub, hb))
    }

    /// Control requests are answered here, never queued behind a running cell.
    async fn serve_control(&self, mut control: zeromq::RouterSocket) {
        loop {
            let m = match control.recv().await {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("arr kernel: control socket: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let Some(request) = decode("control", &m, &self.signer) else {
                continue;
            };
            let publish = |state: &str| {
                let _ = self.iopub.send(self.headers.publish(
                    &request.header,
                    "status",
                    json!({"execution_state": state}),
                ));
            };
            publish("busy");
            let (reply_type, content, exit) = match request.msg_type() {
                "kernel_info_request" => ("kernel_info_reply", kernel_info(), false),
                "interrupt_request" => {
                    self.interrupt.store(true, Ordering::Relaxed);
                    ("interrupt_reply", json!({"status": "ok"}), false)
                }
                "shutdown_request" => {
                    let restart = request
                        .content
                        .get("restart")
                        .and_then(Json::as_bool)
                        .unwrap_or(false);
                    (
                        "shutdown_reply",
                        json!({"status": "ok", "restart": restart}),
                        true,
                    )
                }
                other => {
                    eprintln!("arr kernel: ignoring unknown control message type '{other}'");
                    publish("idle");
                    continue;
                }
            };
            let reply = self.headers.reply(&request, reply_type, content);
            if let Err(e) = control.send(to_zmq(reply.encode(&self.signer))).await {
                eprintln!("arr kernel: cannot send {reply_type}: {e}");
            }
            publish("idle");
            if exit {
                // Stop a running cell, let the reply and idle leave, and end
                // the process: the client restarts us if it asked for that.
                self.interrupt.store(true, Ordering::Relaxed);
                tokio::time::sleep(EXIT_GRACE).await;
                std::process::exit(0);
            }
        }
    }
}

async fn heartbeat(mut hb: zeromq::RepSocket) {
    loop {
        match hb.recv().await {
            Ok(m) => {
                if let Err(e) = hb.send(m).await {
                    eprintln!("arr kernel: heartbeat: {e}");
                }
            }
            Err(e) => {
                eprintln!("arr kernel: heartbeat: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn read_shell(
    mut shell: zeromq::RouterRecvHalf,
    requests: std::sync::mpsc::Sender<Message>,
    signer: Signer,
) {
    loop {
        match shell.recv().await {
            Ok(m) => {
                if let Some(msg) = decode("shell", &m, &signer) {
                    if requests.send(msg).is_err() {
                        return; // the evaluator has shut down
                    }
                }
            }
            Err(e) => {
                eprintln!("arr kernel: shell socket: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn write_shell(
    mut shell: zeromq::RouterSendHalf,
    mut replies: UnboundedReceiver<Message>,
    signer: Signer,
) {
    while let Some(reply) = replies.recv().await {
        if let Err(e) = shell.send(to_zmq(reply.encode(&signer))).await {
            eprintln!("arr kernel: cannot send {}: {e}", reply.msg_type());
        }
    }
}

/// The one iopub writer. Stream messages already queued behind each other
/// (a loop of prints) are merged into one, so a chatty cell sends few messages.
async fn write_iopub(
    mut iopub: zeromq::PubSocket,
    mut queue: UnboundedReceiver<Message>,
    signer: Signer,
) {
    let mut pending: Option<Message> = None;
    loop {
        let mut msg = match pending.take() {
            Some(m) => m,
            None => match queue.recv().await {
                Some(m) => m,
                None => return,
            },
        };
        if msg.msg_type() == "stream" {
            while let Ok(next) = queue.try_recv() {
                let same_stream = next.msg_type() == "stream"
                    && next.content["name"] == msg.content["name"]
                    && next.parent_header.get("msg_id") == msg.parent_header.get("msg_id");
                if !same_stream {
                    pending = Some(next);
                    break;
                }
                let text = format!(
                    "{}{}",
                    msg.content["text"].as_str().unwrap_or(""),
                    next.content["text"].as_str().unwrap_or("")
                );
                msg.content["text"] = Json::String(text);
            }
        }
        if let Err(e) = iopub.send(to_zmq(msg.encode(&signer))).await {
            eprintln!("arr kernel: cannot publish {}: {e}", msg.msg_type());
        }
    }
}
