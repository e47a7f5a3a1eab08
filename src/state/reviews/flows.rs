//! The ways out of a review, as they answer its agent and tell Lua: the user's decision (an
//! accept may go on to set the file after the agent's own write: own_write.rs), its
//! agent closing it, another review taking its name. (A client leaving and the editor stopping
//! are in leaving.rs, with the calls they also answer.)

use std::sync::Arc;

use super::{Review, Stage};
use crate::protocol::jsonrpc;
use crate::protocol::tools::{Verdict, Writes};
use crate::state::events::Event;
use crate::state::Shared;

impl Shared {
    /// Answers a review that ended with `verdict`, in its tool's shape as its agent reads it.
    /// Its staged files go with it.
    pub(in crate::state) fn answer_review(&self, r: &Review, verdict: &Verdict) {
        let Some(args) = r.tool.review() else {
            return;
        };
        let tab = Some(r.tab.as_str());
        let agent = self.clients.agent_of(r.client);
        let shaped = agent.shape(r.tool, args.answer(verdict, &r.tab), tab);
        let outcome = r.tool.owed(shaped, tab);
        self.clients.answer_to(r.client, jsonrpc::outcome_frame(&r.id, &outcome));
    }

    /// The user decided review `req` (Lua). False when it had ended already: nothing is sent.
    pub fn decide(&self, req: u64, verdict: Verdict) -> bool {
        let Some(r) = self.reviews.take(req) else {
            return false;
        };
        self.answer_review(&r, &verdict);
        true
    }

    /// The user accepted review `req` with `text` (`note`: what they did not keep as proposed).
    /// When its agent writes its own proposal unannounced, the file is set to `text` once that
    /// write lands (own_write.rs). The blob id of the file its left pane showed, when it was
    /// read (what the user saw as "before"); None when it had ended already: nothing is sent.
    pub fn accept(self: &Arc<Self>, req: u64, text: String, note: Option<String>) -> Option<Option<String>> {
        let mut r = self.reviews.take(req)?;
        // The user's hunks and edits may add up to the proposal again: nothing to tell then.
        let note = note.filter(|_| r.watched.as_ref().is_none_or(|w| w.proposal != text));
        let verdict = Verdict::Accepted(text, note);
        self.answer_review(&r, &verdict);
        let writes = r.tool.review().map(|args| args.writes);
        if let (Some(w), Some(Writes::ProposalWatched { model_told }), Verdict::Accepted(text, _)) = (r.watched.take(), writes, verdict) {
            super::own_write::start(self, w, text, model_told);
        }
        Some(r.shown_blob.take())
    }

    /// Lua has read the files staged for review `req`: they go now.
    pub fn release_staged(&self, req: u64) {
        self.reviews.release_staged(req);
    }

    /// `client` closes its review named `tab`, staging or shown: it is answered as closed now.
    /// Returns whether one was open, and the event that takes it off the screen.
    pub fn close_review(&self, client: u64, tab: &str) -> (bool, Option<Event>) {
        match self.reviews.take_named(client, tab) {
            Some(r) => {
                self.answer_review(&r, &Verdict::Closed);
                (true, ended(&r, "rejected", None))
            }
            None => (false, None),
        }
    }

    /// Ends every review of `client` with `verdict` (its agent closed them all, or the chat
    /// aborted its turn). Returns how many, and the events that take them off the screen.
    pub fn end_reviews_of(&self, client: u64, verdict: &Verdict) -> (usize, Vec<Event>) {
        let reviews = self.reviews.take_client(client);
        let events = reviews.iter().filter_map(|r| {
            self.answer_review(r, verdict);
            ended(r, "rejected", None)
        });
        let events = events.collect();
        (reviews.len(), events)
    }
}

/// The event that takes review `r` off the screen, when Lua has it.
pub(in crate::state) fn ended(r: &Review, result: &'static str, reason: Option<String>) -> Option<Event> {
    (r.stage == Stage::Waiting).then(|| Event::ReviewEnded { req: r.req, result, reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::Id;
    use crate::state::reviews::{Begin, StagedFiles};
    use serde_json::Value;

    /// Review `req` of `client` for `agent`'s review tool, begun (and, when `shown`, handed to Lua).
    fn review(shared: &Shared, agent: &'static crate::agents::Agent, req: u64, tab: &str, shown: bool) {
        let tool = agent.tools.iter().find(|t| t.review().is_some()).unwrap();
        let begin = Begin { req, client: 1, id: Id::from_u64(req), tool, tab, size: 1, max_bytes: 1 << 20 };
        assert!(shared.reviews.begin(begin).unwrap().is_none());
        if shown {
            assert!(shared.reviews.staged(req, StagedFiles::default(), 1, None));
        }
    }

    fn answer(outbox: &crate::state::outbox::Outbox) -> Value {
        outbox.next_json()
    }

    #[test]
    fn a_review_is_answered_once_whoever_ends_it() {
        let shared = Shared::default();
        let outbox = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        review(&shared, &crate::agents::pi::AGENT, 5, "t", true);
        assert!(shared.decide(5, Verdict::Accepted("mine\n".into(), None)));
        let a = answer(&outbox);
        assert_eq!((a["id"].as_u64(), a["result"]["content"][1]["text"].as_str()), (Some(5), Some("mine\n")));
        assert!(!shared.decide(5, Verdict::Rejected), "answered once");
        assert!(!shared.close_review(1, "t").0, "nothing left to close");
        assert!(outbox.take(true).is_none());
    }

    #[test]
    fn a_close_while_staging_is_answered_at_once_and_the_review_never_reaches_lua() {
        let shared = Shared::default();
        let outbox = shared.clients.add(1, crate::agents::HOME, None);
        review(&shared, crate::agents::HOME, 7, "pi-write:a", false);
        let (closed, event) = shared.close_review(1, "pi-write:a");
        assert!(closed && event.is_none(), "Lua never had it");
        let a = answer(&outbox);
        assert_eq!(a["result"]["content"][0]["text"], "DIFF_REJECTED");
        assert!(!shared.reviews.staged(7, StagedFiles::default(), 1, None), "its staging ends to nothing");
    }

    #[test]
    fn a_shown_review_its_agent_closes_is_taken_off_the_screen() {
        let shared = Shared::default();
        let outbox = shared.clients.add(1, &crate::agents::pi::AGENT, None);
        review(&shared, &crate::agents::pi::AGENT, 3, "a", true);
        review(&shared, &crate::agents::pi::AGENT, 4, "b", false);
        match shared.close_review(1, "a") {
            (true, Some(Event::ReviewEnded { req: 3, result: "rejected", reason: None })) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(answer(&outbox)["result"]["content"][0]["text"], "DIFF_REJECTED");
        let (n, events) = shared.end_reviews_of(1, &Verdict::Closed);
        assert_eq!((n, events.len()), (1, 0), "the one staging is closed too, unseen");
        assert_eq!(answer(&outbox)["id"], 4);
    }
}
