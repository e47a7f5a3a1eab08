//! Undo: what a turn changed, put back as it was at the turn's start. Checked whole before any
//! write (every old content readable), then each file written through a temporary file and a
//! rename, so a file is either as it was or as it is; never through a folder that now leads
//! outside the workspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::diff::{self, Entry};
use super::git::Git;
use super::turns::Turn;

/// One file an undo would put back.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub path: String,
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
}

#[derive(Debug, Default)]
pub struct Report {
    pub restored: Vec<String>,
    pub deleted: Vec<String>,
    pub failed: Vec<(String, String)>,
}

/// The files turn `t` changed that still differ from its start (the tree `now`).
pub fn plan(git: &Git, t: &Turn, now: &str) -> Result<Plan, String> {
    let end = t.end.clone().unwrap_or_else(|| now.to_string());
    let by_turn = diff::between(git, &t.start, &end)?;
    let since: Vec<String> = diff::between(git, &end, now)?.into_iter().map(|e| e.path).collect();
    let back: HashMap<String, Entry> = diff::between(git, &t.start, now)?.into_iter().map(|e| (e.path.clone(), e)).collect();
    let files = by_turn
        .iter()
        .filter_map(|e| back.get(&e.path))
        .map(|b| Planned {
            path: b.path.clone(),
            action: if b.status == 'A' { "delete" } else { "restore" },
            changed_since: since.contains(&b.path),
            mode: b.old_mode.clone(),
            blob: b.old_blob.clone(),
        })
        .collect();
    Ok(Plan { turn: t.clone(), files })
}

/// Puts back the planned files among `paths`; nothing is written when an old content is missing.
pub fn put_back(git: &Git, t: &Turn, now: &str, paths: &[String]) -> Result<Report, String> {
    let files: Vec<Planned> = plan(git, t, now)?.files.into_iter().filter(|f| paths.contains(&f.path)).collect();
    let ids: Vec<&str> = files.iter().map(|f| if f.action == "restore" { f.blob.as_str() } else { "" }).collect();
    let wanted: Vec<&str> = ids.iter().copied().filter(|b| !b.is_empty()).collect();
    let found = diff::blobs(git, &wanted)?;
    let mut contents = wanted.iter().zip(found).map(|(id, c)| (id.to_string(), c)).collect::<HashMap<_, _>>();
    if let Some(f) = files.iter().find(|f| f.action == "restore" && contents.get(&f.blob).is_none_or(|c| c.is_none())) {
        return Err(format!("nothing was put back: the checkpoint has lost {} (its repository was cleaned?)", f.path));
    }
    let mut report = Report::default();
    for f in &files {
        let done = match f.action {
            "delete" => delete(&git.work_tree, &f.path).map(|()| report.deleted.push(f.path.clone())),
            _ => {
                let bytes = contents.remove(&f.blob).flatten().unwrap_or_default();
                write(&git.work_tree, &f.path, &f.mode, &bytes).map(|()| report.restored.push(f.path.clone()))
            }
        };
        if let Err(e) = done {
            report.failed.push((f.path.clone(), e));
        }
    }
    Ok(report)
}

/// `path` under `root`, refused when a folder on the way now leads elsewhere (a symlink an agent
/// made after the checkpoint) or when the path climbs out.
fn inside(root: &Path, path: &str, create: bool) -> Result<PathBuf, String> {
    let rel = Path::new(path);
    if rel.is_absolute() || rel.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err("not a path inside the workspace".into());
    }
    let target = root.join(rel);
    let parent = target.parent().unwrap_or(root);
    if create {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let real = parent.canonicalize().map_err(|e| e.to_string())?;
    if !real.starts_with(root) {
        return Err(format!("its folder now leads outside the workspace ({})", real.display()));
    }
    Ok(target)
}

fn write(root: &Path, path: &str, mode: &str, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let target = inside(root, path, true)?;
    if mode == "160000" {
        return Err("a submodule: its commit is not put back".into());
    }
    let tmp = target.with_file_name(format!(".{}.pi-ide-undo", target.file_name().unwrap_or_default().to_string_lossy()));
    let _ = std::fs::remove_file(&tmp);
    if mode == "120000" {
        let link = String::from_utf8_lossy(bytes).into_owned();
        std::os::unix::fs::symlink(link, &tmp).map_err(|e| e.to_string())?;
    } else {
        std::fs::write(&tmp, bytes).map_err(|e| e.to_string())?;
        let old = std::fs::metadata(&target).ok().filter(|m| m.is_file()).map_or(0o644, |m| m.permissions().mode() & 0o777);
        let exec = if mode == "100755" { (old & 0o444) >> 2 } else { 0 };
        let bits = (old & !0o111) | exec;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(bits)).map_err(|e| e.to_string())?;
    }
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        e.to_string()
    })
}

fn delete(root: &Path, path: &str) -> Result<(), String> {
    if !root.join(path).parent().is_some_and(Path::exists) {
        return Ok(());
    }
    let target = inside(root, path, false)?;
    match std::fs::symlink_metadata(&target) {
        Ok(m) if m.is_dir() => Err("it is a folder now".into()),
        Ok(_) => std::fs::remove_file(&target).map_err(|e| e.to_string()),
        Err(_) => Ok(()),
    }
}
