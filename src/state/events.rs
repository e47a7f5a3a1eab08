//! The bounded queue of events for Lua: connection tasks push (and await room, so a flooding
//! client stops being read instead of growing memory); Lua drains a bounded batch per wake, so
//! typing is never starved by a busy client. Every push wakes Neovim's main loop (waker.rs).

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::protocol::jsonrpc::RpcError;
use crate::support::waker::Waker;

/// How many events may wait for Lua before connection tasks stop reading their sockets.
pub const EVENT_QUEUE: usize = 1024;
/// How many events one drain hands to Lua; the rest wait for the next turn of the main loop,
/// so that typing is never starved by a busy client.
pub const DRAIN_BATCH: usize = 128;

/// What Lua is told. Each becomes one Lua table through serde: `kind` is the variant's name in
/// snake_case, the fields its own (one left out when None).
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    ClientConnected {
        client: u64,
    },
    ClientInitialized {
        client: u64,
        name: Option<String>,
        version: Option<String>,
    },
    /// A client's tool call after a quiet time: its turn began (checkpoints).
    AgentActive {
        client: u64,
    },
    /// The agent gave its session a title (a tool of the SessionName hook).
    SessionNamed {
        client: u64,
        name: String,
    },
    /// The connection of `client` is closing: the core answered its calls and reviews `reqs`
    /// (a review: DIFF_REJECTED). `reason`: why the editor closes it, when it does.
    Abandoned {
        client: u64,
        reqs: Vec<u64>,
        reason: Option<String>,
    },
    /// `abandoned`: calls and reviews of this client still waiting when it was forgotten, or
    /// answered as its connection closed (Lua's answers to them are no longer wanted).
    ClientDisconnected {
        client: u64,
        /// The name it gave in `initialize`, if it got that far.
        name: Option<String>,
        abandoned: Vec<u64>,
        /// Why the editor closed it, when it did (not reading, a message too big, ...).
        reason: Option<String>,
    },
    /// Something the user should be told, in one line. `key` groups repeats: Lua shows the
    /// first at once and sums up the rest of a burst.
    Notice {
        key: &'static str,
        level: Level,
        message: String,
    },
    ToolCall {
        req: u64,
        client: u64,
        tool: &'static str,
        /// The Lua handler that answers it, by name (lua/pi-ide/features/tools/init.lua).
        handler: &'static str,
        args: Value,
    },
    /// A review to show (reviews/): the agent's proposal, staged.
    ReviewOpened(ReviewOpened),
    /// The numbers of review `req`, counted after it was handed to Lua.
    ReviewStats {
        req: u64,
        stats: Value,
    },
    /// The core ended review `req`, which Lua shows: its agent closed it or opened another of
    /// its name (`result` "rejected"), or its client left ("abandoned"; `reason`: why the
    /// editor closed the connection, when it did). Lua takes it away.
    ReviewEnded {
        req: u64,
        result: &'static str,
        reason: Option<String>,
    },
    /// The cursor has been still for the debounce time: Lua should send the current state.
    SelectionDue,
    /// The answer to a request Lua sent to an agent (see requests.rs): a result, an error
    /// from the agent, or ours (timed out, agent gone).
    Response {
        req: u64,
        #[serde(flatten)]
        outcome: Outcome,
    },
}

/// A review as Lua shows it.
#[derive(Debug, Serialize)]
pub struct ReviewOpened {
    pub req: u64,
    pub client: u64,
    pub tab_name: String,
    /// The file that will be written, shown and diffed against.
    pub path: String,
    /// The file the agent says it replaces (the same, mostly).
    pub old_path: String,
    /// The agent writes its own proposal after an accept; the text accepted is set over it.
    pub agent_writes: bool,
    #[serde(flatten)]
    pub staged: StagedView,
}

/// The file on disk, as Lua shows it in the left pane.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct OldFile {
    pub exists: bool,
    /// It starts with a UTF-8 byte order mark (the staged copy does not).
    pub bom: bool,
    /// It is UTF-8 (else Lua decodes it as Neovim would the file).
    pub utf8: bool,
    /// Why it could not be read (shown; diffed as empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where it was staged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// How the proposal ends and breaks its lines, as Lua sets 'eol', 'fileformat' and 'bomb'.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct NewFile {
    pub eol: bool,
    pub crlf: bool,
    pub bom: bool,
    pub bytes: usize,
}

/// What Lua needs to show a review: where the proposal and the file on disk were staged, their
/// forms, what the panes cannot show, or why the review cannot be shown at all.
#[derive(Debug, Default, Serialize)]
pub struct StagedView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_file: Option<String>,
    pub old: OldFile,
    pub new: NewFile,
    pub format_changes: Vec<&'static str>,
    /// Where the file really is, through every link (support/real.rs), as staging found it:
    /// what the review judges (outside the workspace?) and what an accept checks the file
    /// still leads to. None: it could not be told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    /// The path is not its real target (a link on the way): the review names both.
    pub linked: bool,
    /// Set when the review cannot be shown: Lua says so, and it is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage_error: Option<String>,
}


/// A response's outcome: `result`, or `error` with `code` and `message`.
#[derive(Debug)]
pub struct Outcome(pub Result<Value, RpcError>);

impl From<Result<Value, RpcError>> for Outcome {
    fn from(r: Result<Value, RpcError>) -> Self {
        Outcome(r)
    }
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        match &self.0 {
            Ok(v) => map.serialize_entry("result", v)?,
            Err(e) => map.serialize_entry("error", e)?,
        }
        map.end()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warn,
    Error,
}

pub struct EventQueue {
    tx: mpsc::Sender<Event>,
    rx: Mutex<mpsc::Receiver<Event>>,
    /// How Neovim is woken (the handle Lua created; attached at start, detached at stop).
    pub waker: Waker,
}

impl Default for EventQueue {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        EventQueue {
            tx,
            rx: Mutex::new(rx),
            waker: Waker::default(),
        }
    }
}

impl EventQueue {
    /// Queues an event for Lua, waiting for room. Returns false once the editor has stopped.
    pub async fn push(&self, event: Event) -> bool {
        if self.tx.send(event).await.is_err() {
            return false;
        }
        self.waker.wake();
        true
    }

    /// Tells the user something (see [`Event::Notice`]); also logged.
    pub async fn notice(&self, key: &'static str, level: Level, message: String) {
        match level {
            Level::Error => crate::error!("{message}"),
            Level::Warn => crate::warn!("{message}"),
            Level::Info => crate::info!("{message}"),
        }
        self.push(Event::Notice { key, level, message }).await;
    }

    /// [`EventQueue::push`] for threads outside the runtime (the debounce thread).
    pub fn push_blocking(&self, event: Event) -> bool {
        if self.tx.blocking_send(event).is_err() {
            return false;
        }
        self.waker.wake();
        true
    }

    /// Takes up to [`DRAIN_BATCH`] events. If more are waiting, asks for another wake so the
    /// main loop gets a turn in between.
    pub fn drain(&self) -> Vec<Event> {
        self.waker.clear_pending();
        let mut rx = self.rx.lock();
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

    /// Closes the queue: pending and future pushes fail at once, so no task waits on Lua.
    pub fn close(&self) {
        let mut rx = self.rx.lock();
        rx.close();
        while rx.try_recv().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_is_bounded() {
        let q = EventQueue::default();
        for i in 0..(DRAIN_BATCH as u64 + 5) {
            q.push(Event::ClientConnected { client: i }).await;
        }
        assert_eq!(q.drain().len(), DRAIN_BATCH);
        assert_eq!(q.drain().len(), 5);
        assert!(q.drain().is_empty());
        q.close();
        assert!(!q.push(Event::SelectionDue).await, "closed: refused at once");
    }
}
