//! MCP Streamable HTTP, HTTP/1.1 on a Unix socket in a private folder or on a loopback port
//! (then Host and Origin must name loopback: no web page may reach it), for an agent whose
//! transport it is; one server of it per such agent. It only moves bytes: each `POST /mcp` body
//! is one message for the core (mcp/dispatch.rs), answered on the same request; `GET /mcp` is
//! the session's event stream; `DELETE /mcp` ends the session. The bounds are the WebSocket side's: the body is at most
//! `max_message_size` (an open_diff over it is still answered, REJECTED), at most
//! `max_clients` sessions, each with a bounded outbox, and a cap on connections in which the
//! oldest idle one makes room for a newcomer.

mod connections;
mod session;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Either, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming as Body};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use parking_lot::Mutex;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;

use crate::state::Shared;
use crate::state::events::{Event, Level};
use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::transport::limits::Limits;
use crate::{debug, info};

use self::connections::Connections;
use self::session::Session;

/// A session with no request in flight and no event stream for this long is gone.
pub const SESSION_IDLE: Duration = Duration::from_secs(30);

/// The same for a session whose event stream has closed: the CLI holds it open while it runs,
/// so its closing means the CLI has gone, unless it reconnects at once (it does at startup).
pub const STREAM_GONE: Duration = Duration::from_secs(3);

/// How often quiet sessions are looked for, while any is idle.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// A request body must arrive within this (the CLI sends it at once).
const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// An event stream silent this long gets a comment (a CLI may cut one silent for minutes).
const KEEPALIVE: Duration = Duration::from_secs(30);

/// A whole answer, or the event stream (boxed: it is the rare one).
type ReplyBody = Either<Full<Bytes>, BoxBody<Bytes, Infallible>>;
type Reply = Response<ReplyBody>;

pub struct Config {
    /// The agent served on this socket.
    pub agent: &'static crate::agents::Agent,
    /// `Authorization: <scheme> <token>`, as the lockfile tells the CLI.
    pub token: String,
    pub scheme: &'static str,
    pub limits: Limits,
}

/// Where the server listens.
pub enum Listener {
    Unix(UnixListener),
    /// A loopback port: requests must name it in Host.
    Loopback(TcpListener, u16),
}

/// The transport's state: the sessions by key, the connections.
struct Http {
    shared: Arc<Shared>,
    config: Config,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    went_idle: Arc<tokio::sync::Notify>,
    /// The Authorization header's one valid value.
    authorization: String,
    /// The loopback port, whose Host and Origin are checked; None on a Unix socket.
    port: Option<u16>,
}

/// Serves `listener` until `shutdown`, then ends every session (its open calls answered first,
/// as on every close path) and lets the connections finish their responses.
pub async fn serve(
    listener: Listener,
    shared: Arc<Shared>,
    config: Config,
    shutdown: watch::Receiver<bool>,
) {
    let max_connections = 2 * config.limits.max_clients;
    let authorization = format!("{} {}", config.scheme, config.token);
    let port = match &listener {
        Listener::Loopback(_, port) => Some(*port),
        Listener::Unix(_) => None,
    };
    let http = Arc::new(Http {
        authorization,
        port,
        shared,
        config,
        sessions: Mutex::new(HashMap::new()),
        went_idle: Arc::new(tokio::sync::Notify::new()),
    });
    let connections = Connections::new(max_connections);
    let mut stop = shutdown.clone();
    loop {
        // A timer only while some session is idle: none runs under a CLI that holds its stream.
        let any_idle = http.any_idle();
        let accepted = async {
            match &listener {
                Listener::Unix(l) => l.accept().await.map(|(s, _)| connections.serve(s, http.clone(), shutdown.clone())),
                Listener::Loopback(l, _) => l.accept().await.map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    connections.serve(s, http.clone(), shutdown.clone())
                }),
            }
        };
        tokio::select! {
            accepted = accepted => match accepted {
                Ok(()) => {}
                Err(e) => {
                    crate::error!("{}: accept failed: {e}", http.config.agent.name);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = http.went_idle.notified() => {}
            _ = tokio::time::sleep(REAP_EVERY), if any_idle => http.end_idle().await,
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    http.end_all("the editor stopped").await;
    connections.finish(super::STOP_GRACE).await;
}

impl Http {
    async fn handle(self: Arc<Self>, req: Request<Body>) -> Reply {
        if req.uri().path() != "/mcp" {
            return status(StatusCode::NOT_FOUND, "not found: the endpoint is /mcp");
        }
        if !self.comes_from_loopback(req.headers()) {
            return status(StatusCode::FORBIDDEN, "Host and Origin must be this loopback server");
        }
        if !self.authorized(req.headers()) {
            return status(StatusCode::UNAUTHORIZED, "Unauthorized");
        }
        let key = session_key(self.config.agent, req.headers());
        match *req.method() {
            Method::POST => self.post(key, req.into_body()).await,
            Method::GET => self.events(key),
            Method::DELETE => self.delete(key).await,
            _ => status(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE"),
        }
    }

    /// On a loopback port: Host names it (a DNS-rebinding page names its own host) and an
    /// Origin, when sent, is loopback too.
    fn comes_from_loopback(&self, headers: &HeaderMap) -> bool {
        let Some(port) = self.port else { return true };
        let loopback = |host: &str| ["127.0.0.1", "localhost", "[::1]"].iter().any(|h| host == format!("{h}:{port}"));
        let host = headers.get(hyper::header::HOST).and_then(|v| v.to_str().ok());
        let origin = headers.get(hyper::header::ORIGIN).map(|v| v.to_str().unwrap_or("?"));
        let origin_ok = origin.is_none_or(|o| o.strip_prefix("http://").is_some_and(loopback));
        host.is_some_and(loopback) && origin_ok
    }

    /// The request is the CLI's: from loopback, with the token (its connection is trusted).
    fn admits(&self, headers: &HeaderMap) -> bool {
        self.comes_from_loopback(headers) && self.authorized(headers)
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let got = headers.get(hyper::header::AUTHORIZATION);
        got.is_some_and(|v| crate::transport::auth::constant_time_eq(v.as_bytes(), self.authorization.as_bytes()))
    }

    /// One JSON-RPC message: its answer on this request (200), or 202 for a notification.
    async fn post(self: &Arc<Self>, key: Option<String>, body: Body) -> Reply {
        let text = match self.read_body(body, key.as_deref()).await {
            Ok(text) => text,
            Err(reply) => return reply,
        };
        let incoming = jsonrpc::parse(&text);
        let initialize = matches!(&incoming, Incoming::Request { method, .. } if method == "initialize");
        let (session, new_key) = match self.session_for(key, initialize) {
            Ok(found) => found,
            Err(reply) => return sessionless(self.config.agent, incoming).unwrap_or(reply),
        };
        let _live = session.live();
        if crate::mcp::dispatch::answered_later(self.config.agent, &incoming) {
            return self.post_later(&session, incoming, &text).await;
        }
        if let Some(tab) = crate::mcp::dispatch::closed_quietly(self.config.agent, &incoming) {
            // Before the close: the rejection it causes must not reach the client.
            session.forget_later(&tab);
        }
        let mut waiter = match &incoming {
            Incoming::Request { id, .. } => Some(session.wait_for(&self.shared, id.clone())),
            _ => None,
        };
        let mut mcp = session.mcp();
        let frames =
            crate::mcp::dispatch::handle(incoming, &text, session.client, &self.shared, &mut mcp).await;
        drop(text);
        if initialize {
            session.set_mcp(mcp);
        }
        let mut frames = frames.into_iter();
        let answer = match (frames.next(), waiter.as_mut()) {
            (Some(now), w) => {
                if let Some(w) = w {
                    w.settle();
                }
                Some(now)
            }
            (None, Some(w)) => w.answer().await,
            (None, None) => None,
        };
        // What follows the answer (the selection after initialize) goes on the event stream.
        for later in frames {
            self.shared.clients.selection_to(session.client, later);
        }
        let mut reply = match (answer, waiter.is_some()) {
            (Some(frame), _) => json(frame),
            (None, false) => status(StatusCode::ACCEPTED, ""),
            (None, true) => status(StatusCode::SERVICE_UNAVAILABLE, "the session ended"),
        };
        if let Some(key) = new_key {
            if let Ok(v) = HeaderValue::from_str(&key) {
                reply.headers_mut().insert("mcp-session-id", v);
            }
        }
        reply
    }

    /// A call answered at once with no content; its answer goes later on the event stream, as
    /// its tool says ([`crate::protocol::tools::Tool::answered_later`]).
    async fn post_later(self: &Arc<Self>, session: &Arc<Session>, incoming: Incoming, text: &str) -> Reply {
        let Incoming::Request { id, .. } = &incoming else {
            return status(StatusCode::BAD_REQUEST, "not a request");
        };
        let id = id.clone();
        session.expect_later(&id, crate::mcp::dispatch::later_tab(self.config.agent, &incoming));
        let mut mcp = session.mcp();
        let frames = crate::mcp::dispatch::handle(incoming, text, session.client, &self.shared, &mut mcp).await;
        for frame in frames {
            session.push_later(&frame);
        }
        json(jsonrpc::outcome_frame(&id, &Ok(serde_json::json!({"content": []}))))
    }

    /// The body as text, within `max_message_size` and the deadline. Over the size, the
    /// message is still read (scanned in bounded memory) to answer it: an open_diff REJECTED.
    async fn read_body(&self, mut body: Body, key: Option<&str>) -> Result<String, Reply> {
        use futures_util::FutureExt;
        let mut reader = BodyReader::new(self.shared.max_message_size);
        // A call the CLI sent whole with its headers is read without arming a timer.
        while !hyper::body::Body::is_end_stream(&body) {
            match body.frame().now_or_never() {
                Some(Some(frame)) => reader.take(frame),
                Some(None) => break,
                None => {
                    let rest = async {
                        while let Some(frame) = body.frame().await {
                            reader.take(frame);
                        }
                    };
                    if tokio::time::timeout(BODY_DEADLINE, rest).await.is_err() {
                        let why = "the request body did not arrive in time";
                        return Err(status(StatusCode::REQUEST_TIMEOUT, why));
                    }
                    break;
                }
            }
        }
        self.finish_body(reader, key).await
    }

    async fn finish_body(&self, reader: BodyReader, key: Option<&str>) -> Result<String, Reply> {
        if let Some(mut o) = reader.over {
            o.scan.finish();
            let agent = self.config.agent;
            self.shared.events.notice("oversized", Level::Warn, o.notice(agent, false)).await;
            return Err(match o.answer(agent) {
                Some(frame) => self.answer_oversized(key, &o, frame),
                None => status(StatusCode::PAYLOAD_TOO_LARGE, "over max_message_size"),
            });
        }
        String::from_utf8(reader.bytes).map_err(|_| {
            let e = RpcError::new(jsonrpc::PARSE_ERROR, "the body is not UTF-8");
            json(jsonrpc::error_frame(None, &e))
        })
    }

    /// The rejection of an oversized call: on the POST, or, for a tool answered later (the
    /// CLI waits for its decision on the stream, not in the POST's result), on the event stream
    /// as any rejection, with the POST's empty answer.
    fn answer_oversized(&self, key: Option<&str>, o: &crate::mcp::oversized::Oversized, frame: String) -> Reply {
        let later = o.tool(self.config.agent).is_some_and(|t| t.answered_later);
        let session = key.and_then(|k| self.sessions.lock().get(k).cloned()).filter(|_| later);
        match (session, o.scan.id.as_ref()) {
            (Some(session), Some(id)) => {
                session.push_later(&frame);
                json(jsonrpc::outcome_frame(id, &Ok(serde_json::json!({"content": []}))))
            }
            _ => json(frame),
        }
    }

    /// The session a POST belongs to; `initialize` starts one (a new key when it has none).
    /// Returns the key to tell the client when it is new.
    fn session_for(
        self: &Arc<Self>,
        key: Option<String>,
        initialize: bool,
    ) -> Result<(Arc<Session>, Option<String>), Reply> {
        if let Some(s) = key.as_ref().and_then(|k| self.sessions.lock().get(k).cloned()) {
            return Ok((s, None));
        }
        if !initialize {
            return Err(status(StatusCode::NOT_FOUND, "no such session: initialize first"));
        }
        let fresh = key.is_none();
        let key = key.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let session = self.start_session(key.clone())?;
        Ok((session, fresh.then_some(key)))
    }

    fn start_session(self: &Arc<Self>, key: String) -> Result<Arc<Session>, Reply> {
        if !self.shared.clients.reserve(self.config.limits.max_clients) {
            return Err(status(StatusCode::SERVICE_UNAVAILABLE, "too many clients"));
        }
        let client = self.shared.next_id();
        let outbox = self.shared.clients.add(client, self.config.agent, None);
        let session = Session::new(key.clone(), client, self.config.agent, outbox, self.went_idle.clone());
        self.sessions.lock().insert(key.clone(), session.clone());
        info!("{}: session {key} is client {client}", self.config.agent.name);
        let events = self.shared.clone();
        tokio::spawn(async move { events.events.push(Event::ClientConnected { client }).await });
        let http = self.clone();
        let pumped = session.clone();
        tokio::spawn(async move {
            if !pumped.clone().pump().await {
                http.end(&pumped, "it did not read its event stream").await;
            }
        });
        Ok(session)
    }

    /// `GET /mcp`: the session's event stream (server-sent events).
    fn events(&self, key: Option<String>) -> Reply {
        let Some(session) = key.and_then(|k| self.sessions.lock().get(&k).cloned()) else {
            return status(StatusCode::NOT_FOUND, "no such session: initialize first");
        };
        let rx = session.open_stream();
        let live = session.live();
        let stream = futures_util::stream::unfold((rx, live), |(mut rx, live)| async move {
            let bytes = tokio::select! {
                bytes = rx.recv() => bytes?,
                _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": keepalive\n\n"),
            };
            Some((Ok::<_, Infallible>(Frame::data(bytes)), (rx, live)))
        });
        let mut reply = Response::new(Either::Right(BoxBody::new(StreamBody::new(stream))));
        let headers = reply.headers_mut();
        headers.insert("content-type", HeaderValue::from_static("text/event-stream"));
        headers.insert("cache-control", HeaderValue::from_static("no-cache"));
        reply
    }

    /// `DELETE /mcp`: the client ends its session.
    async fn delete(&self, key: Option<String>) -> Reply {
        let session = key.and_then(|k| self.sessions.lock().get(&k).cloned());
        match session {
            Some(s) => {
                self.end(&s, "the agent ended its session").await;
                status(StatusCode::OK, "")
            }
            None => status(StatusCode::NOT_FOUND, "no such session"),
        }
    }

    /// Ends a session as every close path does: its open calls are answered (open_diff
    /// REJECTED) on their requests, Lua takes their reviews away, then the client is forgotten.
    async fn end(&self, session: &Arc<Session>, why: &str) {
        let removed = {
            let mut sessions = self.sessions.lock();
            let ours = sessions.get(&session.key).is_some_and(|s| Arc::ptr_eq(s, session));
            ours && sessions.remove(&session.key).is_some()
        };
        if !removed {
            return;
        }
        let client = session.client;
        debug!("{}: session {} ends: {why}", self.config.agent.name, session.key);
        let reason = Some(why.to_owned());
        let abandoned = self.shared.abandon_client(client, reason.clone());
        let _ = session.route();
        session.mark_ended();
        for event in abandoned {
            self.shared.events.push(event).await;
        }
        for event in self.shared.forget_client(client, reason) {
            self.shared.events.push(event).await;
        }
    }

    fn any_idle(&self) -> bool {
        self.sessions.lock().values().any(|s| s.idle_for().is_some())
    }

    async fn end_idle(&self) {
        let idle: Vec<Arc<Session>> = (self.sessions.lock().values())
            .filter(|s| {
                let quiet = if s.had_stream() { STREAM_GONE } else { SESSION_IDLE };
                s.idle_for().is_some_and(|d| d >= quiet)
            })
            .cloned()
            .collect();
        for s in idle {
            self.end(&s, "it went quiet (no request and no event stream)").await;
        }
    }

    async fn end_all(&self, why: &str) {
        let all: Vec<Arc<Session>> = self.sessions.lock().values().cloned().collect();
        for s in all {
            self.end(&s, why).await;
        }
    }
}

/// A request body as it arrives: kept up to the limit; beyond it, only scanned (oversized.rs)
/// for what is owed to it.
struct BodyReader {
    limit: usize,
    bytes: Vec<u8>,
    over: Option<crate::mcp::oversized::Oversized>,
}

impl BodyReader {
    fn new(limit: usize) -> Self {
        BodyReader { limit, bytes: Vec::new(), over: None }
    }

    fn take(&mut self, frame: Result<Frame<Bytes>, hyper::Error>) {
        let Some(data) = frame.ok().and_then(|f| f.into_data().ok()) else {
            return;
        };
        if self.over.is_none() && self.bytes.len() + data.len() > self.limit {
            let mut o = crate::mcp::oversized::Oversized { size: 0, limit: self.limit, scan: Default::default() };
            o.scan.feed(&self.bytes);
            o.size = self.bytes.len() as u64;
            self.bytes = Vec::new();
            self.over = Some(o);
        }
        match self.over.as_mut() {
            Some(o) => {
                o.size += data.len() as u64;
                o.scan.feed(&data);
            }
            None => self.bytes.extend_from_slice(&data),
        }
    }
}

/// A request outside any session, answered by the MCP layer alone when it needs no session:
/// the CLI's `server/discover` comes first, and its `tools/list` goes on a second connection
/// at the same time as `initialize` (it may arrive first). A tool call needs a session: None.
fn sessionless(agent: &'static crate::agents::Agent, incoming: Incoming) -> Option<Reply> {
    let Incoming::Request { id, method, params } = incoming else {
        return None;
    };
    if method == "tools/call" {
        return None;
    }
    let mut session = crate::mcp::methods::Session::new(agent);
    match crate::mcp::methods::handle_request(&mut session, &method, params) {
        crate::mcp::methods::Dispatch::Reply(outcome) => Some(json(jsonrpc::outcome_frame(&id, &outcome))),
        crate::mcp::methods::Dispatch::Park { .. } => None,
    }
}

/// The agent's session header, else the standard `Mcp-Session-Id`.
fn session_key(agent: &crate::agents::Agent, headers: &HeaderMap) -> Option<String> {
    let own = match agent.transport {
        crate::agents::Transport::Http { session_header, .. } => session_header,
        crate::agents::Transport::WebSocket { .. } | crate::agents::Transport::Lines | crate::agents::Transport::InProcess => "mcp-session-id",
    };
    [own, "mcp-session-id"]
        .iter()
        .find_map(|h| headers.get(*h)?.to_str().ok())
        .filter(|k| !k.is_empty() && k.len() <= 256)
        .map(str::to_owned)
}

fn json(frame: String) -> Reply {
    let mut r = Response::new(Either::Left(Full::new(Bytes::from(frame))));
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

fn status(code: StatusCode, text: &'static str) -> Reply {
    let mut r = Response::new(Either::Left(Full::new(Bytes::from_static(text.as_bytes()))));
    *r.status_mut() = code;
    r
}
