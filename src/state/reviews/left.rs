//! What the user has left in a review so far, as Lua last told the core (a hunk decided, an
//! edit of the proposal): an agent that closes its review because the user answered in its own
//! terminal (Hook::CloseReviewKeepingText) writes that text, and is answered at once from here, even
//! while Neovim is busy (a long `:!command`, a prompt), instead of waiting for Lua to read it.

use super::{Review, Reviews};
use crate::state::events::Event;
use crate::protocol::tools::Verdict;
use crate::state::Shared;

/// The text in a review, as far as the core knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Left {
    /// Nothing decided: its agent's proposal (or not on screen yet).
    #[default]
    Proposal,
    /// The user's text, as Lua pushed it after their last change.
    Text(String),
    /// Changed since Lua last pushed it (typing in Insert mode, text not UTF-8): Lua reads it.
    Unknown,
}

/// Closing a review keeping the text the user left in it.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // returned once per close, never stored
pub enum Kept {
    /// The agent has no review of that name.
    NoReview,
    /// Closed (answered as closed): the text the user left, None for the proposal, and the
    /// event that takes it off the screen.
    Closed(Option<String>, Option<Event>),
    /// Only Lua knows the text: the review is left to it.
    Unknown,
}

impl Reviews {
    fn set_left(&self, req: u64, left: Left) -> bool {
        let mut map = self.map.lock();
        map.values_mut().find(|r| r.req == req).map(|r| r.left = left).is_some()
    }

    /// Takes out `client`'s review named `tab`, unless only Lua knows its text (Err then).
    fn take_named_known(&self, client: u64, tab: &str) -> Result<Option<Review>, ()> {
        let mut map = self.map.lock();
        let key = (client, tab.to_owned());
        if map.get(&key).is_some_and(|r| r.left == Left::Unknown) {
            return Err(());
        }
        Ok(map.remove(&key))
    }
}

impl Shared {
    /// Lua's word on what review `req` holds now. False when it has ended.
    pub fn set_review_left(&self, req: u64, left: Left) -> bool {
        self.reviews.set_left(req, left)
    }

    /// `client` closes its review named `tab`, keeping what the user left in it
    /// (Hook::CloseReviewKeepingText).
    pub fn close_keeping_text(&self, client: u64, tab: &str) -> Kept {
        match self.reviews.take_named_known(client, tab) {
            Err(()) => Kept::Unknown,
            Ok(None) => Kept::NoReview,
            Ok(Some(r)) => {
                self.answer_review(&r, &Verdict::Closed);
                let text = match &r.left {
                    Left::Text(text) => Some(text.clone()),
                    _ => None,
                };
                // "closed": Lua reloads the file's buffers when the agent writes it.
                Kept::Closed(text, super::ended(&r, "closed", None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::Id;
    use crate::state::reviews::{Begin, StagedFiles};

    #[test]
    fn a_close_gives_the_text_last_pushed_and_leaves_an_unknown_one_to_lua() {
        let shared = Shared::default();
        let agent = crate::agents::HOME;
        let _outbox = shared.clients.add(1, agent, None);
        let tool = agent.tool("openDiff").unwrap();
        for (req, tab) in [(1, "/a"), (2, "/b"), (3, "/c")] {
            let begin = Begin { req, client: 1, id: Id::from_u64(req), tool, tab, size: 1, max_bytes: 1 << 20 };
            shared.reviews.begin(begin).unwrap();
            assert!(shared.reviews.staged(req, StagedFiles::default(), 1, None));
        }
        assert!(shared.reviews.set_left(1, Left::Text("mine\n".into())));
        assert!(shared.reviews.set_left(3, Left::Unknown));
        assert!(matches!(shared.close_keeping_text(1, "/a"), Kept::Closed(Some(t), Some(_)) if t == "mine\n"));
        assert!(matches!(shared.close_keeping_text(1, "/b"), Kept::Closed(None, Some(_))), "nothing decided");
        assert!(matches!(shared.close_keeping_text(1, "/c"), Kept::Unknown));
        assert!(shared.close_review(1, "/c").0, "still there for Lua");
        assert!(matches!(shared.close_keeping_text(1, "/a"), Kept::NoReview));
        assert!(!shared.reviews.set_left(1, Left::Proposal), "ended");
    }
}
