//! Clients in this process: each ACP chat brings the changes its agent proposes as calls of
//! the chat's review tools (agents/chat.rs), so that they are reviews like any other agent's
//! (state/reviews/): shown, answered once, taken away when the chat ends or the editor stops.
//! The chat gets each verdict through a callback; a callback dropped unanswered (its client
//! forgotten, the server stopped) answers a rejection, so no proposal is ever left hanging.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::agents::chat::{self, Done, Proposal};
use crate::protocol::jsonrpc::Id;
use crate::protocol::tools::Verdict;
use crate::state::outbox::{Outbound, Outbox};
use crate::state::Shared;

/// A verdict owed; dropped unanswered, it answers a rejection.
struct Owed(Option<Done>);

impl Owed {
    fn answer(mut self, verdict: Verdict) {
        if let Some(done) = self.0.take() {
            done(verdict);
        }
    }
}

impl Drop for Owed {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            done(Verdict::Rejected);
        }
    }
}

/// One chat's client.
struct Local {
    client: u64,
    owed: Mutex<HashMap<u64, Owed>>,
}

/// The chats' clients, by the chat's tag.
#[derive(Default)]
pub struct Locals {
    map: Mutex<HashMap<String, Arc<Local>>>,
}

impl Locals {
    /// Opens the review of `p` for the chat `tag` (named `label` where reviews show their agent).
    pub fn review(&self, shared: &Arc<Shared>, (tag, label): (&str, &str), p: Proposal, done: Done) {
        let Some(rt) = shared.runtime().cloned() else {
            return done(Verdict::Rejected);
        };
        let local = self.local(shared, &rt, tag, label);
        let call = shared.next_id();
        local.owed.lock().insert(call, Owed(Some(done)));
        let tool = if p.agent_writes { chat::PERMISSION } else { chat::WRITE };
        let args = json!({ "tab": p.tab, "path": p.path, "contents": p.contents });
        let shared = shared.clone();
        rt.spawn(async move {
            // Answered now (reviews off, the editor stopping, refused): else through the outbox.
            if let Some(frame) = crate::state::reviews::open::open(local.client, Id::from_u64(call), tool, args, &shared).await {
                local.deliver(&frame);
            }
        });
    }

    /// The chat `tag` ended (or aborted its turn): its reviews are taken away, each answered.
    pub fn end(&self, shared: &Arc<Shared>, tag: &str) {
        let Some(local) = self.map.lock().remove(tag) else {
            return;
        };
        let events = shared.abandon_client(local.client, Some("the chat ended the turn".into()));
        shared.clients.remove(local.client);
        // Queued from the runtime: this may be the main thread, which the queue waits on.
        if let Some(rt) = shared.runtime() {
            let shared = shared.clone();
            rt.spawn(async move {
                for event in events {
                    shared.events.push(event).await;
                }
            });
        }
        // What was not answered through the outbox is rejected as it drops.
        local.owed.lock().clear();
    }

    /// The chat `tag`'s review `tab` goes, answered as closed by its agent.
    pub fn close(&self, shared: &Arc<Shared>, tag: &str, tab: &str) {
        let Some(local) = self.map.lock().get(tag).cloned() else { return };
        let (_, event) = shared.close_review(local.client, tab);
        if let (Some(event), Some(rt)) = (event, shared.runtime()) {
            let shared = shared.clone();
            rt.spawn(async move { shared.events.push(event).await });
        }
    }

    /// The server stops: every chat's reviews not answered yet are rejected.
    pub fn end_all(&self) {
        for (_, local) in self.map.lock().drain() {
            local.owed.lock().clear();
        }
    }

    fn local(&self, shared: &Arc<Shared>, rt: &tokio::runtime::Handle, tag: &str, label: &str) -> Arc<Local> {
        let mut map = self.map.lock();
        if let Some(l) = map.get(tag) {
            return l.clone();
        }
        let client = shared.next_id();
        // Its slot is released when it is forgotten (end); chats are few, so never refused.
        shared.clients.reserve(usize::MAX);
        let outbox = shared.clients.add(client, &chat::AGENT, Some(tag.to_owned()));
        shared.clients.mark_initialized(client, Some(label.to_owned()), None);
        let local = Arc::new(Local { client, owed: Mutex::new(HashMap::new()) });
        rt.spawn(read_answers(Arc::downgrade(&local), outbox));
        map.insert(tag.to_owned(), local.clone());
        local
    }
}

/// Hands each answer in the chat's outbox to the verdict it is owed to, while the chat lives.
async fn read_answers(local: std::sync::Weak<Local>, outbox: Arc<Outbox>) {
    loop {
        let ready = outbox.ready();
        while let Some(Outbound::Frame(frame)) = outbox.take(true) {
            match local.upgrade() {
                Some(l) => l.deliver(&frame),
                None => return,
            }
        }
        if local.strong_count() == 0 {
            return;
        }
        ready.await;
    }
}

impl Local {
    /// An answer to one of our review calls: `FILE_SAVED` and the text accepted, or a rejection.
    fn deliver(&self, frame: &str) {
        let Ok(answer) = serde_json::from_str::<Value>(frame) else { return };
        let Some(call) = answer.get("id").and_then(Value::as_u64) else { return };
        let Some(owed) = self.owed.lock().remove(&call) else { return };
        owed.answer(verdict_of(&answer));
    }
}

fn verdict_of(answer: &Value) -> Verdict {
    let texts = answer.pointer("/result/content").and_then(Value::as_array);
    let text = |i: usize| texts.and_then(|t| t.get(i)).and_then(|v| v.get("text")).and_then(Value::as_str);
    match (text(0), text(1)) {
        (Some("FILE_SAVED"), Some(contents)) => Verdict::Accepted(contents.to_owned(), text(2).map(str::to_owned)),
        _ => Verdict::Rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owed_verdict_dropped_unanswered_is_a_rejection() {
        let (tx, rx) = std::sync::mpsc::channel();
        drop(Owed(Some(Box::new(move |v| tx.send(v).unwrap()))));
        assert_eq!(rx.recv().unwrap(), Verdict::Rejected);
    }

    #[test]
    fn answers_read_as_verdicts() {
        let saved = json!({"id": 1, "result": {"content": [{"type": "text", "text": "FILE_SAVED"}, {"type": "text", "text": "x\n"}]}});
        assert_eq!(verdict_of(&saved), Verdict::Accepted("x\n".into(), None));
        let no = json!({"id": 1, "result": {"content": [{"type": "text", "text": "DIFF_REJECTED"}, {"type": "text", "text": "t"}]}});
        assert_eq!(verdict_of(&no), Verdict::Rejected);
    }
}
