//! Reviews: every change an agent proposes that Neovim shows before it is written. A review is
//! one state machine, owned here and keyed by the (client, name) its agent gave it:
//!
//! ```text
//!   begin ──▶ Staging ──staged──▶ Waiting ──▶ answered (out of the table)
//!                │                   │
//!                └──────────┬────────┘
//!                           └──▶ answered: closed by its agent, superseded by another of its
//!                                name, its client gone, the editor stopping, staging failed
//! ```
//!
//! Every way in creates one (an openDiff of any agent: open.rs); every way out takes it out of
//! the table and answers it, exactly once (flows.rs). A review owns the files it was staged in
//! and their size, which bound what one client may hold. Lua shows a waiting review and reports
//! the user's decision; it keeps no record of its own.
//!
//! left.rs holds what the user left in a review so far (an agent's close may write it).
//! stage.rs, files.rs and stats.rs do the staging on a worker. own_write.rs sets the file to
//! the text accepted after an agent that writes its own proposal has written it.

mod files;
mod flows;
pub mod left;
pub mod open;
mod own_write;
mod stage;
mod stats;

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::protocol::jsonrpc::Id;
use crate::protocol::tools::Tool;

pub use self::files::StagedFiles;
pub(in crate::state) use self::flows::ended;

/// Reviews one client may have at once; beyond it DIFF_REJECTED at once.
pub const MAX_PENDING: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The proposal and the file it replaces are being staged on a worker; Lua knows nothing.
    Staging,
    /// Handed to Lua: shown, or about to be; the user decides.
    Waiting,
}

pub struct Review {
    /// The number Lua knows it by.
    pub req: u64,
    pub client: u64,
    /// The agent's call, answered when the review ends.
    pub id: Id,
    pub tool: &'static Tool,
    /// Its name among its client's.
    pub tab: String,
    pub stage: Stage,
    /// The files it was staged in (deleted with it, or once Lua has read them).
    files: StagedFiles,
    /// What they hold (while staging: the proposal's size).
    bytes: u64,
    /// The blob id of the file its left pane shows (see stage.rs' `Staged::left`).
    shown_blob: Option<String>,
    /// The file and the proposal, when its agent writes its own proposal and the core watches
    /// for that write (own_write.rs).
    watched: Option<own_write::Watched>,
    /// What the user has left in it so far, as Lua last said (left.rs).
    left: left::Left,
}

type Key = (u64, String);

#[derive(Default)]
pub struct Reviews {
    map: Mutex<HashMap<Key, Review>>,
}

/// A new review, before it is staged.
pub struct Begin<'a> {
    pub req: u64,
    pub client: u64,
    pub id: Id,
    pub tool: &'static Tool,
    pub tab: &'a str,
    /// The proposal's size.
    pub size: u64,
    /// What one client's reviews may hold staged.
    pub max_bytes: u64,
}

impl Reviews {
    /// Starts a review, staging. The client's review of the same name, if any, is taken out
    /// (superseded) and returned to be answered. Err: over the client's bounds, and why.
    pub fn begin(&self, new: Begin) -> Result<Option<Review>, String> {
        let mut map = self.map.lock();
        let key = (new.client, new.tab.to_owned());
        let superseded = map.remove(&key);
        let (pending, bytes) = load(&map, new.client);
        if pending >= MAX_PENDING {
            return Err(format!("the agent has {pending} reviews waiting already (at most {MAX_PENDING})"));
        }
        if bytes + new.size > new.max_bytes {
            let (held, max) = (bytes >> 20, new.max_bytes >> 20);
            return Err(format!("the agent's waiting reviews hold {held} MiB already (at most {max} MiB)"));
        }
        let Begin { req, client, id, tool, size, .. } = new;
        let review = Review { req, client, id, tool, tab: key.1.clone(), stage: Stage::Staging, files: StagedFiles::default(), bytes: size, shown_blob: None, watched: None, left: left::Left::Proposal };
        map.insert(key, review);
        Ok(superseded)
    }

    /// Staging of `req` ended: it waits for the user now, owning `files`, its left pane showing
    /// the blob `left`. False when it was ended meanwhile (the files go at once).
    pub fn staged(&self, req: u64, files: StagedFiles, bytes: u64, left: Option<String>) -> bool {
        let mut map = self.map.lock();
        match map.values_mut().find(|r| r.req == req) {
            Some(r) => {
                r.stage = Stage::Waiting;
                r.files = files;
                r.bytes = bytes;
                r.shown_blob = left;
                true
            }
            None => false,
        }
    }

    /// Review `req`'s file and proposal, for watching the agent's write (own_write.rs).
    fn watch(&self, req: u64, watched: own_write::Watched) {
        if let Some(r) = self.map.lock().values_mut().find(|r| r.req == req) {
            r.watched = Some(watched);
        }
    }

    /// Takes out review `req` to answer it.
    pub fn take(&self, req: u64) -> Option<Review> {
        self.take_where(|r| r.req == req).pop()
    }

    /// Takes out `client`'s review named `tab`.
    pub fn take_named(&self, client: u64, tab: &str) -> Option<Review> {
        self.map.lock().remove(&(client, tab.to_owned()))
    }

    /// Takes out the review of `client`'s call `id`.
    pub fn take_call(&self, client: u64, id: &Id) -> Option<Review> {
        self.take_where(|r| r.client == client && r.id.raw() == id.raw()).pop()
    }

    /// Whether a review of `client`'s call `id` is open.
    pub fn has_call(&self, client: u64, id: &Id) -> bool {
        self.map.lock().values().any(|r| r.client == client && r.id.raw() == id.raw())
    }

    /// Takes out every review of `client`, in order of their numbers.
    pub fn take_client(&self, client: u64) -> Vec<Review> {
        self.take_where(|r| r.client == client)
    }

    /// Takes out every review, in order of their numbers.
    pub fn take_all(&self) -> Vec<Review> {
        self.take_where(|_| true)
    }

    fn take_where(&self, wanted: impl Fn(&Review) -> bool) -> Vec<Review> {
        let mut map = self.map.lock();
        let keys: Vec<Key> = map.iter().filter(|(_, r)| wanted(r)).map(|(k, _)| k.clone()).collect();
        let mut out: Vec<Review> = keys.iter().filter_map(|k| map.remove(k)).collect();
        out.sort_by_key(|r| r.req);
        out
    }

    /// Lua has read what was staged for `req`: the files go now, not when the review ends.
    pub fn release_staged(&self, req: u64) {
        let files = match self.map.lock().values_mut().find(|r| r.req == req) {
            Some(r) => {
                r.bytes = 0;
                std::mem::take(&mut r.files)
            }
            None => return,
        };
        drop(files);
    }

    /// How many reviews there are, per client.
    pub fn count_by_client(&self) -> HashMap<u64, usize> {
        let mut n = HashMap::new();
        for r in self.map.lock().values() {
            *n.entry(r.client).or_insert(0) += 1;
        }
        n
    }

    pub fn count(&self) -> usize {
        self.map.lock().len()
    }
}

/// How many reviews `client` has, and the bytes they hold staged.
fn load(map: &HashMap<Key, Review>, client: u64) -> (usize, u64) {
    (map.values())
        .filter(|r| r.client == client)
        .fold((0, 0), |(n, bytes), r| (n + 1, bytes + r.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl std::fmt::Debug for Review {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "review {} ({})", self.req, self.tab)
        }
    }

    fn begin<'a>(req: u64, client: u64, tab: &'a str, size: u64) -> Begin<'a> {
        let tool = crate::agents::pi::AGENT.tool("openDiff").unwrap();
        Begin { req, client, id: Id::from_u64(req), tool, tab, size, max_bytes: 100 }
    }

    #[test]
    fn a_name_is_one_review_and_a_second_supersedes_the_first() {
        let r = Reviews::default();
        assert!(r.begin(begin(1, 7, "t", 1)).unwrap().is_none());
        assert!(r.begin(begin(2, 8, "t", 1)).unwrap().is_none(), "another client's name is its own");
        let old = r.begin(begin(3, 7, "t", 1)).unwrap().expect("superseded");
        assert_eq!(old.req, 1);
        assert!(!r.staged(1, StagedFiles::default(), 0, None), "ended while staging");
        assert!(r.staged(3, StagedFiles::default(), 0, None));
        assert_eq!(r.take_named(7, "t").map(|r| (r.req, r.stage)), Some((3, Stage::Waiting)));
        assert!(r.take(3).is_none(), "taken once");
        assert_eq!(r.take_client(8).len(), 1);
        assert_eq!(r.count(), 0);
    }

    #[test]
    fn bounds_count_reviews_and_bytes_per_client() {
        let r = Reviews::default();
        for i in 0..MAX_PENDING as u64 {
            r.begin(begin(i + 1, 1, &format!("t{i}"), 1)).unwrap();
        }
        assert!(r.begin(begin(99, 1, "x", 1)).unwrap_err().contains("reviews waiting already"));
        assert!(r.begin(begin(99, 2, "x", 60)).is_ok());
        assert!(r.begin(begin(100, 2, "y", 60)).unwrap_err().contains("MiB already"));
        // Read by Lua: its bytes no longer count.
        assert!(r.staged(99, StagedFiles::default(), 60, None));
        r.release_staged(99);
        assert!(r.begin(begin(100, 2, "y", 60)).is_ok());
        assert_eq!(r.count_by_client()[&1], MAX_PENDING);
        assert_eq!(r.take_all().iter().map(|r| r.req).collect::<Vec<_>>(), (1..=8).chain([99, 100]).collect::<Vec<_>>());
    }

    #[test]
    fn staged_files_go_when_lua_has_read_them_or_the_review_ends() {
        let dir = crate::scratch_dir("review-files");
        let file = |n: &str| {
            let f = dir.join(n);
            std::fs::write(&f, "x").unwrap();
            let mut files = StagedFiles::default();
            files.push(f.clone());
            (f, files)
        };
        let r = Reviews::default();
        let ((a, fa), (b, fb), (c, fc)) = (file("a"), file("b"), file("c"));
        for (req, files) in [(1, fa), (2, fb)] {
            r.begin(begin(req, 1, &req.to_string(), 1)).unwrap();
            assert!(r.staged(req, files, 1, None));
        }
        r.release_staged(1);
        assert!(!a.exists(), "read by Lua: gone while the review still waits");
        drop(r.take(2));
        assert!(!b.exists(), "answered: gone");
        assert!(!r.staged(3, fc, 1, None), "no such review");
        assert!(!c.exists(), "a staging whose review ended leaves nothing");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
