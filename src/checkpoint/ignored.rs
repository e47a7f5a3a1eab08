//! The files no snapshot holds because they are ignored (`node_modules/`, `.gitignore`d ones):
//! an agent's shell can change them all the same. A turn's check counts those changed or made
//! since it began (their ctime, which no `touch -d` sets back), and the scripts a shell or
//! Neovim runs by name (an ignored `.envrc`, `.nvim.lua`, `local.sh`) are fingerprinted with the
//! guarded files (guarded.rs), so that a change to one is named — not every executable: after a
//! `cargo build`, `target/` holds hundreds. Listed by git (its ignore rules, no repository's
//! config: git.rs) and looked at with one lstat each: no content is read. The walk is capped at
//! the checkpoints' file limit, stays on the workspace's file system, and reads each folder
//! whole before going into the next (no open folder per level).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::git::Git;
use super::name::Name;

/// An ignored file, as a checkpoint saw it.
pub struct Ignored {
    pub name: Name,
    /// Its ctime, in ms since the epoch.
    pub changed_ms: u64,
}

/// What a walk found: the ignored files, and whether it stopped at its cap.
pub struct Listed {
    pub files: Vec<Ignored>,
    pub capped: bool,
}

/// The ignored files of the workspace now, and whether there were more than `cap` files and
/// folders (the rest not looked at). Git names an ignored folder once ("node_modules/"), which is walked here (no
/// link followed): git's own listing of each file in it took four times as long.
pub fn list(git: &Git, cap: usize) -> Listed {
    let listed = git.run(&["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], None).unwrap_or_default();
    let Ok(dev) = std::fs::metadata(&git.work_tree).map(|m| m.dev()) else { return Listed { files: Vec::new(), capped: false } };
    let mut folders: Vec<Name> = Vec::new();
    let (mut out, mut looked) = (Vec::new(), 0);
    // Folders count too: a tree of empty folders is no cheaper to walk.
    let mut found = |name: Name, meta: &std::fs::Metadata, folders: &mut Vec<Name>, out: &mut Vec<Ignored>| {
        if meta.is_file() {
            let changed_ms = (meta.ctime().max(0) as u64) * 1000 + meta.ctime_nsec().max(0) as u64 / 1_000_000;
            out.push(Ignored { name, changed_ms });
        } else if meta.is_dir() && meta.dev() == dev {
            folders.push(name);
        }
        looked += 1;
        looked > cap
    };
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let name = Name::from(path.strip_suffix(b"/").unwrap_or(path));
        let Ok(meta) = std::fs::symlink_metadata(git.work_tree.join(name.as_path())) else { continue };
        if found(name, &meta, &mut folders, &mut out) {
            return capped(out, cap);
        }
    }
    while let Some(folder) = folders.pop() {
        // Read whole, its handle closed, before any folder below is opened.
        let entries: Vec<_> = std::fs::read_dir(git.work_tree.join(folder.as_path())).into_iter().flatten().filter_map(Result::ok).collect();
        for entry in entries {
            let Ok(meta) = entry.metadata() else { continue };
            let child = Name([folder.bytes(), b"/", entry.file_name().as_bytes()].concat());
            if found(child, &meta, &mut folders, &mut out) {
                return capped(out, cap);
            }
        }
    }
    Listed { files: out, capped: false }
}

fn capped(mut out: Vec<Ignored>, cap: usize) -> Listed {
    out.truncate(cap);
    Listed { files: out, capped: true }
}

/// Folders of builds and installs: what is in them is counted, never fingerprinted (an install
/// or a build changes hundreds of files there).
const BUILT: [&[u8]; 8] = [b"node_modules", b"target", b".venv", b"venv", b"build", b"dist", b"__pycache__", b".git"];

/// Whether ignored file `f` runs code: a script a shell or Neovim runs by name, not in a
/// folder of builds and installs.
pub fn runs_code(f: &Ignored) -> bool {
    const SCRIPTS: [&[u8]; 3] = [b".sh", b".bash", b".zsh"];
    const NAMED: [&[u8]; 4] = [b".envrc", b".exrc", b".nvimrc", b".nvim.lua"];
    let parts: Vec<&[u8]> = f.name.bytes().split(|b| *b == b'/').collect();
    let Some((leaf, folders)) = parts.split_last() else { return false };
    let built = folders.iter().any(|p| BUILT.contains(p));
    !built && (NAMED.contains(leaf) || SCRIPTS.iter().any(|s| leaf.ends_with(s)))
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
