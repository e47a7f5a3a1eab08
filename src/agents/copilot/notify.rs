//! What the Copilot CLI is told (its IDE bridge: mod.rs): our notifications (the selection, `:PiIde send`),
//! which are in pi-ide's words, as the CLI reads them.

use serde_json::{json, Value};

use crate::protocol::jsonrpc::notification_frame;

/// The frame of our notification `method` for the CLI, or None when it has no such notification.
pub fn frame(method: &str, params: &Value) -> Option<String> {
    let (method, params) = translate(method, params)?;
    Some(notification_frame(method, &params))
}

fn translate(method: &str, params: &Value) -> Option<(&'static str, Value)> {
    match method {
        // The same state, marked as the editor's current one (get_selection's shape).
        "selection_changed" => {
            let mut p = params.clone();
            p.as_object_mut()?.insert("current".into(), Value::Bool(true));
            Some(("selection_changed", p))
        }
        "at_mentioned" => Some(mention(params)),
        _ => None,
    }
}

/// `at_mentioned {filePath, lineStart?, lineEnd?}` (zero-based lines) as the CLI's
/// add_selection (lines) or add_file_reference (a file or folder): it inserts `@path:L1-L2`.
fn mention(params: &Value) -> (&'static str, Value) {
    let path = params["filePath"].as_str().unwrap_or_default();
    let url = file_url(path);
    match (params["lineStart"].as_u64(), params["lineEnd"].as_u64()) {
        (Some(first), last) => {
            let last = last.unwrap_or(first).max(first);
            let selection = json!({
                "start": {"line": first, "character": 0},
                "end": {"line": last, "character": 0},
                "isEmpty": false,
            });
            let p = json!({"filePath": path, "fileUrl": url, "selection": selection, "selectedText": null});
            ("add_selection", p)
        }
        _ => {
            let p = json!({"filePath": path, "fileUrl": url, "selection": null, "selectedText": null});
            ("add_file_reference", p)
        }
    }
}

/// `file://` and the path, percent-encoding what a URI may not hold.
fn file_url(path: &str) -> String {
    let mut url = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(frame: Option<String>) -> Value {
        serde_json::from_str(&frame.unwrap()).unwrap()
    }

    #[test]
    fn the_selection_is_the_current_one_and_mentions_are_references() {
        let sel = json!({"text": "", "filePath": "/a", "selection": {}});
        let pi = parse(crate::agents::as_pi_ide("selection_changed", &sel));
        assert!(pi["params"].get("current").is_none());
        let c = parse(frame("selection_changed", &sel));
        assert_eq!(c["params"]["current"], true);
        let m = parse(frame("at_mentioned", &json!({"filePath": "/a b.rs", "lineStart": 2, "lineEnd": 4})));
        assert_eq!(m["method"], "add_selection");
        assert_eq!(m["params"]["fileUrl"], "file:///a%20b.rs");
        assert_eq!(m["params"]["selection"]["end"]["line"], 4);
        let f = parse(frame("at_mentioned", &json!({"filePath": "/src/"})));
        assert_eq!(f["method"], "add_file_reference");
        assert!(f["params"]["selection"].is_null());
        assert!(frame("something_else", &json!({})).is_none());
    }
}
