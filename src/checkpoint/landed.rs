//! What landed: the paths the workspace's watch (src/watch/) saw settle, each judged against
//! the last snapshot taken before it first changed — the turn's checkpoint, or the one taken
//! when the watch began — so that Lua can show what an agent wrote by itself against what was
//! there before it wrote. Ignored paths (the snapshot's rules) are left out; files over the size
//! cap, binary ones and links are named, not read. A decision on such a change writes through
//! `put`, which refuses a file that changed since it was looked at.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{diff, files, Checkpoints, Name};
use crate::support::blob::blob_id;

/// The snapshots remembered, newest last: enough for the turn's and the few taken since.
const TREES_KEPT: usize = 8;
/// What `put` expects a symlink to be "holding" (it has no blob of its own here).
pub const LINK: &str = "link";
/// Changes read and handed over in full from one batch; the rest are counted.
pub const MAX_SHOWN: usize = 200;

/// One path that changed, as Lua gets it.
#[derive(Default)]
pub struct Landed {
    pub path: Name,
    /// "changed", "created", "deleted", or "gone": made since the baseline and gone again.
    pub kind: &'static str,
    /// The blob id of what is there now (None: nothing, or not read) and of the baseline.
    pub blob: Option<String>,
    pub base_blob: Option<String>,
    /// The texts, when both sides are text within the size cap.
    pub text: Option<Vec<u8>>,
    pub base: Option<Vec<u8>>,
    /// Why its lines cannot be shown ("binary", "over the size cap", "a symlink"), if so.
    pub not_diffed: Option<&'static str>,
    /// No snapshot was taken before it changed: its baseline is unknown.
    pub no_base: bool,
}

/// A batch judged: the changes, and how many more past MAX_SHOWN.
pub struct Batch {
    pub landed: Vec<Landed>,
    pub more: usize,
}

impl Checkpoints {
    /// Notes the tree of a snapshot just taken.
    pub(super) fn remember_tree(&self, tree: &str) {
        let mut trees = self.trees.borrow_mut();
        trees.push((super::now_ms(), tree.to_string()));
        let over = trees.len().saturating_sub(TREES_KEPT);
        trees.drain(..over);
    }

    /// The newest tree whose snapshot was finished before `ms`.
    fn tree_before(&self, ms: u64) -> Option<String> {
        self.trees.borrow().iter().rev().find(|(at, _)| *at <= ms).map(|(_, t)| t.clone())
    }

    /// The folders the snapshot ignores as a whole (`node_modules/`, a `.gitignore`d `target/`):
    /// the watch never walks them.
    pub fn ignored_folders(&self) -> HashSet<PathBuf> {
        let listed = self.git.run(&["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], None).unwrap_or_default();
        listed
            .split(|b| *b == 0)
            .filter_map(|p| p.strip_suffix(b"/"))
            .map(|p| self.git.work_tree.join(Name::from(p).as_path()))
            .collect()
    }

    /// A snapshot for the watch's start: changes from now on have a baseline.
    pub fn watch_baseline(&self) -> Result<(), String> {
        self.warm()
    }

    /// Judges `changed` (paths relative to the folder, with when each first changed).
    pub fn landed(&self, changed: &[(Vec<u8>, u64)]) -> Result<Batch, String> {
        let kept = self.not_ignored(changed)?;
        let mut landed = Vec::new();
        let mut more = 0;
        for (tree, paths) in by_tree(self, &kept) {
            let bases = tree.as_deref().map(|t| self.bases(t, &paths)).transpose()?.unwrap_or_default();
            for path in paths {
                let Some(mut l) = self.now_of(&path, bases.get(&path).cloned(), tree.is_none()) else { continue };
                if landed.len() >= MAX_SHOWN {
                    more += 1;
                    continue;
                }
                l.path = path;
                landed.push(l);
            }
        }
        self.read_bases(&mut landed)?;
        Ok(Batch { landed, more })
    }

    /// The paths the snapshot's rules do not ignore.
    fn not_ignored(&self, changed: &[(Vec<u8>, u64)]) -> Result<Vec<(Name, u64)>, String> {
        let input: Vec<u8> = changed.iter().flat_map(|(p, _)| p.iter().copied().chain([0])).collect();
        let ignored = self.git.ignored(&input)?;
        Ok(changed.iter().filter(|(p, _)| !ignored.contains(p)).map(|(p, ms)| (Name(p.clone()), *ms)).collect())
    }

    /// The blob ids of `paths` in `tree` (a path not there is missing from the map).
    fn bases(&self, tree: &str, paths: &[Name]) -> Result<HashMap<Name, String>, String> {
        let names: Vec<&[u8]> = paths.iter().map(Name::bytes).collect();
        let out = self.git.run_on(&["ls-tree", "-z", tree], &names)?;
        Ok(out
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let tab = entry.iter().position(|b| *b == b'\t')?;
                let head = String::from_utf8_lossy(&entry[..tab]).into_owned();
                let id = head.split(' ').nth(2)?.to_string();
                Some((Name(entry[tab + 1..].to_vec()), id))
            })
            .collect())
    }

    /// What `path` is now against `base` (its blob id at the baseline); None when it is the
    /// same ("gone": nothing was there, nor is now).
    fn now_of(&self, path: &Name, base: Option<String>, no_base: bool) -> Option<Landed> {
        let full = self.git.work_tree.join(path.as_path());
        let mut l = Landed { base_blob: base.clone(), no_base, ..Default::default() };
        match std::fs::symlink_metadata(&full) {
            // Made and gone again (an editor's or agent's temporary file, renamed over the
            // real one): said, so that one reported while it was there is no longer pending.
            Err(_) if base.is_none() => l.kind = "gone",
            Err(_) => l.kind = "deleted",
            Ok(m) if m.is_dir() => return None,
            Ok(m) => {
                l.kind = if base.is_none() && !no_base { "created" } else { "changed" };
                if m.file_type().is_symlink() {
                    l.not_diffed = Some("a symlink");
                } else if m.len() > self.limits.file_bytes {
                    l.not_diffed = Some("over the size cap");
                } else {
                    let bytes = files::read_regular(&full, self.limits.file_bytes).ok()?;
                    l.blob = Some(blob_id(&bytes));
                    if l.blob == base {
                        return None;
                    }
                    if binary(&bytes) {
                        l.not_diffed = Some("binary");
                    } else {
                        l.text = Some(bytes);
                    }
                }
            }
        }
        Some(l)
    }

    /// The baselines' bytes, read in one go: a text's to show, any other's to put back whole
    /// (a binary file, a link swapped in for a file).
    fn read_bases(&self, landed: &mut [Landed]) -> Result<(), String> {
        let ids: Vec<&str> = landed.iter().filter_map(|l| l.base_blob.as_deref()).collect();
        let texts: HashMap<String, Option<Vec<u8>>> = ids.iter().map(|s| s.to_string()).zip(diff::blobs(&self.git, &ids)?).collect();
        for l in landed.iter_mut() {
            let Some(id) = &l.base_blob else { continue };
            match texts.get(id).cloned().flatten() {
                Some(b) => {
                    if binary(&b) && l.not_diffed.is_none() {
                        l.not_diffed = Some("binary");
                    }
                    l.base = Some(b);
                }
                None => l.no_base = true,
            }
        }
        Ok(())
    }

    /// Writes `bytes` as `path` (None: removes it), only while it still holds the text whose
    /// blob id is `expected` (None: nothing there): a later write of the agent's or the user's
    /// is never overwritten. No link is followed.
    pub fn put(&self, path: &Name, bytes: Option<&[u8]>, expected: Option<&str>) -> Result<(), String> {
        let full = self.git.work_tree.join(path.as_path());
        let now = match std::fs::symlink_metadata(&full) {
            Err(_) => None,
            // A link swapped in is named, never followed: replaced by the rename below.
            Ok(m) if m.file_type().is_symlink() => Some(LINK.to_string()),
            Ok(_) => Some(files::read_regular(&full, self.limits.file_bytes).map(|b| blob_id(&b)).map_err(|e| e.to_string())?),
        };
        if now.as_deref() != expected {
            return Err(format!("{} changed since it was shown", path.lossy()));
        }
        let parent = files::parent(&self.git.work_tree, path.bytes(), bytes.is_some())?;
        match (parent, bytes) {
            (Some(p), Some(b)) => {
                let exec = std::fs::metadata(&full).is_ok_and(|m| m.permissions().mode() & 0o100 != 0);
                p.write_file(b, exec)
            }
            (Some(p), None) => p.remove(),
            (None, _) => Ok(()),
        }
    }
}

/// `changed` grouped by the tree each is judged against (None: no snapshot before it).
fn by_tree(cp: &Checkpoints, changed: &[(Name, u64)]) -> Vec<(Option<String>, Vec<Name>)> {
    let mut groups: Vec<(Option<String>, Vec<Name>)> = Vec::new();
    for (path, ms) in changed {
        let tree = cp.tree_before(*ms);
        match groups.iter_mut().find(|(t, _)| *t == tree) {
            Some((_, paths)) => paths.push(path.clone()),
            None => groups.push((tree, vec![path.clone()])),
        }
    }
    groups
}

/// Git's own test: a NUL in the first 8,000 bytes.
fn binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}
