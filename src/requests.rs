//! Requests the editor sends to an agent (getSuggestions, listSuggestionModels): they go to the
//! client that initialized most recently, are matched to their answers by id, can be cancelled
//! (`request_cancelled`, and a late answer is dropped), and end quietly after a timeout.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::bridge::{Event, Shared};
use crate::jsonrpc::{self, Id, RpcError, INTERNAL_ERROR};
use crate::{debug, warn};

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

pub struct Outgoing {
    pub client: u64,
    pub method: String,
}

impl Shared {
    /// The client requests go to: the one that initialized most recently.
    pub fn request_target(&self) -> Option<u64> {
        self.clients
            .lock()
            .iter()
            .filter(|(_, c)| c.initialized)
            .max_by_key(|(_, c)| c.initialized_seq)
            .map(|(id, _)| *id)
    }

    /// Sends a request; its answer comes back as [`Event::Response`] with the returned number.
    pub fn request(
        self: &Arc<Self>,
        method: &str,
        params: &Value,
        timeout: Option<Duration>,
    ) -> Result<u64, SendError> {
        let client = self.request_target().ok_or(SendError::NoAgent)?;
        let req = self.next_id();
        self.outgoing.lock().insert(
            req,
            Outgoing {
                client,
                method: method.to_owned(),
            },
        );
        let frame = jsonrpc::request_frame(&Id::from_u64(req), method, params);
        if !self.send_to(client, frame) {
            self.outgoing.lock().remove(&req);
            return Err(SendError::Disconnecting);
        }
        if let (Some(t), Some(rt)) = (timeout, self.runtime.get()) {
            let shared = self.clone();
            rt.spawn(async move {
                tokio::time::sleep(t).await;
                shared.time_out(req, t);
            });
        }
        Ok(req)
    }

    /// Cancels a request: the agent is told (`request_cancelled`), and its answer, if one still
    /// comes, is dropped. False when it was already answered.
    pub fn cancel(&self, req: u64) -> bool {
        let Some(o) = self.outgoing.lock().remove(&req) else {
            return false;
        };
        let frame = jsonrpc::notification_frame("request_cancelled", &json!({ "id": req }));
        self.send_to(o.client, frame);
        true
    }

    fn time_out(&self, req: u64, after: Duration) {
        if self.cancel(req) {
            debug!("request {req} timed out after {after:?}");
            let outcome = Err(RpcError::new(
                TIMED_OUT,
                format!("no answer within {} ms", after.as_millis()),
            ));
            self.push_blocking_or_drop(Event::Response { req, outcome });
        }
    }

    /// An answer from `client`. Returns the event for Lua, or None when nothing waits for it
    /// (cancelled, timed out, or not ours).
    pub fn answer(&self, client: u64, id: &Id, outcome: Result<Value, RpcError>) -> Option<Event> {
        let req: u64 = id.raw().parse().ok()?;
        let mut outgoing = self.outgoing.lock();
        match outgoing.get(&req) {
            Some(o) if o.client == client => {
                outgoing.remove(&req);
                Some(Event::Response { req, outcome })
            }
            _ => {
                debug!("client {client}: late or unknown answer to {}", id.raw());
                None
            }
        }
    }

    /// The client left: every request it had is answered with an error for Lua.
    pub fn fail_requests_of(&self, client: u64) -> Vec<Event> {
        let mut outgoing = self.outgoing.lock();
        let gone: Vec<u64> = outgoing
            .iter()
            .filter(|(_, o)| o.client == client)
            .map(|(r, _)| *r)
            .collect();
        gone.into_iter()
            .map(|req| {
                let method = outgoing.remove(&req).map(|o| o.method).unwrap_or_default();
                warn!("request {req} ({method}) lost: the agent disconnected");
                Event::Response {
                    req,
                    outcome: Err(RpcError::new(INTERNAL_ERROR, "IDE connection closed")),
                }
            })
            .collect()
    }

    /// Queues an event from a timer task without waiting for room: if Lua is that far behind,
    /// a timed-out request's notice is not worth blocking the runtime for.
    fn push_blocking_or_drop(&self, event: Event) {
        if self.try_push(event) {
            return;
        }
        debug!("event queue full; dropped a timeout notice");
    }

    /// Requests waiting for an answer.
    pub fn outgoing_count(&self) -> usize {
        self.outgoing.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;


    fn frame(rx: &mut std::sync::Arc<crate::outbox::Outbox>) -> Value {
        rx.next_json()
    }

    #[tokio::test]
    async fn requests_go_to_the_latest_client_and_answers_match_by_id() {
        let shared = Arc::new(Shared::default());
        assert!(
            shared.request("getSuggestions", &json!({}), None).is_err(),
            "no client: an error"
        );
        let mut a = shared.add_client(1);
        let b = shared.add_client(2);
        shared.mark_initialized(2, None, None);
        shared.mark_initialized(1, None, None);
        let req = shared
            .request("getSuggestions", &json!({"cursorBefore": "x"}), None)
            .unwrap();
        let f = frame(&mut a);
        assert!(
            b.take().is_none(),
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
                outcome: Ok(v),
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
        let mut a = shared.add_client(1);
        shared.mark_initialized(1, None, None);
        let req = shared.request("getSuggestions", &json!({}), None).unwrap();
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

    #[tokio::test(start_paused = true)]
    async fn a_request_times_out_quietly() {
        let shared = Arc::new(Shared::default());
        shared
            .runtime
            .set(tokio::runtime::Handle::current())
            .unwrap();
        let mut a = shared.add_client(1);
        shared.mark_initialized(1, None, None);
        let req = shared
            .request(
                "getSuggestions",
                &json!({}),
                Some(Duration::from_millis(500)),
            )
            .unwrap();
        frame(&mut a);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(frame(&mut a)["method"], "request_cancelled");
        match &shared.drain()[..] {
            [Event::Response {
                req: r,
                outcome: Err(e),
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
        let _a = shared.add_client(1);
        shared.mark_initialized(1, None, None);
        let req = shared
            .request("listSuggestionModels", &json!({}), None)
            .unwrap();
        match &shared.fail_requests_of(1)[..] {
            [Event::Response {
                req: r,
                outcome: Err(e),
            }] => {
                assert_eq!(*r, req);
                assert!(e.message.contains("closed"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(shared.outgoing_count(), 0);
    }
}
