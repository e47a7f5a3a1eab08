//! Requests the editor sends to an agent (getSuggestions, listSuggestionModels): they go to the
//! client that initialized most recently, are matched to their answers by id, can be cancelled
//! (`request_cancelled`, and a late answer is dropped), and end quietly after a timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::events::Event;
use super::outbox::Queued;
use crate::debug;
use crate::protocol::jsonrpc::{self, Id, RpcError};

/// Our error code for a request that timed out (the agent's own cancel code is -32800).
pub const TIMED_OUT: i64 = -32001;

/// Why a request to an agent could not be sent. Lua compares the code, never the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// No client has initialized (no agent to ask).
    NoAgent,
    /// The agent is on its way out (its connection is closing).
    Disconnecting,
    /// The server is not running.
    NotRunning,
}

impl SendError {
    /// What Lua sees: a stable code to compare ...
    pub fn code(self) -> &'static str {
        match self {
            SendError::NoAgent => "no_agent",
            SendError::Disconnecting => "disconnecting",
            SendError::NotRunning => "not_running",
        }
    }

    /// ... and a sentence for the user.
    pub fn message(self) -> &'static str {
        match self {
            SendError::NoAgent => "no agent is connected (in Pi, run /ide)",
            SendError::Disconnecting => "the agent is disconnecting",
            SendError::NotRunning => "the server is not running",
        }
    }

    pub const ALL: [SendError; 3] = [
        SendError::NoAgent,
        SendError::Disconnecting,
        SendError::NotRunning,
    ];
}

/// A request sent: its number, and the older request of the same method it replaced before
/// that one was written (it gets no answer; the caller ends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requested {
    pub req: u64,
    pub superseded: Option<u64>,
}

struct Outgoing {
    client: u64,
    method: String,
}

/// Requests sent to agents and waiting for their answers, by number.
#[derive(Default)]
pub struct OutgoingRequests {
    map: Mutex<HashMap<u64, Outgoing>>,
}

impl OutgoingRequests {
    pub fn insert(&self, req: u64, client: u64, method: &str) {
        let o = Outgoing {
            client,
            method: method.to_owned(),
        };
        self.map.lock().insert(req, o);
    }

    /// Stops waiting for a request; returns the client it went to. None when nothing waited.
    pub fn remove(&self, req: u64) -> Option<u64> {
        self.map.lock().remove(&req).map(|o| o.client)
    }

    /// An answer from `client` to `req`: true when it was waited for (and now is not). An
    /// answer from another client than the one asked is not taken.
    pub fn take_answer(&self, client: u64, req: u64) -> bool {
        let mut map = self.map.lock();
        match map.get(&req) {
            Some(o) if o.client == client => {
                map.remove(&req);
                true
            }
            _ => false,
        }
    }

    /// Stops waiting for every request of a client that left; returns (number, method) of each.
    pub fn forget_client(&self, client: u64) -> Vec<(u64, String)> {
        let gone = crate::state::clients::take_entries_of(&mut self.map.lock(), client, |o| o.client);
        gone.into_iter().map(|(r, o)| (r, o.method)).collect()
    }

    pub fn count(&self) -> usize {
        self.map.lock().len()
    }
}

impl super::Shared {
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
        self.events.push(Event::Response { req, outcome: outcome.into() }).await;
    }

    /// An answer from `client`. Returns the event for Lua, or None when nothing waits for it
    /// (cancelled, timed out, or not ours).
    pub fn answer(&self, client: u64, id: &Id, outcome: Result<Value, RpcError>) -> Option<Event> {
        let req: u64 = id.raw().parse().ok()?;
        if self.outgoing.take_answer(client, req) {
            Some(Event::Response { req, outcome: outcome.into() })
        } else {
            debug!("client {client}: late or unknown answer to {}", id.raw());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::events::Outcome;
    use crate::state::Shared;
    use crate::state::events::Event;
    use crate::protocol::jsonrpc::{Id, RpcError};
    use serde_json::{json, Value};
    use std::sync::Arc;
    use std::time::Duration;

    fn frame(rx: &mut std::sync::Arc<crate::state::outbox::Outbox>) -> Value {
        rx.next_json()
    }

    #[tokio::test]
    async fn requests_go_to_the_latest_client_and_answers_match_by_id() {
        let shared = Arc::new(Shared::default());
        assert!(
            shared.request("getSuggestions", &json!({}), None).is_err(),
            "no client: an error"
        );
        let mut a = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        let b = shared.clients.add(2, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(2, None, None);
        shared.clients.mark_initialized(1, None, None);
        let req = shared
            .request("getSuggestions", &json!({"cursorBefore": "x"}), None)
            .unwrap()
            .req;
        let f = frame(&mut a);
        assert!(
            b.take(true).is_none(),
            "went to the client that initialized first"
        );
        assert_eq!(f["method"], "getSuggestions");
        assert_eq!(f["id"], req);
        // An answer from the wrong client is not taken.
        assert!(shared
            .answer(2, &Id::from_u64(req), Ok(json!({})))
            .is_none());
        match shared.answer(1, &Id::from_u64(req), Ok(json!({"suggestions": ["a"]}))) {
            Some(Event::Response {
                req: r,
                outcome: Outcome(Ok(v)),
            }) => {
                assert_eq!(r, req);
                assert_eq!(v["suggestions"][0], "a");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            shared
                .answer(1, &Id::from_u64(req), Ok(json!({})))
                .is_none(),
            "answered once"
        );
    }

    #[tokio::test]
    async fn cancel_tells_the_agent_and_drops_the_late_answer() {
        let shared = Arc::new(Shared::default());
        let mut a = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(1, None, None);
        let req = shared.request("getSuggestions", &json!({}), None).unwrap()
            .req;
        frame(&mut a);
        assert!(shared.cancel(req));
        let n = frame(&mut a);
        assert_eq!(n["method"], "request_cancelled");
        assert_eq!(n["params"]["id"], req);
        assert!(n.get("id").is_none());
        assert!(!shared.cancel(req), "twice is nothing");
        assert!(shared
            .answer(
                1,
                &Id::from_u64(req),
                Err(RpcError::new(-32800, "cancelled"))
            )
            .is_none());
    }

    #[tokio::test]
    async fn a_request_not_yet_written_is_replaced_or_cancelled_without_a_word_on_the_wire() {
        let shared = Arc::new(Shared::default());
        let a = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(1, None, None);
        // The agent reads nothing meanwhile (suspended): its queue does not drain.
        let first = shared.request("getSuggestions", &json!({}), None).unwrap();
        assert!(shared.cancel(first.req), "cancelled before it went out");
        let second = shared.request("getSuggestions", &json!({}), None).unwrap();
        assert_eq!(second.superseded, None);
        let third = shared.request("getSuggestions", &json!({}), None).unwrap();
        assert_eq!(third.superseded, Some(second.req), "at most one waits");
        assert_eq!(shared.snapshot().requests_in_flight, 1);
        let f = a.next_json();
        assert_eq!(f["id"], third.req, "only the newest goes out");
        assert!(a.take(true).is_none(), "no request_cancelled for what never went out");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_times_out_quietly() {
        let shared = Arc::new(Shared::default());
        shared.set_runtime(tokio::runtime::Handle::current());
        let mut a = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(1, None, None);
        let req = shared
            .request(
                "getSuggestions",
                &json!({}),
                Some(Duration::from_millis(500)),
            )
            .unwrap()
            .req;
        frame(&mut a);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(frame(&mut a)["method"], "request_cancelled");
        match &shared.events.drain()[..] {
            [Event::Response {
                req: r,
                outcome: Outcome(Err(e)),
            }] => {
                assert_eq!(*r, req);
                assert_eq!(e.code, TIMED_OUT);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_disconnect_fails_that_clients_requests() {
        let shared = Arc::new(Shared::default());
        let _a = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(1, None, None);
        let req = shared
            .request("listSuggestionModels", &json!({}), None)
            .unwrap()
            .req;
        match &shared.forget_client(1, None)[..] {
            [Event::Response {
                req: r,
                outcome: Outcome(Err(e)),
            }, Event::ClientDisconnected { .. }] => {
                assert_eq!(*r, req);
                assert!(e.message.contains("closed"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(shared.snapshot().requests_in_flight, 0);
    }
}
