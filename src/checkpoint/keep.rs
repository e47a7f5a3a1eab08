//! What the shadow repository keeps: the trees of the turns in the log (a ref each, so that git
//! knows what is reachable), the index's blobs, and nothing else — what only older turns held
//! is pruned now and then. And only objects of its own: the user's `git gc` may prune theirs.
//! A first snapshot may borrow them while it hashes (`objects/info/alternates`, snapshot.rs) and
//! copies what it used at once; a shadow an earlier version made, which kept borrowing, copies
//! what it still finds and stops.

use std::path::Path;

use super::git::Git;
use super::turns::Turn;

/// Refs are under this prefix: `refs/pi-ide/turn/<n>/start` and `.../end`.
const PREFIX: &str = "refs/pi-ide/turn/";

/// Packs, or loose objects, past which the shadow is repacked (each snapshot adds a pack).
const PACKS: usize = 12;
const LOOSE: usize = 2_000;

/// Makes the shadow own every object it needs and prunes what no kept turn needs, when due
/// (or whenever it still borrows). Only under the folder's lock: no snapshot of another Neovim
/// is under way (its objects would not be reachable yet).
pub fn maintain(git: &Git, turns: &[Turn]) -> Result<(), String> {
    let borrows = borrows(&git.git_dir);
    if !borrows && !due(&git.git_dir) {
        return Ok(());
    }
    sync_refs(git, turns)?;
    repack(git)?;
    if borrows {
        let path = alternates(&git.git_dir);
        std::fs::remove_file(&path).map_err(|e| format!("could not remove {}: {e}", path.display()))?;
        crate::info!("checkpoint: {} no longer borrows the user's objects", git.git_dir.display());
    }
    git.run(&["prune", "--expire=now"], None)?;
    Ok(())
}

fn alternates(git_dir: &Path) -> std::path::PathBuf {
    git_dir.join("objects/info/alternates")
}

fn borrows(git_dir: &Path) -> bool {
    std::fs::metadata(alternates(git_dir)).is_ok_and(|m| m.len() > 0)
}

/// One pack of every object reachable from the refs and the index — borrowed ones copied, lost
/// ones left out (the turns that needed them say so; `git repack` would fail on them forever)
/// — then the other packs go.
fn repack(git: &Git) -> Result<(), String> {
    let base = git.git_dir.join("objects/pack/pack");
    let base = base.to_string_lossy();
    let made = git.run(&["pack-objects", "-q", "--all", "--indexed-objects", "--missing=allow-any", &base], None)?;
    let made = String::from_utf8_lossy(&made).trim().to_string();
    if made.is_empty() {
        return Err("git pack-objects named no pack".into());
    }
    let dir = git.git_dir.join("objects/pack");
    let ours = format!("pack-{made}.");
    for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("pack-") && !name.starts_with(&ours) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

/// Whether the shadow has gathered enough packs or loose objects to be repacked.
fn due(git_dir: &Path) -> bool {
    let count = |dir: &Path, keep: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(dir).map_or(0, |d| d.filter_map(Result::ok).filter(|e| keep(&e.file_name().to_string_lossy())).count())
    };
    let packs = count(&git_dir.join("objects/pack"), &|n| n.ends_with(".pack"));
    // As `git gc --auto` does: one of the 256 folders of loose objects, times 256.
    let loose = count(&git_dir.join("objects/17"), &|_| true) * 256;
    packs > PACKS || loose > LOOSE
}

/// One ref per tree of every turn in the log, and none for turns no longer in it. A tree the
/// shadow does not have (lost) gets none: a ref to it would fail every update.
fn sync_refs(git: &Git, turns: &[Turn]) -> Result<(), String> {
    let wanted: Vec<(String, &str)> = turns
        .iter()
        .flat_map(|t| [("start", Some(t.start.as_str())), ("end", t.end.as_deref())].map(|(side, tree)| (t.n, side, tree)))
        .filter_map(|(n, side, tree)| Some((format!("{PREFIX}{n}/{side}"), tree?)))
        .collect();
    let present = present(git, &wanted.iter().map(|(_, t)| *t).collect::<Vec<_>>())?;
    let listed = git.run(&["for-each-ref", "--format=%(refname)", PREFIX], None)?;
    let mut commands = String::new();
    for (name, tree) in wanted.iter().filter(|(_, t)| present.contains(t)) {
        commands.push_str(&format!("update {name} {tree}\n"));
    }
    for old in String::from_utf8_lossy(&listed).lines().filter(|r| !wanted.iter().any(|(w, t)| w == r && present.contains(t))) {
        commands.push_str(&format!("delete {old}\n"));
    }
    git.run(&["update-ref", "--stdin"], Some(commands.as_bytes()))?;
    Ok(())
}

/// Which of `ids` the shadow has.
fn present<'a>(git: &Git, ids: &[&'a str]) -> Result<Vec<&'a str>, String> {
    let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let out = git.run(&["cat-file", "--batch-check=%(objectname)"], Some(input.as_bytes()))?;
    let text = String::from_utf8_lossy(&out);
    let have: std::collections::HashSet<&str> = text.lines().filter(|l| !l.ends_with(" missing")).collect();
    Ok(ids.iter().copied().filter(|id| have.contains(id)).collect())
}
