//! openDiff's heavy lifting, done on a worker thread before Lua sees the call: read the file on
//! disk, split both texts into lines (noting line endings, so that an accepted text goes back
//! byte for byte), and count what changed with `similar`, for the winbar.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use similar::{capture_diff_slices_deadline, group_diff_ops, Algorithm, DiffTag};

/// A text as Neovim holds it: lines without their endings, plus how it ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Lines<'a> {
    pub lines: Vec<&'a [u8]>,
    /// The text ended with a line ending (Neovim's 'eol').
    pub eol: bool,
    /// Every line ended with CRLF (Neovim's 'fileformat' "dos").
    pub crlf: bool,
}

pub fn split(text: &[u8]) -> Lines<'_> {
    let newlines = text.iter().filter(|&&b| b == b'\n').count();
    let crlf_count = text.windows(2).filter(|w| w == b"\r\n").count();
    let crlf = newlines > 0 && crlf_count == newlines;
    let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let eol = text.ends_with(sep);
    let body = if eol { &text[..text.len() - sep.len()] } else { text };
    let mut lines = Vec::with_capacity(newlines + 1);
    let mut rest = body;
    loop {
        match rest.windows(sep.len()).position(|w| w == sep) {
            Some(i) => {
                lines.push(&rest[..i]);
                rest = &rest[i + sep.len()..];
            }
            None => {
                lines.push(rest);
                break;
            }
        }
    }
    Lines { lines, eol, crlf }
}

/// Lines added and removed, and the hunks as `[new_start, new_len, old_start, old_len]`
/// (zero-based), for the winbar and for placing the cursor on the first change.
pub fn stats(old: &[&[u8]], new: &[&[u8]]) -> Value {
    // A pathological input must not hold the worker for long: similar falls back to a coarser
    // diff after the deadline.
    let deadline = Instant::now() + Duration::from_secs(2);
    let ops = capture_diff_slices_deadline(Algorithm::Myers, old, new, Some(deadline));
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
            Some(json!([first.2.start, last.2.end - first.2.start, first.1.start, last.1.end - first.1.start]))
        })
        .collect();
    json!({ "added": added, "removed": removed, "hunks": hunks })
}

fn lines_value(l: &Lines) -> Value {
    // Lines may hold bytes that are not UTF-8 (a file on disk): keep them lossless as far as
    // JSON allows, and say so.
    let utf8 = l.lines.iter().all(|s| std::str::from_utf8(s).is_ok());
    let lines: Vec<Value> = l.lines.iter().map(|s| Value::String(String::from_utf8_lossy(s).into_owned())).collect();
    json!({ "lines": lines, "eol": l.eol, "crlf": l.crlf, "utf8": utf8 })
}

/// Turns openDiff's arguments into what Lua needs: both sides as lines, and the stats.
/// `new_file_contents` is replaced (Lua never sees the raw text). Never fails: an unreadable
/// file is shown as such, since an error answer would let the agent write unreviewed.
pub fn prepare_open_diff(mut args: Value) -> Value {
    let contents = match args.get_mut("new_file_contents").map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let old_path = args.get("old_file_path").and_then(Value::as_str).unwrap_or_default().to_owned();
    let (old_bytes, exists, read_error) = match std::fs::read(&old_path) {
        Ok(b) => (b, true, None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), false, None),
        Err(e) => (Vec::new(), true, Some(e.to_string())),
    };
    let old = split(&old_bytes);
    let new = split(contents.as_bytes());
    // A missing file is empty, not one empty line, for the counts.
    let old_lines: &[&[u8]] = if old_bytes.is_empty() { &[] } else { &old.lines };
    let new_lines: &[&[u8]] = if contents.is_empty() { &[] } else { &new.lines };
    let stats = stats(old_lines, new_lines);
    let obj = args.as_object_mut().expect("validated as an object");
    obj.remove("new_file_contents");
    let mut old_v = lines_value(&old);
    old_v["exists"] = json!(exists);
    if let Some(e) = read_error {
        old_v["error"] = json!(e);
    }
    obj.insert("old".into(), old_v);
    obj.insert("new".into(), lines_value(&new));
    obj.insert("stats".into(), stats);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> (Vec<&str>, bool, bool) {
        let l = split(text.as_bytes());
        (l.lines.iter().map(|b| std::str::from_utf8(b).unwrap()).collect(), l.eol, l.crlf)
    }

    #[test]
    fn splitting_remembers_line_endings() {
        assert_eq!(s("a\nb\n"), (vec!["a", "b"], true, false));
        assert_eq!(s("a\nb"), (vec!["a", "b"], false, false));
        assert_eq!(s("a\r\nb\r\n"), (vec!["a", "b"], true, true));
        assert_eq!(s("a\r\nb"), (vec!["a", "b"], false, true));
        // Mixed endings stay unix, with the \r kept in the line (round trip is exact).
        assert_eq!(s("a\r\nb\n"), (vec!["a\r", "b"], true, false));
        assert_eq!(s(""), (vec![""], false, false));
        assert_eq!(s("\n"), (vec![""], true, false));
        assert_eq!(s("\n\n"), (vec!["", ""], true, false));
    }

    /// What Lua does on accept: join, then the ending.
    fn join(l: &Lines) -> Vec<u8> {
        let sep: &[u8] = if l.crlf { b"\r\n" } else { b"\n" };
        let mut out = l.lines.join(sep);
        if l.eol {
            out.extend_from_slice(sep);
        }
        out
    }

    #[test]
    fn split_then_join_is_byte_exact() {
        for t in ["", "\n", "x", "x\n", "a\r\nb\r\n", "a\r\nb", "a\r\nb\n", "\r\n", "a\n\n\nb", "é😀\n"] {
            assert_eq!(join(&split(t.as_bytes())), t.as_bytes(), "{t:?}");
        }
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
    }

    #[test]
    fn prepare_replaces_the_contents_and_tolerates_a_missing_file() {
        let args = json!({"old_file_path": "/nonexistent/x.rs", "new_file_path": "/nonexistent/x.rs",
                          "new_file_contents": "fn x() {}\n", "tab_name": "pi-write:1"});
        let p = prepare_open_diff(args);
        assert!(p.get("new_file_contents").is_none());
        assert_eq!(p["old"]["exists"], false);
        assert_eq!(p["new"]["lines"], json!(["fn x() {}"]));
        assert_eq!(p["new"]["eol"], true);
        assert_eq!(p["stats"]["added"], 1);
        assert_eq!(p["stats"]["removed"], 0);
        assert_eq!(p["tab_name"], "pi-write:1");
    }
}
