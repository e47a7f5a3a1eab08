//! Checkpoints: the workspace recorded at the start of each agent turn, so that whatever the
//! agent changed — through a review or behind it, with its shell — can be listed, shown against
//! what was there, and put back.
//!
//! Each folder has a shadow git repository under Neovim's state folder (snapshot.rs; git run
//! with no config but ours, git.rs), which keeps the last turns and prunes the rest (keep.rs),
//! and a log of turns (turns.rs), both changed under one lock (lock.rs). A turn's start and end
//! are trees; what a turn changed is their diff (diff.rs); an undo writes the start's files back
//! (restore.rs), following no symlink (files.rs). Files that run code or hold secrets outside
//! the snapshot are fingerprinted (guarded.rs); the ignored ones a turn changed, counted
//! (ignored.rs). Names are bytes (name.rs). Everything here blocks: the caller runs it on a
//! worker thread (ffi).

mod diff;
mod files;
mod git;
mod guarded;
mod ignored;
mod keep;
mod landed;
mod lock;
mod name;
mod restore;
mod snapshot;
mod turns;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use landed::{Batch, Landed, MAX_SHOWN};
pub use name::Name;
pub use restore::{Plan, Planned, Report};
pub use snapshot::Limits;
pub use turns::Turn;

use self::git::Git;
use self::guarded::Guard;
use self::lock::Held;
pub use self::turns::now_ms;
use self::turns::Log;

/// A file whose change the user saw (a review they accepted, their own write in Neovim), and
/// the blob id of the text they saw, when it is known: the turn's end must hold that very text.
/// `left`: the blob id of what the (first) review showed as "before" (NO_FILE: no file), when
/// known: the turn's start must hold it, or what changed before the review was never shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Reviewed {
    pub path: Name,
    pub blob: Option<String>,
    pub left: Option<String>,
}

/// What a turn changed, judged (see [`Checkpoints::judge`]).
struct Judged {
    changed: Vec<Name>,
    unreviewed: Vec<Name>,
    other_text: Vec<Name>,
    guarded: Vec<Name>,
}

/// What the log calls the changes found between two turns (a chat's turn had ended, the next
/// had not begun): no agent's turn, written by no review and not by the user in Neovim.
const BETWEEN_TURNS: &str = "between turns";

/// How long an operation waits for another Neovim's on the same folder.
const LOCK_PATIENCE: Duration = Duration::from_secs(30);

/// A file that differs from a checkpoint, as `:PiIde changes` lists it.
#[derive(Clone, Debug, Default)]
pub struct Change {
    pub path: Name,
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
    /// Whether a turn left other text in it than the user saw (an agent that wrote other text
    /// than was accepted).
    pub other_text: bool,
    /// A file that runs code or holds secrets (guarded.rs): "runs code", "holds secrets". Its
    /// content is not recorded: it is listed, never undone.
    pub guarded: Option<&'static str>,
    /// There now, but over the size cap: not in the snapshot (listed as deleted by git).
    pub over_cap: bool,
    /// The checkpoint's text of it is lost (see diff::lost).
    pub lost: bool,
}

pub struct Checkpoints {
    git: Git,
    log: Log,
    limits: Limits,
    dir: PathBuf,
    guard: Guard,
    /// The user's repository holding the folder, if it is theirs.
    users: Option<git::UsersRepository>,
    /// When this Neovim opened them: a gap between turns is looked for after a turn that ended
    /// since (what changed while no Neovim of ours ran is the user's own business).
    opened_ms: u64,
    /// The trees of the last snapshots, with when each was done (landed.rs).
    trees: std::cell::RefCell<Vec<(u64, String)>>,
}

impl Checkpoints {
    /// The checkpoints of `folder`, kept under `state` (Neovim's state folder + "/pi-ide").
    pub fn open(folder: &Path, state: &Path, limits: Limits) -> Result<Checkpoints, String> {
        let folder = folder.canonicalize().map_err(|e| format!("no folder {}: {e}", folder.display()))?;
        refuse_everything_folders(&folder)?;
        let dir = state.join("checkpoints").join(key(&folder));
        private_folder(&state.join("checkpoints"))?;
        private_folder(&dir)?;
        let held = lock::hold(&dir, LOCK_PATIENCE)?;
        let users = git::users_repository(&folder);
        let mut git = Git { git_dir: dir.join("git"), work_tree: folder.clone(), excludes_file: None };
        snapshot::prepare(&git, users.as_ref())?;
        git.excludes_file = git::users_excludes_file(&git.git_dir);
        let _ = std::fs::write(dir.join("folder"), folder.as_os_str().as_encoded_bytes());
        let guard = Guard::new(&dir, &folder, users.clone());
        let cp = Checkpoints { git, log: Log::at(&dir), limits, dir, guard, users, opened_ms: now_ms(), trees: Default::default() };
        cp.maintain(&held);
        Ok(cp)
    }

    fn hold(&self) -> Result<Held, String> {
        lock::hold(&self.dir, LOCK_PATIENCE)
    }

    /// The workspace's snapshot. The first of a folder (no index yet) in a repository that
    /// holds most of its files borrows the user's objects while it hashes — a file already
    /// there costs a hash and no compression — and copies what it used before the lock is let
    /// go, so that no checkpoint depends on an object their gc may prune.
    fn snapshot(&self, held: &Held) -> Result<snapshot::Snapshot, String> {
        let fresh = !self.git.git_dir.join("index").exists();
        let lender = self.users.as_ref().filter(|_| fresh).map(|u| snapshot::Lender {
            objects: u.common_dir.join("objects"),
            indexed: snapshot::index_entries(&u.git_dir.join("index")),
        });
        let snap = snapshot::take(&self.git, self.limits, lender.as_ref());
        if let Ok(s) = &snap {
            self.remember_tree(&s.tree);
        }
        if fresh {
            self.maintain(held);
        }
        snap
    }

    /// Borrowed objects copied, older turns pruned: a failure is logged, it fails no turn.
    fn maintain(&self, _held: &Held) {
        let kept = self.log.read().and_then(|turns| keep::maintain(&self.git, &turns));
        if let Err(e) = kept {
            crate::warn!("checkpoint: keeping {}: {e}", self.dir.display());
        }
    }

    /// A snapshot for no turn: the shadow's index made or refreshed ahead, so that the next
    /// one (a prompt's, which holds its Enter until it is taken) hashes only what changed.
    pub fn warm(&self) -> Result<(), String> {
        let held = self.hold()?;
        self.snapshot(&held).map(|_| ())
    }

    /// The fingerprints of the guarded files now (`tree`: the snapshot's), and the ignored files.
    fn watched(&self, tree: &str) -> (Vec<(Name, String)>, ignored::Listed) {
        let ignored = ignored::list(&self.git, self.limits.files);
        (self.guard.fingerprints(&self.git, tree, &ignored.files), ignored)
    }

    pub fn turns(&self) -> Result<Vec<Turn>, String> {
        self.log.read()
    }

    /// Starts turn n+1 for `agent`: a snapshot, which is also the end of a turn left open (an
    /// agent in a terminal says no end), answered settled beside the new one (`reviewed`: what
    /// the user saw of that one's changes, see [`Checkpoints::end`]). With no turn open, what
    /// changed since the last one ended and no one showed (`reviewed`: the user's writes in
    /// Neovim meanwhile) is a turn of its own, [`BETWEEN_TURNS`], answered in its place. Turns
    /// past the last `limits.turns` are dropped.
    pub fn begin(&self, agent: &str, prompt: Option<String>, reviewed: &[Reviewed]) -> Result<(Turn, Option<Turn>), String> {
        let held = self.hold()?;
        let snap = self.snapshot(&held)?;
        let (prints, ignored) = self.watched(&snap.tree);
        let gap = self.gap(&snap, &prints, reviewed)?;
        let mut closing = None;
        let keep = self.limits.turns.max(1);
        let turn = self.log.update(&held, |turns| {
            if let Some(open) = turns.last_mut().filter(|t| t.end.is_none()) {
                closing = Some(open.n);
                open.end = Some(snap.tree.clone());
                open.end_skipped = snap.skipped.clone();
                open.guarded_end = prints.clone();
                (open.ignored_changed, open.ignored_capped) = (ended_ignored(&ignored.files, open.started_ms, &prints), ignored.capped);
                open.ended_ms = Some(now_ms());
            }
            turns.extend(gap.clone());
            let n = turns.last().map_or(1, |t| t.n + 1);
            let (start, skipped, guarded_start) = (snap.tree.clone(), snap.skipped.clone(), prints.clone());
            let t = Turn { n, agent: agent.into(), prompt, started_ms: now_ms(), start, skipped, guarded_start, ..Turn::default() };
            turns.push(t.clone());
            let over = turns.len().saturating_sub(keep);
            turns.drain(..over);
            Ok(t)
        })?;
        let closed = closing.map(|n| self.settle(&held, n, reviewed)).transpose()?.or(gap);
        self.maintain(&held);
        Ok((turn, closed))
    }

    /// The changes since the last turn ended (or its undo), when it ended while this Neovim ran,
    /// as a turn of their own: only when some of them no one showed.
    fn gap(&self, snap: &snapshot::Snapshot, prints: &[(Name, String)], reviewed: &[Reviewed]) -> Result<Option<Turn>, String> {
        // A log that cannot be read is the update's to report (and set aside).
        let Some(last) = self.log.read().ok().and_then(|mut turns| turns.pop()) else { return Ok(None) };
        let (Some(end), Some(ended_ms)) = (last.end.clone(), last.ended_ms) else { return Ok(None) };
        let start = last.after_undo.clone().unwrap_or(end);
        if ended_ms < self.opened_ms || (start == snap.tree && guarded::changed(&last.guarded_end, prints).is_empty()) {
            return Ok(None);
        }
        let mut t = Turn {
            n: last.n + 1,
            agent: BETWEEN_TURNS.into(),
            between: true,
            started_ms: ended_ms,
            start,
            skipped: last.end_skipped.clone(),
            guarded_start: last.guarded_end.clone(),
            end: Some(snap.tree.clone()),
            end_skipped: snap.skipped.clone(),
            guarded_end: prints.to_vec(),
            ended_ms: Some(now_ms()),
            ..Turn::default()
        };
        let j = self.judge(&t, reviewed)?;
        if j.unreviewed.is_empty() && j.guarded.is_empty() {
            return Ok(None);
        }
        (t.changed, t.unreviewed, t.other_text, t.guarded) = (j.changed, j.unreviewed, j.other_text, j.guarded);
        Ok(Some(t))
    }

    /// Ends turn `n` now; `reviewed`: files whose change the user saw (a review they accepted,
    /// their own write in Neovim), each with the text they saw when it is known. Answers the turn
    /// with what it changed and what no review showed: a file the user saw whose text at the end
    /// is another (the agent wrote other text than it showed) was not reviewed.
    pub fn end(&self, n: u64, reviewed: &[Reviewed]) -> Result<Turn, String> {
        let held = self.hold()?;
        let snap = self.snapshot(&held)?;
        let (prints, ignored) = self.watched(&snap.tree);
        self.log.update(&held, |turns| {
            let t = turns.iter_mut().find(|t| t.n == n).ok_or(format!("no turn {n}"))?;
            t.end = Some(snap.tree.clone());
            t.end_skipped = snap.skipped.clone();
            (t.ignored_changed, t.ignored_capped) = (ended_ignored(&ignored.files, t.started_ms, &prints), ignored.capped);
            t.guarded_end = prints;
            t.ended_ms = Some(now_ms());
            Ok(())
        })?;
        self.settle(&held, n, reviewed)
    }

    /// Records what turn `n` changed (start → end), judged.
    fn settle(&self, held: &Held, n: u64, reviewed: &[Reviewed]) -> Result<Turn, String> {
        let j = self.judge(&self.turn(n)?, reviewed)?;
        self.log.update(held, |turns| {
            let t = turns.iter_mut().find(|t| t.n == n).ok_or(format!("no turn {n}"))?;
            (t.changed, t.unreviewed, t.other_text, t.guarded) = (j.changed, j.unreviewed, j.other_text, j.guarded);
            Ok(t.clone())
        })
    }

    /// What turn `t` changed (start → end), which of those no review showed, and which guarded
    /// files it changed. A review showed a change only from what its left pane showed to the
    /// text accepted: a file whose start is not that left side (changed before the review, by
    /// a shell), or whose end is another text (the agent wrote other text than it showed), was
    /// not reviewed.
    fn judge(&self, t: &Turn, reviewed: &[Reviewed]) -> Result<Judged, String> {
        let end = t.end.clone().unwrap_or_else(|| t.start.clone());
        let entries = self.diff(t, &t.start, &end)?;
        let find = |e: &diff::Entry| reviewed.iter().find(|r| r.path == e.path);
        let other = |e: &diff::Entry| find(e).is_some_and(|r| r.blob.as_ref().is_some_and(|b| *b != e.new_blob));
        let before_shown = |e: &diff::Entry| find(e).is_some_and(|r| r.left.as_ref().is_none_or(|l| *l == e.old_blob));
        let names = |keep: &dyn Fn(&diff::Entry) -> bool| entries.iter().filter(|e| keep(e)).map(|e| e.path.clone()).collect::<Vec<_>>();
        let (unreviewed, other_text) = (names(&|e| !before_shown(e) || other(e)), names(&other));
        let changed: Vec<Name> = entries.into_iter().map(|e| e.path).collect();
        let guarded = guarded::changed(&t.guarded_start, &t.guarded_end).into_iter().filter(|g| !changed.contains(g)).collect();
        Ok(Judged { changed, unreviewed, other_text, guarded })
    }

    /// The diff of two trees of turn `t`, or what it has lost.
    fn diff(&self, t: &Turn, a: &str, b: &str) -> Result<Vec<diff::Entry>, String> {
        diff::between(&self.git, a, b).map_err(|e| {
            let lost = e.contains("unable to read") || e.contains("bad tree") || e.contains("not a tree");
            if lost {
                format!("the checkpoint of turn {} is lost: its repository no longer has its tree ({e})", t.n)
            } else {
                e
            }
        })
    }

    fn turn(&self, n: u64) -> Result<Turn, String> {
        let turns = self.log.read()?;
        let first = turns.first().map(|t| t.n);
        turns.into_iter().find(|t| t.n == n).ok_or_else(|| match first {
            Some(first) if n < first => format!("turn {n} is no longer kept: only the last {} turns are (checkpoints.keep_turns)", self.limits.turns),
            _ => format!("no turn {n} in this folder's checkpoints"),
        })
    }

    /// Turn `n`, or the last agent's turn not undone (passing over one just begun that changed
    /// nothing yet: `now` is the workspace's tree now). A turn "between turns" holds what no
    /// agent did (the user's `git pull`, another editor): undone only when named.
    pub fn pick(&self, n: Option<u64>, now: &str) -> Result<Turn, String> {
        match n {
            Some(n) => self.turn(n),
            None => {
                let turns = self.log.read()?;
                let none = if turns.is_empty() { "no checkpoint yet in this folder" } else { "every turn of this folder is undone" };
                let mut live = turns.into_iter().rev().filter(|t| !t.undone && !t.between);
                let last = live.next().ok_or_else(|| String::from(none))?;
                // A terminal agent's turn ends only when the next begins: one just begun that
                // changed nothing yet is not the turn the user means.
                let idle = last.end.is_none() && last.start == now;
                Ok(live.next().filter(|_| idle).unwrap_or(last))
            }
        }
    }

    /// Every file that differs now from turn `since`'s start (the last turn's by default), the
    /// guarded ones first.
    pub fn changes(&self, since: Option<u64>) -> Result<(Turn, Vec<Change>), String> {
        let held = self.hold()?;
        let now = self.snapshot(&held)?;
        let from = self.pick(since, &now.tree)?;
        let entries = self.diff(&from, &from.start, &now.tree)?;
        let later: Vec<Turn> = self.log.read()?.into_iter().filter(|t| t.n >= from.n).collect();
        let open_changed = self.open_turn_changes(&later, &now.tree)?;
        let mut out: Vec<Change> = entries.iter().map(|e| attribute(e, &later, &open_changed)).collect();
        for c in out.iter_mut().filter(|c| c.status == 'D') {
            c.over_cap = now.skipped.contains(&c.path);
        }
        self.line_stats(&entries, &mut out)?;
        let prints = self.watched(&now.tree).0;
        let guarded = guarded::changed(&from.guarded_start, &prints).into_iter().filter(|g| !out.iter().any(|c| &c.path == g));
        let mut listed: Vec<Change> = guarded.map(|g| guarded_change(g, &from.guarded_start, &prints, &later)).collect();
        listed.append(&mut out);
        drop(held);
        Ok((from, listed))
    }

    /// Counts lines for the first DIFFED_FILES changes whose sides are each at most
    /// DIFFED_BYTES, reading their blobs a few at a time (a turn that rewrote a whole tree of
    /// large files must not be read into memory at once). A side whose blob is gone is "lost".
    fn line_stats(&self, entries: &[diff::Entry], out: &mut [Change]) -> Result<(), String> {
        const DIFFED_FILES: usize = 2_000;
        const DIFFED_BYTES: u64 = 1 << 20;
        let ids: Vec<&str> = entries.iter().flat_map(|e| [e.old_blob.as_str(), e.new_blob.as_str()]).collect();
        let sizes = diff::sizes(&self.git, &ids)?;
        let has = |id: &str| id == diff::NONE || sizes.contains_key(id);
        for (e, c) in entries.iter().zip(out.iter_mut()) {
            c.lost = e.old_mode != "160000" && !has(&e.old_blob);
        }
        let small = |id: &str| sizes.get(id).is_none_or(|s| *s <= DIFFED_BYTES);
        let chosen: Vec<usize> = (0..entries.len().min(DIFFED_FILES))
            .filter(|i| !out[*i].lost && small(&entries[*i].old_blob) && small(&entries[*i].new_blob))
            .collect();
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
    fn open_turn_changes(&self, turns: &[Turn], now: &str) -> Result<Vec<Name>, String> {
        match turns.iter().find(|t| t.end.is_none()) {
            Some(t) => Ok(self.diff(t, &t.start, now)?.into_iter().map(|e| e.path).collect()),
            None => Ok(Vec::new()),
        }
    }

    /// The file `path` as it was at turn `n`'s start (`None`: it did not exist). A text the
    /// checkpoint has lost is an error saying so (never an empty file, nor "did not exist").
    pub fn content(&self, n: u64, path: &Name) -> Result<Option<Vec<u8>>, String> {
        let _held = self.hold()?;
        let t = self.turn(n)?;
        let listed = self.git.run_on(&["ls-tree", "-z", "--full-tree", &t.start], &[path.bytes()]).map_err(|e| {
            format!("the checkpoint of turn {n} is lost: its repository no longer has its tree ({e})")
        })?;
        // `<mode> <type> <id>\t<path>\0`, or nothing when the file was not there.
        let head = listed.split(|b| *b == b'\t').next().unwrap_or_default();
        let head = String::from_utf8_lossy(head);
        let fields: Vec<&str> = head.split(' ').collect();
        match fields.as_slice() {
            [_, "blob", id] => match diff::blobs(&self.git, &[id])?.pop().flatten() {
                Some(bytes) => Ok(Some(bytes)),
                None => Err(diff::lost(n, path, id)),
            },
            _ => Ok(None),
        }
    }

    /// What undoing turn `n` (the last one not undone, by default) would do.
    pub fn plan_undo(&self, n: Option<u64>) -> Result<Plan, String> {
        let held = self.hold()?;
        let now = self.snapshot(&held)?.tree;
        let t = self.pick(n, &now)?;
        restore::plan(&self.git, &t, &now)
    }

    /// Puts back `paths` (from the plan of turn `n`) as they were at its start; marks it undone.
    pub fn undo(&self, n: u64, paths: &[Name]) -> Result<Report, String> {
        let held = self.hold()?;
        let t = self.turn(n)?;
        let now = self.snapshot(&held)?.tree;
        let report = restore::put_back(&self.git, &t, &now, paths)?;
        // What the undo wrote is no one's change between turns.
        let after = self.snapshot(&held)?.tree;
        self.log.update(&held, |turns| {
            if let Some(t) = turns.iter_mut().find(|t| t.n == n) {
                t.undone = true;
            }
            if let Some(last) = turns.last_mut().filter(|t| t.end.is_some()) {
                last.after_undo = Some(after);
            }
            Ok(())
        })?;
        Ok(report)
    }
}

/// How many of the `ignored` files changed since `started_ms`, those fingerprinted (`prints`,
/// named apart) left out.
fn ended_ignored(ignored: &[ignored::Ignored], started_ms: u64, prints: &[(Name, String)]) -> usize {
    let named: Vec<Name> = prints.iter().map(|(n, _)| n.clone()).collect();
    ignored::changed_since(ignored, started_ms, &named)
}

/// Change `e`, with the turns (of `later`) that made it.
fn attribute(e: &diff::Entry, later: &[Turn], open_changed: &[Name]) -> Change {
    let touched = |t: &&Turn| t.changed.contains(&e.path) || (t.end.is_none() && open_changed.contains(&e.path));
    let by: Vec<&Turn> = later.iter().filter(touched).collect();
    let unreviewed = by.iter().any(|t| t.unreviewed.contains(&e.path) || t.end.is_none());
    let other_text = by.iter().any(|t| t.other_text.contains(&e.path));
    let (turns, agents) = made_by(&by);
    Change { path: e.path.clone(), status: e.status, turns, agents, unreviewed, other_text, ..Change::default() }
}

/// Guarded file `g`, changed between fingerprints `before` and `now`, with the turns that did.
fn guarded_change(g: Name, before: &[(Name, String)], now: &[(Name, String)], later: &[Turn]) -> Change {
    let had = |list: &[(Name, String)]| list.iter().any(|(n, _)| *n == g);
    let status = match (had(before), had(now)) {
        (false, _) => 'A',
        (true, false) => 'D',
        _ => 'M',
    };
    let by: Vec<&Turn> = later.iter().filter(|t| t.guarded.contains(&g) || t.end.is_none()).collect();
    let (turns, agents) = made_by(&by);
    Change { guarded: Some(guarded::kind(&g)), path: g, status, turns, agents, unreviewed: true, ..Change::default() }
}

fn made_by(by: &[&Turn]) -> (Vec<u64>, Vec<String>) {
    let mut agents: Vec<String> = by.iter().map(|t| t.agent.clone()).collect();
    agents.dedup();
    (by.iter().map(|t| t.n).collect(), agents)
}

/// Makes `dir` (and what it lacks above) a folder only the user can read: checkpoints hold a
/// copy of every file of the workspace. One made open by an earlier version is closed.
fn private_folder(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    Ok(())
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
