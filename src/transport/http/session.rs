//! One MCP session of an agent over HTTP (keyed by the agent's session header): a client of the
//! core like a WebSocket connection, whose frames leave by two ways. Answers go back on the HTTP
//! request that asked (each POST waits for its own); everything else (the selection, `:PiIde
//! send`) goes on the session's event stream (`GET /mcp`), when one is open.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hyper::body::Bytes;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::state::Shared;
use crate::protocol::jsonrpc::Id;
use crate::mcp::methods as mcp;
use crate::state::outbox::{Outbound, Outbox};

/// Frames that may wait in an event stream's channel; beyond, they wait in the outbox (bounded,
/// latest-wins for the selection).
const STREAM_ROOM: usize = 64;

pub struct Session {
    pub key: String,
    pub client: u64,
    outbox: Arc<Outbox>,
    /// What the client said in `initialize` (cloned for each call: calls run concurrently).
    mcp: Mutex<mcp::Session>,
    /// Requests whose answer the core will give later, by JSON-RPC id.
    waiting: Mutex<HashMap<Box<str>, oneshot::Sender<String>>>,
    /// Calls answered at once whose answer goes on the event stream when it comes, by id, with
    /// the review each opened (a quiet close of it forgets the call).
    later: Mutex<HashMap<Box<str>, Option<String>>>,
    /// Those answers made while no event stream could take them: sent when one opens.
    held: Mutex<Vec<String>>,
    /// The open event stream, if any.
    stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// Requests in flight and open streams: a session with none for a while is gone.
    live: AtomicUsize,
    idle_since: Mutex<Instant>,
    /// Wakes the pump (a stream opened, or the session ended).
    wake: Notify,
    /// Tells the transport a session went idle (it then checks for quiet ones; no timer runs
    /// while every session has a stream open, as the CLI's has).
    went_idle: Arc<Notify>,
    ended: AtomicBool,
    /// It has opened an event stream (its closing then says the client went away).
    had_stream: AtomicBool,
}

/// Keeps a session live while it exists (a request in flight, an open stream).
pub struct Live(Arc<Session>);

impl Drop for Live {
    fn drop(&mut self) {
        if self.0.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock() = Instant::now();
            self.0.went_idle.notify_one();
        }
    }
}

/// A request waiting for its answer; dropped unanswered (the client hung up), its call is
/// abandoned so that Lua takes its review away.
pub struct Waiter {
    session: Arc<Session>,
    shared: Arc<Shared>,
    id: Id,
    rx: Option<oneshot::Receiver<String>>,
}

impl Waiter {
    /// The answer, or None when the session ended without one. Cancel-safe: dropped while
    /// waiting, the call is abandoned (see Drop).
    pub async fn answer(&mut self) -> Option<String> {
        let answer = self.rx.as_mut()?.await.ok();
        self.rx = None;
        answer
    }
}

impl Waiter {
    /// The core answered at once: nothing is waited for any more.
    pub fn settle(&mut self) {
        self.session.waiting.lock().remove(self.id.raw());
        self.rx = None;
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let gone = self.session.waiting.lock().remove(self.id.raw()).is_some();
        if gone && self.rx.is_some() {
            let events = self.shared.abandon_call(self.session.client, &self.id);
            // Dropped on the server's runtime: never block it.
            let shared = self.shared.clone();
            if let (false, Ok(rt)) = (events.is_empty(), tokio::runtime::Handle::try_current()) {
                rt.spawn(async move {
                    for event in events {
                        shared.events.push(event).await;
                    }
                });
            }
        }
    }
}

impl Session {
    pub fn new(
        key: String,
        client: u64,
        agent: &'static crate::agents::Agent,
        outbox: Arc<Outbox>,
        went_idle: Arc<Notify>,
    ) -> Arc<Session> {
        Arc::new(Session {
            key,
            client,
            outbox,
            mcp: Mutex::new(mcp::Session::new(agent)),
            waiting: Mutex::new(HashMap::new()),
            later: Mutex::new(HashMap::new()),
            held: Mutex::new(Vec::new()),
            stream: Mutex::new(None),
            live: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            wake: Notify::new(),
            went_idle,
            ended: AtomicBool::new(false),
            had_stream: AtomicBool::new(false),
        })
    }

    pub fn live(self: &Arc<Self>) -> Live {
        self.live.fetch_add(1, Ordering::AcqRel);
        Live(self.clone())
    }

    /// How long it has had no request in flight and no stream open (None: it has some).
    pub fn idle_for(&self) -> Option<std::time::Duration> {
        (self.live.load(Ordering::Acquire) == 0).then(|| self.idle_since.lock().elapsed())
    }

    pub fn mcp(&self) -> mcp::Session {
        self.mcp.lock().clone()
    }

    /// Keeps what `initialize` recorded.
    pub fn set_mcp(&self, session: mcp::Session) {
        *self.mcp.lock() = session;
    }

    /// Registers a request before it is handled, so that an answer given at once is not missed.
    pub fn wait_for(self: &Arc<Self>, shared: &Arc<Shared>, id: Id) -> Waiter {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(id.raw().into(), tx);
        Waiter {
            session: self.clone(),
            shared: shared.clone(),
            id,
            rx: Some(rx),
        }
    }

    /// The answer to call `id` goes on the event stream (see [`Session::push_later`]).
    pub fn expect_later(&self, id: &Id, tab: Option<String>) {
        self.later.lock().insert(id.raw().into(), tab);
    }

    /// The review `tab` was closed quietly: the answer of the call that opened it is dropped.
    pub fn forget_later(&self, tab: &str) {
        self.later.lock().retain(|_, t| t.as_deref() != Some(tab));
    }

    /// An answer to a call answered at once: its one text, `{method, params}`, is sent as that
    /// notification.
    pub fn push_later(&self, answer: &str) {
        let v: serde_json::Value = serde_json::from_str(answer).unwrap_or_default();
        let text = v["result"]["content"][0]["text"].as_str().unwrap_or_default();
        let later: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        match later["method"].as_str() {
            Some(method) => self.push_held(crate::protocol::jsonrpc::notification_frame(method, &later["params"])),
            None => crate::warn!("client {}: an answer for later is no notification: {answer}", self.client),
        }
    }

    /// Opens the event stream (a newer one replaces the older, which ends).
    pub fn open_stream(&self) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(STREAM_ROOM);
        // The stream's lock first, as in push_held.
        let mut stream = self.stream.lock();
        let mut held = self.held.lock();
        let sent = held.iter().take_while(|frame| tx.try_send(sse_event(frame)).is_ok()).count();
        held.drain(..sent);
        *stream = Some(tx);
        drop((held, stream));
        self.had_stream.store(true, Ordering::Release);
        self.wake.notify_one();
        rx
    }

    pub fn had_stream(&self) -> bool {
        self.had_stream.load(Ordering::Acquire)
    }

    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Marks it ended: the pump stops, the stream closes. Answers still owed are routed first
    /// by whoever ends it ([`Session::route`]).
    pub fn mark_ended(&self) {
        self.ended.store(true, Ordering::Release);
        self.stream.lock().take();
        // Requests still waiting get no answer (their calls were answered by the abandon).
        self.waiting.lock().clear();
        self.wake.notify_one();
    }

    /// Moves what waits in the outbox to where it goes. Err when the outbox is over its bound
    /// (the client does not read its stream): the session must end.
    pub fn route(&self) -> Result<(), ()> {
        loop {
            let room = self.stream_has_room();
            match self.outbox.take(room) {
                None => return Ok(()),
                Some(Outbound::GiveUp) => return Err(()),
                Some(Outbound::Frame(frame)) => match answer_id(&frame) {
                    Some(id) if self.later.lock().remove(id.as_str()).is_some() => self.push_later(&frame),
                    Some(id) => self.deliver(&id, frame),
                    None => self.push_event(frame),
                },
            }
        }
    }

    fn stream_has_room(&self) -> bool {
        let stream = self.stream.lock();
        stream.as_ref().is_some_and(|s| s.capacity() > 0)
    }

    fn deliver(&self, id: &str, frame: String) {
        match self.waiting.lock().remove(id) {
            Some(tx) => {
                let _ = tx.send(frame);
            }
            None => crate::debug!("client {}: answer {id} has no one waiting", self.client),
        }
    }

    /// A decision: sent on the event stream, else held until one opens (the CLI waits for it).
    fn push_held(&self, frame: String) {
        let stream = self.stream.lock();
        let sent = stream.as_ref().is_some_and(|s| s.try_send(sse_event(&frame)).is_ok());
        if !sent {
            self.held.lock().push(frame);
        }
    }

    fn push_event(&self, frame: String) {
        let mut stream = self.stream.lock();
        let sent = match stream.as_ref() {
            Some(s) => s.try_send(sse_event(&frame)).is_ok(),
            None => false,
        };
        if !sent && stream.as_ref().is_some_and(|s| s.is_closed()) {
            *stream = None;
        }
    }

    /// Routes frames as they come until the session ends; false when it must end because its
    /// client does not read.
    pub async fn pump(self: Arc<Self>) -> bool {
        while !self.has_ended() {
            if self.route().is_err() {
                return false;
            }
            tokio::select! {
                _ = self.outbox.ready() => {}
                _ = self.wake.notified() => {}
            }
        }
        true
    }
}

/// One server-sent event carrying a JSON-RPC message.
fn sse_event(frame: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {frame}\n\n"))
}

/// The id of an answer (a frame with an id and no method), as its raw JSON text.
fn answer_id(frame: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_str(frame).ok()?;
    match (head.id, head.method) {
        (Some(id), None) => Some(id.get().trim().to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_from_notifications() {
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":"a b","result":{}}"#).as_deref(), Some(r#""a b""#));
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":7,"error":{}}"#).as_deref(), Some("7"));
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","method":"selection_changed","params":{}}"#), None);
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":3,"method":"x"}"#), None);
    }

    #[tokio::test]
    async fn answers_go_to_their_request_and_the_rest_to_the_stream() {
        let shared = Arc::new(Shared::default());
        let agent = *crate::agents::ALL.iter().find(|a| a.header().is_none()).unwrap();
        let outbox = shared.clients.add(5, agent, None);
        let s = Session::new("k".into(), 5, agent, outbox.clone(), Arc::new(Notify::new()));
        let mut w = s.wait_for(&shared, Id::from_u64(9));
        outbox.push_answer(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#.into());
        outbox.push_notification(r#"{"jsonrpc":"2.0","method":"n"}"#.into());
        s.route().unwrap();
        assert!(w.answer().await.unwrap().contains("\"id\":9"));
        // No stream yet: the notification waits for one.
        let mut rx = s.open_stream();
        s.route().unwrap();
        let ev = rx.recv().await.unwrap();
        assert!(std::str::from_utf8(&ev).unwrap().starts_with("event: message\ndata: {"));
    }
}
