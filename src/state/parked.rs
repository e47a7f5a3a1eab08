//! Tool calls waiting for Lua's answer ("parked"), and, per tool with a fallback, the last
//! answer Lua gave that the fallback may reuse when the main loop is held up. (Reviews are not
//! parked calls: reviews/ owns them.)
//!
//! Only the table lives here; the flow (park, respond, expire, abandon) is in calls.rs, where
//! the event queue and the clients it also touches are.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::Value;

use crate::state::clients::take_entries_of;
use crate::protocol::jsonrpc::Id;
use crate::protocol::tools::Tool;

pub struct Parked {
    pub client: u64,
    pub id: Id,
    pub tool: &'static Tool,
    /// Kept only for tools with a fallback (their arguments are small).
    pub args: Option<Value>,
}

#[derive(Default)]
pub struct ParkedCalls {
    calls: Mutex<HashMap<u64, Parked>>,
    /// Per tool, the last answer Lua gave that its fallback may reuse.
    kept: Mutex<HashMap<&'static str, Value>>,
}

impl ParkedCalls {
    pub fn insert(&self, req: u64, call: Parked) {
        self.calls.lock().insert(req, call);
    }

    /// The number of `client`'s parked call with JSON-RPC id `id`, if one is parked.
    pub fn req_of(&self, client: u64, id: &Id) -> Option<u64> {
        let calls = self.calls.lock();
        calls
            .iter()
            .find(|(_, p)| p.client == client && p.id.raw() == id.raw())
            .map(|(req, _)| *req)
    }

    /// Takes a call out to answer it: whoever takes it answers it, so it is answered once.
    pub fn take(&self, req: u64) -> Option<Parked> {
        self.calls.lock().remove(&req)
    }

    /// Every waiting call's number, in order.
    pub fn reqs(&self) -> Vec<u64> {
        let mut reqs: Vec<u64> = self.calls.lock().keys().copied().collect();
        reqs.sort_unstable();
        reqs
    }

    /// The numbers of one client's waiting calls, in order.
    pub fn reqs_of(&self, client: u64) -> Vec<u64> {
        let mut reqs: Vec<u64> = (self.calls.lock().iter())
            .filter(|(_, p)| p.client == client)
            .map(|(req, _)| *req)
            .collect();
        reqs.sort_unstable();
        reqs
    }

    /// Forgets a client's calls (its socket is gone) and returns their numbers, in order.
    pub fn forget_client(&self, client: u64) -> Vec<u64> {
        let gone = take_entries_of(&mut self.calls.lock(), client, |p| p.client);
        gone.into_iter().map(|(req, _)| req).collect()
    }

    pub fn count(&self) -> usize {
        self.calls.lock().len()
    }

    /// How many calls wait, per client.
    pub fn count_by_client(&self) -> HashMap<u64, usize> {
        let mut n = HashMap::new();
        for p in self.calls.lock().values() {
            *n.entry(p.client).or_insert(0) += 1;
        }
        n
    }

    /// Remembers Lua's answer for the tool's fallback.
    pub fn keep(&self, tool: &'static str, answer: Value) {
        self.kept.lock().insert(tool, answer);
    }

    pub fn kept(&self, tool: &str) -> Option<Value> {
        self.kept.lock().get(tool).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(client: u64) -> Parked {
        Parked {
            client,
            id: Id::from_u64(client),
            tool: crate::agents::pi::AGENT.tool("getDiagnostics").unwrap(),
            args: None,
        }
    }

    #[test]
    fn a_call_is_taken_once_and_a_client_forgets_only_its_own() {
        let p = ParkedCalls::default();
        p.insert(3, call(1));
        p.insert(1, call(2));
        p.insert(2, call(2));
        assert_eq!(p.reqs(), vec![1, 2, 3]);
        assert_eq!(p.count_by_client()[&2], 2);
        assert_eq!(p.forget_client(2), vec![1, 2]);
        assert_eq!(p.count(), 1);
        assert!(p.take(3).is_some());
        assert!(p.take(3).is_none(), "taken once");
        p.keep("getDiagnostics", json!({"a": 1}));
        assert_eq!(p.kept("getDiagnostics"), Some(json!({"a": 1})));
        assert_eq!(p.kept("openFile"), None);
    }

}
