//! Undo: what a turn changed, put back as it was at the turn's start. Checked whole before any
//! write (every old content readable), then each file written through a temporary file and a
//! rename, so a file is either as it was or as it is; never through a folder that now leads
//! elsewhere (files.rs), and under its exact name (bytes, name.rs).

use std::collections::HashMap;

use super::diff::{self, Entry};
use super::files;
use super::git::Git;
use super::name::Name;
use super::turns::Turn;

/// One file an undo would put back.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub path: Name,
    /// "restore" (write the start's content, which may bring back a deleted file) or "delete"
    /// (the turn created it).
    pub action: &'static str,
    /// Changed again since the turn ended: by the user, or by someone after the turn.
    pub changed_since: bool,
    mode: String,
    blob: String,
}

pub struct Plan {
    pub turn: Turn,
    pub files: Vec<Planned>,
    /// Files the turn changed that an undo cannot put back: left out of the checkpoint at its
    /// start (over the size cap), so deleting or rewriting them would lose what was there.
    pub kept: Vec<Name>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub restored: Vec<Name>,
    pub deleted: Vec<Name>,
    pub failed: Vec<(Name, String)>,
}

/// The files turn `t` changed that still differ from its start (the tree `now`).
pub fn plan(git: &Git, t: &Turn, now: &str) -> Result<Plan, String> {
    let end = t.end.clone().unwrap_or_else(|| now.to_string());
    let by_turn = diff::between(git, &t.start, &end)?;
    let since: Vec<Name> = diff::between(git, &end, now)?.into_iter().map(|e| e.path).collect();
    let back: HashMap<Name, Entry> = diff::between(git, &t.start, now)?.into_iter().map(|e| (e.path.clone(), e)).collect();
    let (mut files, mut kept) = (Vec::new(), Vec::new());
    for b in by_turn.iter().filter_map(|e| back.get(&e.path)) {
        if t.skipped.contains(&b.path) {
            kept.push(b.path.clone());
            continue;
        }
        files.push(Planned {
            path: b.path.clone(),
            action: if b.status == 'A' { "delete" } else { "restore" },
            changed_since: since.contains(&b.path),
            mode: b.old_mode.clone(),
            blob: b.old_blob.clone(),
        });
    }
    Ok(Plan { turn: t.clone(), files, kept })
}

/// Puts back the planned files among `paths`; nothing is written when an old content is missing.
pub fn put_back(git: &Git, t: &Turn, now: &str, paths: &[Name]) -> Result<Report, String> {
    let files: Vec<Planned> = plan(git, t, now)?.files.into_iter().filter(|f| paths.contains(&f.path)).collect();
    let wanted: Vec<&str> = files.iter().filter(|f| f.action == "restore").map(|f| f.blob.as_str()).collect();
    let found = diff::blobs(git, &wanted)?;
    let mut contents = wanted.iter().zip(found).map(|(id, c)| (id.to_string(), c)).collect::<HashMap<_, _>>();
    if let Some(f) = files.iter().find(|f| f.action == "restore" && contents.get(&f.blob).is_none_or(|c| c.is_none())) {
        return Err(format!("nothing was put back: {}", diff::lost(t.n, &f.path, &f.blob)));
    }
    let mut report = Report::default();
    // Deletions first: a file the turn made where a folder was is gone before the folder's
    // files come back, and a folder it made empties before a file takes its place.
    let deletes_first = files.iter().filter(|f| f.action == "delete").chain(files.iter().filter(|f| f.action != "delete"));
    for f in deletes_first {
        let done = match f.action {
            "delete" => delete(git, &f.path).map(|()| report.deleted.push(f.path.clone())),
            _ => {
                let bytes = contents.remove(&f.blob).flatten().unwrap_or_default();
                write(git, &f.path, &f.mode, &bytes).map(|()| report.restored.push(f.path.clone()))
            }
        };
        if let Err(e) = done {
            report.failed.push((f.path.clone(), e));
        }
    }
    Ok(report)
}

fn write(git: &Git, path: &Name, mode: &str, bytes: &[u8]) -> Result<(), String> {
    if mode == "160000" {
        return Err("a submodule: its commit is not put back".into());
    }
    let parent = files::parent(&git.work_tree, path.bytes(), true)?.ok_or("its folder could not be made")?;
    match mode {
        "120000" => parent.write_symlink(bytes),
        _ => parent.write_file(bytes, mode == "100755"),
    }
}

fn delete(git: &Git, path: &Name) -> Result<(), String> {
    match files::parent(&git.work_tree, path.bytes(), false)? {
        Some(parent) => parent.remove(),
        // Its folder is gone: so is the file.
        None => Ok(()),
    }
}
