//! What Lua draws: Pi's stdout records (the JSON and RPC modes' pages of Pi's documentation)
//! turned into ops. Text is cut down here, off the main thread: a tool's output becomes its
//! first few lines, so a build log of megabytes costs Lua a dozen strings.

use serde_json::{Map, Value};

/// Longest line of tool output (and of the stderr tail) handed to Lua, in characters.
pub const LINE_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Assistant text to append to content block `index` (many deltas, coalesced).
    Text { index: Option<i64>, text: String },
    /// Thinking text, likewise.
    Thinking { index: Option<i64>, text: String },
    ToolStart { id: String, name: String, args: Option<Value> },
    /// The latest partial output of a running tool: its first lines, and how many were left out.
    ToolOutput { id: String, lines: Vec<String>, more: usize },
    ToolEnd { id: String, name: String, is_error: bool, lines: Vec<String>, more: usize },
    /// The answer to a command. `id` is the command's, when it had one.
    Response {
        id: Option<String>,
        command: Option<String>,
        success: bool,
        data: Option<Value>,
        error: Option<String>,
    },
    /// An `extension_ui_request`, whole (a dialog waits for Lua's `extension_ui_response`).
    UiRequest(Value),
    /// A question of an ACP agent's for Lua (a permission without a change, a file read):
    /// answered with `chat_answer`. `id`: the id's JSON text.
    AgentRequest { id: String, method: String, params: Value },
    /// Any other record, whole.
    Event { kind: Option<String>, event: Value },
    /// Pi is gone: how, and the last lines it wrote to stderr.
    Exit { code: Option<i32>, signal: Option<i32>, stderr: Vec<String> },
}

impl Op {
    /// Ops Lua should see without waiting for the next frame.
    pub fn urgent(&self) -> bool {
        matches!(self, Op::Exit { .. } | Op::UiRequest(_) | Op::Response { .. } | Op::AgentRequest { .. })
    }
}

/// The op for one record; None for what is not drawn.
pub fn from_record(record: Map<String, Value>, cap_lines: usize) -> Option<Op> {
    let kind = record.get("type").and_then(Value::as_str).map(str::to_owned);
    Some(match kind.as_deref() {
        Some("message_update") => return message_update(&record),
        Some("tool_execution_start") => Op::ToolStart {
            id: string(&record, "toolCallId"),
            name: string(&record, "toolName"),
            args: record.get("args").cloned(),
        },
        Some("tool_execution_update") => {
            let (lines, more) = render(record.get("partialResult"), cap_lines);
            Op::ToolOutput { id: string(&record, "toolCallId"), lines, more }
        }
        Some("tool_execution_end") => {
            let (lines, more) = render(record.get("result"), cap_lines);
            Op::ToolEnd {
                id: string(&record, "toolCallId"),
                name: string(&record, "toolName"),
                is_error: record.get("isError").and_then(Value::as_bool).unwrap_or(false),
                lines,
                more,
            }
        }
        Some("response") => response(record),
        Some("extension_ui_request") => Op::UiRequest(Value::Object(record)),
        _ => Op::Event { kind, event: Value::Object(record) },
    })
}

/// Only the deltas are drawn: `*_start` carries nothing to show, and `*_end` repeats as a
/// whole what the deltas already built (Lua takes `message_end` as the final word). The
/// toolcall_* stream is the arguments being typed; `tool_execution_start` shows them whole.
fn message_update(record: &Map<String, Value>) -> Option<Op> {
    let ev = record.get("assistantMessageEvent")?;
    let index = ev.get("contentIndex").and_then(Value::as_i64);
    let text = ev.get("delta").and_then(Value::as_str).unwrap_or_default().to_owned();
    match ev.get("type")?.as_str()? {
        "text_delta" => Some(Op::Text { index, text }),
        "thinking_delta" => Some(Op::Thinking { index, text }),
        _ => None,
    }
}

fn response(mut record: Map<String, Value>) -> Op {
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Op::Response {
        id: text(record.remove("id")),
        command: text(record.remove("command")),
        success: record.get("success").and_then(Value::as_bool).unwrap_or(false),
        data: record.remove("data").filter(|d| !d.is_null()),
        error: text(record.remove("error")),
    }
}

fn string(record: &Map<String, Value>, key: &str) -> String {
    record.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A tool result's text parts (`{content = {{type = "text", text}, ...}}`), joined: its first
/// `cap` lines, each cut at [`LINE_CHARS`], and how many lines were left out.
pub fn render(result: Option<&Value>, cap: usize) -> (Vec<String>, usize) {
    let parts = result
        .and_then(|r| r.get("content"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let texts = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str));
    let mut lines = Vec::new();
    let mut more = 0;
    for text in texts {
        // A trailing LF ends the last line; it does not start an empty one.
        let text = text.strip_suffix('\n').unwrap_or(text);
        if lines.len() >= cap {
            // Past the cap only the count matters: memchr, without building strings.
            more += memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
            continue;
        }
        for line in text.split('\n') {
            if lines.len() < cap {
                lines.push(cut(line.strip_suffix('\r').unwrap_or(line), LINE_CHARS));
            } else {
                more += 1;
            }
        }
    }
    (lines, more)
}

/// The first `max` characters of `s`.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => s[..end].to_owned(),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(v: Value) -> Option<Op> {
        from_record(v.as_object().unwrap().clone(), 3)
    }

    #[test]
    fn tool_output_keeps_the_first_lines_and_counts_the_rest() {
        let result = json!({"content": [
            {"type": "text", "text": "a\r\nb\n"},
            {"type": "image", "data": "..."},
            {"type": "text", "text": "c\nd\ne\n"},
            {"type": "text", "text": "f\ng"},
        ]});
        let (lines, more) = render(Some(&result), 3);
        assert_eq!(lines, vec!["a", "b", "c"]);
        assert_eq!(more, 4);
        assert_eq!(render(None, 3), (vec![], 0));
        let long = "é".repeat(LINE_CHARS + 10);
        let (lines, _) = render(Some(&json!({"content": [{"type": "text", "text": long}]})), 3);
        assert_eq!(lines[0].chars().count(), LINE_CHARS);
    }

    #[test]
    fn records_become_ops() {
        assert_eq!(
            op(json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": 1, "delta": "hi"}})),
            Some(Op::Text { index: Some(1), text: "hi".into() })
        );
        assert_eq!(
            op(json!({"type": "message_update", "assistantMessageEvent": {"type": "text_end", "contentIndex": 1, "content": "hi"}})),
            None
        );
        assert_eq!(
            op(json!({"type": "response", "command": "prompt", "success": false, "error": "busy"})),
            Some(Op::Response { id: None, command: Some("prompt".into()), success: false, data: None, error: Some("busy".into()) })
        );
        assert_eq!(
            op(json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "isError": true, "result": {"content": [{"type": "text", "text": "boom"}]}})),
            Some(Op::ToolEnd { id: "c1".into(), name: "bash".into(), is_error: true, lines: vec!["boom".into()], more: 0 })
        );
        let ev = json!({"type": "agent_end", "messages": []});
        assert_eq!(op(ev.clone()), Some(Op::Event { kind: Some("agent_end".into()), event: ev }));
        assert!(op(json!({"type": "extension_ui_request", "id": "u1", "method": "confirm"})).unwrap().urgent());
    }
}
