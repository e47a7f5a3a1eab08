//! What each dialect is told: our notifications (the selection, `:PiIde send`) in pi-ide's
//! words, and as the Copilot CLI reads them (COPILOT.md). One place for every difference, so
//! that the selection code and the commands speak pi-ide only.

use serde_json::{json, Value};

use crate::clients::Flavor;
use crate::jsonrpc::notification_frame;

/// The frame of notification `method` for a client of `flavor`, or None when that dialect has
/// no such notification.
pub fn frame_for(flavor: Flavor, method: &str, params: &Value) -> Option<String> {
    match flavor {
        Flavor::Pi | Flavor::ClaudeCode => Some(notification_frame(method, params)),
        Flavor::Copilot => {
            let (method, params) = for_copilot(method, params)?;
            Some(notification_frame(method, &params))
        }
    }
}

fn for_copilot(method: &str, params: &Value) -> Option<(&'static str, Value)> {
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
    fn pi_gets_our_words_copilot_its_own() {
        let sel = json!({"text": "", "filePath": "/a", "selection": {}});
        let pi = parse(frame_for(Flavor::Pi, "selection_changed", &sel));
        assert!(pi["params"].get("current").is_none());
        let c = parse(frame_for(Flavor::Copilot, "selection_changed", &sel));
        assert_eq!(c["params"]["current"], true);
        let m = parse(frame_for(Flavor::Copilot, "at_mentioned", &json!({"filePath": "/a b.rs", "lineStart": 2, "lineEnd": 4})));
        assert_eq!(m["method"], "add_selection");
        assert_eq!(m["params"]["fileUrl"], "file:///a%20b.rs");
        assert_eq!(m["params"]["selection"]["end"]["line"], 4);
        let f = parse(frame_for(Flavor::Copilot, "at_mentioned", &json!({"filePath": "/src/"})));
        assert_eq!(f["method"], "add_file_reference");
        assert!(f["params"]["selection"].is_null());
        assert!(frame_for(Flavor::Copilot, "something_else", &json!({})).is_none());
    }
}
