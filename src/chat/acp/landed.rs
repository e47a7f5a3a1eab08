//! What lands after an allow. An agent that writes the file itself once the user allowed its
//! change (the permission's review is read-only) could write any text: what the user accepted is kept, by its
//! blob id, under the tool call that asked; when the agent says that call completed (or its turn
//! ends, whichever comes first) the file is read back on a worker and compared. The outcome is
//! told at once (`landed`): the accepted text, or other text, which the chat, the statusline and
//! `:PiIde changes` then say no review showed.

use serde_json::json;

use super::MAX_FILE;
use crate::chat::op::Op;
use crate::support::blob::blob_id;
use crate::support::on_disk::{self, OnDisk};

/// Allowed changes whose write has not been checked yet; more than this (an agent that never
/// says its calls completed) drops the oldest.
const KEPT: usize = 256;

/// An allowed change: the text accepted for `path` (its blob id), by the call that will write
/// it, and the file's blob id when it was reviewed (None: there was none).
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub call: String,
    pub path: String,
    pub blob: String,
    pub before: Option<String>,
}

#[derive(Default)]
pub struct Landing {
    /// Oldest first.
    expected: Vec<Expected>,
}

impl Landing {
    /// The user accepted `text` for `path` (whose blob id was `before`), which the agent's call
    /// `call` writes.
    pub fn expect(&mut self, call: &str, path: &str, text: &str, before: Option<String>) {
        if self.expected.len() >= KEPT {
            self.expected.remove(0);
        }
        let (call, path, blob) = (call.to_owned(), path.to_owned(), blob_id(text.as_bytes()));
        self.expected.push(Expected { call, path, blob, before });
    }

    /// The agent says call `call` is over: its write, if one was allowed, is checked now.
    pub fn call_ended(&mut self, call: &str) -> Vec<Expected> {
        let (ended, waiting) = self.expected.drain(..).partition(|e| e.call == call);
        self.expected = waiting;
        ended
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

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_write_is_checked_once_when_its_call_ends_or_else_the_last_per_file_at_the_turn_end() {
        let mut l = Landing::default();
        l.expect("c1", "/a", "one\n", None);
        l.expect("c2", "/a", "two\n", None);
        l.expect("c3", "/b", "b\n", None);
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
        let expect = |p: &std::path::Path| Expected { call: "c".into(), path: p.display().to_string(), blob: blob_id(b"accepted\n"), before: before.clone() };
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
}
