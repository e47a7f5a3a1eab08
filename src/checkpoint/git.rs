//! Running git on our shadow repository: its own git dir (under Neovim's state folder), the
//! workspace as its work tree, none of the caller's `GIT_*` variables (Neovim started as `git
//! commit`'s editor has `GIT_INDEX_FILE` set: obeying it would write the user's index), and no
//! config but the shadow's own. A config can name programs git runs — a filter, an fsmonitor, a
//! hooks folder, a pager, a credential helper — and the folder may be someone else's: neither
//! the system's nor the user's global config is read, and git is never run in the user's
//! repository or a nested one (their config would be read). What we honour of the user's on
//! purpose, their core.excludesFile, is read by value and passed on.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Settings that keep git from doing anything but hashing the files as they are: no line-ending
/// conversion, no automatic gc (what is kept is decided in keep.rs), new files streamed into a
/// pack rather than a loose file each (20,000 files: 2 s, against 8), never deltified (a
/// repack copies). Then, in case a config were read after all: nothing it names may run.
const SETTINGS: [&str; 23] = [
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.quotepath=false",
    "core.splitIndex=false",
    "core.untrackedCache=false",
    "index.sparse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.addEmbeddedRepo=false",
    "core.bigFileThreshold=1",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "core.sshCommand=false",
];

pub struct Git {
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
    /// The user's core.excludesFile, passed on (their global config is not read).
    pub excludes_file: Option<PathBuf>,
}

impl Git {
    /// A command for `git <args>` on the shadow repository, run in the work tree.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = bare_git(&self.work_tree);
        c.env("GIT_DIR", &self.git_dir).env("GIT_WORK_TREE", &self.work_tree);
        for s in SETTINGS {
            c.args(["-c", s]);
        }
        if let Some(f) = &self.excludes_file {
            c.arg("-c").arg(format!("core.excludesFile={}", f.display()));
        }
        c.args(args);
        c
    }

    /// Runs `git <args>` with `input` on its stdin; its stdout, or what it said on stderr.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        run(self.command(args), args, input)
    }

    /// Which of `paths` (NUL-separated) the shadow's rules ignore (`check-ignore` says nothing,
    /// and fails with 1, when none is).
    pub fn ignored(&self, paths: &[u8]) -> Result<std::collections::HashSet<Vec<u8>>, String> {
        if paths.is_empty() {
            return Ok(Default::default());
        }
        // check-ignore refuses literal pathspecs ("magic not supported"): a name that reads as
        // pathspec magic (":(glob)x") may be judged by its pattern; it is only filtered out.
        let mut c = self.command(&["check-ignore", "-z", "--stdin"]);
        c.env_remove("GIT_LITERAL_PATHSPECS");
        let out = match run(c, &["check-ignore"], Some(paths)) {
            Ok(out) => out,
            Err(e) if e.ends_with("failed: ") => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(out.split(|b| *b == 0).filter(|p| !p.is_empty()).map(<[u8]>::to_vec).collect())
    }

    /// The same with paths (bytes, not UTF-8 maybe) after `--`.
    pub fn run_on(&self, args: &[&str], paths: &[&[u8]]) -> Result<Vec<u8>, String> {
        use std::os::unix::ffi::OsStrExt;
        let mut c = self.command(args);
        c.arg("--").args(paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)));
        run(c, args, None)
    }
}

/// `git` in `dir` with no `GIT_*` variable of ours or the caller's, no system or global config
/// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL), no system attributes, speaking plain English.
pub fn bare_git(dir: &Path) -> Command {
    let mut c = users_git(dir);
    c.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_ATTR_NOSYSTEM", "1");
    c.env("GIT_NO_REPLACE_OBJECTS", "1");
    c
}

/// `git` in `dir` reading the user's system and global config (for `git config` only).
fn users_git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir).env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0").env("GIT_LITERAL_PATHSPECS", "1");
    c
}

/// Runs a prepared git command; its stdout on success.
pub fn run(mut c: Command, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    c.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "checkpoints need git, and there is no `git` on PATH".to_string(),
        _ => format!("could not run git: {e}"),
    })?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // A writer thread: git may fill its stdout before it has read all of stdin.
        let bytes = bytes.to_vec();
        std::thread::spawn(move || stdin.write_all(&bytes));
    }
    let out = child.wait_with_output().map_err(|e| format!("git {}: {e}", args.first().unwrap_or(&"")))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(format!("git {} failed: {}", args.first().unwrap_or(&""), said.trim()))
    }
}

/// The user's core.excludesFile (from their system and global config), read by value from the
/// shadow (no repository of theirs is looked at). `git config` runs nothing a config names.
pub fn users_excludes_file(shadow: &Path) -> Option<PathBuf> {
    let args = ["config", "--get", "--type=path", "core.excludesFile"];
    let mut c = users_git(shadow);
    c.env("GIT_DIR", shadow).args(args);
    let out = run(c, &args, None).ok()?;
    let path = String::from_utf8(out).ok()?.trim_end_matches('\n').to_string();
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// The user's repository holding a folder: the git dir of its work tree and the shared one
/// (they differ in a linked worktree).
#[derive(Clone, Debug, PartialEq)]
pub struct UsersRepository {
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
}

/// The repository holding `folder`, found as git finds it (a `.git` folder, or a `.git` file
/// saying `gitdir: <path>`, in the folder or above) without running git there, and only when
/// it is the user's own: one another user owns (a `/tmp/.git` left for us) is not read, as git's
/// safe.directory rule says.
pub fn users_repository(folder: &Path) -> Option<UsersRepository> {
    for dir in folder.ancestors() {
        let Some(git_dir) = git_dir_at(dir) else { continue };
        let owner = std::fs::metadata(&git_dir).ok()?.uid();
        if owner != unsafe { libc::geteuid() } {
            return None;
        }
        let common_dir = match read_small(&git_dir.join("commondir")) {
            Some(c) => git_dir.join(c.trim_end()).canonicalize().ok()?,
            None => git_dir.clone(),
        };
        return Some(UsersRepository { git_dir, common_dir });
    }
    None
}

/// `dir/.git` as a git dir (absolute), if it is one.
fn git_dir_at(dir: &Path) -> Option<PathBuf> {
    let dot = dir.join(".git");
    let meta = std::fs::metadata(&dot).ok()?;
    let git_dir = if meta.is_dir() {
        dot
    } else if meta.is_file() {
        let text = read_small(&dot)?;
        dir.join(text.strip_prefix("gitdir:")?.trim())
    } else {
        return None;
    };
    let git_dir = git_dir.canonicalize().ok()?;
    git_dir.join("HEAD").is_file().then_some(git_dir)
}

/// A small file's text (a `.git` file, `commondir`): at most 4 KiB, and a regular file only
/// (a FIFO there would hang the checkpoint).
fn read_small(path: &Path) -> Option<String> {
    String::from_utf8(super::files::read_regular(path, 4096).ok()?).ok()
}
