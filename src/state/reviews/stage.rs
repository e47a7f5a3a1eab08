//! openDiff's heavy lifting, kept off Neovim's main thread.
//!
//! The proposal is staged in a private file (mode 0600 in a 0700 folder) that Lua loads with
//! `:read`, at C speed: turning a 5 MiB text into Lua strings cost ~100 ms of main-thread time
//! in the first version. While Lua opens the review, a worker thread diffs the proposal against
//! the file on disk with `similar`, for the winbar's `+added −removed` and hunk count, and
//! hands the numbers over as a second event.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use similar::{capture_diff_slices_deadline, group_diff_ops, Algorithm, DiffTag};

/// How a text ends and breaks its lines, as Neovim's 'eol' and 'fileformat' say it.
#[derive(Debug, PartialEq, Eq)]
pub struct Endings {
    /// The text ends with a line break.
    pub eol: bool,
    /// Every line break is CRLF.
    pub crlf: bool,
}

pub fn endings(text: &[u8]) -> Endings {
    // memchr finds the line breaks with SIMD: a 5 MiB proposal in well under a millisecond
    // (a byte-by-byte scan took 16 ms).
    let mut newlines = 0usize;
    let mut crlf = true;
    for at in memchr::memchr_iter(b'\n', text) {
        newlines += 1;
        if at == 0 || text[at - 1] != b'\r' {
            crlf = false;
        }
    }
    Endings {
        eol: text.ends_with(b"\n"),
        crlf: newlines > 0 && crlf,
    }
}

/// The lines of a text, without their line breaks (a final break starts no line).
pub fn lines(text: &[u8]) -> Vec<&[u8]> {
    if text.is_empty() {
        return Vec::new();
    }
    let crlf = endings(text).crlf;
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    body.split(|&b| b == b'\n')
        .map(|l| {
            if crlf {
                l.strip_suffix(b"\r").unwrap_or(l)
            } else {
                l
            }
        })
        .collect()
}

/// Lines added and removed, and the hunks as `[new_start, new_len, old_start, old_len]`
/// (zero-based).
pub fn stats(old: &[&[u8]], new: &[&[u8]]) -> Value {
    // Lines are compared by a 64-bit hash: integer comparisons make the diff several times
    // faster, and a collision could only miscount the winbar's numbers.
    let hash = |l: &&[u8]| {
        let mut h = DefaultHasher::new();
        l.hash(&mut h);
        h.finish()
    };
    let old: Vec<u64> = old.iter().map(hash).collect();
    let new: Vec<u64> = new.iter().map(hash).collect();
    // A pathological input must not hold the worker for long: similar falls back to a coarser
    // diff after the deadline.
    let deadline = Instant::now() + Duration::from_secs(2);
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &old, &new, Some(deadline));
    let (mut added, mut removed) = (0, 0);
    for op in &ops {
        let (tag, o, n) = op.as_tag_tuple();
        if tag != DiffTag::Equal {
            removed += o.len();
            added += n.len();
        }
    }
    let hunks: Vec<Value> = group_diff_ops(ops, 0)
        .iter()
        .filter_map(|group| {
            let first = group.first()?.as_tag_tuple();
            let last = group.last()?.as_tag_tuple();
            Some(json!([
                first.2.start,
                last.2.end - first.2.start,
                first.1.start,
                last.1.end - first.1.start
            ]))
        })
        .collect();
    json!({ "added": added, "removed": removed, "hunks": hunks })
}

/// What openDiff found on disk at `old_file_path`.
#[derive(Debug, PartialEq, Eq)]
pub enum Old {
    /// No file yet (a new file): the left pane is empty.
    Missing,
    /// A regular file, read whole (at most the limit).
    Contents(Vec<u8>),
    /// It exists but cannot be read (permissions...): shown as such, diffed as empty.
    Unreadable(String),
    /// Not something to review (a folder, a FIFO, a device, too large): the review is refused.
    Refused(String),
}

/// Why a path that exists is not a file we may read, in words (None: a regular file).
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("it is a folder")
    } else if t.is_fifo() {
        Some("it is a named pipe (FIFO)")
    } else if t.is_socket() {
        Some("it is a socket")
    } else if t.is_char_device() {
        Some("it is a character device")
    } else if t.is_block_device() {
        Some("it is a block device")
    } else {
        Some("it is not a regular file")
    }
}

/// Reads the file an openDiff is about, safely: stat first (a FIFO, a device or a folder is
/// never opened for reading; opening a FIFO would wait for a writer forever, reading /dev/zero
/// would never end), open without blocking and check it is still that regular file, and read
/// at most `limit` bytes.
pub fn read_old(path: &str, limit: usize) -> Old {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let before = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Old::Missing,
        Err(e) => return Old::Unreadable(e.to_string()),
    };
    if let Some(why) = not_a_file(&before) {
        return Old::Refused(why.into());
    }
    let too_big = |size: u64| {
        Old::Refused(format!(
            "it is {size} bytes, over the {limit}-byte limit (max_message_size)"
        ))
    };
    if before.len() > limit as u64 {
        return too_big(before.len());
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return Old::Unreadable(e.to_string()),
    };
    // Swapped for something else between the stat and the open?
    match file.metadata() {
        Ok(m) if m.is_file() && m.dev() == before.dev() && m.ino() == before.ino() => {}
        Ok(m) => {
            return Old::Refused(not_a_file(&m).unwrap_or("it changed while being read").into())
        }
        Err(e) => return Old::Unreadable(e.to_string()),
    }
    let mut contents = Vec::with_capacity(before.len() as usize);
    if let Err(e) = file.take(limit as u64 + 1).read_to_end(&mut contents) {
        return Old::Unreadable(e.to_string());
    }
    if contents.len() > limit {
        return too_big(contents.len() as u64);
    }
    Old::Contents(contents)
}

/// The stats of a proposal against the file on disk as read (missing or unreadable: empty).
pub fn stats_for(old: &[u8], contents: &str) -> Value {
    stats(&lines(old), &lines(contents.as_bytes()))
}

/// Writes the proposal where Lua will read it. The folder is private to this user.
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents)
}

/// Staged files not yet owned by a parked call: deleted if dropped (a staging that finished
/// after its call was given up leaves nothing behind).
#[derive(Debug, Default)]
pub struct StagedFiles(Vec<PathBuf>);

impl StagedFiles {
    /// Hands the files over to their owner (the parked call), which deletes them in turn.
    pub fn take(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.0)
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.0
    }
}

impl Drop for StagedFiles {
    fn drop(&mut self) {
        for f in self.0.drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// What staging an openDiff produced: the arguments Lua gets (they say where the proposal and
/// the file on disk were staged, how the proposal ends, whether the file exists, or why the
/// review is refused), and what the stats are computed from.
pub struct Staged {
    pub args: Value,
    /// The file as it is now, and the proposal (both without a byte order mark).
    pub old: Vec<u8>,
    pub contents: String,
    /// Refused up front: no stats to compute.
    pub refused: bool,
    /// The files written.
    pub files: StagedFiles,
}

/// Keys of openDiff's arguments that staging writes for Lua. An agent's own values for them are
/// dropped first: Lua reads the files they name, and the core deletes them.
const STAGED_KEYS: [&str; 5] = ["proposal_file", "old", "new", "stage_error", "format_changes"];

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Takes the proposal out of openDiff's arguments and stages it in `file`, and the file it will
/// replace beside it (`<file>.old`), so that Lua reads exactly what was diffed and never opens
/// the user's path itself (which may have become a FIFO meanwhile). The file shown and diffed is
/// `new_file_path`, the one the agent writes on acceptance (`old_file_path` may name another).
/// Never fails the call: a refusal or a staging error is reported to Lua, which then rejects,
/// since an error answer would let the agent write unreviewed.
pub fn stage(mut args: Value, file: PathBuf, limit: usize) -> Staged {
    if let Some(obj) = args.as_object_mut() {
        for key in STAGED_KEYS {
            obj.remove(key);
        }
    }
    let contents = match args.get_mut("new_file_contents").map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let new_path = args
        .get("new_file_path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let obj = args.as_object_mut().expect("validated as an object");
    obj.remove("new_file_contents");
    crate::support::failpoint::hang_if_under(Path::new(&new_path));
    crate::support::failpoint::slow_stage();
    let old = read_old(&new_path, limit);
    let Old::Refused(why) = old else {
        return finish_stage(args, file, contents, old);
    };
    obj.insert("stage_error".into(), json!(format!("cannot review a write to {new_path}: {why}")));
    obj.insert("old".into(), json!({ "exists": true }));
    obj.insert(
        "new".into(),
        json!({ "eol": true, "crlf": false, "bom": false, "bytes": 0 }),
    );
    Staged {
        args,
        old: Vec::new(),
        contents: String::new(),
        refused: true,
        files: StagedFiles::default(),
    }
}

/// A text without its UTF-8 byte order mark, and whether it had one.
fn without_bom(bytes: &[u8]) -> (&[u8], bool) {
    match bytes.strip_prefix(BOM) {
        Some(rest) => (rest, true),
        None => (bytes, false),
    }
}

/// How the proposal's form differs from the file's where the two panes cannot show it (both
/// hide the byte order mark, and a whole file's line breaks when they are alike within it).
fn format_changes(old: &[u8], old_bom: bool, new: &[u8], new_bom: bool) -> Vec<&'static str> {
    let (o, n) = (endings(old), endings(new));
    let mut changes = Vec::new();
    if o.crlf != n.crlf && !old.is_empty() && !new.is_empty() {
        changes.push(if n.crlf { "line breaks LF → CRLF" } else { "line breaks CRLF → LF" });
    }
    if o.eol != n.eol && !old.is_empty() && !new.is_empty() {
        changes.push(if n.eol { "adds the final newline" } else { "no newline at end of file" });
    }
    if old_bom != new_bom {
        changes.push(if new_bom { "adds a byte order mark" } else { "removes the byte order mark" });
    }
    changes
}

fn finish_stage(mut args: Value, file: PathBuf, contents: String, old: Old) -> Staged {
    let (exists, mut old_bytes, old_error) = match old {
        Old::Missing => (false, Vec::new(), None),
        Old::Contents(b) => (true, b, None),
        Old::Unreadable(e) => (true, Vec::new(), Some(e)),
        Old::Refused(_) => unreachable!("handled by stage"),
    };
    let (new_text, new_bom) = without_bom(contents.as_bytes());
    let (old_text, old_bom) = without_bom(&old_bytes);
    let e = endings(new_text);
    let mut old_info = json!({ "exists": exists, "bom": old_bom,
                               "utf8": std::str::from_utf8(old_text).is_ok() });
    if let Some(e) = old_error {
        // Only when there is one: a JSON null would reach Lua as vim.NIL, which is truthy.
        old_info["error"] = json!(e);
    }
    let changes = if exists && old_info.get("error").is_none() {
        format_changes(old_text, old_bom, new_text, new_bom)
    } else {
        Vec::new()
    };
    let obj = args.as_object_mut().expect("validated as an object");
    obj.insert(
        "new".into(),
        json!({ "eol": e.eol, "crlf": e.crlf, "bom": new_bom, "bytes": new_text.len() }),
    );
    obj.insert("format_changes".into(), json!(changes));
    let old_file = PathBuf::from(format!("{}.old", file.display()));
    let mut files = StagedFiles::default();
    let written = write_private(&file, new_text).and_then(|()| {
        files.0.push(file.clone());
        if exists && old_info.get("error").is_none() {
            write_private(&old_file, old_text)?;
            files.0.push(old_file.clone());
            old_info["file"] = json!(old_file.to_string_lossy());
        }
        Ok(())
    });
    obj.insert("old".into(), old_info);
    match written {
        Ok(()) => {
            obj.insert("proposal_file".into(), json!(file.to_string_lossy()));
        }
        Err(err) => {
            drop(std::mem::take(&mut files));
            obj.insert(
                "stage_error".into(),
                json!(format!(
                    "cannot stage the proposal in {}: {err}",
                    file.display()
                )),
            );
        }
    }
    if old_bom {
        old_bytes.drain(..BOM.len());
    }
    let contents = match new_bom {
        true => contents[BOM.len()..].to_owned(),
        false => contents,
    };
    Staged {
        args,
        old: old_bytes,
        contents,
        refused: false,
        files,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(text: &str) -> Vec<&str> {
        lines(text.as_bytes())
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect()
    }

    #[test]
    fn endings_and_lines() {
        assert_eq!(
            endings(b"a\nb\n"),
            Endings {
                eol: true,
                crlf: false
            }
        );
        assert_eq!(
            endings(b"a\r\nb"),
            Endings {
                eol: false,
                crlf: true
            }
        );
        assert_eq!(
            endings(b"a\r\nb\n"),
            Endings {
                eol: true,
                crlf: false
            }
        );
        assert_eq!(
            endings(b""),
            Endings {
                eol: false,
                crlf: false
            }
        );
        assert_eq!(l("a\nb\n"), ["a", "b"]);
        assert_eq!(l("a\r\nb\r\n"), ["a", "b"]);
        assert_eq!(l("a\r\nb\n"), ["a\r", "b"], "mixed endings keep the \\r");
        assert_eq!(l(""), Vec::<&str>::new());
        assert_eq!(l("\n"), [""]);
        assert_eq!(l("x"), ["x"]);
    }

    #[test]
    fn stats_count_lines_and_hunks() {
        let old: Vec<&[u8]> = vec![b"a", b"b", b"c", b"d", b"e"];
        let new: Vec<&[u8]> = vec![b"a", b"B", b"c", b"d", b"e", b"f"];
        let st = stats(&old, &new);
        assert_eq!(st["added"], 2);
        assert_eq!(st["removed"], 1);
        assert_eq!(st["hunks"], json!([[1, 1, 1, 1], [5, 1, 5, 0]]));
        assert_eq!(stats(&[], &new)["added"], 6);
        assert_eq!(stats_for(b"", "x\ny\n")["added"], 2);
    }

    #[test]
    fn stage_writes_a_private_file_and_keeps_the_contents_out_of_the_arguments() {
        use std::os::unix::fs::PermissionsExt;
        // Not there yet: staging creates it, private.
        let dir = crate::scratch_dir("stage").join("run");
        let file = dir.join("1.txt");
        let args = json!({"old_file_path": "/nonexistent/x.rs", "new_file_path": "/nonexistent/x.rs",
                          "new_file_contents": "a\r\nb", "tab_name": "pi-write:1"});
        let staged = stage(args, file.clone(), 1 << 20);
        assert_eq!(staged.contents, "a\r\nb");
        assert!(!staged.refused);
        let args = staged.args;
        assert!(args.get("new_file_contents").is_none());
        assert_eq!(args["old"]["exists"], false);
        assert_eq!(args["new"], json!({"eol": false, "crlf": true, "bom": false, "bytes": 4}));
        assert_eq!(args["proposal_file"], file.to_string_lossy().as_ref());
        assert_eq!(std::fs::read(&file).unwrap(), b"a\r\nb");
        assert_eq!(staged.files.paths(), std::slice::from_ref(&file));
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // Staging the same file twice fails (create_new), and says so instead of failing.
        let again = stage(
            json!({"new_file_contents": "x", "old_file_path": "/x"}),
            file.clone(),
            1 << 20,
        );
        assert!(again.args["stage_error"]
            .as_str()
            .unwrap()
            .contains("cannot stage"));
        assert!(again.files.paths().is_empty(), "nothing of its own was written");
        assert!(again.args.get("proposal_file").is_none());
        // The file on disk is staged beside the proposal, exactly as read.
        let old = dir.join("old.rs");
        std::fs::write(&old, "old\n").unwrap();
        let o = old.to_string_lossy().to_string();
        let staged = stage(
            json!({"old_file_path": o, "new_file_path": o, "new_file_contents": "new\n"}),
            dir.join("2.txt"),
            1 << 20,
        );
        assert_eq!(staged.old, b"old\n");
        let copy = staged.args["old"]["file"].as_str().unwrap().to_owned();
        assert_eq!(staged.files.paths(), [dir.join("2.txt"), PathBuf::from(&copy)]);
        assert_eq!(std::fs::read(&copy).unwrap(), b"old\n");
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_agents_own_staging_keys_are_dropped_so_nothing_it_names_is_read_or_deleted() {
        let dir = crate::scratch_dir("keys");
        let victim = dir.join("victim").to_string_lossy().into_owned();
        let forged = json!({"proposal_file": victim, "old": {"exists": true, "file": victim},
                            "new": {"bytes": 1}, "stage_error": "x"});
        // Refused (the old path is a directory): nothing staged, and nothing forged survives.
        let mut args = forged.clone();
        args["new_file_path"] = json!(dir.to_string_lossy());
        args["new_file_contents"] = json!("x");
        let s = stage(args, dir.join("1.proposal"), 1 << 20);
        assert!(s.refused && s.files.paths().is_empty());
        assert!(s.args.get("proposal_file").is_none());
        assert!(s.args["old"].get("file").is_none());
        assert_ne!(s.args["stage_error"], "x");
        // Staging fails (the file exists already): the same.
        std::fs::write(dir.join("2.proposal"), "taken").unwrap();
        let mut args = forged;
        args["new_file_path"] = json!("/nonexistent/x");
        args["new_file_contents"] = json!("x");
        let s = stage(args, dir.join("2.proposal"), 1 << 20);
        assert!(s.files.paths().is_empty());
        assert!(s.args.get("proposal_file").is_none());
        assert!(s.args["old"].get("file").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_shown_is_the_one_written_and_what_the_panes_hide_is_named() {
        let dir = crate::scratch_dir("shown");
        let (old, new) = (dir.join("old.txt"), dir.join("new.txt"));
        std::fs::write(&old, "old\n").unwrap();
        std::fs::write(&new, "\u{feff}a\r\nb\r\n").unwrap();
        let s = stage(
            json!({"old_file_path": old.to_string_lossy(), "new_file_path": new.to_string_lossy(),
                   "new_file_contents": "a\nb"}),
            dir.join("1.proposal"),
            1 << 20,
        );
        assert_eq!(s.old, b"a\r\nb\r\n", "new_file_path is what is shown, without its BOM");
        assert_eq!(s.args["old"]["bom"], true);
        assert_eq!(s.args["old"]["utf8"], true);
        assert_eq!(
            s.args["format_changes"],
            json!(["line breaks CRLF → LF", "no newline at end of file", "removes the byte order mark"])
        );
        // A proposal's BOM is kept aside for Lua ('bomb'), not staged as text.
        let s = stage(
            json!({"new_file_path": "/nonexistent/x", "new_file_contents": "\u{feff}\u{e9}t\u{e9}\n"}),
            dir.join("2.proposal"),
            1 << 20,
        );
        assert_eq!(s.args["new"]["bom"], true);
        assert_eq!(std::fs::read(dir.join("2.proposal")).unwrap(), "\u{e9}t\u{e9}\n".as_bytes());
        assert_eq!(s.args["format_changes"], json!([]), "a new file has nothing to compare");
        // A staging whose call was given up meanwhile leaves nothing behind.
        drop(s);
        assert!(!dir.join("2.proposal").exists());
        // Latin-1 bytes on disk are not UTF-8: Lua decodes them as the user's Neovim would.
        std::fs::write(&new, b"\xe9t\xe9\n").unwrap();
        let s = stage(
            json!({"new_file_path": new.to_string_lossy(), "new_file_contents": "x\n"}),
            dir.join("3.proposal"),
            1 << 20,
        );
        assert_eq!(s.args["old"]["utf8"], false);
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_without_being_read() {
        let dir = crate::scratch_dir("refuse");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2000]).unwrap();
        let sock = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        for (path, why) in [
            (fifo.to_string_lossy().to_string(), "named pipe"),
            ("/dev/zero".into(), "character device"),
            ("/dev/urandom".into(), "character device"),
            (dir.to_string_lossy().to_string(), "folder"),
            (sock.to_string_lossy().to_string(), "socket"),
            (big.to_string_lossy().to_string(), "over the 1000-byte limit"),
        ] {
            match read_old(&path, 1000) {
                Old::Refused(w) => assert!(w.contains(why), "{path}: {w}"),
                other => panic!("{path}: {other:?}"),
            }
            let s = stage(
                json!({"old_file_path": path, "new_file_path": path, "new_file_contents": "x"}),
                dir.join("p"),
                1000,
            );
            assert!(s.refused);
            let e = s.args["stage_error"].as_str().unwrap();
            assert!(e.contains(&path) && e.contains(why), "{e}");
            assert!(!dir.join("p").exists(), "nothing staged for a refusal");
        }
        assert_eq!(read_old(&dir.join("none").to_string_lossy(), 10), Old::Missing);
        // A write into a folder is refused too.
        let s = stage(
            json!({"old_file_path": "/nonexistent", "new_file_path": dir.to_string_lossy(), "new_file_contents": "x"}),
            dir.join("q"),
            1000,
        );
        assert!(s.args["stage_error"].as_str().unwrap().contains("a write to"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
