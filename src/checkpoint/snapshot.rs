//! Taking a snapshot of the workspace as a git tree in the shadow repository: the files git's
//! excludes do not ignore (.gitignore, the user's info/exclude, core.excludesFile), each at most
//! `Limits::file_bytes`, with the user's own objects borrowed (alternates) so that a file already
//! in their repository costs a hash and no copy. The user's index, stash, HEAD and work tree are
//! never touched: the shadow has its own index.

use std::path::Path;

use super::git::{bare_git, run, users_repository, Git};

/// What a checkpoint refuses to take on.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Files in the workspace (kept ones and new ones): over it, the checkpoint is skipped.
    pub files: usize,
    /// One file's size: a larger file is left out of the checkpoint (and said so).
    pub file_bytes: u64,
    /// New bytes one checkpoint stores: over it, the checkpoint is skipped.
    pub new_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { files: 100_000, file_bytes: 16 << 20, new_bytes: 256 << 20 }
    }
}

/// Attributes that store every file byte for byte: no filters (Git LFS would store a pointer
/// and an undo would write the pointer back), no end-of-line or encoding conversion.
/// `info/attributes` overrides every `.gitattributes`.
const ATTRIBUTES: &str = "* -text -filter -ident -eol -working-tree-encoding\n";

/// Never worth a checkpoint, in any folder.
const EXCLUDES: &str = ".git\nnode_modules/\n.DS_Store\n";

/// Makes `git.git_dir` a repository whose work tree is the workspace (once), and refreshes what
/// it borrows from the user's repository (its objects and excludes) each time it is opened.
pub fn prepare(git: &Git) -> Result<(), String> {
    let dir = &git.git_dir;
    if !dir.join("HEAD").exists() {
        std::fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let dir_arg = dir.to_string_lossy().into_owned();
        let args = ["init", "--quiet", "--bare", dir_arg.as_str()];
        let mut c = bare_git(&git.work_tree);
        c.args(args);
        run(c, &args, None)?;
    }
    let info = dir.join("info");
    let _ = std::fs::create_dir_all(&info);
    let mut excludes = EXCLUDES.to_string();
    let mut alternates = String::new();
    if let Some(users) = users_repository(&git.work_tree) {
        excludes.push_str(&std::fs::read_to_string(users.join("info/exclude")).unwrap_or_default());
        alternates = format!("{}\n", users.join("objects").display());
    }
    let write = |p: &Path, s: &str| std::fs::write(p, s).map_err(|e| format!("could not write {}: {e}", p.display()));
    write(&info.join("attributes"), ATTRIBUTES)?;
    write(&info.join("exclude"), &excludes)?;
    let _ = std::fs::create_dir_all(dir.join("objects/info"));
    write(&dir.join("objects/info/alternates"), &alternates)
}

/// A snapshot: its tree and the files left out of it for their size.
pub struct Snapshot {
    pub tree: String,
    pub skipped: Vec<String>,
}

/// Takes the workspace's snapshot. Retries once when a file vanished between the listing and
/// the add (an agent still at work).
pub fn take(git: &Git, limits: Limits) -> Result<Snapshot, String> {
    // A workspace on a mount that never answers, for the tests.
    crate::support::failpoint::hang_if_under(&git.work_tree);
    let mut tries = 0;
    loop {
        tries += 1;
        match take_once(git, limits) {
            Err(e) if tries < 3 && (e.contains("did not match") || e.contains("No such file")) => continue,
            // Another Neovim in this folder is taking one: wait for it; a lock left by a crash
            // (older than a minute) is removed.
            Err(e) if tries < 40 && e.contains("index.lock") => {
                remove_stale_lock(git);
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            r => return r,
        }
    }
}

fn remove_stale_lock(git: &Git) {
    let lock = git.git_dir.join("index.lock");
    let age = std::fs::metadata(&lock).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
    if age.is_some_and(|a| a > std::time::Duration::from_secs(60)) {
        let _ = std::fs::remove_file(lock);
    }
}

/// `git add`, going on past files it cannot read (a permission denied): those are named in
/// `unread` and kept out, the rest is added.
fn add(git: &Git, args: &[&str], input: Option<&[u8]>, unread: &mut Vec<String>) -> Result<(), String> {
    let mut all = vec!["add", "--ignore-errors"];
    all.extend_from_slice(args);
    match git.run(&all, input) {
        Err(e) if e.contains("adding files failed") => {
            unread.extend(e.split("open(\"").skip(1).filter_map(|s| s.split("\")").next()).map(str::to_owned));
            Ok(())
        }
        r => r.map(|_| ()),
    }
}

fn take_once(git: &Git, limits: Limits) -> Result<Snapshot, String> {
    let listed = git.run(&["ls-files", "-z", "--others", "--exclude-standard"], None)?;
    let (new, mut skipped) = admit(git, &listed, limits)?;
    // What the shadow already keeps: changed and deleted files.
    add(git, &["--update"], None, &mut skipped)?;
    if !new.is_empty() {
        // update-index takes the list as it is (add's pathspecs cost each path a match against
        // all of them: 10 s for 20,000 new files, against 0.5 s); `--remove`: one that vanished
        // since the listing is no error. Anything else (an unreadable file): add, which goes on.
        let plain = git.run(&["update-index", "--add", "--remove", "-z", "--stdin"], Some(&new));
        if plain.is_err() {
            add(git, &["--pathspec-from-file=-", "--pathspec-file-nul"], Some(&new), &mut skipped)?;
        }
    }
    let tree = String::from_utf8_lossy(&git.run(&["write-tree"], None)?).trim().to_string();
    Ok(Snapshot { tree, skipped })
}

/// The new paths to add (NUL-separated) and those left out for their size; an error when the
/// workspace is over the limits (nothing is added then).
fn admit(git: &Git, listed: &[u8], limits: Limits) -> Result<(Vec<u8>, Vec<String>), String> {
    let (mut new, mut skipped, mut bytes, mut count) = (Vec::new(), Vec::new(), 0u64, kept_count(git));
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let name = String::from_utf8_lossy(path);
        let size = std::fs::symlink_metadata(git.work_tree.join(&*name)).map_or(0, |m| if m.is_file() { m.len() } else { 0 });
        if size > limits.file_bytes {
            skipped.push(name.into_owned());
            continue;
        }
        bytes += size;
        count += 1;
        // A repository inside is listed as "sub/"; update-index takes it as "sub" (its commit).
        new.extend_from_slice(path.strip_suffix(b"/").unwrap_or(path));
        new.push(0);
    }
    if count > limits.files {
        return Err(format!("checkpoint skipped: the workspace has more than {} files (the cap)", limits.files));
    }
    if bytes > limits.new_bytes {
        let mib = |b: u64| b >> 20;
        return Err(format!(
            "checkpoint skipped: it would store {} MiB of new files, over the cap of {} MiB",
            mib(bytes),
            mib(limits.new_bytes)
        ));
    }
    Ok((new, skipped))
}

/// How many files the shadow's index holds (its header's count), without listing them.
fn kept_count(git: &Git) -> usize {
    use std::io::Read;
    let mut header = [0u8; 12];
    let read = std::fs::File::open(git.git_dir.join("index")).and_then(|mut f| f.read_exact(&mut header));
    if read.is_err() {
        return 0;
    }
    u32::from_be_bytes([header[8], header[9], header[10], header[11]]) as usize
}
