//! Staging a review, off Neovim's main thread: the proposal goes into a private file that Lua
//! loads with `:read`, at C speed (turning a 5 MiB text into Lua strings cost ~100 ms of
//! main-thread time in the first version), and the file it will replace beside it
//! (`<file>.old`), so that Lua reads exactly what was diffed and never opens the user's path
//! itself (which may have become a FIFO meanwhile). What Lua needs to show it is a
//! [`StagedView`] (state/events.rs); the numbers for the winbar are counted afterwards
//! (stats.rs).

use std::path::PathBuf;

use super::files::{write_private, StagedFiles};
use crate::support::on_disk::{self, OnDisk as Old};
use crate::support::real;
use crate::state::events::{NewFile, OldFile, StagedView};
use super::stats::endings;

/// What staging produced: the view, what the stats are counted from, and the files written.
pub struct Staged {
    pub view: StagedView,
    /// The file as it is now, and the proposal (both without a byte order mark).
    pub old: Vec<u8>,
    pub contents: String,
    /// The blob id of the file as its left pane shows it (NO_FILE: there was none; UNREAD: it
    /// could not be read; None: refused): what the review showed as "before" (checkpoints
    /// judge what came before it).
    pub left: Option<String>,
    /// Refused up front: no stats to count.
    pub refused: bool,
    pub files: StagedFiles,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Stages the proposal `contents` for the file at `path` (the one the agent writes on
/// acceptance, shown and diffed) in `file`. Never fails the call: a refusal or a staging error
/// is in the view, and the review is then rejected (an error answer would let the agent write
/// unreviewed).
pub fn stage(path: &str, contents: String, file: PathBuf, limit: usize) -> Staged {
    crate::support::failpoint::hang_if_under(std::path::Path::new(path));
    crate::support::failpoint::slow_stage();
    match on_disk::read(path, limit) {
        Old::Refused(why) => refused(format!("cannot review a write to {path}: {why}")),
        old => with_target(finish(file, contents, old), path),
    }
}

/// The review says where `path` really leads: every agent's review gets it here, once.
fn with_target(mut staged: Staged, path: &str) -> Staged {
    let path = std::path::Path::new(path);
    if let Some(real) = real::target(path) {
        staged.view.linked = real::leads_elsewhere(path, &real);
        staged.view.real_path = Some(real.to_string_lossy().into_owned());
    }
    staged
}

fn refused(why: String) -> Staged {
    let view = StagedView {
        old: OldFile { exists: true, ..OldFile::default() },
        new: NewFile { eol: true, ..NewFile::default() },
        stage_error: Some(why),
        ..StagedView::default()
    };
    Staged { view, old: Vec::new(), contents: String::new(), left: None, refused: true, files: StagedFiles::default() }
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

fn finish(file: PathBuf, contents: String, old: Old) -> Staged {
    let (exists, old_bytes, error) = match old {
        Old::Missing => (false, Vec::new(), None),
        Old::Contents(b) => (true, b, None),
        Old::Unreadable(e) => (true, Vec::new(), Some(e)),
        Old::Refused(_) => unreachable!("handled by stage"),
    };
    let left = match (exists, &error) {
        (false, _) => Some(crate::support::blob::NO_FILE.to_owned()),
        (true, None) => Some(crate::support::blob::blob_id(&old_bytes)),
        (true, Some(_)) => Some(crate::support::blob::UNREAD.to_owned()),
    };
    let (new_text, new_bom) = without_bom(contents.as_bytes());
    let (old_text, old_bom) = without_bom(&old_bytes);
    let e = endings(new_text);
    let readable = exists && error.is_none();
    let mut view = StagedView {
        old: OldFile { exists, bom: old_bom, utf8: std::str::from_utf8(old_text).is_ok(), error, file: None },
        new: NewFile { eol: e.eol, crlf: e.crlf, bom: new_bom, bytes: new_text.len() },
        format_changes: if readable { format_changes(old_text, old_bom, new_text, new_bom) } else { Vec::new() },
        ..StagedView::default()
    };
    let mut files = StagedFiles::default();
    match write_files(&file, new_text, readable.then_some(old_text), &mut files) {
        Ok(old_file) => {
            view.proposal_file = Some(file.to_string_lossy().into_owned());
            view.old.file = old_file;
        }
        Err(err) => {
            files.clear();
            view.stage_error = Some(format!("cannot stage the proposal in {}: {err}", file.display()));
        }
    }
    let old = old_text.to_vec();
    let contents = if new_bom { contents[BOM.len()..].to_owned() } else { contents };
    Staged { view, old, contents, left, refused: false, files }
}

/// Writes the proposal in `file` and the file on disk (when readable) beside it; returns where
/// the latter went.
fn write_files(
    file: &std::path::Path,
    new_text: &[u8],
    old_text: Option<&[u8]>,
    files: &mut StagedFiles,
) -> std::io::Result<Option<String>> {
    write_private(file, new_text)?;
    files.push(file.to_owned());
    let Some(old_text) = old_text else {
        return Ok(None);
    };
    let old_file = PathBuf::from(format!("{}.old", file.display()));
    write_private(&old_file, old_text)?;
    files.push(old_file.clone());
    Ok(Some(old_file.to_string_lossy().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(s: &Staged) -> serde_json::Value {
        serde_json::to_value(&s.view).unwrap()
    }

    #[test]
    fn stage_writes_private_files_and_says_how_the_proposal_ends() {
        use std::os::unix::fs::PermissionsExt;
        // Not there yet: staging creates it, private.
        let dir = crate::scratch_dir("stage").join("run");
        let file = dir.join("1.txt");
        let staged = stage("/nonexistent/x.rs", "a\r\nb".into(), file.clone(), 1 << 20);
        assert_eq!(staged.contents, "a\r\nb");
        assert!(!staged.refused);
        let v = view(&staged);
        assert_eq!(v["old"]["exists"], false);
        assert_eq!(v["new"], json!({"eol": false, "crlf": true, "bom": false, "bytes": 4}));
        assert_eq!(v["proposal_file"], file.to_string_lossy().as_ref());
        assert_eq!(std::fs::read(&file).unwrap(), b"a\r\nb");
        assert_eq!(staged.files.paths(), std::slice::from_ref(&file));
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        // Staging the same file twice fails (create_new), and says so instead of failing.
        let again = stage("/x", "x".into(), file.clone(), 1 << 20);
        assert!(view(&again)["stage_error"].as_str().unwrap().contains("cannot stage"));
        assert!(again.files.paths().is_empty(), "nothing of its own was written");
        assert!(view(&again).get("proposal_file").is_none());
        // The file on disk is staged beside the proposal, exactly as read.
        let old = dir.join("old.rs");
        std::fs::write(&old, "old\n").unwrap();
        let staged = stage(&old.to_string_lossy(), "new\n".into(), dir.join("2.txt"), 1 << 20);
        assert_eq!(staged.old, b"old\n");
        let copy = view(&staged)["old"]["file"].as_str().unwrap().to_owned();
        assert_eq!(staged.files.paths(), [dir.join("2.txt"), PathBuf::from(&copy)]);
        assert_eq!(std::fs::read(&copy).unwrap(), b"old\n");
        assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_left_side_that_could_not_be_read_shows_no_turns_start() {
        let dir = crate::scratch_dir("unread-left");
        let s = finish(dir.join("1.proposal"), "new\n".into(), Old::Unreadable("Permission denied".into()));
        assert_eq!(s.left.as_deref(), Some(crate::support::blob::UNREAD));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_the_panes_hide_is_named_and_a_bom_is_kept_aside() {
        let dir = crate::scratch_dir("shown");
        let new = dir.join("new.txt");
        std::fs::write(&new, "\u{feff}a\r\nb\r\n").unwrap();
        let s = stage(&new.to_string_lossy(), "a\nb".into(), dir.join("1.proposal"), 1 << 20);
        assert_eq!(s.old, b"a\r\nb\r\n", "the file as it is, without its BOM");
        let v = view(&s);
        assert_eq!((v["old"]["bom"].as_bool(), v["old"]["utf8"].as_bool()), (Some(true), Some(true)));
        assert_eq!(
            v["format_changes"],
            json!(["line breaks CRLF → LF", "no newline at end of file", "removes the byte order mark"])
        );
        // A proposal's BOM is kept aside for Lua ('bomb'), not staged as text.
        let s = stage("/nonexistent/x", "\u{feff}\u{e9}t\u{e9}\n".into(), dir.join("2.proposal"), 1 << 20);
        assert_eq!(view(&s)["new"]["bom"], true);
        assert_eq!(std::fs::read(dir.join("2.proposal")).unwrap(), "\u{e9}t\u{e9}\n".as_bytes());
        assert_eq!(view(&s)["format_changes"], json!([]), "a new file has nothing to compare");
        // A staging whose review was given up meanwhile leaves nothing behind.
        drop(s);
        assert!(!dir.join("2.proposal").exists());
        // Latin-1 bytes on disk are not UTF-8: Lua decodes them as the user's Neovim would.
        std::fs::write(&new, b"\xe9t\xe9\n").unwrap();
        let s = stage(&new.to_string_lossy(), "x\n".into(), dir.join("3.proposal"), 1 << 20);
        assert_eq!(view(&s)["old"]["utf8"], false);
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_is_staged_with_where_it_leads_and_a_plain_file_is_not_linked() {
        let dir = std::fs::canonicalize(crate::scratch_dir("stage-link")).unwrap();
        std::fs::write(dir.join("profile.sh"), "export A=1\n").unwrap();
        std::os::unix::fs::symlink(dir.join("profile.sh"), dir.join("notes.txt")).unwrap();
        let s = stage(&dir.join("notes.txt").to_string_lossy(), "x\n".into(), dir.join("1.proposal"), 1 << 20);
        assert_eq!(s.old, b"export A=1\n", "the file it leads to is what is shown");
        assert_eq!((view(&s)["real_path"].as_str(), view(&s)["linked"].as_bool()), (Some(&*dir.join("profile.sh").to_string_lossy()), Some(true)));
        let s = stage(&dir.join("profile.sh").to_string_lossy(), "x\n".into(), dir.join("2.proposal"), 1 << 20);
        assert_eq!(view(&s)["linked"], false);
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_refusal_stages_nothing_and_says_why() {
        let dir = crate::scratch_dir("refuse-stage");
        for (path, why) in [("/dev/zero".to_string(), "character device"), (dir.to_string_lossy().into_owned(), "folder")] {
            let s = stage(&path, "x".into(), dir.join("p"), 1000);
            assert!(s.refused);
            let e = s.view.stage_error.clone().unwrap();
            assert!(e.contains(&path) && e.contains(why) && e.contains("a write to"), "{e}");
            assert!(!dir.join("p").exists(), "nothing staged for a refusal");
            assert!(view(&s).get("proposal_file").is_none() && view(&s)["old"].get("file").is_none());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
