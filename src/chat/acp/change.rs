//! The change a permission carries, made whole: the file as it will be. Agents send a fragment
//! (a `diff` item `{path, oldText, newText}`, a new file with `oldText: null`; or a unified diff
//! in `rawInput.diff`, with the fragment on the `tool_call` before it) or the whole file before
//! and after: each agent one of these. Applied to the text on disk; a fragment that does not
//! apply says why, and is never guessed at.

use serde_json::Value;

/// What a permission proposes for one file.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The whole new file.
    Whole { path: String, text: String },
    /// `old` replaced by `new` (every occurrence when `all`).
    Replace { path: String, old: String, new: String, all: bool },
    /// A unified diff.
    Unified { path: String, diff: String },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Whole { path, .. } | Change::Replace { path, .. } | Change::Unified { path, .. } => path,
        }
    }
}

/// The change in a tool call's `content` (its first `diff` item), if any.
pub fn of_content(tool_call: &Value) -> Option<Change> {
    let items = tool_call.get("content")?.as_array()?;
    let diff = items.iter().find(|i| i.get("type").and_then(Value::as_str) == Some("diff"))?;
    let path = diff.get("path")?.as_str()?.to_owned();
    let new = diff.get("newText")?.as_str()?.to_owned();
    let all = tool_call.pointer("/rawInput/replace_all").and_then(Value::as_bool).unwrap_or(false);
    Some(match diff.get("oldText").and_then(Value::as_str) {
        None => Change::Whole { path, text: new },
        Some(old) => Change::Replace { path, old: old.to_owned(), new, all },
    })
}

/// A unified diff in the call's raw input (`rawInput.diff`), if any.
pub fn of_raw_input(tool_call: &Value) -> Option<Change> {
    let raw = tool_call.get("rawInput")?;
    let diff = raw.get("diff")?.as_str()?.to_owned();
    let path = ["fileName", "path", "file_path"].iter().find_map(|k| raw.get(*k)?.as_str())?.to_owned();
    Some(Change::Unified { path, diff })
}

/// Whether a tool call that carries no change we can read is still about changing a file (its
/// kind says so, or it has a diff in a shape we do not know): the dialog that asks about it says
/// that the change could not be shown.
pub fn looks_like_change(tool_call: &Value) -> bool {
    let kind = tool_call.get("kind").and_then(Value::as_str);
    let items = tool_call.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    matches!(kind, Some("edit" | "delete" | "move"))
        || items.iter().any(|i| i.get("type").and_then(Value::as_str) == Some("diff"))
        || tool_call.pointer("/rawInput/diff").is_some()
}

/// The file as it will be, from what is on disk now (None: no such file). Err: why it does
/// not apply.
pub fn apply(change: &Change, disk: Option<&str>) -> Result<String, String> {
    match change {
        Change::Whole { text, .. } => Ok(text.clone()),
        Change::Replace { old, new, all, .. } => replace(disk, old, new, *all),
        Change::Unified { diff, .. } => unified(disk.unwrap_or_default(), diff),
    }
}

fn replace(disk: Option<&str>, old: &str, new: &str, all: bool) -> Result<String, String> {
    let Some(disk) = disk else {
        return if old.is_empty() { Ok(new.to_owned()) } else { Err("the file does not exist".into()) };
    };
    // The whole file before and after, or an empty file filled.
    if disk == old {
        return Ok(new.to_owned());
    }
    if old.is_empty() {
        return Err("it replaces nothing in a file that is not empty".into());
    }
    match disk.matches(old).count() {
        0 => Err("the text it replaces is not in the file (changed since?)".into()),
        1 => Ok(disk.replacen(old, new, 1)),
        _ if all => Ok(disk.replace(old, new)),
        n => Err(format!("the text it replaces is in the file {n} times")),
    }
}

/// One hunk: where it starts in the old file (1-based), and its lines (with their ' ', '-' or
/// '+').
struct Hunk<'a> {
    start: usize,
    lines: Vec<&'a str>,
}

fn hunks(diff: &str) -> Result<Vec<Hunk<'_>>, String> {
    let mut out: Vec<Hunk> = Vec::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("@@ -") {
            let start = rest.split([',', ' ']).next().and_then(|n| n.parse().ok());
            out.push(Hunk { start: start.ok_or("a hunk header it cannot read")?, lines: Vec::new() });
        } else if let Some(h) = out.last_mut() {
            if line.starts_with([' ', '-', '+']) || line.is_empty() {
                h.lines.push(line);
            }
        }
    }
    if out.is_empty() {
        return Err("the diff has no hunks".into());
    }
    Ok(out)
}

/// Applies a unified diff: each hunk where its header says, else at the nearest place its old
/// lines are; exact text only.
fn unified(disk: &str, diff: &str) -> Result<String, String> {
    let ends_with_lf = disk.is_empty() || disk.ends_with('\n');
    let mut lines: Vec<String> = disk.lines().map(str::to_owned).collect();
    let mut shift: isize = 0;
    for h in hunks(diff)? {
        let body = |l: &&str| -> String { l.get(1..).unwrap_or_default().to_owned() };
        let old: Vec<String> = h.lines.iter().filter(|l| !l.starts_with('+')).map(body).collect();
        let new: Vec<String> = h.lines.iter().filter(|l| !l.starts_with('-')).map(body).collect();
        let want = (h.start.max(1) as isize - 1 + shift).max(0) as usize;
        let at = find(&lines, &old, want).ok_or("a hunk's lines are not in the file (changed since?)")?;
        lines.splice(at..at + old.len(), new.iter().cloned());
        shift += new.len() as isize - old.len() as isize;
    }
    let mut text = lines.join("\n");
    if ends_with_lf && !text.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

/// Where `old` is in `lines`, nearest to `want`.
fn find(lines: &[String], old: &[String], want: usize) -> Option<usize> {
    let fits = |at: usize| at + old.len() <= lines.len() && lines[at..at + old.len()] == *old;
    (0..=lines.len()).flat_map(|d| [want.checked_sub(d), want.checked_add(d).filter(|_| d > 0)]).flatten().take(2 * lines.len() + 2).find(|&at| fits(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_applies_to_the_file_once() {
        let call = json!({"content": [{"type": "diff", "path": "/w/a.txt", "oldText": "two", "newText": "2"}]});
        let c = of_content(&call).unwrap();
        assert_eq!(apply(&c, Some("one\ntwo\n")).unwrap(), "one\n2\n");
        assert!(apply(&c, Some("one\n")).unwrap_err().contains("not in the file"));
        assert!(apply(&c, Some("two two")).unwrap_err().contains("2 times"));
        assert!(apply(&c, None).is_err());
    }

    #[test]
    fn a_write_and_a_whole_file_before_and_after() {
        let write = json!({"content": [{"type": "diff", "path": "/w/n.txt", "oldText": null, "newText": "new\n"}]});
        assert_eq!(apply(&of_content(&write).unwrap(), None).unwrap(), "new\n");
        let whole = json!({"content": [{"type": "diff", "path": "/w/a", "oldText": "a\n", "newText": "b\n"}]});
        assert_eq!(apply(&of_content(&whole).unwrap(), Some("a\n")).unwrap(), "b\n");
        let create = json!({"content": [{"type": "diff", "path": "/w/a", "oldText": "", "newText": "b\n"}]});
        assert_eq!(apply(&of_content(&create).unwrap(), None).unwrap(), "b\n");
    }

    #[test]
    fn a_unified_diff_applies_where_its_lines_are() {
        let diff = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n two\n-three\n+THREE\n";
        let c = of_raw_input(&json!({"rawInput": {"fileName": "/w/f", "diff": diff}})).unwrap();
        assert_eq!(c.path(), "/w/f");
        assert_eq!(apply(&c, Some("one\ntwo\nthree\nfour\n")).unwrap(), "one\ntwo\nTHREE\nfour\n");
        // Lines moved down by two: found nearby.
        assert_eq!(apply(&c, Some("x\ny\none\ntwo\nthree\n")).unwrap(), "x\ny\none\ntwo\nTHREE\n");
        assert!(apply(&c, Some("one\n")).is_err());
        let new_file = "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n";
        assert_eq!(apply(&Change::Unified { path: "f".into(), diff: new_file.into() }, None).unwrap(), "a\nb\n");
        assert!(apply(&Change::Unified { path: "f".into(), diff: "nonsense".into() }, Some("")).is_err());
    }
}
