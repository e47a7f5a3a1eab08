//! What a companion CLI is told of the editor (mod.rs): `ide/contextUpdate`, the files
//! the user visited newest first, the active one with its cursor and selected text. Made from
//! the selection feed every agent gets; the files visited are remembered here, since the feed
//! names only the current one.

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::protocol::jsonrpc::notification_frame;

/// The CLI keeps at most this many files.
const MAX_FILES: usize = 10;
/// The CLI cuts a longer selection; so do we, on a character boundary.
const MAX_SELECTION: usize = 16 * 1024;

/// The files visited, newest first, with when each became the active one (ms since the epoch).
static VISITED: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

/// The frame of our notification `method` for the CLI, or None when it has no such notification.
pub fn frame(method: &str, params: &Value) -> Option<String> {
    match method {
        "selection_changed" => Some(notification_frame("ide/contextUpdate", &context(params)?)),
        _ => None,
    }
}

/// `selection_changed {text, filePath, selection {start, end}}` (zero-based) as the CLI's
/// workspace state; the files seen before it follow, inactive.
fn context(params: &Value) -> Option<Value> {
    let path = params.get("filePath").and_then(Value::as_str).filter(|p| !p.is_empty())?;
    let files = visit(path);
    let end = &params["selection"]["end"];
    let line = end["line"].as_u64().unwrap_or(0) + 1;
    let character = end["character"].as_u64().unwrap_or(0) + 1;
    let text = cut(params.get("text").and_then(Value::as_str).unwrap_or_default());
    let open: Vec<Value> = files
        .iter()
        .map(|(p, ts)| match p == path {
            true => json!({"path": p, "timestamp": ts, "isActive": true,
                           "cursor": {"line": line, "character": character}, "selectedText": text}),
            false => json!({"path": p, "timestamp": ts}),
        })
        .collect();
    Some(json!({"workspaceState": {"openFiles": open}}))
}

/// Puts `path` first among the files visited (its time kept while it stays first).
fn visit(path: &str) -> Vec<(String, u64)> {
    let mut visited = VISITED.lock();
    if visited.first().is_none_or(|(p, _)| p != path) {
        visited.retain(|(p, _)| p != path);
        visited.insert(0, (path.to_owned(), crate::agents::copilot::lockfile::now_ms()));
        visited.truncate(MAX_FILES);
    }
    visited.clone()
}

fn cut(text: &str) -> &str {
    if text.len() <= MAX_SELECTION {
        return text;
    }
    let mut end = MAX_SELECTION;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(path: &str, text: &str) -> Value {
        let sel = json!({"text": text, "filePath": path, "selection": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 4}}});
        let f: Value = serde_json::from_str(&frame("selection_changed", &sel).unwrap()).unwrap();
        assert_eq!(f["method"], "ide/contextUpdate");
        f["params"]["workspaceState"]["openFiles"].clone()
    }

    #[test]
    fn newest_first_one_active_one_based_bounded_and_never_trusted() {
        update("/w/a.rs", "");
        let files = update("/w/b.rs", "sel");
        assert_eq!(files[0]["path"], "/w/b.rs");
        assert_eq!(files[0]["isActive"], true);
        assert_eq!(files[0]["cursor"], json!({"line": 3, "character": 5}));
        assert_eq!(files[0]["selectedText"], "sel");
        assert_eq!(files[1]["path"], "/w/a.rs");
        assert!(files[1].get("isActive").is_none() && files[1].get("cursor").is_none());
        assert!(files[0]["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
        for i in 0..12 {
            update(&format!("/w/{i}.rs"), "");
        }
        let long = "é".repeat(MAX_SELECTION);
        let files = update("/w/last.rs", &long);
        assert_eq!(files.as_array().unwrap().len(), MAX_FILES);
        assert!(files[0]["selectedText"].as_str().unwrap().len() <= MAX_SELECTION);
        assert!(!serde_json::to_string(&files).unwrap().contains("isTrusted"));
        assert!(frame("at_mentioned", &json!({})).is_none());
    }
}
