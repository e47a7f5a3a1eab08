//! Running git on our shadow repository: its own git dir (under Neovim's state folder), the
//! workspace as its work tree, and none of the caller's `GIT_*` variables (Neovim started as
//! `git commit`'s editor has `GIT_INDEX_FILE` set: obeying it would write the user's index).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Settings that keep git from doing anything but hashing the files as they are: no line-ending
/// conversion, no fsmonitor daemon, no automatic gc (our trees are referenced only by our log).
const SETTINGS: [&str; 10] = [
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fsmonitor=false",
    "core.quotepath=false",
    "core.splitIndex=false",
    "core.untrackedCache=false",
    "index.sparse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.addEmbeddedRepo=false",
];

pub struct Git {
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
}

impl Git {
    /// A command for `git <args>` on the shadow repository, run in the work tree.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = bare_git(&self.work_tree);
        c.env("GIT_DIR", &self.git_dir).env("GIT_WORK_TREE", &self.work_tree);
        for s in SETTINGS {
            c.args(["-c", s]);
        }
        c.args(args);
        c
    }

    /// Runs `git <args>` with `input` on its stdin; its stdout, or what it said on stderr.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        run(self.command(args), args, input)
    }
}

/// `git` with no `GIT_*` variable of ours or the caller's, in `dir`, speaking plain English.
pub fn bare_git(dir: &Path) -> Command {
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

/// The user's repository holding `folder`, as its shared git dir (absolute), if there is one.
pub fn users_repository(folder: &Path) -> Option<PathBuf> {
    let args = ["rev-parse", "--git-common-dir"];
    let mut c = bare_git(folder);
    c.args(args);
    let out = run(c, &args, None).ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out).trim());
    let dir = if dir.is_absolute() { dir } else { folder.join(dir) };
    dir.canonicalize().ok()
}
