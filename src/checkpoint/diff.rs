//! What differs between two snapshots: git's tree diff for the list, and our own line diff of
//! the two blobs for what the quickfix list says of each file (+added −removed, where it starts).

use similar::{DiffTag, TextDiff};

use super::git::Git;
use super::name::Name;

/// One file that differs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    pub path: Name,
    /// 'A' created, 'M' changed, 'D' deleted, 'T' changed kind (file ↔ symlink).
    pub status: char,
    pub old_mode: String,
    pub new_mode: String,
    pub old_blob: String,
    pub new_blob: String,
}

/// A blob that is all zeros: "no file on this side".
pub const NONE: &str = crate::support::blob::NO_FILE;

/// The files that differ between trees `a` and `b`, in git's order (by path).
pub fn between(git: &Git, a: &str, b: &str) -> Result<Vec<Entry>, String> {
    if a == b {
        return Ok(Vec::new());
    }
    let out = git.run(&["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", a, b], None)?;
    Ok(parse_raw(&out))
}

/// Parses `--raw -z`: `:<mode> <mode> <blob> <blob> <status>\0<path>\0` per file.
fn parse_raw(out: &[u8]) -> Vec<Entry> {
    let mut fields = out.split(|b| *b == 0);
    let mut entries = Vec::new();
    while let (Some(head), Some(path)) = (fields.next(), fields.next()) {
        let head = String::from_utf8_lossy(head);
        let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
        if parts.len() < 5 {
            continue;
        }
        entries.push(Entry {
            path: Name(path.to_vec()),
            status: parts[4].chars().next().unwrap_or('M'),
            old_mode: parts[0].into(),
            new_mode: parts[1].into(),
            old_blob: parts[2].into(),
            new_blob: parts[3].into(),
        });
    }
    entries
}

/// What a checkpoint says when the text of `path` at turn `n`'s start is gone (a shadow that
/// borrowed the user's objects before they were pruned, or a disk that lost them).
pub fn lost(n: u64, path: &Name, id: &str) -> String {
    format!("the checkpoint of turn {n} has lost {}'s text: git object {id} is missing from its repository", path.lossy())
}

/// The contents of `blobs` (in order; `None` for the all-zero blob or one git cannot give).
pub fn blobs(git: &Git, ids: &[&str]) -> Result<Vec<Option<Vec<u8>>>, String> {
    let wanted: Vec<&str> = ids.iter().copied().filter(|b| *b != NONE).collect();
    if wanted.is_empty() {
        return Ok(ids.iter().map(|_| None).collect());
    }
    let input = wanted.iter().map(|b| format!("{b}\n")).collect::<String>();
    let out = git.run(&["cat-file", "--batch"], Some(input.as_bytes()))?;
    let mut found = std::collections::HashMap::new();
    let mut at = 0;
    while let Some(nl) = out[at..].iter().position(|b| *b == b'\n') {
        let head = String::from_utf8_lossy(&out[at..at + nl]).into_owned();
        at += nl + 1;
        let parts: Vec<&str> = head.split(' ').collect();
        let Some(size) = parts.get(2).and_then(|s| s.parse::<usize>().ok()) else { continue };
        let end = (at + size).min(out.len());
        found.insert(parts[0].to_string(), out[at..end].to_vec());
        at = end + 1;
    }
    Ok(ids.iter().map(|b| found.get(*b).cloned()).collect())
}

/// The sizes of `ids` (blobs git has), without reading them.
pub fn sizes(git: &Git, ids: &[&str]) -> Result<std::collections::HashMap<String, u64>, String> {
    let wanted: Vec<&str> = ids.iter().copied().filter(|b| *b != NONE && !b.is_empty()).collect();
    if wanted.is_empty() {
        return Ok(Default::default());
    }
    let input = wanted.iter().map(|b| format!("{b}\n")).collect::<String>();
    let out = git.run(&["cat-file", "--batch-check"], Some(input.as_bytes()))?;
    let text = String::from_utf8_lossy(&out);
    Ok(text.lines().filter_map(|l| {
        let p: Vec<&str> = l.split(' ').collect();
        Some((p.first()?.to_string(), p.get(2)?.parse().ok()?))
    }).collect())
}

/// Whether bytes look binary: a NUL in the first 8,000 (git's own test).
pub fn is_binary(b: &[u8]) -> bool {
    b[..b.len().min(8000)].contains(&0)
}

/// Lines added and removed from `old` to `new`, and the first changed line of `new` (1-based);
/// `None` for binary content (a NUL in its first 8,000 bytes).
pub fn line_stats(old: &[u8], new: &[u8]) -> Option<(usize, usize, usize)> {
    if is_binary(old) || is_binary(new) {
        return None;
    }
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let diff = TextDiff::configure().timeout(std::time::Duration::from_millis(500)).diff_lines(&*old, &*new);
    let (mut added, mut removed, mut first) = (0, 0, None);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        first.get_or_insert(new_range.start + 1);
        added += new_range.len();
        removed += old_range.len();
    }
    Some((added, removed, first.unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_output_is_parsed_with_odd_paths() {
        let out = b":100644 100644 aaa bbb M\0a b.txt\0:000000 100755 0000 ccc A\0new\nline\0";
        let e = parse_raw(out);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].path.bytes(), e[0].status), (&b"a b.txt"[..], 'M'));
        assert_eq!((e[1].path.bytes(), e[1].status, e[1].new_mode.as_str()), (&b"new\nline"[..], 'A', "100755"));
    }

    #[test]
    fn line_stats_count_and_find_the_first_change() {
        assert_eq!(line_stats(b"a\nb\nc\n", b"a\nB\nc\nd\n"), Some((2, 1, 2)));
        assert_eq!(line_stats(b"", b"x\n"), Some((1, 0, 1)));
        assert_eq!(line_stats(b"x\0y", b"x"), None);
    }
}
