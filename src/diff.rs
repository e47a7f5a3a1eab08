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
    let newlines = memcount(text, b'\n');
    let crlf = newlines > 0 && text.windows(2).filter(|w| w == b"\r\n").count() == newlines;
    Endings {
        eol: text.ends_with(b"\n"),
        crlf,
    }
}

fn memcount(text: &[u8], byte: u8) -> usize {
    text.iter().filter(|&&b| b == byte).count()
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

/// The stats of a proposal against the file at `old_path` (missing or unreadable: empty).
pub fn stats_for(old_path: &str, contents: &str) -> Value {
    let old = std::fs::read(old_path).unwrap_or_default();
    stats(&lines(&old), &lines(contents.as_bytes()))
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

/// Takes the proposal out of openDiff's arguments and stages it in `file`; the arguments Lua
/// gets say where it is, how it ends, and whether the old file exists. Returns them and the
/// proposal (for the stats). Never fails the call: a staging error is reported to Lua, which
/// then rejects, since an error answer would let the agent write unreviewed.
pub fn stage(mut args: Value, file: PathBuf) -> (Value, String) {
    let contents = match args.get_mut("new_file_contents").map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let old_path = args
        .get("old_file_path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (exists, old_error) = match std::fs::File::open(&old_path) {
        Ok(_) => (true, None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (false, None),
        Err(e) => (true, Some(e.to_string())),
    };
    let e = endings(contents.as_bytes());
    let obj = args.as_object_mut().expect("validated as an object");
    obj.remove("new_file_contents");
    let mut old = json!({ "exists": exists });
    if let Some(e) = old_error {
        // Only when there is one: a JSON null would reach Lua as vim.NIL, which is truthy.
        old["error"] = json!(e);
    }
    obj.insert("old".into(), old);
    obj.insert(
        "new".into(),
        json!({ "eol": e.eol, "crlf": e.crlf, "bytes": contents.len() }),
    );
    match write_private(&file, contents.as_bytes()) {
        Ok(()) => {
            obj.insert("proposal_file".into(), json!(file.to_string_lossy()));
        }
        Err(err) => {
            obj.insert(
                "stage_error".into(),
                json!(format!(
                    "cannot stage the proposal in {}: {err}",
                    file.display()
                )),
            );
        }
    }
    (args, contents)
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
        assert_eq!(stats_for("/nonexistent/file", "x\ny\n")["added"], 2);
    }

    #[test]
    fn stage_writes_a_private_file_and_keeps_the_contents_out_of_the_arguments() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pi-ide-stage-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("1.txt");
        let args = json!({"old_file_path": "/nonexistent/x.rs", "new_file_path": "/nonexistent/x.rs",
                          "new_file_contents": "a\r\nb", "tab_name": "pi-write:1"});
        let (staged, contents) = stage(args, file.clone());
        assert_eq!(contents, "a\r\nb");
        assert!(staged.get("new_file_contents").is_none());
        assert_eq!(staged["old"]["exists"], false);
        assert_eq!(
            staged["new"],
            json!({"eol": false, "crlf": true, "bytes": 4})
        );
        assert_eq!(staged["proposal_file"], file.to_string_lossy().as_ref());
        assert_eq!(std::fs::read(&file).unwrap(), b"a\r\nb");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // Staging the same file twice fails (create_new), and says so instead of failing.
        let (again, _) = stage(
            json!({"new_file_contents": "x", "old_file_path": "/x"}),
            file.clone(),
        );
        assert!(again["stage_error"]
            .as_str()
            .unwrap()
            .contains("cannot stage"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
