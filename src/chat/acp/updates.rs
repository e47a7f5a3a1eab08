//! ACP's `session/update` notifications as the chat's ops: message and thought chunks stream
//! as Pi's deltas do (and coalesce the same way), tool calls become the same folded blocks;
//! the rest (plans, commands, modes, usage, session info) goes to Lua whole, as events named
//! by their `sessionUpdate`.

use serde_json::{json, Value};

use crate::chat::op::{render, Op};

/// The op for one update; None for what is not drawn.
pub fn op(update: &Value, cap_lines: usize) -> Option<Op> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str)?;
    Some(match kind {
        "agent_message_chunk" => Op::Text { index: None, text: chunk_text(update)? },
        "agent_thought_chunk" => Op::Thinking { index: None, text: chunk_text(update)? },
        "tool_call" => Op::ToolStart { id: string(update, "toolCallId"), name: title(update), args: args(update) },
        "tool_call_update" => return tool_update(update, cap_lines),
        _ => Op::Event { kind: Some(kind.to_owned()), event: update.clone() },
    })
}

fn chunk_text(update: &Value) -> Option<String> {
    let content = update.get("content")?;
    match content.get("type").and_then(Value::as_str) {
        Some("text") => content.get("text").and_then(Value::as_str).map(str::to_owned),
        // An image or a resource in a message: said, not shown.
        Some(other) => Some(format!("[{other}]")),
        None => None,
    }
}

fn tool_update(update: &Value, cap_lines: usize) -> Option<Op> {
    let id = string(update, "toolCallId");
    let status = update.get("status").and_then(Value::as_str);
    let content = update.get("content").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
    let (lines, more) = render(Some(&json!({ "content": texts(content) })), cap_lines);
    match status {
        Some("completed") | Some("failed") => {
            Some(Op::ToolEnd { id, name: title(update), is_error: status == Some("failed"), lines, more })
        }
        // A call that says what it is only now (its title or input come after it began): its
        // block is redrawn with them.
        _ if update.get("title").is_some() || update.get("rawInput").is_some() => {
            Some(Op::ToolStart { id, name: title(update), args: args(update) })
        }
        _ if content.is_some() => Some(Op::ToolOutput { id, lines, more }),
        _ => None,
    }
}

/// A call's input (an empty one is none), else the file it is about.
fn args(update: &Value) -> Option<Value> {
    let raw = update.get("rawInput").filter(|r| !(r.is_null() || r.as_object().is_some_and(|o| o.is_empty())));
    raw.cloned().or_else(|| located(update))
}

/// A tool call's content as text items: text as it is, a diff as the file it changes, a
/// terminal by its id.
fn texts(content: Option<&Value>) -> Vec<Value> {
    let items = content.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text = |t: String| json!({ "type": "text", "text": t });
    items
        .iter()
        .filter_map(|item| match item.get("type").and_then(Value::as_str)? {
            "content" => item.pointer("/content/text").and_then(Value::as_str).map(|t| text(t.to_owned())),
            "diff" => Some(text(format!("✎ {}", item.get("path").and_then(Value::as_str).unwrap_or("?")))),
            "terminal" => Some(text("[terminal]".into())),
            _ => None,
        })
        .collect()
}

fn title(update: &Value) -> String {
    let t = string(update, "title");
    if t.is_empty() {
        string(update, "kind")
    } else {
        t
    }
}

/// The file a call is about, when it names no raw input: `{path}` for the block's summary.
fn located(update: &Value) -> Option<Value> {
    let path = update.pointer("/locations/0/path")?.as_str()?;
    Some(json!({ "path": path }))
}

fn string(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_become_the_ops_pi_gets() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        assert_eq!(op(&chunk, 3), Some(Op::Text { index: None, text: "hi".into() }));
        let call = json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.txt", "kind": "read", "status": "pending"});
        assert_eq!(op(&call, 3), Some(Op::ToolStart { id: "t1".into(), name: "Read a.txt".into(), args: None }));
        let done = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}, {"type": "diff", "path": "/w/a", "newText": ""}]});
        assert_eq!(
            op(&done, 3),
            Some(Op::ToolEnd { id: "t1".into(), name: String::new(), is_error: false, lines: vec!["a".into(), "b".into(), "✎ /w/a".into()], more: 0 })
        );
        assert_eq!(op(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}), 3), None);
        let empty = json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Edit", "rawInput": {}});
        assert_eq!(op(&empty, 3), Some(Op::ToolStart { id: "t2".into(), name: "Edit".into(), args: None }));
        let later = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "title": "Edit a.txt", "rawInput": {"file_path": "/w/a.txt"}});
        assert_eq!(op(&later, 3), Some(Op::ToolStart { id: "t2".into(), name: "Edit a.txt".into(), args: Some(json!({"file_path": "/w/a.txt"})) }));
        let plan = json!({"sessionUpdate": "plan", "entries": []});
        assert_eq!(op(&plan, 3), Some(Op::Event { kind: Some("plan".into()), event: plan.clone() }));
    }
}
