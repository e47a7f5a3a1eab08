//! The diagnostics snapshot: what Neovim's `vim.diagnostic` holds, per buffer, converted by Lua
//! into the protocol's items and pushed here when it changes (DiagnosticChanged, a buffer wiped
//! or renamed; only the buffers that changed). The Pi extension calls getDiagnostics before
//! every model call; answering it here, on the server thread, spares Neovim's main loop two
//! hand-offs per call and never waits for it.
//!
//! Freshness: Lua bumps `changed` synchronously in the autocmd, before it converts anything (that
//! happens on the next turn of the loop). While the snapshot is behind, a call goes to Lua as
//! before, so a diagnostic set in Neovim is always in the next answer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use std::path::Path;

use parking_lot::Mutex;
use serde_json::Value;

use crate::support::resolve::{Resolved, CALL_DEADLINE, PATHS};

/// One buffer's diagnostics, as Lua converted them.
#[derive(Debug, Clone)]
pub struct Entry {
    pub uri: String,
    /// The buffer's absolute path, and its real path (symlinks resolved) when it differs.
    pub path: String,
    pub real: Option<String>,
    /// The JSON array of items (`{severity, message, source, code, range}`), as text.
    pub items: String,
}

#[derive(Default)]
pub struct Snapshot {
    files: Mutex<BTreeMap<i64, Entry>>,
    changed: AtomicU64,
    synced: AtomicU64,
}

impl Snapshot {
    /// Something changed that is not in the snapshot yet. Returns the new generation.
    pub fn touch(&self) -> u64 {
        self.changed.fetch_add(1, Ordering::AcqRel) + 1
    }

    pub fn generation(&self) -> u64 {
        self.changed.load(Ordering::Acquire)
    }

    /// Lua's conversion of the buffers that changed, as of generation `as_of` (`None`: the
    /// buffer has no diagnostics any more, or is gone).
    pub fn update(&self, buffers: Vec<(i64, Option<Entry>)>, as_of: u64) {
        let mut files = self.files.lock();
        for (buf, entry) in buffers {
            match entry {
                Some(e) => {
                    files.insert(buf, e);
                }
                None => {
                    files.remove(&buf);
                }
            }
        }
        self.synced.fetch_max(as_of, Ordering::AcqRel);
    }

    /// Whether the snapshot holds every change Lua announced.
    pub fn fresh(&self) -> bool {
        self.synced.load(Ordering::Acquire) >= self.changed.load(Ordering::Acquire)
    }

    /// The answer to getDiagnostics `args` from the snapshot as it is (also when it may be
    /// behind: the busy-editor fallback). None when `uri` is not an absolute, normalised path
    /// (Lua resolves those). A path that is not open under that name may be open through a
    /// link: that takes its real path, which only [`render_bounded`] looks up.
    pub fn lookup(&self, args: &Value) -> Option<Lookup> {
        let wanted = args
            .get("uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty());
        let Some(uri) = wanted else {
            return Some(Lookup::Answer(object(self.files.lock().values())));
        };
        let path = crate::protocol::tools::uri_path(uri);
        if !plain_absolute(&path) {
            return None;
        }
        let files = self.files.lock();
        Some(match files.values().find(|e| e.path == path) {
            Some(e) => Lookup::Answer(object(std::iter::once(e))),
            None => Lookup::ByRealPath(path),
        })
    }

    /// The answer for a file found by its real path (None: no open file has it).
    pub fn by_real_path(&self, real: Option<&str>) -> Value {
        let files = self.files.lock();
        let found = real.and_then(|real| {
            files
                .values()
                .find(|e| e.real.as_deref().unwrap_or(&e.path) == real)
        });
        object(found.into_iter())
    }
}

/// What the snapshot can say at once.
#[derive(Debug)]
pub enum Lookup {
    Answer(Value),
    /// Not open under this path: resolve it, then [`Snapshot::by_real_path`].
    ByRealPath(String),
}

/// The answer to getDiagnostics `args` from the snapshot as it is; a link is resolved off the
/// runtime thread, within a deadline (a hung mount answers "no diagnostics" for that file).
pub async fn render_bounded(snapshot: &Snapshot, args: &Value) -> Option<Value> {
    match snapshot.lookup(args)? {
        Lookup::Answer(v) => Some(v),
        Lookup::ByRealPath(path) => {
            let real = match PATHS.resolve(Path::new(&path), CALL_DEADLINE).await {
                Resolved::Real(real) => Some(real.to_string_lossy().into_owned()),
                Resolved::Missing => None,
                Resolved::TimedOut => {
                    crate::warn!("getDiagnostics: resolving {path} took longer than {CALL_DEADLINE:?}; answered without it");
                    None
                }
            };
            Some(snapshot.by_real_path(real.as_deref()))
        }
    }
}

/// The answer to getDiagnostics `args` when the snapshot is current and can answer exactly as
/// Lua would; None: ask Lua.
pub async fn answer_bounded(snapshot: &Snapshot, args: &Value) -> Option<Value> {
    if !snapshot.fresh() {
        return None;
    }
    render_bounded(snapshot, args).await
}

/// A getDiagnostics answer: `{uri: [items...]}`, the items as Lua encoded them.
fn object<'a>(entries: impl Iterator<Item = &'a Entry>) -> Value {
    let mut out = String::from("{");
    for e in entries {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&Value::String(e.uri.clone()).to_string());
        out.push(':');
        out.push_str(&e.items);
    }
    out.push('}');
    Value::String(out)
}

/// An absolute path with nothing Lua would normalise (`//`, `.`, `..`, a trailing `/`, `~`).
fn plain_absolute(p: &str) -> bool {
    p.starts_with('/')
        && p.len() > 1
        && !p.ends_with('/')
        && !p.contains("//")
        && !p.split('/').any(|c| c == "." || c == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(uri: &str, path: &str, items: &str) -> Entry {
        Entry {
            uri: uri.into(),
            path: path.into(),
            real: None,
            items: items.into(),
        }
    }

    fn parsed(v: Option<Value>) -> Value {
        serde_json::from_str(v.unwrap().as_str().unwrap()).unwrap()
    }

    impl Snapshot {
        fn answer(&self, args: &Value) -> Option<Value> {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(answer_bounded(self, args))
        }
        fn render(&self, args: &Value) -> Option<Value> {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(render_bounded(self, args))
        }
    }

    #[test]
    fn answers_only_when_current_and_as_lua_would() {
        let s = Snapshot::default();
        assert_eq!(parsed(s.answer(&json!({}))), json!({}), "nothing yet, nothing behind");
        let g = s.touch();
        assert!(s.answer(&json!({})).is_none(), "behind: Lua answers");
        s.update(
            vec![
                (1, Some(entry("file:///a%20b.rs", "/a b.rs", r#"[{"message":"m"}]"#))),
                (2, Some(entry("file:///c.rs", "/c.rs", r#"[{"message":"n"}]"#))),
            ],
            g,
        );
        assert_eq!(
            parsed(s.answer(&json!({}))),
            json!({"file:///a%20b.rs": [{"message": "m"}], "file:///c.rs": [{"message": "n"}]})
        );
        assert_eq!(
            parsed(s.answer(&json!({"uri": "file:///a%20b.rs"}))),
            json!({"file:///a%20b.rs": [{"message": "m"}]})
        );
        assert_eq!(
            parsed(s.answer(&json!({"uri": "/c.rs"}))),
            json!({"file:///c.rs": [{"message": "n"}]})
        );
        assert_eq!(parsed(s.answer(&json!({"uri": "/not/open.rs"}))), json!({}));
        // What Lua would resolve (relative, ~, ..) goes to Lua.
        for odd in ["c.rs", "~/c.rs", "/x/../c.rs", "/x//c.rs", "/x/"] {
            assert!(s.answer(&json!({ "uri": odd })).is_none(), "{odd}");
        }
        // A change made while Lua was converting keeps it behind until the next update.
        let g1 = s.touch();
        let _g2 = s.touch();
        s.update(vec![(2, None)], g1);
        assert!(!s.fresh());
        assert_eq!(
            parsed(s.render(&json!({}))),
            json!({"file:///a%20b.rs": [{"message": "m"}]})
        );
    }
}
