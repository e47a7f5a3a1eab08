//! One client connection: the authenticated upgrade, then a loop that reads frames, answers what
//! Rust can answer itself, parks tool calls for Lua, and writes what Lua answers.

use std::sync::Arc;

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::auth::Gate;
use crate::bridge::{Event, Outbound, Shared};
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
    /// False: openDiff is accepted at once, without showing anything (`diff.review = false`).
    pub diff_review: bool,
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
    let file = config
        .stage_dir
        .join(format!("{}.proposal", shared.next_id()));
    // Small proposals are staged and diffed right here (well under a millisecond); large ones on
    // a worker, so that other clients are not kept waiting.
    let small = args["new_file_contents"]
        .as_str()
        .is_some_and(|c| c.len() < SMALL_PROPOSAL);
    let limit = config.max_message_size;
    let staged = if small {
        Ok(crate::diff::stage(args, file, limit))
    } else {
        tokio::task::spawn_blocking(move || crate::diff::stage(args, file, limit)).await
    };
    let staged = match staged {
        Ok(staged) => staged,
        Err(_) => {
            error!("client {client}: staging a proposal failed");
            shared.send_to(client, jsonrpc::outcome_frame(&id, &tool.abandoned(None)));
            return;
        }
    };
    let crate::diff::Staged {
        args,
        old,
        contents,
        refused,
    } = staged;
    let req = shared.park(client, id, tool, args).await;
    if refused {
        return;
    }
    if small {
        let stats = crate::diff::stats_for(&old, &contents);
        shared.push(Event::DiffStats { req, stats }).await;
        return;
    }
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        let stats = crate::diff::stats_for(&old, &contents);
        shared.push_blocking(Event::DiffStats { req, stats });
    });
}

/// Proposals below this size are staged and diffed on the server thread itself.
const SMALL_PROPOSAL: usize = 256 * 1024;

type Ws = WebSocketStream<TcpStream>;

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
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(config.max_message_size))
        .max_frame_size(Some(config.max_message_size));
    let mut refused = None;
    let admitted = std::sync::atomic::AtomicBool::new(false);
    let admit = || {
        let ok = shared.reserve_client(config.limits.max_clients);
        admitted.store(ok, std::sync::atomic::Ordering::Relaxed);
        ok
    };
    let gate = Gate {
        token: &config.token,
        accepted: &config.auth_headers,
        refused: &mut refused,
        admit: &admit,
    };
    let pushed_out = handshakes.begin(client);
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
    };
    handshakes.end(client);
    if admitted.load(std::sync::atomic::Ordering::Relaxed) && !matches!(upgraded, Some(Ok(_))) {
        // Passed the check, but the upgrade did not complete: give the slot back.
        shared.release_client();
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
    let rx = shared.add_client(client);
    info!("client {client} connected");
    shared.push(Event::ClientConnected { client }).await;

    let outcome = std::panic::AssertUnwindSafe(run(ws, client, &shared, rx, shutdown, &config))
        .catch_unwind()
        .await;
    if outcome.is_err() {
        error!("client {client}: connection task panicked; dropping the connection");
    }
    let abandoned = shared.forget_client(client);
    let lost = shared.fail_requests_of(client);
    info!(
        "client {client} disconnected ({} parked calls abandoned)",
        abandoned.len()
    );
    if !shared.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        for event in lost {
            shared.push(event).await;
        }
        shared
            .push(Event::ClientDisconnected { client, abandoned })
            .await;
    }
}

fn close_message(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }))
}

async fn run(
    ws: Ws,
    client: u64,
    shared: &Arc<Shared>,
    mut outbound: mpsc::UnboundedReceiver<Outbound>,
    mut shutdown: watch::Receiver<bool>,
    config: &Config,
) {
    let max_message_size = config.max_message_size;
    let (mut sink, mut source) = ws.split();
    let mut session = Session::default();
    loop {
        tokio::select! {
            // Frames Lua queued go out first, so an answer is never overtaken by our Close.
            biased;
            out = outbound.recv() => match out {
                Some(Outbound::Frame(f)) => {
                    if sink.send(Message::text(f)).await.is_err() { return; }
                }
                Some(Outbound::Close { code, reason }) => {
                    let _ = sink.send(close_message(CloseCode::from(code), &reason)).await;
                    return;
                }
                None => return,
            },
            incoming = source.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    for reply in handle_text(text.as_str(), client, shared, config, &mut session).await {
                        if sink.send(Message::text(reply)).await.is_err() { return; }
                    }
                }
                Some(Ok(Message::Binary(bytes))) => {
                    // Not what the protocol sends, but harmless to serve when it is UTF-8.
                    let replies = match std::str::from_utf8(&bytes) {
                        Ok(text) => handle_text(text, client, shared, config, &mut session).await,
                        Err(_) => vec![jsonrpc::error_frame(None, &RpcError::new(jsonrpc::PARSE_ERROR, "parse error: binary frame is not UTF-8"))],
                    };
                    for reply in replies {
                        if sink.send(Message::text(reply)).await.is_err() { return; }
                    }
                }
                // Pings are answered by tungstenite itself; pongs need nothing.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Close(_))) | None => return,
                Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    warn!("client {client}: message of {size} bytes over the {max_size}-byte limit; closing");
                    let reason = format!("message too big (limit {max_message_size} bytes)");
                    let _ = sink.send(close_message(CloseCode::Size, &reason)).await;
                    return;
                }
                Some(Err(e)) => {
                    debug!("client {client}: read error: {e}");
                    return;
                }
            },
            _ = shutdown.changed() => {
                // Stop already queued the answers and the Close frame; send them.
                while let Ok(out) = outbound.try_recv() {
                    let msg = match out {
                        Outbound::Frame(f) => Message::text(f),
                        Outbound::Close { code, reason } => close_message(CloseCode::from(code), &reason),
                    };
                    if sink.send(msg).await.is_err() { break; }
                }
                let _ = sink.send(close_message(CloseCode::Away, "editor shutting down")).await;
                return;
            }
        }
    }
}

/// Handles one text frame; returns the frames to send now, in order.
async fn handle_text(
    text: &str,
    client: u64,
    shared: &Arc<Shared>,
    config: &Config,
    session: &mut Session,
) -> Vec<String> {
    match jsonrpc::parse(text) {
        Incoming::Request { id, method, params } => {
            let dispatched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                mcp::handle_request(session, &method, params)
            }));
            match dispatched {
                Ok(Dispatch::Reply(outcome)) => {
                    let mut frames = vec![jsonrpc::outcome_frame(&id, &outcome)];
                    if method == "initialize" {
                        let (name, version) =
                            (session.client_name.clone(), session.client_version.clone());
                        shared.mark_initialized(client, name.clone(), version.clone());
                        info!(
                            "client {client} initialized: {}",
                            name.as_deref().unwrap_or("(no name)")
                        );
                        // Right after the handshake, never before: what the user is looking at.
                        frames.extend(shared.selection.last_frame());
                        shared
                            .push(Event::ClientInitialized {
                                client,
                                name,
                                version,
                            })
                            .await;
                    }
                    frames
                }
                Ok(Dispatch::Park { tool, args }) => {
                    if tool.name == "openDiff" && !config.diff_review {
                        // The user chose no review: accept the proposal as it is, at once.
                        let contents = args["new_file_contents"].clone();
                        let outcome =
                            tool.shape_result(serde_json::json!(["FILE_SAVED", contents]));
                        return vec![jsonrpc::outcome_frame(&id, &outcome)];
                    }
                    if tool.name == "openDiff" {
                        open_diff(client, id, args, shared, config).await;
                        return vec![];
                    }
                    shared.park(client, id, tool, args).await;
                    vec![]
                }
                Err(_) => {
                    error!("client {client}: panic while handling {method}");
                    vec![jsonrpc::error_frame(
                        Some(&id),
                        &RpcError::internal("internal error"),
                    )]
                }
            }
        }
        Incoming::Notification { method, .. } => {
            if !mcp::handle_notification(session, &method) {
                debug!("client {client}: ignored notification {method}");
            }
            vec![]
        }
        Incoming::Response { id, outcome } => {
            if let Some(event) = shared.answer(client, &id, outcome) {
                shared.push(event).await;
            }
            vec![]
        }
        Incoming::Invalid { id, error } => {
            debug!("client {client}: {}", error.message);
            vec![jsonrpc::error_frame(id.as_ref(), &error)]
        }
    }
}
