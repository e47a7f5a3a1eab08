//! The `apply_patch` text an agent may ask to run (a permission of kind "other" that carries only
//! the patch, lua/pi-ide/agents/ says which): `*** Begin Patch`, then `*** Add File: <path>`
//! (every line `+`), `*** Update File: <path>` (hunks of ` `, `-` and `+` lines, each after an
//! optional `@@` or `@@ <marker>` line, the last maybe ended by `*** End of File`) or `*** Delete
//! File: <path>`, then `*** End Patch`. Each file is worked out as that agent's own parser writes
//! it when the patch applies without fuzz (followed line by line: a hunk's lines found first at
//! or after the previous hunk, a file's CRLF kept, an added file without a last newline unless
//! the patch gives one). Where the agent would guess (lines found only with whitespace trimmed,
//! only alike, or only with Unicode punctuation folded) or fail, this refuses and says why: such
//! a patch is never shown as what it will do. A deletion or a move is not a review: refused too.
//! The agent folds Unicode (NFC) too, which is not redone here: a file that differs from its
//! patch only by that is told after the write as other text than the user accepted (landed.rs).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const UPDATE: &str = "*** Update File: ";
const DELETE: &str = "*** Delete File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
/// What ends a file's section (the agent compares without the headers' last space).
const NEXT_FILE: [&str; 4] = [END, "*** Update File:", "*** Delete File:", "*** Add File:"];
/// Shell wrappers the agent drops around a patch without its Begin and End lines.
const WRAPPERS: [&str; 4] = ["%%bash", "apply_patch", "EOF", "```"];

/// One file as the patch leaves it: `before`, None when the patch creates it.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub path: String,
    pub before: Option<String>,
    pub after: String,
}

/// The patch text of a tool call, when it is an `apply_patch` (its raw input `{input}` or a
/// string holding a patch).
pub fn text_of(tool_call: &serde_json::Value) -> Option<&str> {
    let raw = tool_call.get("rawInput")?;
    let text = raw.get("input").unwrap_or(raw).as_str()?;
    let title = tool_call.get("title").and_then(serde_json::Value::as_str).unwrap_or_default();
    (title.starts_with("apply_patch") || text.contains(BEGIN)).then_some(text)
}

/// Every file `text` changes, as it will be. `cwd`: where relative paths are (the agent's session
/// folder, which they must stay in); `read`: a file's text (None: there is none).
pub fn edits(text: &str, cwd: Option<&Path>, read: &dyn Fn(&Path) -> Result<Option<String>, String>) -> Result<Vec<Edit>, String> {
    let lines = lines_of(text)?;
    let mut parser = Parser { lines: &lines, at: 0, cwd, read, named: HashSet::new(), files: HashSet::new(), out: Vec::new() };
    parser.all()?;
    if parser.out.is_empty() {
        return Err("the patch changes no file".into());
    }
    Ok(parser.out)
}

/// The patch's lines, from its Begin line to its End line (both added when it has neither).
fn lines_of(text: &str) -> Result<Vec<&str>, String> {
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let begin = lines.iter().position(|l| l.starts_with(BEGIN));
    let end = lines.iter().rposition(|l| l.starts_with(END));
    match (begin, end) {
        (Some(b), Some(e)) if e > b => Ok(lines[b..=e].to_vec()),
        (None, None) => Ok(wrapped(&lines)),
        _ => Err("its *** Begin Patch and *** End Patch lines do not pair up".into()),
    }
}

/// A patch without its Begin and End lines: shell wrappers and empty lines around it dropped.
fn wrapped<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let wrapper = |l: &str| !l.trim().is_empty() && WRAPPERS.iter().any(|w| l.starts_with(w));
    let body: Vec<&str> = lines.iter().copied().skip_while(|l| wrapper(l)).collect();
    let keep = body.len() - body.iter().rev().take_while(|l| wrapper(l)).count();
    let body = &body[..keep];
    let first = body.iter().position(|l| !l.is_empty()).unwrap_or(body.len());
    let last = body.iter().rposition(|l| !l.is_empty()).map_or(first, |i| i + 1);
    [BEGIN].into_iter().chain(body[first..last].iter().copied()).chain([END]).collect()
}

/// Lines `del` of the file replaced by `ins`, at line `orig` (0-based).
#[derive(Debug)]
struct Chunk {
    orig: usize,
    del: Vec<String>,
    ins: Vec<String>,
}

struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
    cwd: Option<&'a Path>,
    read: &'a dyn Fn(&Path) -> Result<Option<String>, String>,
    /// The paths as written (the agent refuses one twice) and as resolved (one file twice: refused).
    named: HashSet<String>,
    files: HashSet<PathBuf>,
    out: Vec<Edit>,
}

impl<'a> Parser<'a> {
    fn line(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    fn all(&mut self) -> Result<(), String> {
        if self.line().is_some_and(|l| l.starts_with(BEGIN)) {
            self.at += 1;
        }
        while let Some(line) = self.line().filter(|l| !l.starts_with(END)) {
            if let Some(name) = line.strip_prefix(UPDATE) {
                self.update(name.trim())?;
            } else if let Some(name) = line.strip_prefix(ADD) {
                self.add(name.trim())?;
            } else if let Some(name) = line.strip_prefix(DELETE) {
                return Err(format!("it deletes {}: a deletion is not shown as a review", name.trim()));
            } else {
                return Err(format!("a line it cannot read: {line:?}"));
            }
        }
        Ok(())
    }

    /// The file `name` means, named once in the patch.
    fn file(&mut self, name: &str) -> Result<PathBuf, String> {
        let path = resolve(name, self.cwd)?;
        if !self.named.insert(name.to_owned()) || !self.files.insert(path.clone()) {
            return Err(format!("it names {name} twice"));
        }
        Ok(path)
    }

    fn add(&mut self, name: &str) -> Result<(), String> {
        let path = self.file(name)?;
        if (self.read)(&path)?.is_some() {
            return Err(format!("it adds {name}, which exists (the agent refuses that)"));
        }
        self.at += 1;
        let mut text = Vec::new();
        while let Some(line) = self.line().filter(|l| !NEXT_FILE.iter().any(|n| l.starts_with(n))) {
            text.push(line.strip_prefix('+').ok_or_else(|| format!("a line of the new file {name} without its '+': {line:?}"))?);
            self.at += 1;
        }
        self.out.push(Edit { path: path.display().to_string(), before: None, after: text.join("\n") });
        Ok(())
    }

    fn update(&mut self, name: &str) -> Result<(), String> {
        let path = self.file(name)?;
        self.at += 1;
        if let Some(to) = self.line().and_then(|l| l.strip_prefix(MOVE)) {
            return Err(format!("it moves {name} to {}: a move is not shown as a review", to.trim()));
        }
        let before = (self.read)(&path)?.ok_or_else(|| format!("it updates {name}, which does not exist"))?;
        let crlf = before.contains("\r\n");
        let text = before.replace("\r\n", "\n");
        let file: Vec<&str> = text.split('\n').collect();
        let chunks = self.hunks(&file, name)?;
        let after = splice(&file, &chunks, name)?;
        let after = if crlf { after.replace('\n', "\r\n") } else { after };
        self.out.push(Edit { path: path.display().to_string(), before: Some(before), after });
        Ok(())
    }

    /// The hunks of a file's section, each placed in `file` where the agent places it.
    fn hunks(&mut self, file: &[&str], name: &str) -> Result<Vec<Chunk>, String> {
        let (mut from, mut chunks) = (0, Vec::new());
        loop {
            let start = self.at;
            let Some(line) = self.line() else { return Err(format!("the patch ends inside {name}'s section")) };
            if NEXT_FILE.iter().chain([&END_OF_FILE]).any(|n| line.starts_with(n)) {
                return Ok(chunks);
            }
            let marker = line.strip_prefix("@@ ");
            if marker.is_some() || line == "@@" {
                self.at += 1;
            } else if from != 0 {
                return Err(format!("a line of {name} where a hunk's @@ belongs: {line:?}"));
            }
            if let Some(marker) = marker.map(str::trim).filter(|m| !m.is_empty()) {
                from = after_marker(file, from, marker, name)?;
            }
            let (old, found, eof) = self.hunk()?;
            if self.at == start {
                return Err(format!("an empty line in {name}'s section, where the agent stops reading"));
            }
            let at = place(file, &old, from, eof, name)?;
            chunks.extend(found.into_iter().map(|c| Chunk { orig: c.orig + at, ..c }));
            from = at + old.len();
        }
    }

    /// One hunk's lines: the old lines it is placed by (context and removed), its changes
    /// (placed relative to those), and whether `*** End of File` ends it.
    fn hunk(&mut self) -> Result<(Vec<String>, Vec<Chunk>, bool), String> {
        let (mut old, mut chunks) = (Vec::new(), Vec::new());
        let (mut del, mut ins, mut was_keep) = (Vec::new(), Vec::new(), true);
        while let Some(line) = self.line() {
            if line.is_empty() || line == "***" || line.starts_with("@@") || NEXT_FILE.iter().chain([&END_OF_FILE]).any(|n| line.starts_with(n)) {
                break;
            }
            if line.starts_with("***") {
                return Err(format!("a line it cannot read: {line:?}"));
            }
            self.at += 1;
            // Its first byte is ASCII when it is a mark: the slice after it is on a boundary.
            let (kind, body) = match line.as_bytes()[0] {
                mark @ (b'+' | b'-' | b' ') => (mark, &line[1..]),
                _ => (b' ', line),
            };
            if kind == b' ' && !was_keep && !(del.is_empty() && ins.is_empty()) {
                chunks.push(Chunk { orig: old.len() - del.len(), del: std::mem::take(&mut del), ins: std::mem::take(&mut ins) });
            }
            was_keep = kind == b' ';
            match kind {
                b'-' => {
                    del.push(body.to_owned());
                    old.push(body.to_owned());
                }
                b'+' => ins.push(body.to_owned()),
                _ => old.push(body.to_owned()),
            }
        }
        if !(del.is_empty() && ins.is_empty()) {
            chunks.push(Chunk { orig: old.len() - del.len(), del, ins });
        }
        let eof = self.line() == Some(END_OF_FILE);
        if eof {
            self.at += 1;
        }
        Ok((old, chunks, eof))
    }
}

/// Where the path a patch names is: an absolute one as it is, a relative one in `cwd` (and only
/// there), `.` and `..` taken as written.
fn resolve(name: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    let path = Path::new(name);
    if path.is_absolute() {
        return Ok(normal(path));
    }
    let cwd = cwd.ok_or_else(|| format!("{name} is relative, and the agent's folder is not known"))?;
    let full = normal(&cwd.join(path));
    if !full.starts_with(normal(cwd)) {
        return Err(format!("{name} is outside the agent's folder (the agent refuses it)"));
    }
    Ok(full)
}

fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The agent's folding of a line before it compares (less Unicode's NFC): typographic dashes,
/// quotes and spaces as ASCII, and backslash-escaped quotes unescaped.
fn folded(line: &str) -> String {
    let mapped: String = line
        .chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2014}' | '\u{2212}' => '-',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{AB}' | '\u{BB}' => '"',
            '\u{2018}' | '\u{2019}' | '\u{201B}' => '\'',
            '\u{A0}' | '\u{202F}' => ' ',
            c => c,
        })
        .collect();
    mapped.replace("\\`", "`").replace("\\'", "'").replace("\\\"", "\"")
}

/// The line after the first one at or after `from` that `@@ <marker>` names (the agent takes one
/// that matches trimmed or folded too: refused); `from` when none does (the agent goes on so).
fn after_marker(file: &[&str], from: usize, marker: &str, name: &str) -> Result<usize, String> {
    let want = folded(marker);
    let found = (from..file.len()).find(|&z| !file[z].is_empty() && (folded(file[z]) == want || folded(file[z].trim()) == want));
    match found {
        Some(z) if file[z] == marker => Ok(z + 1),
        Some(_) => Err(format!("its @@ {marker} matches a line of {name} only loosely")),
        None => Ok(from),
    }
}

/// Where a hunk's old lines are in `file`: the first place at or after `from` (the end of the
/// file for an End of File hunk) where they are, exactly.
fn place(file: &[&str], old: &[String], from: usize, eof: bool, name: &str) -> Result<usize, String> {
    if old.is_empty() {
        return Ok(from);
    }
    let fits = |at: usize, fold: bool| {
        at + old.len() <= file.len() && old.iter().zip(&file[at..]).all(|(o, f)| if fold { folded(o) == folded(f) } else { o == f })
    };
    let first = if eof {
        file.len().checked_sub(old.len()).filter(|&at| fits(at, true))
    } else {
        (from..file.len()).find(|&at| fits(at, true))
    };
    match first {
        Some(at) if fits(at, false) => Ok(at),
        Some(_) => Err(format!("a hunk's lines match {name} only with punctuation folded")),
        None if eof => Err(format!("a hunk marked End of File is not at the end of {name}")),
        None => Err(format!("a hunk's lines are not in {name} as it stands (the agent would place it by a guess)")),
    }
}

/// The file's lines with each chunk applied, in order (a chunk before the one it follows, or
/// past the end: refused, as the agent refuses it).
fn splice(file: &[&str], chunks: &[Chunk], name: &str) -> Result<String, String> {
    let (mut out, mut at): (Vec<&str>, usize) = (Vec::new(), 0);
    for c in chunks {
        if c.orig > file.len() || at > c.orig {
            return Err(format!("hunks of {name} overlap or run past its end"));
        }
        out.extend(&file[at..c.orig]);
        out.extend(c.ins.iter().map(String::as_str));
        at = c.orig + c.del.len();
    }
    out.extend(file.get(at..).unwrap_or_default());
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(patch: &str, files: &[(&str, &str)]) -> Result<Vec<Edit>, String> {
        let files: HashMap<PathBuf, String> = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
        edits(patch, Some(Path::new("/w")), &|p| Ok(files.get(p).cloned()))
    }

    fn after(patch: &str, text: &str) -> Result<String, String> {
        run(patch, &[("/w/a.txt", text)]).map(|e| e[0].after.clone())
    }

    #[test]
    fn an_update_applies_where_its_lines_are() {
        let p = "*** Begin Patch\n*** Update File: /w/a.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch";
        assert_eq!(after(p, "one\ntwo\nthree\n").unwrap(), "one\nTWO\nthree\n");
        // Relative to the agent's folder, with no @@ before its first hunk.
        let p = "*** Begin Patch\n*** Update File: a.txt\n-two\n+2\n*** End Patch\n";
        let e = run(p, &[("/w/a.txt", "one\ntwo\n")]).unwrap();
        assert_eq!((e[0].path.as_str(), e[0].after.as_str(), e[0].before.as_deref()), ("/w/a.txt", "one\n2\n", Some("one\ntwo\n")));
    }

    #[test]
    fn hunks_follow_each_other_and_a_marker_moves_past_its_line() {
        let text = "fn a() {\n  x\n}\nfn b() {\n  x\n}\n";
        let p = "*** Begin Patch\n*** Update File: a.txt\n@@ fn b() {\n-  x\n+  y\n*** End Patch";
        assert_eq!(after(p, text).unwrap(), "fn a() {\n  x\n}\nfn b() {\n  y\n}\n");
        let p = "*** Begin Patch\n*** Update File: a.txt\n@@\n-  x\n+  1\n@@\n-  x\n+  2\n*** End Patch";
        assert_eq!(after(p, text).unwrap(), "fn a() {\n  1\n}\nfn b() {\n  2\n}\n");
        // A marker no line matches: the agent goes on from where it was.
        let p = "*** Begin Patch\n*** Update File: a.txt\n@@ fn zzz\n-  x\n+  1\n*** End Patch";
        assert_eq!(after(p, text).unwrap(), "fn a() {\n  1\n}\nfn b() {\n  x\n}\n");
        // A line without its leading space is context, as the agent reads it.
        let p = "*** Begin Patch\n*** Update File: a.txt\nfn b() {\n-  x\n+  z\n*** End Patch";
        assert_eq!(after(p, text).unwrap(), "fn a() {\n  x\n}\nfn b() {\n  z\n}\n");
    }

    #[test]
    fn an_end_of_file_hunk_a_crlf_file_and_an_added_file() {
        let p = "*** Begin Patch\n*** Update File: a.txt\n@@\n x\n+end\n*** End of File\n*** End Patch";
        assert_eq!(after(p, "x\ny\nx").unwrap(), "x\ny\nx\nend");
        assert_eq!(after("*** Begin Patch\n*** Update File: a.txt\n-b\n+B\n*** End Patch", "a\r\nb\r\n").unwrap(), "a\r\nB\r\n");
        let e = run("*** Begin Patch\r\n*** Add File: n/new.txt\r\n+fresh\r\n+\r\n*** End Patch", &[]).unwrap();
        assert_eq!((e[0].path.as_str(), e[0].before.clone(), e[0].after.as_str()), ("/w/n/new.txt", None, "fresh\n"));
        // Without a last empty '+' line the file has no last newline, as the agent writes it.
        assert_eq!(run("*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch", &[]).unwrap()[0].after, "x");
        // Two files, one review each; without Begin and End lines, in a shell wrapper.
        let p = "apply_patch <<'EOF'\n*** Add File: b.txt\n+b\n*** Update File: a.txt\n-a\n+A\nEOF";
        let e = run(p, &[("/w/a.txt", "a\n")]).unwrap();
        assert_eq!(e.iter().map(|e| e.after.as_str()).collect::<Vec<_>>(), ["b", "A\n"]);
    }

    #[test]
    fn a_patch_that_would_be_guessed_at_or_fails_is_refused_with_why() {
        let text = "one\n  two  \nthree\n";
        let refused = |p: &str| after(p, text).unwrap_err();
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-two\n+2\n*** End Patch").contains("by a guess"), "only trimmed");
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-four\n+4\n*** End Patch").contains("not in a.txt"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n").contains("do not pair up"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n\n three\n*** End Patch").contains("where a hunk's @@ belongs"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n\n-one\n*** End Patch").contains("empty line"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n@@ two\n-three\n*** End Patch").contains("only loosely"));
        assert!(after("*** Begin Patch\n*** Update File: a.txt\n-one\u{2019}\n*** End Patch", "one'\n").unwrap_err().contains("folded"));
        assert!(refused("*** Begin Patch\n*** Delete File: a.txt\n*** End Patch").contains("deletes a.txt"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n-one\n*** End Patch").contains("moves a.txt to b.txt"));
        assert!(refused("*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch").contains("exists"));
        assert!(refused("*** Begin Patch\n*** Add File: c.txt\nx\n*** End Patch").contains("without its '+'"));
        assert!(refused("*** Begin Patch\n*** Update File: c.txt\n-x\n*** End Patch").contains("does not exist"));
        assert!(refused("*** Begin Patch\n*** Update File: ../a.txt\n-x\n*** End Patch").contains("outside"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-one\n*** Update File: ./a.txt\n-one\n*** End Patch").contains("twice"));
        assert!(refused("*** Begin Patch\n*** Frobnicate: a.txt\n*** End Patch").contains("cannot read"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n-one\n*** bogus\n*** End Patch").contains("cannot read"));
        assert!(refused("*** Begin Patch\n*** End Patch").contains("no file"));
        assert!(refused("*** Begin Patch\n*** Update File: a.txt\n@@\n-three\n@@\n-one\n*** End Patch").contains("not in a.txt"), "hunks in order");
        let no_folder = edits("*** Begin Patch\n*** Add File: x\n+x\n*** End Patch", None, &|_| Ok(None));
        assert!(no_folder.unwrap_err().contains("not known"));
    }

    #[test]
    fn the_patch_of_a_tool_call_is_its_raw_input() {
        let call = serde_json::json!({"title": "apply_patch: {...}", "kind": "other", "rawInput": {"input": "*** Begin Patch\n*** End Patch"}});
        assert_eq!(text_of(&call), Some("*** Begin Patch\n*** End Patch"));
        assert_eq!(text_of(&serde_json::json!({"title": "Run", "rawInput": {"input": "ls"}})), None);
        assert_eq!(text_of(&serde_json::json!({"rawInput": "*** Begin Patch\n*** End Patch"})), Some("*** Begin Patch\n*** End Patch"));
    }
}
