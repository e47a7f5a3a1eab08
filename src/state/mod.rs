//! The state the server thread and Neovim's main thread share, as parts that each own their
//! data: the event queue Lua drains (events.rs), the connected clients (clients.rs) and what
//! waits to be written to each (outbox.rs), the tool calls parked for Lua (parked.rs), the
//! reviews (reviews/), the requests sent to agents (requests.rs), the selection (selection.rs)
//! and the diagnostics snapshot (diagnostics.rs).
//!
//! The flows that touch several parts at once are beside them: a call parked for Lua and
//! answered once (calls.rs), a review from its staging to its answer (reviews/), a request to
//! an agent matched with its answer (requests.rs), a client leaving (leaving.rs).
//! `snapshot()` is the one read of all of it for status.

mod calls;
pub mod clients;
pub mod diagnostics;
pub mod events;
mod leaving;
pub mod outbox;
pub mod parked;
pub mod requests;
pub mod reviews;
pub mod selection;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::protocol::jsonrpc::Id;

use self::clients::{ClientStatus, Clients};
use self::events::{Event, EventQueue};
use self::parked::ParkedCalls;
use self::requests::OutgoingRequests;
use self::reviews::Reviews;
use self::selection::Selection;

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
    /// One openDiff is staged at a time (see reviews/open.rs): a read stuck on a hung mount holds it,
    /// and later reviews are refused quickly instead of piling up proposals in memory.
    pub staging: Arc<tokio::sync::Semaphore>,
    /// Every review, from its staging to its answer (reviews/).
    reviews: Reviews,
    /// The user's `review.enabled`: false answers openDiff at once, unseen. Lua's config owns it;
    /// setup() pushes each change here (the core answers without waking Neovim).
    review_enabled: AtomicBool,
    /// A client's tool call after this much quiet (ms) tells Lua a turn of its began (the
    /// user's `checkpoints.idle_ms`); u64::MAX: never (checkpoints off).
    turn_quiet_ms: AtomicU64,
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
    /// Whether `client` has a call with JSON-RPC id `id` that waits for its answer (parked for
    /// Lua, or a review).
    pub fn call_waits(&self, client: u64, id: &Id) -> bool {
        self.parked.req_of(client, id).is_some() || self.reviews.has_call(client, id)
    }

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
            reviews: Reviews::default(),
            review_enabled: AtomicBool::new(true),
            turn_quiet_ms: AtomicU64::new(u64::MAX),
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

    /// The server's runtime, once it runs.
    pub fn runtime(&self) -> Option<&tokio::runtime::Handle> {
        self.runtime.get()
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

    pub fn set_turn_quiet(&self, ms: u64) {
        self.turn_quiet_ms.store(ms, Ordering::Relaxed);
    }

    /// Notes a tool call of `client`: the event that says its turn began, after a quiet time.
    pub fn turn_began(&self, client: u64) -> Option<Event> {
        let quiet = self.clients.called(client);
        let at_least = std::time::Duration::from_millis(self.turn_quiet_ms.load(Ordering::Relaxed));
        let due = self.turn_quiet_ms.load(Ordering::Relaxed) != u64::MAX && quiet.is_none_or(|q| q >= at_least);
        due.then_some(Event::AgentActive { client })
    }

    pub fn set_review_enabled(&self, on: bool) {
        self.review_enabled.store(on, Ordering::Relaxed);
    }

    pub fn review_enabled(&self) -> bool {
        self.review_enabled.load(Ordering::Relaxed)
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

    /// Everything `:PiIde status` shows, read once.
    pub fn snapshot(&self) -> Snapshot {
        let mut per_client = self.parked.count_by_client();
        for (client, n) in self.reviews.count_by_client() {
            *per_client.entry(client).or_insert(0) += n;
        }
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
            parked: self.parked.count() + self.reviews.count(),
            wakes: self.events.waker.wakes_sent(),
            requests_in_flight: self.outgoing.count(),
            request_target: self.clients.request_target(),
            clients,
        }
    }
}
