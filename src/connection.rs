//! One client connection: the authenticated upgrade, then a loop that reads frames, answers what
//! Rust can answer itself, parks tool calls for Lua, and writes what Lua answers.

use std::sync::Arc;

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::TcpStream;
use std::time::Duration;

use tokio::sync::watch;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::auth::Gate;
use crate::bridge::Shared;
use crate::clients::Flavor;
use crate::events::Event;
use crate::framing::{Frames, Watched};
use crate::outbox::{Outbound, Outbox};
use crate::jsonrpc::{self, Incoming, RpcError};
use crate::limits::{Handshakes, HANDSHAKE_DEADLINE};
use crate::mcp::{self, Dispatch, Session};
use crate::{debug, error, info, warn};

pub struct Config {
    pub token: String,
    /// Caps on connections (see limits.rs).
    pub limits: crate::limits::Limits,
    pub max_message_size: usize,
    /// The auth header names accepted (Claude Code's too when its compatibility is on).
    pub auth_headers: Vec<&'static str>,
    /// Where openDiff proposals are staged for Lua to read (private to this user).
    pub stage_dir: std::path::PathBuf,
}

/// openDiff: stage the proposal in a file (Lua loads it at C speed), park the call, and diff
/// it against the disk on a worker while Lua opens the review; the numbers follow as an event.
async fn open_diff(
    client: u64,
    id: jsonrpc::Id,
    args: serde_json::Value,
    shared: &Arc<Shared>,
    config: &Config,
) {
    let tool = crate::tools::find("openDiff").expect("openDiff is a tool");
    let context = tool.abandon_context(&args);
    let file = config
        .stage_dir
        .join(format!("{}.proposal", shared.next_id()));
    // Staging reads the file on disk (up to max_message_size, whatever the proposal's size) and
    // may meet a slow filesystem: always on a worker, so that other clients are never kept
    // waiting, and so that a panic there is a JoinError answered DIFF_REJECTED below.
    let limit = config.max_message_size;
    let staged = tokio::task::spawn_blocking(move || crate::diff::stage(args, file, limit)).await;
    let staged = match staged {
        Ok(staged) => staged,
        Err(_) => {
            error!("client {client}: staging a proposal failed");
            shared.clients.send_to(
                client,
                jsonrpc::outcome_frame(&id, &tool.abandoned(context.as_deref())),
            );
            return;
        }
    };
    let crate::diff::Staged {
        args,
        old,
        contents,
        refused,
        files,
    } = staged;
    let req = shared.park_staged(client, id, tool, args, files).await;
    if refused {
        return;
    }
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        let stats = crate::diff::stats_for(&old, &contents);
        shared.events.push_blocking(Event::DiffStats { req, stats });
    });
}

type Ws = WebSocketStream<Watched<TcpStream>>;

/// Stopping: a message that has begun to arrive is read to its end (and answered, an openDiff
/// with DIFF_REJECTED, before our Close) while its bytes keep coming: no longer than DRAIN_MAX
/// in all, and not past a pause of DRAIN_STALL. Where none has begun, DRAIN_IDLE for bytes
/// already on their way.
pub const DRAIN_MAX: Duration = Duration::from_secs(15);
pub const DRAIN_STALL: Duration = Duration::from_secs(1);
pub const DRAIN_IDLE: Duration = Duration::from_millis(50);
/// Stopping: how long the last frames and the Close may take to write (an agent suspended with
/// Ctrl-Z reads nothing; Neovim must still quit at once).
pub const FLUSH_GRACE: Duration = Duration::from_millis(500);

/// Serves one TCP connection to its end. Never panics outward: a panic is logged and the client
/// is cleaned up like any disconnect.
pub async fn serve(
    stream: TcpStream,
    client: u64,
    shared: Arc<Shared>,
    config: Arc<Config>,
    shutdown: watch::Receiver<bool>,
    handshakes: Arc<Handshakes>,
) {
    // Small buffers: each would otherwise be 128 KiB resident per client (a large openDiff is
    // read in more, smaller reads; no slower that anyone could see).
    let ws_config = WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
        .write_buffer_size(0)
        .max_message_size(Some(config.max_message_size))
        .max_frame_size(Some(config.max_message_size));
    let mut refused = None;
    let admitted = std::sync::atomic::AtomicBool::new(false);
    let admit = || {
        let ok = shared.clients.reserve(config.limits.max_clients);
        admitted.store(ok, std::sync::atomic::Ordering::Relaxed);
        ok
    };
    let claude = std::sync::atomic::AtomicBool::new(false);
    let gate = Gate {
        token: &config.token,
        accepted: &config.auth_headers,
        refused: &mut refused,
        admit: &admit,
        claude: &claude,
    };
    let stream = Watched::new(stream);
    let frames = stream.frames.clone();
    let pushed_out = handshakes.begin(client);
    let mut stopping = shutdown.clone();
    let upgraded = tokio::select! {
        r = tokio_tungstenite::accept_hdr_async_with_config(stream, gate, Some(ws_config)) => Some(r),
        _ = tokio::time::sleep(HANDSHAKE_DEADLINE) => {
            debug!("connection {client}: no upgrade within {HANDSHAKE_DEADLINE:?}; closed");
            None
        }
        _ = pushed_out => {
            debug!("connection {client}: still in its handshake while newer ones came; closed");
            None
        }
        _ = stopping.changed() => None,
    };
    handshakes.end(client);
    if admitted.load(std::sync::atomic::Ordering::Relaxed) && !matches!(upgraded, Some(Ok(_))) {
        // Passed the check, but the upgrade did not complete: give the slot back.
        shared.clients.release();
    }
    let ws = match upgraded {
        Some(Ok(ws)) => ws,
        Some(Err(e)) => {
            match refused {
                Some(r) => warn!("connection {client} refused before upgrade: {r:?}"),
                // The Pi extension probes the port with a bare TCP connect: not worth more than debug.
                None => debug!("connection {client} ended before the handshake: {e}"),
            }
            return;
        }
        None => return,
    };
    Watched::<TcpStream>::arm(&frames);
    let flavor = if claude.load(std::sync::atomic::Ordering::Relaxed) {
        Flavor::ClaudeCode
    } else {
        Flavor::Pi
    };
    let outbox = shared.clients.add(client, flavor);
    info!("client {client} connected");
    shared.events.push(Event::ClientConnected { client }).await;

    let conn = Conn {
        client,
        shared: &shared,
        config: &config,
        outbox,
        frames,
    };
    let outcome = std::panic::AssertUnwindSafe(conn.run(ws, shutdown))
        .catch_unwind()
        .await;
    if outcome.is_err() {
        error!("client {client}: connection task panicked; dropping the connection");
    }
    let events = shared.forget_client(client);
    info!("client {client} disconnected");
    if !shared.is_stopping() {
        for event in events {
            shared.events.push(event).await;
        }
    }
}

fn close_message(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }))
}

/// One upgraded client.
struct Conn<'a> {
    client: u64,
    shared: &'a Arc<Shared>,
    config: &'a Config,
    outbox: Arc<Outbox>,
    frames: Arc<parking_lot::Mutex<Frames>>,
}

/// How a write went.
enum Sent {
    Ok,
    /// The socket failed, or the client was given up while we waited on it.
    Gone,
}

type Sink = futures_util::stream::SplitSink<Ws, Message>;
type Source = futures_util::stream::SplitStream<Ws>;

impl Conn<'_> {
    /// Writes one message, unless the client is given up meanwhile (it stopped reading and its
    /// queue overflowed: waiting on its socket would wait forever).
    async fn send(&self, sink: &mut Sink, msg: Message) -> Sent {
        tokio::select! {
            r = sink.send(msg) => if r.is_ok() { Sent::Ok } else { Sent::Gone },
            _ = async {
                while !self.outbox.overflowed() {
                    self.outbox.ready().await;
                }
            } => Sent::Gone,
        }
    }

    /// Writes what waits in the outbox. Returns false once the connection is over (a Close was
    /// written, or the socket failed).
    async fn flush(&self, sink: &mut Sink) -> bool {
        while let Some(out) = self.outbox.take() {
            match out {
                Outbound::Frame(f) => {
                    if let Sent::Gone = self.send(sink, Message::text(f)).await {
                        return false;
                    }
                }
                Outbound::GiveUp => {
                    let reason = crate::outbox::NOT_READING;
                    warn!("client {}: {reason}; closing it (1008)", self.client);
                    let close = sink.send(close_message(CloseCode::Policy, reason));
                    let _ = tokio::time::timeout(FLUSH_GRACE, close).await;
                    return false;
                }
            }
        }
        true
    }

    async fn run(self, ws: Ws, mut shutdown: watch::Receiver<bool>) {
        let (mut sink, mut source) = ws.split();
        let mut session = Session::default();
        loop {
            if !self.flush(&mut sink).await {
                return;
            }
            tokio::select! {
                // Frames Lua queued go out first, so an answer is never overtaken by our Close.
                biased;
                _ = self.outbox.ready() => {}
                incoming = source.next() => {
                    if !self.incoming(incoming, &mut sink, &mut session).await {
                        return;
                    }
                }
                _ = shutdown.changed() => {
                    self.stop(&mut sink, &mut source, &mut session).await;
                    return;
                }
            }
        }
    }

    /// Handles one read from the socket. Returns false when the connection is over.
    async fn incoming(
        &self,
        incoming: Option<Result<Message, WsError>>,
        sink: &mut Sink,
        session: &mut Session,
    ) -> bool {
        let client = self.client;
        let replies = match incoming {
            Some(Ok(Message::Text(text))) => {
                handle_text(text.as_str(), client, self.shared, self.config, session).await
            }
            // Not what the protocol sends, but harmless to serve when it is UTF-8.
            Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                Ok(text) => handle_text(text, client, self.shared, self.config, session).await,
                Err(_) => vec![jsonrpc::error_frame(
                    None,
                    &RpcError::new(
                        jsonrpc::PARSE_ERROR,
                        "parse error: binary frame is not UTF-8",
                    ),
                )],
            },
            // Pings are answered by tungstenite itself; pongs need nothing.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => vec![],
            Some(Ok(Message::Close(_))) | None => return false,
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                warn!("client {client}: message of {size} bytes over the {max_size}-byte limit; closing");
                let reason = format!(
                    "message too big (limit {} bytes)",
                    self.config.max_message_size
                );
                let close = sink.send(close_message(CloseCode::Size, &reason));
                let _ = tokio::time::timeout(FLUSH_GRACE, close).await;
                return false;
            }
            Some(Err(e)) => {
                debug!("client {client}: read error: {e}");
                return false;
            }
        };
        for reply in replies {
            if let Sent::Gone = self.send(sink, Message::text(reply)).await {
                return false;
            }
        }
        true
    }

    /// The editor is stopping. Every parked call was answered already; a message that has begun
    /// to arrive is read to its end and answered too (an openDiff as DIFF_REJECTED: the Pi
    /// extension writes unreviewed if the socket closes first); then what waits is written,
    /// then our Close. Bounded throughout, so that Neovim quits promptly.
    async fn stop(&self, sink: &mut Sink, source: &mut Source, session: &mut Session) {
        let until = tokio::time::Instant::now() + DRAIN_MAX;
        loop {
            let (mid, read) = {
                let f = self.frames.lock();
                (f.mid_message(), f.read)
            };
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            let wait = if mid { DRAIN_STALL.min(left) } else { DRAIN_IDLE };
            let next = tokio::time::timeout(wait, source.next()).await;
            if next.is_err() {
                // Nothing whole yet: go on while the message's bytes still come.
                let f = self.frames.lock();
                if f.mid_message() && f.read > read && !left.is_zero() {
                    continue;
                }
            }
            match next {
                Ok(Some(Ok(msg))) => {
                    let drained = async {
                        self.incoming(Some(Ok(msg)), sink, session).await
                            && self.flush(sink).await
                    };
                    match tokio::time::timeout(FLUSH_GRACE, drained).await {
                        Ok(true) => {}
                        _ => return,
                    }
                }
                _ => break,
            }
            if tokio::time::Instant::now() >= until {
                break;
            }
        }
        let last = async {
            if self.flush(sink).await {
                let _ = sink
                    .send(close_message(CloseCode::Away, "editor shutting down"))
                    .await;
            }
        };
        let _ = tokio::time::timeout(FLUSH_GRACE, last).await;
    }
}

/// Handles one text frame; returns the frames to send now, in order.
pub(crate) async fn handle_text(
    text: &str,
    client: u64,
    shared: &Arc<Shared>,
    config: &Config,
    session: &mut Session,
) -> Vec<String> {
    match jsonrpc::parse(text) {
        Incoming::Request { id, method, params } => {
            // A call of a tool whose failures must read as a rejection (openDiff), and the
            // context of that rejection, in case handling it panics below.
            let owed_by = owed_by(&method, params.as_ref());
            let dispatched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                mcp::handle_request(session, &method, params)
            }));
            match dispatched {
                Ok(Dispatch::Reply(outcome)) => {
                    let mut frames = vec![jsonrpc::outcome_frame(&id, &outcome)];
                    if method == "initialize" {
                        let (name, version) =
                            (session.client_name.clone(), session.client_version.clone());
                        shared
                            .clients
                            .mark_initialized(client, name.clone(), version.clone());
                        info!(
                            "client {client} initialized: {}",
                            name.as_deref().unwrap_or("(no name)")
                        );
                        // Right after the handshake, never before: what the user is looking at.
                        frames.extend(shared.selection.last_frame());
                        shared
                            .events
                            .push(Event::ClientInitialized {
                                client,
                                name,
                                version,
                            })
                            .await;
                    }
                    frames
                }
                Ok(Dispatch::Park { tool, args }) if tool.name == "getDiagnostics" => {
                    // Before every model call of the agent's: answered here from the snapshot
                    // when it is current, without waking Neovim.
                    match shared.diagnostics.answer(&args) {
                        Some(v) => {
                            let outcome = tool.shape_result_for(v, shared.clients.flavor_of(client));
                            vec![jsonrpc::outcome_frame(&id, &outcome)]
                        }
                        None => {
                            shared.park(client, id, tool, args).await;
                            vec![]
                        }
                    }
                }
                Ok(Dispatch::Park { tool, args }) => {
                    if tool.name == "openDiff" && !shared.diff_review() {
                        // The user chose no review: accept the proposal as it is, at once.
                        let contents = args["new_file_contents"].clone();
                        let outcome =
                            tool.shape_result(serde_json::json!(["FILE_SAVED", contents]));
                        return vec![jsonrpc::outcome_frame(&id, &outcome)];
                    }
                    if tool.name == "openDiff" {
                        if shared.is_stopping() {
                            // Arrived while stopping: nothing will show it; no need to stage it.
                            let context = tool.abandon_context(&args);
                            let outcome = tool.abandoned(context.as_deref());
                            return vec![jsonrpc::outcome_frame(&id, &outcome)];
                        }
                        open_diff(client, id, args, shared, config).await;
                        return vec![];
                    }
                    shared.park(client, id, tool, args).await;
                    vec![]
                }
                Err(_) => {
                    error!("client {client}: panic while handling {method}");
                    let failed = Err(RpcError::internal("internal error"));
                    let outcome = match owed_by {
                        Some((tool, context)) => tool.owed(failed, context.as_deref()),
                        None => failed,
                    };
                    vec![jsonrpc::outcome_frame(&id, &outcome)]
                }
            }
        }
        Incoming::Notification { method, .. } => {
            if !mcp::handle_notification(&method) {
                debug!("client {client}: ignored notification {method}");
            }
            vec![]
        }
        Incoming::Response { id, outcome } => {
            if let Some(event) = shared.answer(client, &id, outcome) {
                shared.events.push(event).await;
            }
            vec![]
        }
        Incoming::Invalid { id, error } => {
            debug!("client {client}: {}", error.message);
            // An openDiff in a malformed envelope is still an openDiff to the agent.
            let owed = id.as_ref().and_then(|_| {
                let v: serde_json::Value = serde_json::from_str(text).ok()?;
                owed_by(v.get("method")?.as_str()?, v.get("params"))
            });
            match (id, owed) {
                (Some(id), Some((tool, context))) => {
                    let outcome = tool.owed(Err(error), context.as_deref());
                    vec![jsonrpc::outcome_frame(&id, &outcome)]
                }
                (id, _) => vec![jsonrpc::error_frame(id.as_ref(), &error)],
            }
        }
    }
}

/// For a call of a tool whose failures must read as a rejection (openDiff): the tool and the
/// rejection's context, whatever else is wrong with the call.
fn owed_by(
    method: &str,
    params: Option<&serde_json::Value>,
) -> Option<(&'static crate::tools::Tool, Option<String>)> {
    if method != "tools/call" {
        return None;
    }
    let params = params?;
    let tool = crate::tools::find(params.get("name")?.as_str()?)?;
    if tool.on_abandon != crate::tools::OnAbandon::Reject {
        return None;
    }
    let context = params
        .get("arguments")
        .and_then(|a| tool.abandon_context(a));
    Some((tool, context))
}
