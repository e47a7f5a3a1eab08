//! A companion CLI's tools (mod.rs). It shows a diff only when both are listed.
//! `openDiff` is answered at once; the user's decision goes later as the notification its
//! reshape names (`ide/diffAccepted` with the text the user accepted, which the CLI then writes,
//! or `ide/diffRejected`). `closeDiff` (the user answered in the terminal) closes our review,
//! unheard with `suppressNotification` (a rejection would race the CLI's own answer), and gives
//! the CLI the text the user left in it, at once, even while Neovim is busy (the core knows it:
//! state/reviews/left.rs). Gemini CLI writes that text; Qwen Code writes its own proposal
//! whatever the answer (qwen.rs).

use std::time::Duration;

use serde_json::{json, Value};

use crate::protocol::tools::{Fallback, Hook, Param, ReviewArgs, Tool, Ty, Writes, PLAIN};

pub static TOOLS: &[Tool] = &[
Tool {
    name: "openDiff",
    description: "Show the user a diff of a file against proposed contents. Answered at once; the \
                  decision follows as ide/diffAccepted {filePath, content} or ide/diffRejected {filePath}.",
    params: &[
        Param { name: "filePath", ty: Ty::String, required: true, description: "The file (it may not exist yet)." },
        Param { name: "newContent", ty: Ty::String, required: true, description: "The proposed contents." },
    ],
    hook: Hook::Review(&OPEN_DIFF),
    reshape: Some(decision),
    answered_later: true,
    ..PLAIN
},
Tool {
    name: "closeDiff",
    description: "Close the review of this file (the user answered in the terminal): {\"content\": text}, \
                  the text the user left in the review (hunks declined, lines edited), which the CLI \
                  writes if the user accepted there; null: its own proposal (nothing decided, or no \
                  such review).",
    params: &[
        Param { name: "filePath", ty: Ty::String, required: true, description: "The openDiff filePath." },
        Param { name: "suppressNotification", ty: Ty::Boolean, required: false,
                description: "True: no ide/diffRejected for the review this closes (the CLI has its answer)." },
    ],
    hook: Hook::CloseReviewKeepingText { tab: "filePath" },
    handler: Some("closeReview"),
    fallback: Some(CLOSE_FALLBACK),
    reshape: Some(closed),
    quiet_when: Some("suppressNotification"),
    ..PLAIN
},
];

/// The CLI writes what ide/diffAccepted carries: the text the user accepted.
static OPEN_DIFF: ReviewArgs = ReviewArgs {
    tab: "filePath",
    path: "filePath",
    old_path: None,
    contents: "newContent",
    writes: Writes::Accepted,
    reports_trigger: false,
};

/// `["FILE_SAVED", text]` or `["DIFF_REJECTED", filePath]` as the notification to send:
/// `{method, params}`.
fn decision(v: Value, file_path: Option<&str>) -> Value {
    let path = file_path.unwrap_or_default();
    match (v.get(0).and_then(Value::as_str), v.get(1).and_then(Value::as_str)) {
        (Some("FILE_SAVED"), Some(text)) => {
            json!({"method": "ide/diffAccepted", "params": {"filePath": path, "content": text}})
        }
        _ => json!({"method": "ide/diffRejected", "params": {"filePath": path}}),
    }
}

/// What the CLI writes when the user accepted in the terminal: the text they left in our review
/// (as VS Code's companion answers: the hunks they declined there stay declined), or null, its
/// own proposal, when they decided nothing there (the same text, not sent twice).
fn closed(text: Value, _: Option<&str>) -> Value {
    json!({"content": text.as_str()})
}

/// Lua is asked only while the user is typing in the review; Neovim held up then (a prompt),
/// the CLI is not kept waiting: null, and Lua closes the review when it runs.
const CLOSE_FALLBACK: Fallback = Fallback { after: Duration::from_secs(2), keep: |_| false, answer: |_, _| Value::Null };

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_is_a_notification_and_a_close_gives_the_text_left_in_the_review() {
        let a = decision(json!(["FILE_SAVED", "mine\n"]), Some("/w/f"));
        assert_eq!(a, json!({"method": "ide/diffAccepted", "params": {"filePath": "/w/f", "content": "mine\n"}}));
        let r = decision(json!(["DIFF_REJECTED", "/w/f"]), Some("/w/f"));
        assert_eq!(r["method"], "ide/diffRejected");
        let c = TOOLS[1].finish(json!("kept\n"), None).unwrap();
        assert_eq!(c["content"][0]["text"], r#"{"content":"kept\n"}"#);
        let none = TOOLS[1].finish(Value::Null, None).unwrap();
        assert_eq!(none["content"][0]["text"], r#"{"content":null}"#);
        assert!(TOOLS[0].answered_later && !TOOLS[1].answered_later);
    }
}
