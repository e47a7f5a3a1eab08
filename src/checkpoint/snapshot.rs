//! Taking a snapshot of the workspace as a git tree in the shadow repository: the files git's
//! excludes do not ignore (.gitignore, the user's info/exclude, core.excludesFile), each at most
//! `Limits::file_bytes`, stored in the shadow's own objects (never borrowed from the user's
//! repository, whose gc may prune them). The user's index, stash, HEAD and work tree are never
//! touched: the shadow has its own index. A repository inside the workspace is kept as its
//! commit, and git never runs in it (`--ignore-submodules=dirty`: `git add -u` would run `git
//! status` there, which reads its config and runs its filters and hooks).

use std::path::{Path, PathBuf};

use super::files;
use super::git::{bare_git, run, Git, UsersRepository};
use super::name::Name;

/// What a checkpoint refuses to take on, and how much history it keeps.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Files in the workspace (kept ones and new ones): over it, the checkpoint is skipped.
    pub files: usize,
    /// One file's size: a larger file is left out of the checkpoint (and said so).
    pub file_bytes: u64,
    /// Bytes one checkpoint stores (new and changed files): over it, the checkpoint is skipped.
    pub new_bytes: u64,
    /// Turns kept: older ones, and what only they held, are pruned.
    pub turns: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { files: 100_000, file_bytes: 16 << 20, new_bytes: 256 << 20, turns: 50 }
    }
}

/// Attributes that store every file byte for byte: no filters (Git LFS would store a pointer
/// and an undo would write the pointer back; a repository's filter would run), no end-of-line
/// or encoding conversion, no diff or merge driver. `info/attributes` overrides every
/// `.gitattributes`.
const ATTRIBUTES: &str = "* -text -filter -ident -eol -working-tree-encoding -diff -merge\n";

/// Never worth a checkpoint, in any folder.
const EXCLUDES: &str = ".git\nnode_modules/\n.DS_Store\n";

/// Makes `git.git_dir` a repository whose work tree is the workspace (once, with no hook
/// templates), and refreshes the excludes it takes from the user's repository each time it is
/// opened.
pub fn prepare(git: &Git, users: Option<&UsersRepository>) -> Result<(), String> {
    let dir = &git.git_dir;
    if !dir.join("HEAD").exists() {
        std::fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let dir_arg = dir.to_string_lossy().into_owned();
        let args = ["init", "--quiet", "--bare", "--template=", dir_arg.as_str()];
        let mut c = bare_git(&git.work_tree);
        c.args(args);
        run(c, &args, None)?;
    }
    let info = dir.join("info");
    let _ = std::fs::create_dir_all(&info);
    let mut excludes = EXCLUDES.as_bytes().to_vec();
    if let Some(users) = users {
        excludes.extend(files::read_regular(&users.common_dir.join("info/exclude"), 1 << 20).unwrap_or_default());
    }
    let write = |p: &Path, b: &[u8]| std::fs::write(p, b).map_err(|e| format!("could not write {}: {e}", p.display()));
    write(&info.join("attributes"), ATTRIBUTES.as_bytes())?;
    write(&info.join("exclude"), &excludes)
}

/// A snapshot: its tree and the files left out of it (too large, or unreadable).
pub struct Snapshot {
    pub tree: String,
    pub skipped: Vec<Name>,
}

/// A repository whose objects a first snapshot may borrow while it hashes: its objects folder,
/// and how many files its index holds.
pub struct Lender {
    pub objects: PathBuf,
    pub indexed: usize,
}

/// Takes the workspace's snapshot. Retries once when a file vanished between the listing and
/// the add (an agent still at work). `lender`: for a first snapshot (keep.rs copies what it
/// borrowed right after).
pub fn take(git: &Git, limits: Limits, lender: Option<&Lender>) -> Result<Snapshot, String> {
    // A workspace on a mount that never answers, for the tests.
    crate::support::failpoint::hang_if_under(&git.work_tree);
    let mut tries = 0;
    loop {
        tries += 1;
        match take_once(git, limits, lender) {
            Err(e) if tries < 3 && (e.contains("did not match") || e.contains("No such file")) => continue,
            // An index that names an object the shadow lost (it borrowed it from the user's
            // repository, which pruned it) fails every write-tree: it is made again, whole.
            Err(e) if tries < 3 && broken_index(&e) => {
                crate::warn!("checkpoint: the shadow index is rebuilt ({e})");
                let _ = std::fs::remove_file(git.git_dir.join("index"));
            }
            // A git of an older pi-ide in another Neovim (no folder lock) holds the index: wait
            // for it; a lock left by a crash (older than a minute) is removed.
            Err(e) if tries < 40 && e.contains("index.lock") => {
                remove_stale_lock(git);
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            r => return r,
        }
    }
}

fn broken_index(e: &str) -> bool {
    ["invalid object", "Error building trees", "index file corrupt", "bad signature", "unable to read"].iter().any(|s| e.contains(s))
}

fn remove_stale_lock(git: &Git) {
    let lock = git.git_dir.join("index.lock");
    let age = std::fs::metadata(&lock).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
    if age.is_some_and(|a| a > std::time::Duration::from_secs(60)) {
        let _ = std::fs::remove_file(lock);
    }
}

fn take_once(git: &Git, limits: Limits, lender: Option<&Lender>) -> Result<Snapshot, String> {
    let new = git.run(&["ls-files", "-z", "--others", "--exclude-standard"], None)?;
    // What the shadow keeps that changed or went; a nested repository by its commit only.
    let changed = git.run(&["diff-files", "-z", "--name-only", "--ignore-submodules=dirty"], None)?;
    let admitted = admit(git, &new, &changed, limits)?;
    let mut skipped = admitted.skipped;
    // Gone first: a folder made a file (or a symlink) since comes after its old files.
    if !admitted.drop.is_empty() {
        git.run(&["update-index", "--force-remove", "-z", "--stdin"], Some(&admitted.drop))?;
    }
    let borrowing = lender.filter(|l| worth_borrowing(l, admitted.count)).is_some_and(|l| borrow(git, l));
    if !admitted.add.is_empty() {
        add(git, &admitted.add, &mut skipped, borrowing)?;
    }
    let tree = String::from_utf8_lossy(&git.run(&["write-tree"], None)?).trim().to_string();
    Ok(Snapshot { tree, skipped })
}

/// Adds (or removes, when gone) `paths` (NUL-separated) to the shadow's index. update-index
/// takes the list as it is (add's pathspecs cost each path a match against all of them: 10 s
/// for 20,000 new files, against 0.5 s). When it fails (an unreadable file), add, which goes
/// on past such files and names them in `unread`; a nested repository's commit goes through
/// update-index alone (add would run `git status` in it).
fn add(git: &Git, paths: &[u8], unread: &mut Vec<Name>, borrowing: bool) -> Result<(), String> {
    // Borrowing, each file is hashed first and written only when the lender lacks it (a loose
    // object); streamed into a pack, it would be compressed before it is found there.
    let threshold: &[&str] = if borrowing { &["-c", "core.bigFileThreshold=512m"] } else { &[] };
    let index = [threshold, &["update-index", "--add", "--remove", "--replace", "-z", "--stdin"]].concat();
    if git.run(&index, Some(paths)).is_ok() {
        return Ok(());
    }
    let (mut folders, mut plain) = (Vec::new(), Vec::new());
    for p in paths.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let is_dir = std::fs::symlink_metadata(git.work_tree.join(Name::from(p).as_path())).is_ok_and(|m| m.is_dir());
        let list = if is_dir { &mut folders } else { &mut plain };
        list.extend_from_slice(p);
        list.push(0);
    }
    for repo in folders.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        if git.run(&index, Some(&[repo, b"\0"].concat())).is_err() {
            unread.push(Name::from(repo));
        }
    }
    if plain.is_empty() {
        return Ok(());
    }
    let add = [threshold, &["add", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"]].concat();
    match git.run(&add, Some(&plain)) {
        Err(e) if e.contains("adding files failed") => {
            unread.extend(e.split("open(\"").skip(1).filter_map(|s| s.split("\")").next()).map(Name::from));
            Ok(())
        }
        r => r.map(|_| ()),
    }
}

/// Borrowing pays when most files are the lender's already: a file it has costs a hash (0.04
/// ms), one it lacks a loose object (0.4 ms), against 0.1 ms for each streamed into a pack.
fn worth_borrowing(lender: &Lender, files: usize) -> bool {
    lender.indexed * 100 >= files * 85
}

/// Points the shadow at the lender's objects (keep.rs stops it).
fn borrow(git: &Git, lender: &Lender) -> bool {
    let _ = std::fs::create_dir_all(git.git_dir.join("objects/info"));
    let line = format!("{}\n", lender.objects.display());
    std::fs::write(git.git_dir.join("objects/info/alternates"), line).is_ok()
}

/// What a snapshot adds and removes from the shadow's index.
struct Admitted {
    /// New and changed paths to (re)hash, NUL-separated.
    add: Vec<u8>,
    /// Kept files gone (or now behind a symlink, which git will not look through), and kept
    /// files now over the size cap: out of the index (and of this snapshot).
    drop: Vec<u8>,
    skipped: Vec<Name>,
    /// Files the snapshot will hold (kept and new).
    count: usize,
}

/// Sorts the new (`new`) and changed (`changed`) paths, NUL-separated: a file over the size cap
/// is left out, kept or new; an error when the workspace is over the limits (nothing is added).
fn admit(git: &Git, new: &[u8], changed: &[u8], limits: Limits) -> Result<Admitted, String> {
    let mut out = Admitted { add: Vec::new(), drop: Vec::new(), skipped: Vec::new(), count: 0 };
    let (mut bytes, mut count) = (0u64, index_entries(&git.git_dir.join("index")));
    let listed = |l: &'_ [u8]| l.split(|b| *b == 0).filter(|p| !p.is_empty()).map(<[u8]>::to_vec).collect::<Vec<_>>();
    let kept = listed(changed);
    let fresh = listed(new);
    for (path, is_new) in kept.iter().map(|p| (p, false)).chain(fresh.iter().map(|p| (p, true))) {
        // A repository inside is listed as "sub/"; update-index takes it as "sub" (its commit).
        let path = path.strip_suffix(b"/").unwrap_or(path);
        let name = Name::from(path);
        // Listed as new, it was reached (one lstat); a kept one may be behind a symlink now.
        let meta = match is_new {
            true => std::fs::symlink_metadata(git.work_tree.join(name.as_path())).ok(),
            false => match reachable(&git.work_tree, path) {
                Some(meta) => Some(meta),
                None => {
                    out.drop.extend_from_slice(path);
                    out.drop.push(0);
                    continue;
                }
            },
        };
        let size = meta.filter(|m| m.is_file()).map_or(0, |m| m.len());
        if size > limits.file_bytes {
            if !is_new {
                out.drop.extend_from_slice(path);
                out.drop.push(0);
            }
            out.skipped.push(name);
            continue;
        }
        bytes += size;
        count += usize::from(is_new);
        out.add.extend_from_slice(path);
        out.add.push(0);
    }
    out.count = count;
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
    Ok(out)
}

/// `path`'s lstat, when it is there and reached through real folders only (git does not look
/// past a symlink: `d/f` after `d` became one is gone).
fn reachable(root: &Path, path: &[u8]) -> Option<std::fs::Metadata> {
    let mut at = root.to_path_buf();
    let mut parts = path.split(|b| *b == b'/').peekable();
    while let Some(part) = parts.next() {
        at.push(Name::from(part).as_path());
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if parts.peek().is_none() {
            return Some(meta);
        }
        if !meta.is_dir() {
            return None;
        }
    }
    None
}

/// How many files an index holds (its header's count), without listing them.
pub fn index_entries(index: &Path) -> usize {
    use std::io::Read;
    let mut header = [0u8; 12];
    let read = files::open_regular(index).and_then(|(mut f, _)| f.read_exact(&mut header));
    if read.is_err() {
        return 0;
    }
    u32::from_be_bytes([header[8], header[9], header[10], header[11]]) as usize
}
