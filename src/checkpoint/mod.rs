//! Checkpoints: the workspace recorded at the start of each agent turn, so that whatever the
//! agent changed — through a review or behind it, with its shell — can be listed, shown against
//! what was there, and put back.
//!
//! Each folder has a shadow git repository under Neovim's state folder (snapshot.rs) and a log
//! of turns (turns.rs). A turn's start and end are trees; what a turn changed is their diff
//! (diff.rs); an undo writes the start's files back (restore.rs). Everything here blocks: the
//! caller runs it on a worker thread (ffi).

mod diff;
mod git;
mod restore;
mod snapshot;
mod turns;

use std::path::{Path, PathBuf};

pub use restore::{Plan, Planned, Report};
pub use snapshot::Limits;
pub use turns::Turn;

use self::git::Git;
use self::turns::{now_ms, Log};

/// A file that differs from a checkpoint, as `:PiIde changes` lists it.
#[derive(Clone, Debug, Default)]
pub struct Change {
    pub path: String,
    pub status: char,
    /// Lines added and removed, and the first changed line; `None` for a binary file or one
    /// not diffed (too large, or past the first 2,000).
    pub lines: Option<(usize, usize, usize)>,
    pub binary: bool,
    /// The turns (at or after the one asked for) that changed it.
    pub turns: Vec<u64>,
    pub agents: Vec<String>,
    /// Whether a turn changed it with no review showing the change.
    pub unreviewed: bool,
}

pub struct Checkpoints {
    git: Git,
    log: Log,
    limits: Limits,
}

impl Checkpoints {
    /// The checkpoints of `folder`, kept under `state` (Neovim's state folder + "/pi-ide").
    pub fn open(folder: &Path, state: &Path, limits: Limits) -> Result<Checkpoints, String> {
        let folder = folder.canonicalize().map_err(|e| format!("no folder {}: {e}", folder.display()))?;
        refuse_everything_folders(&folder)?;
        let dir = state.join("checkpoints").join(key(&folder));
        let git = Git { git_dir: dir.join("git"), work_tree: folder.clone() };
        snapshot::prepare(&git)?;
        let _ = std::fs::write(dir.join("folder"), folder.to_string_lossy().as_bytes());
        Ok(Checkpoints { git, log: Log::at(&dir), limits })
    }

    pub fn turns(&self) -> Vec<Turn> {
        self.log.read()
    }

    /// Starts turn n+1 for `agent`: a snapshot, which is also the end of a turn left open (an
    /// agent in a terminal says no end), answered settled beside the new one.
    pub fn begin(&self, agent: &str, prompt: Option<String>) -> Result<(Turn, Option<Turn>), String> {
        let snap = snapshot::take(&self.git, self.limits)?;
        let mut closing = None;
        let turn = self.log.update(|turns| {
            if let Some(open) = turns.last_mut().filter(|t| t.end.is_none()) {
                closing = Some(open.n);
                open.end = Some(snap.tree.clone());
                open.ended_ms = Some(now_ms());
            }
            let n = turns.last().map_or(1, |t| t.n + 1);
            let started_ms = now_ms();
            let (start, skipped) = (snap.tree.clone(), snap.skipped.clone());
            let t = Turn { n, agent: agent.into(), prompt, started_ms, start, skipped, ..Turn::default() };
            turns.push(t.clone());
            Ok(t)
        })?;
        let closed = closing.map(|n| self.settle(n, &[])).transpose()?;
        Ok((turn, closed))
    }

    /// Ends turn `n` now; `reviewed`: files whose change the user saw (a review they accepted,
    /// their own write in Neovim). Answers the turn with what it changed and what no review showed.
    pub fn end(&self, n: u64, reviewed: &[String]) -> Result<Turn, String> {
        let snap = snapshot::take(&self.git, self.limits)?;
        self.log.update(|turns| {
            let t = turns.iter_mut().find(|t| t.n == n).ok_or(format!("no turn {n}"))?;
            t.end = Some(snap.tree.clone());
            t.ended_ms = Some(now_ms());
            Ok(())
        })?;
        self.settle(n, reviewed)
    }

    /// Records what turn `n` changed (start → end) and which of those no review showed.
    fn settle(&self, n: u64, reviewed: &[String]) -> Result<Turn, String> {
        let t = self.turn(n)?;
        let end = t.end.clone().unwrap_or_else(|| t.start.clone());
        let changed: Vec<String> = diff::between(&self.git, &t.start, &end)?.into_iter().map(|e| e.path).collect();
        let unreviewed = changed.iter().filter(|p| !reviewed.contains(p)).cloned().collect();
        self.log.update(|turns| {
            let t = turns.iter_mut().find(|t| t.n == n).ok_or(format!("no turn {n}"))?;
            (t.changed, t.unreviewed) = (changed, unreviewed);
            Ok(t.clone())
        })
    }

    fn turn(&self, n: u64) -> Result<Turn, String> {
        self.log.read().into_iter().find(|t| t.n == n).ok_or_else(|| format!("no turn {n} in this folder's checkpoints"))
    }

    /// The last turn not undone, or turn `n`.
    pub fn pick(&self, n: Option<u64>) -> Result<Turn, String> {
        match n {
            Some(n) => self.turn(n),
            None => {
                let turns = self.log.read();
                let none = if turns.is_empty() { "no checkpoint yet in this folder" } else { "every turn of this folder is undone" };
                turns.into_iter().rev().find(|t| !t.undone).ok_or_else(|| none.into())
            }
        }
    }

    /// Every file that differs now from turn `since`'s start (the last turn's by default).
    pub fn changes(&self, since: Option<u64>) -> Result<(Turn, Vec<Change>), String> {
        let from = self.pick(since)?;
        let now = snapshot::take(&self.git, self.limits)?.tree;
        let entries = diff::between(&self.git, &from.start, &now)?;
        let later: Vec<Turn> = self.log.read().into_iter().filter(|t| t.n >= from.n).collect();
        let open_changed = self.open_turn_changes(&later, &now)?;
        let mut out: Vec<Change> = entries.iter().map(|e| attribute(e, &later, &open_changed)).collect();
        self.line_stats(&entries, &mut out)?;
        Ok((from, out))
    }

    /// Counts lines for the first DIFFED_FILES changes whose sides are each at most
    /// DIFFED_BYTES, reading their blobs a few at a time (a turn that rewrote a whole tree of
    /// large files must not be read into memory at once).
    fn line_stats(&self, entries: &[diff::Entry], out: &mut [Change]) -> Result<(), String> {
        const DIFFED_FILES: usize = 2_000;
        const DIFFED_BYTES: u64 = 1 << 20;
        let ids: Vec<&str> = entries.iter().flat_map(|e| [e.old_blob.as_str(), e.new_blob.as_str()]).collect();
        let sizes = diff::sizes(&self.git, &ids)?;
        let small = |id: &str| sizes.get(id).is_none_or(|s| *s <= DIFFED_BYTES);
        let chosen: Vec<usize> = (0..entries.len().min(DIFFED_FILES)).filter(|i| small(&entries[*i].old_blob) && small(&entries[*i].new_blob)).collect();
        for chunk in chosen.chunks(64) {
            let ids: Vec<&str> = chunk.iter().flat_map(|i| [entries[*i].old_blob.as_str(), entries[*i].new_blob.as_str()]).collect();
            let contents = diff::blobs(&self.git, &ids)?;
            for (k, i) in chunk.iter().enumerate() {
                let (old, new) = (contents[2 * k].as_deref().unwrap_or(&[]), contents[2 * k + 1].as_deref().unwrap_or(&[]));
                out[*i].binary = diff::is_binary(old) || diff::is_binary(new);
                out[*i].lines = diff::line_stats(old, new);
            }
        }
        Ok(())
    }

    /// What a turn still open (no end yet) has changed so far.
    fn open_turn_changes(&self, turns: &[Turn], now: &str) -> Result<Vec<String>, String> {
        match turns.iter().find(|t| t.end.is_none()) {
            Some(t) => Ok(diff::between(&self.git, &t.start, now)?.into_iter().map(|e| e.path).collect()),
            None => Ok(Vec::new()),
        }
    }

    /// The file `path` as it was at turn `n`'s start (`None`: it did not exist).
    pub fn content(&self, n: u64, path: &str) -> Result<Option<Vec<u8>>, String> {
        let t = self.turn(n)?;
        let listed = self.git.run(&["ls-tree", "-z", "--full-tree", &t.start, "--", path], None)?;
        // `<mode> blob <id>\t<path>\0`, or nothing when the file was not there.
        let head = String::from_utf8_lossy(&listed);
        match head.split(['\t', ' ']).nth(2).filter(|_| head.contains(" blob ")) {
            Some(id) => Ok(diff::blobs(&self.git, &[id])?.pop().flatten()),
            None => Ok(None),
        }
    }

    /// What undoing turn `n` (the last one not undone, by default) would do.
    pub fn plan_undo(&self, n: Option<u64>) -> Result<Plan, String> {
        let t = self.pick(n)?;
        let now = snapshot::take(&self.git, self.limits)?.tree;
        restore::plan(&self.git, &t, &now)
    }

    /// Puts back `paths` (from the plan of turn `n`) as they were at its start; marks it undone.
    pub fn undo(&self, n: u64, paths: &[String]) -> Result<Report, String> {
        let t = self.turn(n)?;
        let now = snapshot::take(&self.git, self.limits)?.tree;
        let report = restore::put_back(&self.git, &t, &now, paths)?;
        self.log.update(|turns| {
            if let Some(t) = turns.iter_mut().find(|t| t.n == n) {
                t.undone = true;
            }
            Ok(())
        })?;
        Ok(report)
    }
}

/// Change `e`, with the turns (of `later`) that made it.
fn attribute(e: &diff::Entry, later: &[Turn], open_changed: &[String]) -> Change {
    let touched = |t: &&Turn| t.changed.contains(&e.path) || (t.end.is_none() && open_changed.contains(&e.path));
    let by: Vec<&Turn> = later.iter().filter(touched).collect();
    let unreviewed = by.iter().any(|t| t.unreviewed.contains(&e.path) || t.end.is_none());
    let mut agents: Vec<String> = by.iter().map(|t| t.agent.clone()).collect();
    agents.dedup();
    let turns = by.iter().map(|t| t.n).collect();
    Change { path: e.path.clone(), status: e.status, turns, agents, unreviewed, ..Change::default() }
}

/// A checkpoint of `/` or the home folder would hash the user's whole disk or home.
fn refuse_everything_folders(folder: &Path) -> Result<(), String> {
    let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| h.canonicalize().ok());
    if folder == Path::new("/") || Some(folder) == home.as_deref() {
        return Err(format!("checkpoints are not taken of {}: open Neovim in a project folder", folder.display()));
    }
    Ok(())
}

/// The folder's name in the state folder: its last part and a hash of the whole path.
fn key(folder: &Path) -> String {
    let name: String = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name: String = name.chars().map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).take(40).collect();
    // FNV-1a: the same on every build (std's hasher is not promised to be).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in folder.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100000001b3);
    }
    format!("{name}-{h:016x}")
}

#[cfg(test)]
mod tests;
