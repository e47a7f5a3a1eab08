//! The files no snapshot holds because they are ignored (`node_modules/`, `.gitignore`d ones):
//! an agent's shell can change them all the same. A turn's check counts those changed or made
//! since it began (their ctime, which no `touch -d` sets back), and those that run code (an
//! ignored `.envrc`, `.nvim.lua`, `local.sh`, anything executable) are fingerprinted with the
//! guarded files (guarded.rs), so that a change to one is named. Listed by git (its ignore
//! rules, no repository's config: git.rs) and looked at with one lstat each: no content is read.

use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::git::Git;
use super::name::Name;

/// An ignored file, as a checkpoint saw it.
pub struct Ignored {
    pub name: Name,
    /// Its ctime, in ms since the epoch.
    pub changed_ms: u64,
    pub executable: bool,
}

/// Every ignored file of the workspace now (none when git cannot list them). Git names an
/// ignored folder once ("node_modules/"), which is walked here (no link followed): git's own
/// listing of each file in it took four times as long.
pub fn list(git: &Git) -> Vec<Ignored> {
    let listed = git.run(&["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], None).unwrap_or_default();
    let mut out = Vec::new();
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = path.strip_suffix(b"/").unwrap_or(path);
        let name = Name::from(path);
        if let Ok(meta) = std::fs::symlink_metadata(git.work_tree.join(name.as_path())) {
            walk(&git.work_tree, name, &meta, &mut out);
        }
    }
    out
}

/// `name` (lstat `meta`): a file is kept, a folder walked.
fn walk(root: &Path, name: Name, meta: &Metadata, out: &mut Vec<Ignored>) {
    if meta.is_file() {
        let changed_ms = (meta.ctime().max(0) as u64) * 1000 + meta.ctime_nsec().max(0) as u64 / 1_000_000;
        return out.push(Ignored { name, changed_ms, executable: meta.mode() & 0o111 != 0 });
    }
    if !meta.is_dir() {
        return;
    }
    for entry in std::fs::read_dir(root.join(name.as_path())).into_iter().flatten().filter_map(Result::ok) {
        let Ok(meta) = entry.metadata() else { continue };
        let child = Name([name.bytes(), b"/", entry.file_name().as_bytes()].concat());
        walk(root, child, &meta, out);
    }
}

/// Whether ignored file `f` runs code: executable, or a script a shell or Neovim runs by name.
/// Not under `node_modules/`: an install changes hundreds of those, which are counted.
pub fn runs_code(f: &Ignored) -> bool {
    const SCRIPTS: [&[u8]; 6] = [b".sh", b".bash", b".zsh", b".envrc", b".exrc", b".nvimrc"];
    let parts: Vec<&[u8]> = f.name.bytes().split(|b| *b == b'/').collect();
    let leaf = parts.last().copied().unwrap_or_default();
    let installed = parts.contains(&&b"node_modules"[..]);
    !installed && (f.executable || leaf == b".nvim.lua" || SCRIPTS.iter().any(|s| leaf.ends_with(s)))
}

/// How many of `files` changed (or were made) at or after `since_ms`, leaving out `named` (the
/// guarded ones, which a turn names).
pub fn changed_since(files: &[Ignored], since_ms: u64, named: &[Name]) -> usize {
    // A file's times come from the kernel's coarse clock, up to a tick behind ours (4 ms at
    // 250 Hz, 10 at 100).
    let since = since_ms.saturating_sub(COARSE_TICK_MS);
    files.iter().filter(|f| f.changed_ms >= since && !named.contains(&f.name)).count()
}

const COARSE_TICK_MS: u64 = 10;
