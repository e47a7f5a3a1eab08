//! A permission whose tool call carries only a patch (an `apply_patch` of kind "other"): the
//! patch is applied to each file as it is now (patch.rs) and every file it changes gets a review
//! of its own. The permission is answered allow once each review is accepted, and reject at the
//! first that is not (the others then go). The agent writes the files itself after the allow:
//! each is read back when its call completes, and set to the text the user accepted when that
//! is not the proposal (landed.rs). A patch that cannot be shown is asked in Lua, without
//! "always", saying why it could not be shown: never allowed unseen by us.
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::{landed, option_of, patch, reject, review_event, selected, str_of, Acp, Asked};
use crate::agents::chat::Proposal;
use crate::chat::op::Op;
use crate::protocol::tools::Verdict;
use crate::support::blob::blob_id;
use crate::support::own_write::OwnWrite;
use crate::support::reviewed_write::Seen;

/// One file of a patch under review.
pub struct Part {
    path: String,
    tab: String,
    seen: Seen,
    /// The file as the patch leaves it, and the blob id of the file it replaces (None: none).
    proposal: String,
    before: Option<String>,
    /// What the user accepted (and the hunks they did not keep), once they did.
    accepted: Option<(String, Option<String>)>,
}

impl Acp {
    /// The agent's patch `text` asked for in permission `key`: its reviews, or the question that
    /// says why it cannot be shown.
    pub(super) fn patch_permission(self: &Arc<Self>, key: String, id: Value, params: Value, text: &str) -> Option<Op> {
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let edits = patch::edits(text, self.cwd.as_deref(), &|p| super::disk_text(p));
        let parts = edits.and_then(|edits| edits.into_iter().map(|e| self.part(e)).collect::<Result<Vec<_>, String>>());
        let parts = match parts {
            Ok(parts) => parts,
            Err(why) => return self.ask_user(key, id, params, Some(format!("the patch cannot be shown: {why}"))),
        };
        let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
        let reviews: Vec<Proposal> = parts.iter().map(|p| Proposal { tab: p.tab.clone(), path: p.path.clone(), contents: p.proposal.clone(), agent_writes: true }).collect();
        let shown: Vec<Op> = parts.iter().map(|p| review_event(&p.path, &p.seen.real(), Some(&call))).collect();
        let asked = Asked::Patch { id, options, call: str_of(&call, "toolCallId").to_owned(), parts };
        self.state.lock().asked.insert(key.clone(), asked);
        for op in shown {
            (self.events)(op);
        }
        // A review may be decided at once (the server gone): the rest are not opened then.
        for (n, proposal) in reviews.into_iter().enumerate() {
            if !self.state.lock().asked.contains_key(&key) {
                break;
            }
            let (me, key) = (self.clone(), key.clone());
            self.reviewer.review(proposal, Box::new(move |verdict| me.part_decided(&key, n, verdict)));
        }
        None
    }

    /// A file of the patch, looked at as its review opens.
    fn part(&self, edit: patch::Edit) -> Result<Part, String> {
        let seen = Seen::look(Path::new(&edit.path))?;
        let name = Path::new(&edit.path).file_name().map_or(edit.path.clone(), |f| f.to_string_lossy().into_owned());
        let tab = {
            let mut state = self.state.lock();
            state.reviews += 1;
            format!("{name} ({})", state.reviews)
        };
        let before = edit.before.map(|b| blob_id(b.as_bytes()));
        Ok(Part { path: edit.path, tab, seen, proposal: edit.after, before, accepted: None })
    }

    /// The user's verdict on file `n` of the patch asked in `key` (nothing once the question
    /// is answered: cancelled, or rejected through another of its files).
    fn part_decided(self: &Arc<Self>, key: &str, n: usize, verdict: Verdict) {
        let mut state = self.state.lock();
        let Some(Asked::Patch { parts, .. }) = state.asked.get_mut(key) else { return };
        if let Verdict::Accepted(text, note) = verdict {
            parts[n].accepted = Some((text, note));
            if parts.iter().any(|p| p.accepted.is_none()) {
                return;
            }
        }
        let Some(Asked::Patch { id, options, call, parts }) = state.asked.remove(key) else { return };
        let allow = option_of(&options, "allow_once").filter(|_| parts.iter().all(|p| p.accepted.is_some()));
        let Some(allow) = allow else {
            drop(state);
            self.reply(&id, Ok(reject(&options)));
            // The other files' reviews go, answered as closed (this question is gone).
            for (_, p) in parts.iter().enumerate().filter(|(i, p)| *i != n && p.accepted.is_none()) {
                self.reviewer.close(&p.tab);
            }
            return;
        };
        for p in parts {
            let (text, note) = p.accepted.unwrap_or_default();
            let own = (p.proposal != text).then(|| OwnWrite { seen: p.seen, proposal: p.proposal, accepted: text.clone() });
            state.landing.expect(landed::Expected::new(&call, &p.path, &text, p.before).with_own(own, note));
        }
        drop(state);
        self.reply(&id, Ok(selected(allow)));
    }
}

/// The review tabs of a patch's question still open, when it goes.
pub(super) fn tabs(parts: &[Part]) -> Vec<String> {
    parts.iter().filter(|p| p.accepted.is_none()).map(|p| p.tab.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::chat::Done;
    use parking_lot::Mutex;
    use serde_json::json;

    /// Keeps every review's answer for the test to give.
    #[derive(Default)]
    struct Held(Mutex<Vec<(String, Done)>>);
    impl super::super::Reviewer for Held {
        fn review(&self, proposal: Proposal, done: Done) {
            self.0.lock().push((proposal.contents, done));
        }
        fn end(&self) {}
        fn close(&self, _: &str) {}
    }

    fn ask(acp: &Arc<Acp>, id: u64, patch: &str) -> Option<Op> {
        let options = json!([{"optionId": "y", "kind": "allow_once"}, {"optionId": "a", "kind": "allow_always"}, {"optionId": "n", "kind": "reject_once"}]);
        let call = json!({"toolCallId": format!("t{id}"), "title": "apply_patch", "kind": "other", "rawInput": {"input": patch}});
        let msg = json!({"id": id, "method": "session/request_permission", "params": {"toolCall": call, "options": options}});
        acp.record(msg.as_object().unwrap().clone(), 3)
    }

    #[test]
    fn a_patch_is_allowed_once_each_of_its_files_is_accepted_and_rejected_at_the_first_that_is_not() {
        let dir = crate::scratch_dir("acp-patched");
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let held = Arc::new(Held::default());
        let acp = Arc::new(Acp::new(held.clone(), tx, Box::new(|_| {})).in_folder(Some(dir.clone())));
        let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: b.txt\n+b\n*** End Patch";
        assert!(ask(&acp, 1, patch).is_none());
        let reviews: Vec<(String, Done)> = std::mem::take(&mut *held.0.lock());
        assert_eq!(reviews.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ["A\n", "b"]);
        let mut reviews = reviews.into_iter();
        (reviews.next().unwrap().1)(Verdict::Accepted("A\n".into(), None));
        assert!(rx.try_recv().is_err(), "not answered while a file waits");
        (reviews.next().unwrap().1)(Verdict::Accepted("b".into(), None));
        let answer: Value = serde_json::from_slice(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(answer["result"]["outcome"]["optionId"], "y");
        // A second patch: its first file rejected answers reject at once.
        assert!(ask(&acp, 2, patch.replace("b.txt", "c.txt").as_str()).is_none());
        let first = std::mem::take(&mut *held.0.lock()).into_iter().next().unwrap();
        (first.1)(Verdict::Rejected);
        let answer: Value = serde_json::from_slice(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(answer["result"]["outcome"]["optionId"], "n");
        assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "a\n", "the agent writes, never this");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_patch_that_cannot_be_shown_is_asked_without_always_saying_why() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let acp = Arc::new(Acp::new(Arc::new(Held::default()), tx, Box::new(|_| {})).in_folder(Some("/nowhere".into())));
        let op = ask(&acp, 1, "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch");
        let Some(Op::AgentRequest { params, .. }) = op else { panic!("{op:?}") };
        assert_eq!(params["unshown_change"], true);
        assert!(params["unshown_why"].as_str().unwrap().contains("it deletes a.txt"), "{params}");
        assert_eq!(params["options"].as_array().unwrap().len(), 2, "no always: {params}");
    }
}
