//! What lands after an allow. An agent that writes the file itself once the user allowed its
//! change writes its own proposal, and could write any text: what the user accepted is kept, by
//! its blob id, under the tool call that asked; when the agent says that call completed (or its
//! turn ends, whichever comes first) the file is read back on a worker and compared. When the
//! user accepted other text than the proposal (a hunk declined, a line edited) and the file
//! holds exactly the proposal, the accepted text is written over it then (support/own_write.rs),
//! and the agent is told at the next prompt (`note`). The outcome is told at once (`landed`):
//! the accepted text, or other text, which the chat, the statusline and `:PiIde changes` then
//! say no review showed.

use std::time::Duration;

use serde_json::json;

use super::MAX_FILE;
use crate::chat::op::Op;
use crate::support::blob::blob_id;
use crate::support::on_disk::{self, OnDisk};
use crate::support::own_write::{Landed, OwnWrite};

/// How long a write the agent was allowed is looked for after its call (or turn) ended: an
/// agent may say a call completed before its own write is on disk, or be midway through it.
const LANDING: Duration = Duration::from_secs(3);

/// Allowed changes whose write has not been checked yet; more than this (an agent that never
/// says its calls completed) drops the oldest.
const KEPT: usize = 256;

/// An allowed change: the text accepted for `path` (its blob id), by the call that will write
/// it, and the file's blob id when it was reviewed (None: there was none). `own`: the accepted
/// text to set over the agent's proposal, when they differ; `note`: what the user did not keep.
pub struct Expected {
    pub call: String,
    pub path: String,
    pub blob: String,
    pub before: Option<String>,
    pub own: Option<OwnWrite>,
    pub note: Option<String>,
}

impl Expected {
    pub fn new(call: &str, path: &str, text: &str, before: Option<String>) -> Expected {
        let (call, path, blob) = (call.to_owned(), path.to_owned(), blob_id(text.as_bytes()));
        Expected { call, path, blob, before, own: None, note: None }
    }

    pub fn with_own(self, own: Option<OwnWrite>, note: Option<String>) -> Expected {
        Expected { own, note, ..self }
    }
}

#[derive(Default)]
pub struct Landing {
    /// Oldest first.
    expected: Vec<Expected>,
}

impl Landing {
    /// The user accepted a text the agent's call writes.
    pub fn expect(&mut self, expected: Expected) {
        if self.expected.len() >= KEPT {
            self.expected.remove(0);
        }
        self.expected.push(expected);
    }

    /// The agent says call `call` is over: its write, if one was allowed, is checked now.
    pub fn call_ended(&mut self, call: &str) -> Vec<Expected> {
        let (ended, waiting) = self.expected.drain(..).partition(|e| e.call == call);
        self.expected = waiting;
        ended
    }

    /// Call `call`'s change of `path` is written by us after all (mirror.rs): not looked for.
    pub fn forget(&mut self, call: &str, path: &str) {
        self.expected.retain(|e| !(e.call == call && e.path == path));
    }

    /// The turn is over: every write not checked yet is, each file against the last text
    /// accepted for it (a later change of the same file in the turn supersedes an earlier one).
    pub fn turn_ended(&mut self) -> Vec<Expected> {
        let all = std::mem::take(&mut self.expected);
        let mut last: Vec<Expected> = Vec::new();
        for e in all {
            last.retain(|l| l.path != e.path);
            last.push(e);
        }
        last
    }
}

/// Reads each file back and tells, through `tell`, `landed` (`{ path, as_accepted, why }`):
/// whether it holds the text the user accepted (`why`, when it does not and it is not simply
/// other text). A file still as it was reviewed was not written (the call failed, or the turn
/// was cancelled first): nothing to tell.
pub fn check(expected: &[Expected], tell: &dyn Fn(Op)) {
    for e in expected {
        if let Some(own) = &e.own {
            settle(e, own, tell);
            continue;
        }
        // A pipe swapped in is refused, never waited on.
        let (as_accepted, why) = match on_disk::read(&e.path, MAX_FILE as usize) {
            OnDisk::Contents(bytes) => match blob_id(&bytes) {
                id if id == e.blob => (true, None),
                id if Some(&id) == e.before.as_ref() => continue,
                _ => (false, None),
            },
            OnDisk::Missing if e.before.is_none() => continue,
            OnDisk::Missing => (false, Some("the file is gone".to_owned())),
            OnDisk::Refused(why) | OnDisk::Unreadable(why) => (false, Some(why)),
        };
        if !as_accepted {
            crate::warn!("acp: the agent's write of {} is not what the user accepted: {}", e.path, why.as_deref().unwrap_or("other text"));
        }
        tell(Op::Event { kind: Some("landed".into()), event: json!({ "path": e.path, "as_accepted": as_accepted, "why": why }) });
    }
}

/// The agent's write of its proposal, which the user did not accept whole, looked for a while
/// (LANDING): the accepted text is set over it (only over exactly that proposal), and `landed`
/// says so (`rewritten`, and the `note` to tell the agent); anything else is left and told as
/// other text once it stays so.
fn settle(e: &Expected, own: &OwnWrite, tell: &dyn Fn(Op)) {
    let (as_accepted, rewritten, why) = match own.wait(LANDING, &|| false) {
        Landed::NotWritten => return,
        Landed::AsAccepted { rewritten } => (true, rewritten, None),
        Landed::Other(why) => (false, false, Some(why)),
    };
    if let Some(why) = &why {
        crate::warn!("acp: {} was not set to the text the user accepted: {why}", e.path);
    }
    let event = json!({ "path": e.path, "as_accepted": as_accepted, "why": why, "rewritten": rewritten, "note": e.note });
    tell(Op::Event { kind: Some("landed".into()), event });
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_write_is_checked_once_when_its_call_ends_or_else_the_last_per_file_at_the_turn_end() {
        let mut l = Landing::default();
        l.expect(Expected::new("c1", "/a", "one\n", None));
        l.expect(Expected::new("c2", "/a", "two\n", None));
        l.expect(Expected::new("c3", "/b", "b\n", None));
        assert_eq!(l.call_ended("c3").len(), 1);
        assert!(l.call_ended("c3").is_empty(), "checked once");
        let left = l.turn_ended();
        assert_eq!(left.iter().map(|e| e.call.as_str()).collect::<Vec<_>>(), ["c2"]);
        assert!(l.turn_ended().is_empty());
    }

    #[test]
    fn other_text_a_missing_file_or_a_pipe_is_told_and_the_accepted_text_or_an_unwritten_file_is_not() {
        let d = crate::scratch_dir("acp-landed");
        let (same, other, fifo, unwritten) = (d.join("same"), d.join("other"), d.join("fifo"), d.join("unwritten"));
        std::fs::write(&same, "accepted\n").unwrap();
        std::fs::write(&other, "something else\n").unwrap();
        std::fs::write(&unwritten, "before\n").unwrap();
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let before = Some(blob_id(b"before\n"));
        let expect = |p: &std::path::Path| Expected::new("c", &p.display().to_string(), "accepted\n", before.clone());
        let new_file = Expected { before: None, ..expect(&d.join("never-written")) };
        let told = Mutex::new(Vec::new());
        let all = [expect(&same), expect(&other), expect(&d.join("gone")), expect(&fifo), expect(&unwritten), new_file];
        check(&all, &|op| told.lock().push(op));
        let told: Vec<String> = told.into_inner().into_iter().map(|op| match op {
            Op::Event { event, .. } => format!("{} {} {}", event["path"].as_str().unwrap(), event["as_accepted"], event["why"].as_str().unwrap_or("differs")),
            other => panic!("{other:?}"),
        }).collect();
        assert_eq!(told.len(), 4, "{told:?}");
        assert!(told[0].ends_with("same true differs"), "{told:?}");
        assert!(told[1].contains("other false differs"), "{told:?}");
        assert!(told[2].contains("false the file is gone"), "{told:?}");
        assert!(told[3].contains("false it is a named pipe"), "{told:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_proposal_accepted_in_part_is_set_to_the_accepted_text_and_other_text_is_left() {
        let d = crate::scratch_dir("acp-landed-own");
        let (f, g) = (d.join("f"), d.join("g"));
        std::fs::write(&f, "a\nb\n").unwrap();
        std::fs::write(&g, "a\nb\n").unwrap();
        let expect = |p: &std::path::Path| {
            let seen = crate::support::reviewed_write::Seen::look(p).unwrap();
            let own = OwnWrite { seen, proposal: "A\nB\n".into(), accepted: "A\nb\n".into() };
            let path = p.display().to_string();
            Expected::new("c", &path, "A\nb\n", Some(blob_id(b"a\nb\n"))).with_own(Some(own), Some("hunk 2 of 2 declined".into()))
        };
        let all = [expect(&f), expect(&g)];
        std::fs::write(&f, "A\nB\n").unwrap();
        std::fs::write(&g, "theirs\n").unwrap();
        let told = Mutex::new(Vec::new());
        check(&all, &|op| told.lock().push(op));
        let told: Vec<serde_json::Value> = told.into_inner().into_iter().map(|op| match op {
            Op::Event { event, .. } => event,
            other => panic!("{other:?}"),
        }).collect();
        assert_eq!((told[0]["as_accepted"].as_bool(), told[0]["rewritten"].as_bool()), (Some(true), Some(true)), "{told:?}");
        assert_eq!(told[0]["note"], "hunk 2 of 2 declined");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "A\nb\n");
        assert_eq!(told[1]["as_accepted"], false, "{told:?}");
        assert_eq!(std::fs::read_to_string(&g).unwrap(), "theirs\n", "never overwritten");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_agents_write_that_lands_after_its_call_ended_still_gets_the_accepted_text() {
        let d = crate::scratch_dir("acp-landed-late");
        let f = d.join("f");
        std::fs::write(&f, "a\nb\n").unwrap();
        let seen = crate::support::reviewed_write::Seen::look(&f).unwrap();
        let own = OwnWrite { seen, proposal: "A\nB\n".into(), accepted: "A\nb\n".into() };
        let path = f.display().to_string();
        let e = Expected::new("c", &path, "A\nb\n", Some(blob_id(b"a\nb\n"))).with_own(Some(own), None);
        let late = {
            let f = f.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                std::fs::write(&f, "A\nB\n").unwrap();
            })
        };
        let told = Mutex::new(Vec::new());
        check(&[e], &|op| told.lock().push(op));
        late.join().unwrap();
        assert_eq!(told.lock().len(), 1, "told once it landed");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "A\nb\n", "the accepted text over the late write");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
