//! The connected clients: the agent each came as, its outbox and what it said about itself, and
//! the counts read on hot paths (initialized clients, on every cursor move) as atomics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::agents::Agent;
use crate::state::outbox::{Cancelled, Outbox, Queued};

struct Client {
    /// The agent it came as (its transport and header told).
    agent: &'static Agent,
    /// The launch it came from, when Neovim launched it with a lockfile of its own.
    tag: Option<String>,
    /// What waits to be written to it (bounded; see outbox.rs).
    outbox: Arc<Outbox>,
    /// Sent `initialize`: it gets notifications from now on.
    initialized: bool,
    /// Order of initialization: requests go to the client that initialized last.
    initialized_seq: u64,
    name: Option<String>,
    version: Option<String>,
    /// The folder its relative paths are resolved against, when it said (mcp/methods.rs).
    folder: Option<std::path::PathBuf>,
    /// The session's title, when the agent gives one (a tool of the SessionName hook).
    session_name: Option<String>,
    connected_at: SystemTime,
    /// Its last tool call: a call after a quiet time starts a turn (checkpoints).
    last_call: Option<std::time::Instant>,
}

/// What `:PiIde status` shows of a client.
#[derive(Debug, Clone)]
pub struct ClientStatus {
    pub id: u64,
    pub agent: &'static Agent,
    pub tag: Option<String>,
    pub name: Option<String>,
    pub version: Option<String>,
    pub session_name: Option<String>,
    pub connected_at: SystemTime,
}

pub struct Clients {
    map: Mutex<HashMap<u64, Client>>,
    /// How many clients are initialized (read on every cursor move, so an atomic).
    initialized: AtomicUsize,
    /// Client slots taken (upgraded, or passed the check and being upgraded).
    slots: AtomicUsize,
    seq: AtomicU64,
    /// Bytes that may wait for one client.
    max_outbox_bytes: usize,
}

impl Clients {
    pub fn new(max_outbox_bytes: usize) -> Clients {
        Clients {
            map: Mutex::new(HashMap::new()),
            initialized: AtomicUsize::new(0),
            slots: AtomicUsize::new(0),
            seq: AtomicU64::new(1),
            max_outbox_bytes,
        }
    }

    /// Registers a client that completed the upgrade; returns where its outbound frames wait.
    pub fn add(&self, client: u64, agent: &'static Agent, tag: Option<String>) -> Arc<Outbox> {
        let outbox = Arc::new(Outbox::new(self.max_outbox_bytes));
        let entry = Client {
            agent,
            tag,
            outbox: outbox.clone(),
            initialized: false,
            initialized_seq: 0,
            name: None,
            version: None,
            folder: None,
            session_name: None,
            connected_at: SystemTime::now(),
            last_call: None,
        };
        self.map.lock().insert(client, entry);
        outbox
    }

    /// Forgets a client (its socket is gone) and releases its slot. Returns what it was
    /// (None when unknown).
    pub fn remove(&self, client: u64) -> Option<ClientStatus> {
        let c = self.map.lock().remove(&client)?;
        if c.initialized {
            self.initialized.fetch_sub(1, Ordering::AcqRel);
        }
        self.release();
        Some(status_of(client, &c))
    }

    /// Records the title the agent gives its session.
    pub fn set_session_name(&self, client: u64, name: &str) {
        if let Some(c) = self.map.lock().get_mut(&client) {
            c.session_name = Some(name.to_owned());
        }
    }

    /// Marks a client initialized (once), so that it receives notifications.
    pub fn mark_initialized(&self, client: u64, name: Option<String>, version: Option<String>) {
        if let Some(c) = self.map.lock().get_mut(&client) {
            if !c.initialized {
                c.initialized = true;
                self.initialized.fetch_add(1, Ordering::AcqRel);
            }
            c.initialized_seq = self.seq.fetch_add(1, Ordering::Relaxed);
            c.name = name;
            c.version = version;
        }
    }

    /// Notes the folder `client` resolves its relative paths against.
    pub fn set_folder(&self, client: u64, folder: Option<std::path::PathBuf>) {
        if let Some(c) = self.map.lock().get_mut(&client) {
            c.folder = folder;
        }
    }

    /// The folder `client` resolves its relative paths against, when it said.
    pub fn folder_of(&self, client: u64) -> Option<std::path::PathBuf> {
        self.map.lock().get(&client).and_then(|c| c.folder.clone())
    }

    pub fn initialized_count(&self) -> usize {
        self.initialized.load(Ordering::Acquire)
    }

    /// Takes a slot for a client about to be upgraded, if fewer than `max` are taken.
    pub fn reserve(&self, max: usize) -> bool {
        self.slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Releases a slot (a client left, or its upgrade failed after the check).
    pub fn release(&self) {
        let _ = self
            .slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// The agent a client came as (the home agent when it is gone: nothing will be sent).
    /// Notes a tool call of `client`; how long it had been quiet (`None`: its first call).
    pub fn called(&self, client: u64) -> Option<std::time::Duration> {
        let mut map = self.map.lock();
        let c = map.get_mut(&client)?;
        let now = std::time::Instant::now();
        c.last_call.replace(now).map(|t| now - t)
    }

    pub fn agent_of(&self, client: u64) -> &'static Agent {
        self.map
            .lock()
            .get(&client)
            .map_or(crate::agents::HOME, |c| c.agent)
    }

    /// The client that came from the launch tagged `tag`, the newest if several did.
    pub fn tagged(&self, tag: &str) -> Option<u64> {
        let map = self.map.lock();
        let ours = map.iter().filter(|(_, c)| c.tag.as_deref() == Some(tag));
        ours.map(|(id, _)| *id).max()
    }

    fn outbox_of(&self, client: u64) -> Option<Arc<Outbox>> {
        self.map.lock().get(&client).map(|c| c.outbox.clone())
    }

    /// Queues the answer to one of a client's calls (never dropped). False when it is gone.
    pub fn answer_to(&self, client: u64, frame: String) -> bool {
        self.outbox_of(client).is_some_and(|o| o.push_answer(frame))
    }

    /// Queues a request of ours for a client (see [`Outbox::push_request`]); None when it is
    /// gone.
    pub fn request_to(&self, client: u64, req: u64, method: &str, frame: String) -> Option<Queued> {
        Some(self.outbox_of(client)?.push_request(req, method, frame))
    }

    /// `request_cancelled` for a request of ours (see [`Outbox::push_cancel`]).
    pub fn cancel_to(&self, client: u64, req: u64, frame: String) -> Cancelled {
        match self.outbox_of(client) {
            Some(o) => o.push_cancel(req, frame),
            None => Cancelled::Closing,
        }
    }

    /// Queues the selection frame (already as its agent reads it) for one client (latest wins).
    pub fn selection_to(&self, client: u64, frame: String) {
        if let Some(o) = self.outbox_of(client) {
            o.set_selection(frame);
        }
    }

    /// Sends notification `method` to every initialized client, as its agent reads it.
    /// Returns how many got it.
    pub fn broadcast(&self, method: &str, params: &serde_json::Value) -> usize {
        let mut frames = Frames::new(method, params);
        self.map
            .lock()
            .values()
            .filter(|c| c.initialized)
            .filter(|c| {
                let frame = frames.get(c.agent);
                frame.is_some_and(|f| c.outbox.push_notification(f))
            })
            .count()
    }

    /// The selection as it is now, for every initialized client (latest wins).
    pub fn set_selection(&self, params: &serde_json::Value) {
        let mut frames = Frames::new("selection_changed", params);
        for c in self.map.lock().values().filter(|c| c.initialized) {
            if let Some(f) = frames.get(c.agent) {
                c.outbox.set_selection(f);
            }
        }
    }

    /// The client requests go to: the one that initialized most recently of those that take
    /// requests.
    pub fn request_target(&self) -> Option<u64> {
        newest_initialized(&self.map.lock()).map(|(id, _)| id)
    }

    /// The agent suggestions go to: the client requests go to, if it said its name.
    pub fn agent(&self) -> Option<ClientStatus> {
        newest_initialized(&self.map.lock()).map(|(id, c)| status_of(id, c))
    }

    /// The initialized clients (the agents connected), by id.
    pub fn agents(&self) -> Vec<ClientStatus> {
        let mut list: Vec<ClientStatus> = (self.map.lock().iter())
            .filter(|(_, c)| c.initialized)
            .map(|(id, c)| status_of(*id, c))
            .collect();
        list.sort_by_key(|c| c.id);
        list
    }

    /// Every client, by id.
    pub fn statuses(&self) -> Vec<ClientStatus> {
        let mut list: Vec<ClientStatus> = self
            .map
            .lock()
            .iter()
            .map(|(id, c)| status_of(*id, c))
            .collect();
        list.sort_by_key(|c| c.id);
        list
    }
}

/// A notification's frame per agent, built once for all the clients of that agent.
struct Frames<'a> {
    method: &'a str,
    params: &'a serde_json::Value,
    built: Vec<(&'static Agent, Option<String>)>,
}

impl<'a> Frames<'a> {
    fn new(method: &'a str, params: &'a serde_json::Value) -> Self {
        Frames { method, params, built: Vec::new() }
    }

    fn get(&mut self, agent: &'static Agent) -> Option<String> {
        if let Some((_, f)) = self.built.iter().find(|(a, _)| *a == agent) {
            return f.clone();
        }
        let f = (agent.notification)(self.method, self.params);
        self.built.push((agent, f.clone()));
        f
    }
}

fn newest_initialized(map: &HashMap<u64, Client>) -> Option<(u64, &Client)> {
    map.iter()
        .filter(|(_, c)| c.initialized && c.agent.takes_requests)
        .max_by_key(|(_, c)| c.initialized_seq)
        .map(|(id, c)| (*id, c))
}

fn status_of(id: u64, c: &Client) -> ClientStatus {
    ClientStatus {
        id,
        agent: c.agent,
        tag: c.tag.clone(),
        name: c.name.clone(),
        version: c.version.clone(),
        session_name: c.session_name.clone(),
        connected_at: c.connected_at,
    }
}

/// Takes out of `table` every entry of `client` (`owner` says whose an entry is), in order of
/// their numbers: what a client leaves behind when its socket goes.
pub fn take_entries_of<V>(
    table: &mut HashMap<u64, V>,
    client: u64,
    owner: impl Fn(&V) -> u64,
) -> Vec<(u64, V)> {
    let mut keys: Vec<u64> = table
        .iter()
        .filter(|(_, v)| owner(v) == client)
        .map(|(k, _)| *k)
        .collect();
    keys.sort_unstable();
    keys.into_iter()
        .filter_map(|k| table.remove(&k).map(|v| (k, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_to_the_client_that_initialized_last_and_slots_come_back() {
        let c = Clients::new(1 << 20);
        assert!(c.reserve(2) && c.reserve(2) && !c.reserve(2));
        let a = c.add(1, &crate::agents::pi::AGENT, None);
        // Another agent that takes requests.
        let other = *crate::agents::ALL.iter().find(|a| !std::ptr::eq(**a, crate::agents::HOME) && a.takes_requests).unwrap();
        let _b = c.add(2, other, Some("chat".into()));
        assert_eq!(c.request_target(), None, "nobody initialized yet");
        c.mark_initialized(1, Some("pi-ide".into()), None);
        c.mark_initialized(2, Some("other".into()), None);
        assert_eq!(c.request_target(), Some(2));
        c.mark_initialized(1, Some("pi-ide".into()), None);
        assert_eq!(c.request_target(), Some(1), "initializing again makes it the latest");
        assert_eq!(c.initialized_count(), 2);
        assert_eq!(c.agent_of(2), other);
        assert_eq!(c.tagged("chat"), Some(2));
        assert_eq!(c.tagged("other"), None);
        assert_eq!(c.broadcast("x", &serde_json::json!({})), 2);
        let x = crate::protocol::jsonrpc::notification_frame("x", &serde_json::json!({}));
        assert_eq!(a.take(true), Some(crate::state::outbox::Outbound::Frame(x)));
        assert!(c.answer_to(2, "y".into()));
        assert!(!c.answer_to(9, "z".into()), "no such client");
        assert_eq!(c.agent().and_then(|a| a.name).as_deref(), Some("pi-ide"));
        assert_eq!(c.remove(1).and_then(|c| c.name).as_deref(), Some("pi-ide"));
        assert!(c.remove(1).is_none(), "removed once");
        assert_eq!(c.agent().and_then(|a| a.name).as_deref(), Some("other"));
        assert_eq!(c.initialized_count(), 1);
        assert_eq!(c.request_target(), Some(2));
        assert!(c.reserve(2), "its slot came back");
        assert_eq!(c.statuses().iter().map(|s| s.id).collect::<Vec<_>>(), vec![2]);
    }
}
