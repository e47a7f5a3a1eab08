//! The state the server thread and Neovim's main thread share, as parts that each own their
//! data: the event queue Lua drains (events.rs), the connected clients (clients.rs), the tool
//! calls parked for Lua (parked.rs), the requests sent to agents (requests.rs), the selection
//! (selection.rs) and the diagnostics snapshot (diagnostics.rs).
//!
//! This file holds the two flows that touch several parts at once: a tool call parked for Lua
//! and answered once (by Lua, by its fallback timer, or with its abandon answer), and a request
//! to an agent matched with its answer. `snapshot()` is the one read of all of it for status.


pub mod clients;
pub mod diagnostics;
pub mod events;
pub mod outbox;
pub mod parked;
pub mod requests;
pub mod reviews;
pub mod selection;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::state::clients::{ClientStatus, Clients};
use crate::state::events::{Event, EventQueue};
use crate::protocol::jsonrpc::{self, Id, RpcError, INTERNAL_ERROR};
use crate::state::parked::{Parked, ParkedCalls};
use crate::state::outbox::Queued;
use crate::state::requests::{OutgoingRequests, Requested, SendError, TIMED_OUT};
use crate::state::selection::Selection;
use crate::protocol::tools::{Hook, Tool};
use crate::{debug, warn};

pub struct Shared {
    pub events: EventQueue,
    pub clients: Clients,
    pub selection: Selection,
    /// What getDiagnostics answers without the main loop (see diagnostics.rs).
    pub diagnostics: diagnostics::Snapshot,
    parked: ParkedCalls,
    outgoing: OutgoingRequests,
    /// Numbers for parked calls, requests and clients: unique across all three.
    next_id: AtomicU64,
    stopping: AtomicBool,
    /// Wakes what waits on [`Shared::until_stopping`].
    stop_signal: tokio::sync::Notify,
    /// One openDiff is staged at a time (see review.rs): a read stuck on a hung mount holds it,
    /// and later reviews are refused quickly instead of piling up proposals in memory.
    pub staging: Arc<tokio::sync::Semaphore>,
    /// openDiffs being staged, for a close_tab that comes before Lua has them (opening.rs).
    pub opening: crate::state::reviews::opening::Opening,
    /// The user's `diff.review`: false answers openDiff at once, unseen. Lua's config owns it;
    /// setup() pushes each change here (the core answers without waking Neovim).
    diff_review: AtomicBool,
    /// Overrides every tool's fallback deadline (the user's `diagnostics_timeout_ms`).
    fallback_after: Option<Duration>,
    /// The server's runtime, for timers started from the main thread.
    runtime: OnceLock<tokio::runtime::Handle>,
    /// The largest message a client may send (the user's `max_message_size`).
    pub max_message_size: usize,
    /// Where openDiff proposals are staged for Lua to read (private to this user).
    pub stage_dir: std::path::PathBuf,
}

/// What the user configured that the shared state needs.
pub struct Settings {
    pub fallback_after: Option<Duration>,
    pub selection_debounce: Duration,
    /// The largest frame accepted; also how many bytes may wait for one client.
    pub max_message_size: usize,
    /// A private folder for staged openDiff proposals (removed on stop).
    pub stage_dir: std::path::PathBuf,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            fallback_after: None,
            selection_debounce: Duration::from_millis(100),
            max_message_size: 64 * 1024 * 1024,
            stage_dir: std::env::temp_dir().join(format!("pi-ide-stage-{}", std::process::id())),
        }
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new(Settings::default())
    }
}

/// One read of everything `:PiIde status` shows.
#[derive(Debug)]
pub struct Snapshot {
    pub parked: usize,
    pub wakes: u64,
    pub requests_in_flight: usize,
    pub request_target: Option<u64>,
    pub clients: Vec<ClientSnapshot>,
}

#[derive(Debug)]
pub struct ClientSnapshot {
    pub client: ClientStatus,
    /// Its calls waiting for Lua.
    pub parked: usize,
}

impl Shared {
    pub fn new(settings: Settings) -> Self {
        Shared {
            events: EventQueue::default(),
            clients: Clients::new(settings.max_message_size),
            selection: Selection::new(settings.selection_debounce),
            diagnostics: diagnostics::Snapshot::default(),
            parked: ParkedCalls::default(),
            outgoing: OutgoingRequests::default(),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            stop_signal: tokio::sync::Notify::new(),
            staging: Arc::new(tokio::sync::Semaphore::new(1)),
            opening: Default::default(),
            diff_review: AtomicBool::new(true),
            fallback_after: settings.fallback_after,
            runtime: OnceLock::new(),
            max_message_size: settings.max_message_size,
            stage_dir: settings.stage_dir,
        }
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The runtime timers started from the main thread run on (set once, by the server).
    pub fn set_runtime(&self, handle: tokio::runtime::Handle) {
        let _ = self.runtime.set(handle);
    }

    /// From now on, arriving work is not shown to the user (the editor is going away).
    pub fn begin_stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.stop_signal.notify_waiters();
    }

    /// Resolves once the editor begins to stop (at once if it has).
    pub async fn until_stopping(&self) {
        let signal = self.stop_signal.notified();
        if !self.is_stopping() {
            signal.await;
        }
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub fn set_diff_review(&self, on: bool) {
        self.diff_review.store(on, Ordering::Relaxed);
    }

    pub fn diff_review(&self) -> bool {
        self.diff_review.load(Ordering::Relaxed)
    }

    /// The last selection state sent, as `agent` reads it (for a client that just initialized).
    pub fn selection_frame_for(&self, agent: &crate::agents::Agent) -> Option<String> {
        (agent.notification)("selection_changed", &self.selection.last_params()?)
    }

    /// A cursor move from Lua. Nothing to do while no client listens.
    pub fn selection_touch(&self) {
        if self.clients.initialized_count() > 0 {
            self.selection.touch();
        }
    }

    /// The current selection state from Lua: sent when it changed (latest wins: a client that
    /// is not reading gets the newest state when it reads again). Returns whether it changed.
    pub fn selection_set(&self, params: Value) -> bool {
        let changed = self.selection.set(&params);
        if changed {
            self.clients.set_selection(&params);
        }
        changed
    }

    /// The one rule of every close path: before a connection closes, each of its parked calls
    /// is answered with its tool's abandon answer (openDiff: DIFF_REJECTED), queued ahead of
    /// the Close. Returns their numbers (Lua takes their reviews away).
    pub fn abandon_client(&self, client: u64) -> Vec<u64> {
        let reqs = self.parked.reqs_of(client);
        for &req in &reqs {
            self.abandon(req);
        }
        reqs
    }

    /// One call of a client will never be read (its HTTP request was dropped): it is answered
    /// as abandoned, to no one, so that Lua takes its review away. Returns its number.
    pub fn abandon_call(&self, client: u64, id: &Id) -> Option<u64> {
        let req = self.parked.req_of(client, id)?;
        self.abandon(req);
        Some(req)
    }

    /// A client's socket is gone: forgets it, its parked calls and its requests. `reason`: why
    /// the editor closed it, if it did. Returns the events for Lua: one per lost request, then
    /// the disconnect (with the numbers of its parked calls, whose answers are no longer wanted).
    pub fn forget_client(&self, client: u64, reason: Option<String>) -> Vec<Event> {
        let name = self.clients.remove(client).and_then(|c| c.name);
        let abandoned = self.parked.forget_client(client);
        let lost = self
            .outgoing
            .forget_client(client)
            .into_iter()
            .map(|(req, method)| {
                warn!("request {req} ({method}) lost: the agent disconnected");
                Event::Response {
                    req,
                    outcome: Err(RpcError::new(INTERNAL_ERROR, "IDE connection closed")),
                }
            });
        let mut events: Vec<Event> = lost.collect();
        events.push(Event::ClientDisconnected {
            client,
            name,
            abandoned,
            reason,
        });
        events
    }

    /// Everything `:PiIde status` shows, read once.
    pub fn snapshot(&self) -> Snapshot {
        let per_client = self.parked.count_by_client();
        let clients = self
            .clients
            .statuses()
            .into_iter()
            .map(|c| ClientSnapshot {
                parked: per_client.get(&c.id).copied().unwrap_or(0),
                client: c,
            })
            .collect();
        Snapshot {
            parked: self.parked.count(),
            wakes: self.events.waker.wakes_sent(),
            requests_in_flight: self.outgoing.count(),
            request_target: self.clients.request_target(),
            clients,
        }
    }

    // -- Tool calls parked for Lua ---------------------------------------------------------

    /// Parks a call for Lua and queues the event that tells Lua about it. A tool with a
    /// fallback gets a timer that answers for Lua if the main loop is held up.
    pub async fn park(
        self: &Arc<Self>,
        client: u64,
        id: Id,
        tool: &'static Tool,
        args: Value,
    ) -> u64 {
        self.park_staged(client, id, tool, args, Vec::new(), 0).await
    }

    /// [`Shared::park`] for a call that owns staged files (openDiff): they are deleted when
    /// Lua has loaded them or the call ends.
    pub async fn park_staged(
        self: &Arc<Self>,
        client: u64,
        id: Id,
        tool: &'static Tool,
        args: Value,
        staged: Vec<std::path::PathBuf>,
        staged_bytes: u64,
    ) -> u64 {
        let req = self.next_id();
        let call = Parked {
            client,
            id,
            tool,
            args: tool.fallback.as_ref().map(|_| args.clone()),
            context: tool.abandon_context(&args),
            staged,
            staged_bytes,
        };
        self.parked.insert(req, call);
        if let Some(fallback) = &tool.fallback {
            let shared = self.clone();
            let after = self.fallback_after.unwrap_or(fallback.after);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                shared.expire(req).await;
            });
        }
        let event = Event::ToolCall {
            req,
            client,
            tool: tool.name,
            lua: tool.lua,
            handler: tool.handler_name(),
            args,
        };
        if !self.events.push(event).await {
            // Stopping: the queue is closed; answer it here so it is never left hanging.
            self.abandon(req);
        }
        req
    }

    /// Lua's answer to a parked call. False when it was already answered or its client left.
    pub fn respond(&self, req: u64, outcome: Result<Value, RpcError>) -> bool {
        let Some(p) = self.parked.take(req) else {
            return false;
        };
        if let (Ok(v), Some(f), Some(args)) = (&outcome, &p.tool.fallback, &p.args) {
            if (f.keep)(args) {
                self.parked.keep(p.tool.name, v.clone());
            }
        }
        let agent = self.clients.agent_of(p.client);
        let outcome = outcome.and_then(|v| agent.shape(p.tool, v, p.context.as_deref()));
        let outcome = p.tool.owed(outcome, p.context.as_deref());
        self.clients
            .answer_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
        true
    }

    /// The fallback timer fired: if Lua has not answered yet, answer from what was kept.
    async fn expire(&self, req: u64) {
        let Some(p) = self.parked.take(req) else {
            return;
        };
        let (Some(f), Some(args)) = (&p.tool.fallback, &p.args) else {
            return;
        };
        // A tool answered from the snapshot (getDiagnostics): the snapshot when it holds every
        // change; while it is behind, Lua's last full answer (given when the snapshot was
        // behind, so newer) if there is one.
        let kept = self.parked.kept(p.tool.name);
        let snapshot = match p.tool.hook {
            Hook::Snapshot => diagnostics::render_bounded(&self.diagnostics, args).await,
            _ => None,
        };
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
        let agent = self.clients.agent_of(p.client);
        let shaped = agent.shape(p.tool, answer, p.context.as_deref());
        let outcome = p.tool.owed(shaped, p.context.as_deref());
        self.clients
            .answer_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }

    /// Answers a parked call with its tool's abandon answer (the editor is going away).
    fn abandon(&self, req: u64) {
        let Some(p) = self.parked.take(req) else {
            return;
        };
        let outcome = p.tool.abandoned(p.context.as_deref());
        self.clients
            .answer_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }

    /// Lua has read the files staged for `req` (see parked.rs).
    pub fn release_staged(&self, req: u64) {
        self.parked.release_staged(req);
    }

    /// How many calls of `tool` one client has waiting, and the bytes they hold staged.
    pub fn load_of(&self, client: u64, tool: &str) -> (usize, u64) {
        self.parked.load_of(client, tool)
    }

    pub fn abandon_all(&self) {
        for req in self.parked.reqs() {
            self.abandon(req);
        }
    }

    // -- Requests to agents ----------------------------------------------------------------

    /// Sends a request to the client that initialized last; its answer comes back as
    /// [`Event::Response`] with the returned number. A request of the same method that was
    /// still waiting to be written is replaced: its number comes back as `superseded` (it
    /// will get no answer; Lua ends it).
    pub fn request(
        self: &Arc<Self>,
        method: &str,
        params: &Value,
        timeout: Option<Duration>,
    ) -> Result<Requested, SendError> {
        let client = self.clients.request_target().ok_or(SendError::NoAgent)?;
        let req = self.next_id();
        self.outgoing.insert(req, client, method);
        let frame = jsonrpc::request_frame(&Id::from_u64(req), method, params);
        let superseded = match self.clients.request_to(client, req, method, frame) {
            Some(Queued::Yes { superseded }) => superseded,
            Some(Queued::No) | None => {
                self.outgoing.remove(req);
                return Err(SendError::Disconnecting);
            }
        };
        if let Some(old) = superseded {
            self.outgoing.remove(old);
        }
        if let (Some(t), Some(rt)) = (timeout, self.runtime.get()) {
            let shared = self.clone();
            rt.spawn(async move {
                tokio::time::sleep(t).await;
                shared.time_out(req, t).await;
            });
        }
        Ok(Requested { req, superseded })
    }

    /// Cancels a request: the agent is told (`request_cancelled`) unless the request never
    /// went out (then it is simply not sent), and its answer, if one still comes, is dropped.
    /// False when it was already answered.
    pub fn cancel(&self, req: u64) -> bool {
        let Some(client) = self.outgoing.remove(req) else {
            return false;
        };
        let frame = jsonrpc::notification_frame("request_cancelled", &json!({ "id": req }));
        self.clients.cancel_to(client, req, frame);
        true
    }

    async fn time_out(&self, req: u64, after: Duration) {
        if !self.cancel(req) {
            return;
        }
        debug!("request {req} timed out after {after:?}");
        let outcome = Err(RpcError::new(
            TIMED_OUT,
            format!("no answer within {} ms", after.as_millis()),
        ));
        // Lua's callback waits for exactly one answer, this one: wait for room (this timer's
        // own task; after stop the queue is closed and this returns at once).
        self.events.push(Event::Response { req, outcome }).await;
    }

    /// An answer from `client`. Returns the event for Lua, or None when nothing waits for it
    /// (cancelled, timed out, or not ours).
    pub fn answer(&self, client: u64, id: &Id, outcome: Result<Value, RpcError>) -> Option<Event> {
        let req: u64 = id.raw().parse().ok()?;
        if self.outgoing.take_answer(client, req) {
            Some(Event::Response { req, outcome })
        } else {
            debug!("client {client}: late or unknown answer to {}", id.raw());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::outbox::Outbox;

    fn client(shared: &Shared, id: u64) -> Arc<Outbox> {
        shared.clients.add(id, &crate::agents::pi::AGENT, None)
    }

    fn frame(rx: &mut std::sync::Arc<crate::state::outbox::Outbox>) -> Value {
        rx.next_json()
    }

    #[tokio::test]
    async fn parked_call_is_answered_once() {
        let shared = Arc::new(Shared::default());
        let mut rx = client(&shared, 1);
        let tool = crate::agents::pi::AGENT.tool("getDiagnostics").unwrap();
        shared.park(1, Id::from_u64(9), tool, json!({})).await;
        let events = shared.events.drain();
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
        assert!(rx.take(true).is_none());
    }

    #[tokio::test]
    async fn stopping_answers_parked_calls_and_disconnect_forgets_them() {
        let shared = Arc::new(Shared::default());
        let mut rx1 = client(&shared, 1);
        let _rx2 = client(&shared, 2);
        let tool = crate::agents::pi::AGENT.tool("getDiagnostics").unwrap();
        shared.park(1, Id::from_u64(1), tool, json!({})).await;
        shared.park(2, Id::from_u64(2), tool, json!({})).await;
        assert_eq!(shared.snapshot().parked, 2);
        match &shared.forget_client(2, None)[..] {
            [Event::ClientDisconnected { abandoned, .. }] => assert_eq!(abandoned.len(), 1),
            other => panic!("{other:?}"),
        }
        shared.abandon_all();
        assert_eq!(shared.snapshot().parked, 0);
        assert_eq!(frame(&mut rx1)["error"]["code"], jsonrpc::INTERNAL_ERROR);
        // After the queue is closed, a new park is answered at once.
        shared.events.close();
        shared.park(1, Id::from_u64(3), tool, json!({})).await;
        assert_eq!(frame(&mut rx1)["id"], 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_lua_does_not_answer_in_time_gets_the_fallback_from_the_last_answer() {
        let shared = Arc::new(Shared::default());
        let mut rx = client(&shared, 1);
        let tool = crate::agents::pi::AGENT.tool("getDiagnostics").unwrap();
        // Lua announced a change the snapshot does not hold yet.
        shared.diagnostics.touch();
        // First call: Lua answers in time; that answer is kept.
        shared.park(1, Id::from_u64(1), tool, json!({})).await;
        let req = match &shared.events.drain()[..] {
            [Event::ToolCall { req, .. }] => *req,
            other => panic!("{other:?}"),
        };
        assert!(shared.respond(req, Ok(json!({"file:///a.rs": [{"message": "m"}]}))));
        assert_eq!(frame(&mut rx)["id"], 1);
        // Second call: Lua is held up; after the deadline Rust answers with what was kept.
        shared.park(1, Id::from_u64(2), tool, json!({})).await;
        let req = match &shared.events.drain()[..] {
            [Event::ToolCall { req, .. }] => *req,
            other => panic!("{other:?}"),
        };
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(rx.take(true).is_none(), "answered before the deadline");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let f = frame(&mut rx);
        assert_eq!(f["id"], 2);
        let text: Value =
            serde_json::from_str(f["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["file:///a.rs"][0]["message"], "m");
        // Lua's late answer is refused: one answer per request.
        assert!(!shared.respond(req, Ok(json!({}))));
        assert!(rx.take(true).is_none());
    }
}
