//! The Copilot CLI's tools (its IDE bridge: mod.rs), one entry each. Each shares its Lua handler and its
//! hook with the pi-ide tool of the same meaning (protocol/tools/pi_ide.rs); `adapt` maps the
//! arguments onto that handler's, `reshape` its answer onto the shape the CLI parses.

use serde_json::{json, Value};

use crate::protocol::tools::{uri_path, Hook, Param, ReviewArgs, Tool, Ty, Writes, PLAIN};

pub static TOOLS: &[Tool] = &[
Tool {
    name: "get_selection",
    handler: Some("getCurrentSelection"),
    description: "The selection or cursor in the current file: {text, filePath, fileUrl, selection: \
                  {start, end, isEmpty}, current} (current false: the last one seen), or null.",
    reshape: Some(selection_answer),
    ..PLAIN
},
Tool {
    name: "get_diagnostics",
    handler: Some("getDiagnostics"),
    description: "Diagnostics Neovim has for open files: [{uri, filePath, diagnostics: [{message, \
                  severity, range, source, code}]}]. With `uri`, only that file's.",
    params: &[crate::protocol::tools::pi_ide::DIAGNOSTICS_URI],
    fallback: Some(crate::protocol::tools::pi_ide::DIAGNOSTICS_FALLBACK),
    hook: Hook::Snapshot,
    reshape: Some(diagnostics_answer),
    ..PLAIN
},
Tool {
    name: "open_diff",
    description: "Show the user a diff of a file against proposed contents and wait for their \
                  decision: {success, result: SAVED|REJECTED, trigger, tab_name, message}. The CLI \
                  writes its own proposal after SAVED; when the user kept only part of it or \
                  edited it, the editor then sets the file to the accepted text (message says so).",
    params: &[
        Param { name: "original_file_path", ty: Ty::String, required: true, description: "The file (it may not exist yet)." },
        Param { name: "new_file_contents", ty: Ty::String, required: true, description: "The proposed contents." },
        Param { name: "tab_name", ty: Ty::String, required: true, description: "An id for this review (close_diff uses it)." },
    ],
    hook: Hook::Review(&OPEN_DIFF),
    reshape: Some(open_diff_answer),
    ..PLAIN
},
Tool {
    name: "close_diff",
    description: "Close the review with this tab_name (the user answered in the terminal): its \
                  open_diff is answered REJECTED. {success, already_closed, tab_name, message}.",
    params: &[Param { name: "tab_name", ty: Ty::String, required: true, description: "The open_diff tab_name." }],
    reshape: Some(close_diff_answer),
    hook: Hook::CloseReview { tab: "tab_name" },
    ..PLAIN
},
Tool {
    name: "update_session_name",
    description: "The CLI session's title, shown with its reviews and in the status line: {success}.",
    params: &[Param { name: "name", ty: Ty::String, required: true, description: "The session's title." }],
    hook: Hook::SessionName,
    ..PLAIN
},
];

/// getCurrentSelection's answer; `null` when there is no file to speak of.
fn selection_answer(v: Value, _: Option<&str>) -> Value {
    let Value::Object(mut o) = v else {
        return Value::Null;
    };
    if o.get("success") == Some(&Value::Bool(false)) {
        return Value::Null;
    }
    o.remove("success");
    let current = o.remove("current").and_then(|c| c.as_bool()).unwrap_or(true);
    o.insert("current".into(), Value::Bool(current));
    Value::Object(o)
}

/// getDiagnostics' object keyed by uri (or its JSON text) as a list of files that have any.
fn diagnostics_answer(v: Value, _: Option<&str>) -> Value {
    let object = match v {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::Null),
        other => other,
    };
    let Value::Object(files) = object else {
        return json!([]);
    };
    let list = files
        .into_iter()
        .filter(|(_, d)| d.as_array().is_some_and(|a| !a.is_empty()))
        .map(|(uri, d)| json!({"filePath": uri_path(&uri), "uri": uri, "diagnostics": d}));
    Value::Array(list.collect())
}

/// open_diff's arguments: the file is also where the CLI writes. The CLI writes its own
/// proposal after SAVED, whatever the user accepted: the core watches for that write and sets
/// the file to the accepted text. Its model never reads the answer's message (CLI 1.0.102: the
/// answer only picks approve-once or reject), so the user is told to tell it.
static OPEN_DIFF: ReviewArgs = ReviewArgs {
    tab: "tab_name",
    path: "original_file_path",
    old_path: None,
    contents: "new_file_contents",
    writes: Writes::ProposalWatched { model_told: false },
    reports_trigger: true,
};

/// `["FILE_SAVED", contents, note?]` or `["DIFF_REJECTED", tab_name, trigger?]` as the four
/// fields the CLI checks, and a message (with the note on the hunks the user did not keep).
fn open_diff_answer(v: Value, tab_name: Option<&str>) -> Value {
    let item = |i: usize| v.get(i).and_then(Value::as_str);
    let saved = item(0) == Some("FILE_SAVED");
    let (result, trigger, message) = match (saved, item(2)) {
        (true, None) => ("SAVED", "accepted_in_editor", "The user accepted the change in Neovim".to_owned()),
        (true, Some(note)) => ("SAVED", "accepted_in_editor", format!(
            "The user accepted only part of the change in Neovim: {note}. Once you have written your proposal, \
             the editor sets the file to the text the user accepted: read it again before changing it"
        )),
        (false, trigger) => ("REJECTED", trigger.unwrap_or("rejected_in_editor"), "The user rejected the change in Neovim".to_owned()),
    };
    json!({
        "success": true,
        "result": result,
        "trigger": trigger,
        "tab_name": tab_name.unwrap_or_default(),
        "message": message,
    })
}

/// The core's report of a close, `["TAB_CLOSED", "closed"|"already_closed", tab_name]`.
fn close_diff_answer(v: Value, _: Option<&str>) -> Value {
    let item = |i: usize| v.get(i).and_then(Value::as_str);
    let already = item(1) != Some("closed");
    let tab = item(2).unwrap_or_default();
    let message = if already {
        format!("No review named \"{tab}\" is open (it may be closed already)")
    } else {
        format!("Review \"{tab}\" closed")
    };
    json!({"success": true, "already_closed": already, "tab_name": tab, "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::copilot::AGENT;
    use crate::protocol::tools::{pi_ide, Verdict};

    fn find(name: &str) -> &'static Tool {
        AGENT.tool(name).unwrap()
    }

    fn text(r: Value) -> Value {
        serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn each_tool_shares_the_handler_of_a_pi_ide_tool() {
        let copilot: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(copilot, ["get_selection", "get_diagnostics", "open_diff", "close_diff", "update_session_name"]);
        assert!(AGENT.tool("openDiff").is_none());
        for t in TOOLS.iter().filter(|t| t.answered_by_lua()) {
            let handler = t.handler_name();
            {
                let shared = pi_ide::TOOLS.iter().find(|p| p.name == handler).expect(handler);
                assert_eq!(shared.hook, t.hook, "{}", t.name);
            }
        }
    }

    #[test]
    fn open_diff_answers_in_the_four_fields_the_cli_checks() {
        let t = find("open_diff");
        let args = json!({"original_file_path": "/a", "new_file_contents": "x", "tab_name": "[Copilot CLI] - a"});
        assert_eq!(t.abandon_context(&args).as_deref(), Some("[Copilot CLI] - a"));
        let review = t.review().unwrap();
        assert_eq!(review.get(&args, review.path), "/a");
        let saved = text(t.finish(review.answer(&Verdict::Accepted("x".into(), None), "tab"), Some("tab")).unwrap());
        assert_eq!(saved["result"], "SAVED");
        assert_eq!(saved["trigger"], "accepted_in_editor");
        let note = Some("hunk 2 of 3 (your line 5) was declined".to_owned());
        let part = text(t.finish(review.answer(&Verdict::Accepted("y".into(), note), "tab"), Some("tab")).unwrap());
        assert_eq!((part["result"].as_str(), part["trigger"].as_str()), (Some("SAVED"), Some("accepted_in_editor")));
        assert!(part["message"].as_str().unwrap().contains("hunk 2 of 3 (your line 5) was declined"), "{part}");
        let closed = text(t.finish(review.answer(&Verdict::Closed, "tab"), Some("tab")).unwrap());
        assert_eq!((closed["result"].as_str(), closed["trigger"].as_str()), (Some("REJECTED"), Some("closed_via_tool")));
        assert_eq!(saved["tab_name"], "tab");
        assert_eq!(saved["success"], true);
        // Every ending that is not the user's accept is a rejection, in the same shape.
        let gone = text(t.abandoned(Some("tab")).unwrap());
        assert_eq!(gone["result"], "REJECTED");
        assert!(gone["trigger"].is_string() && gone["message"].is_string());
        let failed = text(t.owed(Err(crate::protocol::jsonrpc::RpcError::internal("boom")), Some("tab")).unwrap());
        assert_eq!(failed["result"], "REJECTED");
    }

    #[test]
    fn close_diff_reports_whether_it_closed_anything() {
        let t = find("close_diff");
        let r = text(t.finish(json!(["TAB_CLOSED", "closed", "t"]), None).unwrap());
        assert_eq!((r["already_closed"].as_bool(), r["tab_name"].as_str()), (Some(false), Some("t")));
        let r = text(t.finish(json!(["TAB_CLOSED", "already_closed", "t"]), None).unwrap());
        assert_eq!(r["already_closed"], true);
    }

    #[test]
    fn selection_and_diagnostics_shapes() {
        let t = find("get_selection");
        let none = t.finish(json!({"success": false, "message": "No active editor found"}), None).unwrap();
        assert_eq!(none["content"][0]["text"], "null");
        let s = text(t.finish(json!({"success": true, "text": "", "filePath": "/a", "current": false}), None).unwrap());
        assert_eq!((s["current"].as_bool(), s.get("success")), (Some(false), None));
        let d = find("get_diagnostics");
        let r = text(d.finish(json!(r#"{"file:///a%20b": [{"message": "m"}], "file:///c": []}"#), None).unwrap());
        assert_eq!(r, json!([{"uri": "file:///a%20b", "filePath": "/a b", "diagnostics": [{"message": "m"}]}]));
    }
}
