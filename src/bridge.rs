//! The state shared by the server thread and Neovim's main thread: the bounded event queue Lua
//! drains, the table of parked tool calls Lua answers, and the connected clients.
//!
//! Connection tasks push events and await room in the queue (so a flooding client stops being
//! read instead of growing memory); Lua drains a bounded batch per wake and answers parked calls
//! with [`Shared::respond`], which only queues a frame for the client's writer and never blocks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::jsonrpc::{self, Id, RpcError};
use crate::outbox::Outbox;
use crate::selection::Selection;
use crate::tools::Tool;
use crate::waker::Waker;
use crate::warn;

/// How many events may wait for Lua before connection tasks stop reading their sockets.
pub const EVENT_QUEUE: usize = 1024;
/// How many events one drain hands to Lua; the rest wait for the next turn of the main loop,
/// so that typing is never starved by a busy client.
pub const DRAIN_BATCH: usize = 128;

#[derive(Debug)]
pub enum Event {
    ClientConnected {
        client: u64,
    },
    ClientInitialized {
        client: u64,
        name: Option<String>,
        version: Option<String>,
    },
    /// `abandoned`: calls of this client that were parked; their answers are no longer wanted.
    ClientDisconnected {
        client: u64,
        abandoned: Vec<u64>,
    },
    ToolCall {
        req: u64,
        client: u64,
        tool: &'static str,
        args: Value,
    },
    /// The cursor has been still for the debounce time: Lua should send the current state.
    SelectionDue,
    /// The answer to a request Lua sent to an agent (see requests.rs): a result, an error
    /// from the agent, or ours (timed out, agent gone).
    Response {
        req: u64,
        outcome: Result<Value, RpcError>,
    },
    /// The numbers of an openDiff (parked as `req`), computed after it was handed to Lua.
    DiffStats {
        req: u64,
        stats: Value,
    },
}

/// Which agent's dialect a client speaks: told by the header it connected with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Pi,
    /// Came in through Claude Code's lockfile and header: some answers take its shapes.
    ClaudeCode,
}

pub struct Client {
    pub flavor: Flavor,
    /// What waits to be written to it (bounded; see outbox.rs).
    pub outbox: Arc<Outbox>,
    /// Sent `initialize`: it gets notifications from now on.
    pub initialized: bool,
    /// Order of initialization: requests go to the client that initialized last.
    pub initialized_seq: u64,
    pub name: Option<String>,
    pub version: Option<String>,
    pub connected_at: SystemTime,
}

pub struct Parked {
    pub client: u64,
    pub id: Id,
    pub tool: &'static Tool,
    /// Kept only for tools with a fallback (their arguments are small).
    pub args: Option<Value>,
    /// What an abandon answer needs (openDiff: its tab_name).
    pub context: Option<String>,
}

pub struct Shared {
    events: mpsc::Sender<Event>,
    events_rx: Mutex<mpsc::Receiver<Event>>,
    pub waker: Waker,
    pub clients: Mutex<HashMap<u64, Client>>,
    pub parked: Mutex<HashMap<u64, Parked>>,
    /// Per tool, the last answer Lua gave that its fallback may reuse.
    kept: Mutex<HashMap<&'static str, Value>>,
    next_id: AtomicU64,
    pub stopping: AtomicBool,
    /// Overrides every tool's fallback deadline (the user's `diagnostics_timeout_ms`).
    pub fallback_after: Option<Duration>,
    pub selection: Selection,
    /// How many clients are initialized (read on every cursor move, so an atomic).
    initialized: AtomicUsize,
    /// Client slots taken (upgraded, or passed the check and being upgraded).
    slots: AtomicUsize,
    /// What getDiagnostics answers without the main loop (see diagnostics.rs).
    pub diagnostics: crate::diagnostics::Snapshot,
    /// Bytes that may wait for one client.
    max_outbox_bytes: usize,
    /// Requests Lua sent to agents, waiting for their answers (see requests.rs).
    pub outgoing: Mutex<HashMap<u64, crate::requests::Outgoing>>,
    /// The server's runtime, for timers started from the main thread.
    pub runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

/// What the user configured that the shared state needs.
pub struct Settings {
    pub fallback_after: Option<Duration>,
    pub selection_debounce: Duration,
    /// The largest frame accepted; also how many bytes may wait for one client.
    pub max_message_size: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            fallback_after: None,
            selection_debounce: Duration::from_millis(100),
            max_message_size: 64 * 1024 * 1024,
        }
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new(Settings::default())
    }
}

impl Shared {
    pub fn new(settings: Settings) -> Self {
        let (events, events_rx) = mpsc::channel(EVENT_QUEUE);
        Shared {
            events,
            events_rx: Mutex::new(events_rx),
            waker: Waker::default(),
            clients: Mutex::new(HashMap::new()),
            parked: Mutex::new(HashMap::new()),
            kept: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            fallback_after: settings.fallback_after,
            selection: Selection::new(settings.selection_debounce),
            initialized: AtomicUsize::new(0),
            slots: AtomicUsize::new(0),
            diagnostics: crate::diagnostics::Snapshot::default(),
            max_outbox_bytes: settings.max_message_size,
            outgoing: Mutex::new(HashMap::new()),
            runtime: std::sync::OnceLock::new(),
        }
    }

    /// Marks a client initialized (once), so that it receives notifications.
    pub fn mark_initialized(&self, client: u64, name: Option<String>, version: Option<String>) {
        if let Some(c) = self.clients.lock().get_mut(&client) {
            if !c.initialized {
                c.initialized = true;
                self.initialized.fetch_add(1, Ordering::AcqRel);
            }
            c.initialized_seq = self.next_id.fetch_add(1, Ordering::Relaxed);
            c.name = name;
            c.version = version;
        }
    }

    pub fn initialized_clients(&self) -> usize {
        self.initialized.load(Ordering::Acquire)
    }

    /// A cursor move from Lua. Nothing to do while no client listens.
    pub fn selection_touch(&self) {
        if self.initialized_clients() > 0 {
            self.selection.touch();
        }
    }

    /// The current selection state from Lua: sent when it changed (latest wins: a client that
    /// is not reading gets the newest state when it reads again). Returns whether it changed.
    pub fn selection_set(&self, params: Value) -> bool {
        match self.selection.set(params) {
            Some(frame) => {
                for c in self.clients.lock().values().filter(|c| c.initialized) {
                    c.outbox.set_selection(frame.clone());
                }
                true
            }
            None => false,
        }
    }

    /// Sends a frame to every initialized client. Returns how many.
    pub fn broadcast(&self, frame: &str) -> usize {
        let clients = self.clients.lock();
        let mut n = 0;
        for c in clients.values().filter(|c| c.initialized) {
            if c.outbox.push(frame.to_owned()) {
                n += 1;
            }
        }
        n
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues an event for Lua, waiting for room. Returns false once the editor has stopped.
    pub async fn push(&self, event: Event) -> bool {
        if self.events.send(event).await.is_err() {
            return false;
        }
        self.waker.wake();
        true
    }

    /// Queues an event if there is room, without waiting. False when full or stopped.
    pub fn try_push(&self, event: Event) -> bool {
        if self.events.try_send(event).is_err() {
            return false;
        }
        self.waker.wake();
        true
    }

    /// [`Shared::push`] for threads outside the runtime (the debounce thread).
    pub fn push_blocking(&self, event: Event) -> bool {
        if self.events.blocking_send(event).is_err() {
            return false;
        }
        self.waker.wake();
        true
    }

    /// Takes up to [`DRAIN_BATCH`] events. If more are waiting, asks for another wake so the
    /// main loop gets a turn in between.
    pub fn drain(&self) -> Vec<Event> {
        self.waker.clear_pending();
        let mut rx = self.events_rx.lock();
        let mut out = Vec::new();
        while out.len() < DRAIN_BATCH {
            match rx.try_recv() {
                Ok(ev) => out.push(ev),
                Err(_) => return out,
            }
        }
        if !rx.is_empty() {
            self.waker.wake();
        }
        out
    }

    /// Parks a call for Lua and queues the event that tells Lua about it. A tool with a
    /// fallback gets a timer that answers for Lua if the main loop is held up.
    pub async fn park(
        self: &Arc<Self>,
        client: u64,
        id: Id,
        tool: &'static Tool,
        args: Value,
    ) -> u64 {
        let req = self.next_id();
        let kept_args = tool.fallback.as_ref().map(|_| args.clone());
        let context = tool.abandon_context(&args);
        let parked = Parked {
            client,
            id,
            tool,
            args: kept_args,
            context,
        };
        self.parked.lock().insert(req, parked);
        if let Some(fallback) = &tool.fallback {
            let shared = self.clone();
            let after = self.fallback_after.unwrap_or(fallback.after);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                shared.expire(req);
            });
        }
        let event = Event::ToolCall {
            req,
            client,
            tool: tool.name,
            args,
        };
        if !self.push(event).await {
            // Stopping: the queue is closed; answer it here so it is never left hanging.
            self.abandon(req);
        }
        req
    }

    /// Lua's answer to a parked call. False when it was already answered or its client left.
    pub fn respond(&self, req: u64, outcome: Result<Value, RpcError>) -> bool {
        let Some(p) = self.parked.lock().remove(&req) else {
            return false;
        };
        if let (Ok(v), Some(f), Some(args)) = (&outcome, &p.tool.fallback, &p.args) {
            if (f.keep)(args) {
                self.kept.lock().insert(p.tool.name, v.clone());
            }
        }
        let flavor = self.flavor_of(p.client);
        let outcome = outcome.and_then(|v| p.tool.shape_result_for(v, flavor));
        let outcome = p.tool.owed(outcome, p.context.as_deref());
        self.send_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
        true
    }

    /// The fallback timer fired: if Lua has not answered yet, answer from what was kept.
    fn expire(&self, req: u64) {
        let Some(p) = self.parked.lock().remove(&req) else {
            return;
        };
        let (Some(f), Some(args)) = (&p.tool.fallback, &p.args) else {
            return;
        };
        // getDiagnostics: the snapshot when it holds every change; while it is behind, Lua's
        // last full answer (given when the snapshot was behind, so newer) if there is one.
        let kept = self.kept.lock().get(p.tool.name).cloned();
        let snapshot = (p.tool.name == "getDiagnostics")
            .then(|| self.diagnostics.render(args))
            .flatten();
        let answer = match (snapshot, kept) {
            (Some(s), _) if self.diagnostics.fresh() => s,
            (_, Some(k)) => (f.answer)(args, Some(&k)),
            (Some(s), None) => s,
            (None, None) => (f.answer)(args, None),
        };
        warn!(
            "{}: Neovim did not answer in time (busy, or waiting at a prompt); answered from the last known state",
            p.tool.name
        );
        let flavor = self.flavor_of(p.client);
        let outcome = p
            .tool
            .owed(p.tool.shape_result_for(answer, flavor), p.context.as_deref());
        self.send_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }

    /// Answers a parked call with its tool's abandon answer (the editor is going away).
    fn abandon(&self, req: u64) {
        let Some(p) = self.parked.lock().remove(&req) else {
            return;
        };
        let outcome = p.tool.abandoned(p.context.as_deref());
        self.send_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }

    pub fn abandon_all(&self) {
        let reqs: Vec<u64> = self.parked.lock().keys().copied().collect();
        for req in reqs {
            self.abandon(req);
        }
    }

    /// Forgets a client's parked calls (its socket is gone) and returns their numbers.
    pub fn forget_client(&self, client: u64) -> Vec<u64> {
        if let Some(c) = self.clients.lock().remove(&client) {
            if c.initialized {
                self.initialized.fetch_sub(1, Ordering::AcqRel);
            }
            self.release_client();
        }
        let mut parked = self.parked.lock();
        let mut gone: Vec<u64> = parked
            .iter()
            .filter(|(_, p)| p.client == client)
            .map(|(r, _)| *r)
            .collect();
        gone.sort_unstable();
        for r in &gone {
            parked.remove(r);
        }
        gone
    }

    /// The dialect of a client (Pi's when it is gone: nothing will be sent anyway).
    pub fn flavor_of(&self, client: u64) -> Flavor {
        self.clients
            .lock()
            .get(&client)
            .map(|c| c.flavor)
            .unwrap_or(Flavor::Pi)
    }

    pub fn send_to(&self, client: u64, frame: String) -> bool {
        match self.clients.lock().get(&client) {
            Some(c) => c.outbox.push(frame),
            None => false,
        }
    }

    /// Closes the queue: pending and future pushes fail at once, so no task waits on Lua.
    pub fn close_events(&self) {
        let mut rx = self.events_rx.lock();
        rx.close();
        while rx.try_recv().is_ok() {}
    }

    /// Takes a slot for a client about to be upgraded, if fewer than `max` are taken.
    pub fn reserve_client(&self, max: usize) -> bool {
        self.slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a client's slot back (it left, or its upgrade failed after the check).
    pub fn release_client(&self) {
        let _ = self
            .slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    pub fn parked_count(&self) -> usize {
        self.parked.lock().len()
    }

    /// Registers a client that completed the upgrade; returns where its outbound frames wait.
    pub fn add_client(&self, client: u64) -> Arc<Outbox> {
        self.add_client_as(client, Flavor::Pi)
    }

    pub fn add_client_as(&self, client: u64, flavor: Flavor) -> Arc<Outbox> {
        let outbox = Arc::new(Outbox::new(self.max_outbox_bytes));
        let entry = Client {
            flavor,
            outbox: outbox.clone(),
            initialized: false,
            initialized_seq: 0,
            name: None,
            version: None,
            connected_at: SystemTime::now(),
        };
        self.clients.lock().insert(client, entry);
        outbox
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools;
    use serde_json::json;

    fn client(shared: &Shared, id: u64) -> Arc<Outbox> {
        shared.add_client(id)
    }

    fn frame(rx: &mut std::sync::Arc<crate::outbox::Outbox>) -> Value {
        rx.next_json()
    }

    #[tokio::test]
    async fn parked_call_is_answered_once() {
        let shared = Arc::new(Shared::default());
        let mut rx = client(&shared, 1);
        let tool = tools::find("getDiagnostics").unwrap();
        shared.park(1, Id::from_u64(9), tool, json!({})).await;
        let events = shared.drain();
        let req = match &events[..] {
            [Event::ToolCall {
                req,
                tool: "getDiagnostics",
                client: 1,
                ..
            }] => *req,
            other => panic!("{other:?}"),
        };
        assert!(shared.respond(req, Ok(json!({}))));
        assert!(
            !shared.respond(req, Ok(json!({}))),
            "a second answer is refused"
        );
        let f = frame(&mut rx);
        assert_eq!(f["id"], 9);
        assert_eq!(f["result"]["content"][0]["text"], "{}");
        assert!(rx.take().is_none());
    }

    #[tokio::test]
    async fn stopping_answers_parked_calls_and_disconnect_forgets_them() {
        let shared = Arc::new(Shared::default());
        let mut rx1 = client(&shared, 1);
        let _rx2 = client(&shared, 2);
        let tool = tools::find("getDiagnostics").unwrap();
        shared.park(1, Id::from_u64(1), tool, json!({})).await;
        shared.park(2, Id::from_u64(2), tool, json!({})).await;
        assert_eq!(shared.parked_count(), 2);
        let gone = shared.forget_client(2);
        assert_eq!(gone.len(), 1);
        shared.abandon_all();
        assert_eq!(shared.parked_count(), 0);
        assert_eq!(frame(&mut rx1)["error"]["code"], jsonrpc::INTERNAL_ERROR);
        // After the queue is closed, a new park is answered at once.
        shared.close_events();
        shared.park(1, Id::from_u64(3), tool, json!({})).await;
        assert_eq!(frame(&mut rx1)["id"], 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_lua_does_not_answer_in_time_gets_the_fallback_from_the_last_answer() {
        let shared = Arc::new(Shared::default());
        let mut rx = client(&shared, 1);
        let tool = tools::find("getDiagnostics").unwrap();
        // Lua announced a change the snapshot does not hold yet.
        shared.diagnostics.touch();
        // First call: Lua answers in time; that answer is kept.
        shared.park(1, Id::from_u64(1), tool, json!({})).await;
        let req = match &shared.drain()[..] {
            [Event::ToolCall { req, .. }] => *req,
            other => panic!("{other:?}"),
        };
        assert!(shared.respond(req, Ok(json!({"file:///a.rs": [{"message": "m"}]}))));
        assert_eq!(frame(&mut rx)["id"], 1);
        // Second call: Lua is held up; after the deadline Rust answers with what was kept.
        shared.park(1, Id::from_u64(2), tool, json!({})).await;
        let req = match &shared.drain()[..] {
            [Event::ToolCall { req, .. }] => *req,
            other => panic!("{other:?}"),
        };
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(rx.take().is_none(), "answered before the deadline");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let f = frame(&mut rx);
        assert_eq!(f["id"], 2);
        let text: Value =
            serde_json::from_str(f["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["file:///a.rs"][0]["message"], "m");
        // Lua's late answer is refused: one answer per request.
        assert!(!shared.respond(req, Ok(json!({}))));
        assert!(rx.take().is_none());
    }

    #[tokio::test]
    async fn drain_is_bounded() {
        let shared = Shared::default();
        for i in 0..(DRAIN_BATCH as u64 + 5) {
            shared.push(Event::ClientConnected { client: i }).await;
        }
        assert_eq!(shared.drain().len(), DRAIN_BATCH);
        assert_eq!(shared.drain().len(), 5);
        assert!(shared.drain().is_empty());
    }
}
