//! Tool calls parked for Lua: each answered exactly once, by Lua, by its fallback timer when
//! Neovim's main loop is held up, or with its abandon answer when the editor or the client goes.
//! (The table is parked.rs; reviews have their own: reviews/.)

use std::sync::Arc;

use serde_json::Value;

use super::diagnostics;
use super::events::Event;
use super::parked::Parked;
use super::Shared;
use crate::protocol::jsonrpc::{self, Id, RpcError};
use crate::protocol::tools::{Hook, Tool};
use crate::warn;

impl Shared {
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
        let call = Parked {
            client,
            id,
            tool,
            args: tool.fallback.as_ref().map(|_| args.clone()),
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
        let outcome = outcome.and_then(|v| agent.shape(p.tool, v, None));
        let outcome = p.tool.owed(outcome, None);
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
        let shaped = agent.shape(p.tool, answer, None);
        let outcome = p.tool.owed(shaped, None);
        self.clients
            .answer_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }

    /// Answers a parked call with its tool's abandon answer (the editor is going away).
    pub(super) fn abandon(&self, req: u64) {
        let Some(p) = self.parked.take(req) else {
            return;
        };
        let outcome = p.tool.abandoned(None);
        self.clients
            .answer_to(p.client, jsonrpc::outcome_frame(&p.id, &outcome));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc;
    use serde_json::json;
    use std::time::Duration;
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
