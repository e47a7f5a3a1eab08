//! A client leaving, or the editor stopping: every call and review of theirs is answered
//! before the connection closes (a review as a rejection: the Pi extension writes unreviewed on
//! a silent close), then the client is forgotten, with its requests.

use super::events::Event;
use super::Shared;
use crate::protocol::jsonrpc::{Id, RpcError, INTERNAL_ERROR};
use crate::protocol::tools::Verdict;
use crate::warn;

impl Shared {
    /// The one rule of every close path: before a connection closes, each of its parked calls
    /// and reviews is answered with its abandon answer (a review: DIFF_REJECTED), queued ahead
    /// of the Close. Returns the events for Lua: one per review it takes away (`ReviewEnded`),
    /// then which calls were answered (`Abandoned`). `reason`: why the editor closes it, when
    /// it does.
    pub fn abandon_client(&self, client: u64, reason: Option<String>) -> Vec<Event> {
        let mut reqs = self.parked.reqs_of(client);
        for &req in &reqs {
            self.abandon(req);
        }
        let reviews = self.reviews.take_client(client);
        // The user is told why a review went away: here, its connection closed.
        let why = reason.as_ref().map(|r| format!("the connection was closed ({r})"));
        let mut events: Vec<Event> = reviews
            .iter()
            .filter_map(|r| {
                self.answer_review(r, &Verdict::Rejected);
                super::reviews::ended(r, "abandoned", why.clone())
            })
            .collect();
        reqs.extend(reviews.iter().map(|r| r.req));
        if !reqs.is_empty() {
            reqs.sort_unstable();
            events.push(Event::Abandoned { client, reqs, reason });
        }
        events
    }

    /// One call of a client will never be read (its HTTP request was dropped): it is answered
    /// as abandoned, to no one. Returns the events for Lua (a review: it is taken away).
    pub fn abandon_call(&self, client: u64, id: &Id) -> Vec<Event> {
        let reason = Some("the agent stopped waiting for your decision".to_owned());
        if let Some(req) = self.parked.req_of(client, id) {
            self.abandon(req);
            return vec![Event::Abandoned { client, reqs: vec![req], reason }];
        }
        let Some(r) = self.reviews.take_call(client, id) else {
            return Vec::new();
        };
        self.answer_review(&r, &Verdict::Rejected);
        let ended = super::reviews::ended(&r, "abandoned", reason.clone());
        let abandoned = Event::Abandoned { client, reqs: vec![r.req], reason };
        ended.into_iter().chain([abandoned]).collect()
    }

    /// A client's socket is gone: forgets it, its parked calls, its reviews and its requests.
    /// `reason`: why the editor closed it, if it did. Returns the events for Lua: one per lost
    /// request, one per review taken away, then the disconnect (with the numbers of its calls
    /// and reviews, whose answers are no longer wanted).
    pub fn forget_client(&self, client: u64, reason: Option<String>) -> Vec<Event> {
        let name = self.clients.remove(client).and_then(|c| c.name);
        let mut abandoned = self.parked.forget_client(client);
        let lost = self.outgoing.forget_client(client).into_iter().map(|(req, method)| {
            warn!("request {req} ({method}) lost: the agent disconnected");
            let outcome = Err(RpcError::new(INTERNAL_ERROR, "IDE connection closed"));
            Event::Response { req, outcome: outcome.into() }
        });
        let mut events: Vec<Event> = lost.collect();
        for r in self.reviews.take_client(client) {
            events.extend(super::reviews::ended(&r, "abandoned", reason.clone()));
            abandoned.push(r.req);
        }
        abandoned.sort_unstable();
        events.push(Event::ClientDisconnected { client, name, abandoned, reason });
        events
    }

    /// The editor stops: every call and review still waiting is answered (Lua has rejected the
    /// reviews it shows; these are the ones it never got to).
    pub fn abandon_all(&self) {
        for req in self.parked.reqs() {
            self.abandon(req);
        }
        for r in self.reviews.take_all() {
            self.answer_review(&r, &Verdict::Rejected);
        }
    }
}
