//! Files that run code or hold secrets, outside every snapshot (the repository's own `.git`,
//! or ignored), which an agent's shell can change all the same: the repository's config, hooks
//! and info/ (a `core.fsmonitor` or a hook runs at the user's next `git status`), `.env`
//! files, and ignored files that run code (ignored.rs: an ignored `.envrc`, `local.sh`). Each
//! checkpoint keeps a fingerprint of each — a hash salted with a secret of this shadow's, never
//! the content — so that a turn that changed one is told; it is never undone (there is nothing
//! recorded to put back).

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::files;
use super::git::{Git, UsersRepository};
use super::ignored::{self, Ignored};
use super::name::Name;

/// What a fingerprint reads of one file (a larger one is known by its first MiB and its size).
const READ: u64 = 1 << 20;

pub struct Guard {
    work_tree: PathBuf,
    repo: Option<UsersRepository>,
    salt: Vec<u8>,
}

/// Whether a file's name is that of a `.env` file.
fn is_env(name: &[u8]) -> bool {
    name == b".env" || name.starts_with(b".env.")
}

/// Why a guarded file matters, as `:PiIde changes` says it.
pub fn kind(name: &Name) -> &'static str {
    if is_env(name.bytes().rsplit(|b| *b == b'/').next().unwrap_or_default()) {
        "holds secrets"
    } else {
        "runs code"
    }
}

impl Guard {
    /// The guard of `work_tree`; its salt is kept in `dir` (made once, readable by the user only).
    pub fn new(dir: &Path, work_tree: &Path, repo: Option<UsersRepository>) -> Guard {
        Guard { work_tree: work_tree.to_path_buf(), repo, salt: salt(dir) }
    }

    /// The fingerprints of every guarded file now, by name; `tree`: the snapshot's, whose
    /// folders are where `.env` files are looked for; `ignored`: the ignored files now.
    pub fn fingerprints(&self, git: &Git, tree: &str, ignored: &[Ignored]) -> Vec<(Name, String)> {
        let scripts = ignored.iter().filter(|f| ignored::runs_code(f)).map(|f| self.work_tree.join(f.name.as_path()));
        let paths = self.paths(git, tree).into_iter().chain(scripts);
        let mut out: Vec<(Name, String)> = paths.filter_map(|p| Some((self.name(&p), self.hash(&p)?))).collect();
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// The repository's config, hooks (not the `.sample` ones, which never run) and info/'s
    /// attributes, exclude, sparse-checkout and grafts; the
    /// `.env` and `.env.*` files of every folder the snapshot has.
    fn paths(&self, git: &Git, tree: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(repo) = &self.repo {
            for dir in [&repo.common_dir, &repo.git_dir] {
                out.push(dir.join("config"));
                out.push(dir.join("config.worktree"));
            }
            out.extend(entries(&repo.common_dir.join("hooks")).filter(|p| !p.as_os_str().as_bytes().ends_with(b".sample")));
            // What of info/ decides what git runs or sees (info/refs, which a gc rewrites, does not).
            out.extend(["attributes", "exclude", "sparse-checkout", "grafts"].map(|f| repo.common_dir.join("info").join(f)));
        }
        let listed = git.run(&["ls-tree", "-r", "-d", "-z", "--name-only", "--full-tree", tree], None).unwrap_or_default();
        let folders = std::iter::once(self.work_tree.clone())
            .chain(listed.split(|b| *b == 0).filter(|p| !p.is_empty()).map(|p| self.work_tree.join(Name::from(p).as_path())));
        for folder in folders {
            // Each entry's name is looked at before a path is made of it (20,000 files, 1,000 folders).
            let listed = std::fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok);
            out.extend(listed.filter(|e| is_env(e.file_name().as_bytes())).map(|e| e.path()));
        }
        out
    }

    /// `path` relative to the workspace when it is in it (".git/config"), else absolute.
    fn name(&self, path: &Path) -> Name {
        let shown = path.strip_prefix(&self.work_tree).unwrap_or(path);
        Name(shown.as_os_str().as_bytes().to_vec())
    }

    /// The salted hash of a regular file's mode (a hook made executable starts to run), size
    /// and first MiB; nothing for what is not a regular file.
    fn hash(&self, path: &Path) -> Option<String> {
        let (file, meta) = files::open_regular(path).ok()?;
        let mut head = Vec::new();
        file.take(READ).read_to_end(&mut head).ok()?;
        let mut h = Sha1::new();
        h.update(&self.salt);
        h.update(meta.mode().to_le_bytes());
        h.update(meta.len().to_le_bytes());
        h.update(&head);
        Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// The names whose fingerprint differs between `before` and `after` (changed, made, removed).
pub fn changed(before: &[(Name, String)], after: &[(Name, String)]) -> Vec<Name> {
    let find = |list: &[(Name, String)], n: &Name| list.iter().find(|(m, _)| m == n).map(|(_, h)| h.clone());
    let mut out: Vec<Name> = before.iter().chain(after).map(|(n, _)| n.clone()).filter(|n| find(before, n) != find(after, n)).collect();
    out.sort();
    out.dedup();
    out
}

/// The entries of folder `dir` (none when it cannot be read).
fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir).into_iter().flatten().filter_map(|e| e.ok().map(|e| e.path()))
}

/// This shadow's secret salt: 16 random bytes, made once.
fn salt(dir: &Path) -> Vec<u8> {
    let path = dir.join("salt");
    if let Ok(s) = files::read_regular(&path, 64) {
        if s.len() >= 16 {
            return s;
        }
    }
    let fresh = uuid::Uuid::new_v4().as_bytes().to_vec();
    let made = {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).and_then(|mut f| f.write_all(&fresh))
    };
    match made {
        Ok(()) => fresh,
        // Another Neovim made it first: theirs.
        Err(_) => files::read_regular(&path, 64).unwrap_or(fresh),
    }
}
