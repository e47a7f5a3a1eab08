//! The log of turns of one folder: what each agent turn started from and ended with, kept in
//! `turns.json` beside the shadow repository so that it survives a Neovim restart. Changed only
//! under the folder's lock (lock.rs), replaced through a temporary file of its own, and never
//! replaced when it could not be read: a log that is not JSON is kept aside, and says so.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::lock::Held;
use super::name::Name;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    /// Counted from 1 per folder, across Neovim sessions.
    pub n: u64,
    /// Who acted: an agent's name, or "you" for `:PiIde checkpoint`.
    pub agent: String,
    /// The prompt that started it, when a chat knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    pub started_ms: u64,
    /// The tree of the workspace when the turn started.
    pub start: String,
    /// The tree when it ended (a chat's turn end, or the next checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// The files the turn changed (start → end), relative to the workspace.
    #[serde(default)]
    pub changed: Vec<Name>,
    /// Those of them that no review showed (nor a write of the user's in Neovim).
    #[serde(default)]
    pub unreviewed: Vec<Name>,
    /// Those of them the user saw, but whose text at the end is not the text they saw (an agent
    /// that wrote other text than the user accepted): among `unreviewed` too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_text: Vec<Name>,
    /// Files left out of the start's checkpoint (over the size cap, or unreadable).
    #[serde(default)]
    pub skipped: Vec<Name>,
    /// Files left out of the end's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub end_skipped: Vec<Name>,
    /// Fingerprints of the files that run code or hold secrets (guarded.rs), at the start and
    /// at the end: (name, salted hash), never their content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarded_start: Vec<(Name, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarded_end: Vec<(Name, String)>,
    /// Those the turn changed, created or deleted: listed, never undone (not recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarded: Vec<Name>,
    /// Ignored files (ignored.rs) the turn changed or made, the guarded ones left out: counted,
    /// never recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ignored_changed: usize,
    /// More ignored files than the checkpoints' file limit were there: only the first were
    /// looked at (counted, scripts fingerprinted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored_capped: bool,
    /// Put back by `:PiIde undo`.
    #[serde(default)]
    pub undone: bool,
    /// No agent's turn: what changed between the end of one and the start of the next that no
    /// one showed (mod.rs' BETWEEN_TURNS).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub between: bool,
    /// The tree after an undo made since this turn ended (it was the last): the gap to the next
    /// turn counts from it, so what the undo wrote back is no one's change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_undo: Option<String>,
}

pub struct Log {
    path: PathBuf,
}

impl Log {
    pub fn at(dir: &Path) -> Log {
        Log { path: dir.join("turns.json") }
    }

    /// Every turn kept, oldest first; none when there is no log yet. A log that cannot be read
    /// is an error naming it (it is never taken for an empty one).
    pub fn read(&self) -> Result<Vec<Turn>, String> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("could not read this folder's turns ({}): {e}", self.path.display())),
        };
        serde_json::from_slice(&bytes).map_err(|e| format!("this folder's turns ({}) are not readable: {e}", self.path.display()))
    }

    /// Replaces the log: a temporary file of this call's own (O_EXCL), then a rename, so that a
    /// crash leaves the old log or the new one.
    fn write(&self, turns: &[Turn]) -> Result<(), String> {
        let bytes = serde_json::to_vec(turns).map_err(|e| e.to_string())?;
        let failed = |e: std::io::Error| format!("could not write {}: {e}", self.path.display());
        let (tmp, mut file) = self.temporary().map_err(failed)?;
        let written = file.write_all(&bytes).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(e));
        }
        Ok(())
    }

    fn temporary(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        loop {
            let tmp = self.path.with_extension(format!("json.{}.tmp", uuid::Uuid::new_v4().simple()));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                r => return r.map(|f| (tmp, f)),
            }
        }
    }

    /// Reads, lets `f` change the turns, writes them back; `f`'s answer. Only under the
    /// folder's lock. A log that is not JSON is moved aside first (the error says where), so the
    /// next operation starts a new one; one that cannot be read at all is left as it is.
    pub fn update<R>(&self, _held: &Held, f: impl FnOnce(&mut Vec<Turn>) -> Result<R, String>) -> Result<R, String> {
        let mut turns = match self.read() {
            Err(e) if e.contains("are not readable") => return Err(self.set_aside(e)),
            r => r?,
        };
        let r = f(&mut turns)?;
        self.write(&turns)?;
        Ok(r)
    }

    fn set_aside(&self, e: String) -> String {
        let aside = self.path.with_extension(format!("json.unreadable-{}", now_ms()));
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => format!("{e}; it was kept as {} and a new log starts with the next checkpoint", aside.display()),
            Err(moved) => format!("{e}; it could not be moved aside ({moved}): move it away to start a new log"),
        }
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_racing_from_four_threads_lose_nothing_and_leave_no_temporary_file() {
        let dir = crate::scratch_dir("turns-race");
        let threads: Vec<_> = (0..4u64)
            .map(|k| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    let log = Log::at(&dir);
                    for i in 0..50 {
                        let held = super::super::lock::hold(&dir, std::time::Duration::from_secs(30)).unwrap();
                        log.update(&held, |turns| {
                            turns.push(Turn { n: k * 1000 + i, ..Turn::default() });
                            Ok(())
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut ns: Vec<u64> = Log::at(&dir).read().unwrap().iter().map(|t| t.n).collect();
        ns.sort();
        let want: Vec<u64> = (0..4).flat_map(|k| (0..50).map(move |i| k * 1000 + i)).collect();
        assert_eq!(ns, want);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp")).collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
