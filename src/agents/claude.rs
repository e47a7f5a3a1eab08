//! Claude Code: pi-ide's wire format over our WebSocket, with its own header and its lockfile
//! in `$CLAUDE_CONFIG_DIR/ide` (or `~/.claude/ide`). It reads getDiagnostics as a list, and
//! drops the selection sent right after `initialize` (it listens from its `ide_connected`).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{Agent, Answer, Lockfile, Transport};

pub static AGENT: Agent = Agent {
    name: "claude",
    transport: Transport::WebSocket { header: "x-claude-code-ide-authorization" },
    lockfile: Lockfile::PiIde(lock_dir),
    tools: crate::protocol::tools::pi_ide::TOOLS,
    answers: &[Answer { tool: "getDiagnostics", shape: diagnostics }],
    notification: super::as_pi_ide,
    takes_requests: true,
    listening_after: Some("ide_connected"),
};

/// `$CLAUDE_CONFIG_DIR/ide`, or `~/.claude/ide`.
fn lock_dir() -> Result<PathBuf, String> {
    crate::protocol::lockfile::agent_dir("CLAUDE_CONFIG_DIR", ".claude", "Claude Code's lockfile")
}

/// Diagnostics as Claude Code parses them: `[{"uri", "diagnostics": [...]}]`, files without
/// any left out. The input is what Lua answers: the pi-ide object (or its JSON text).
fn diagnostics(value: &Value) -> String {
    let parsed;
    let object = match value {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
            &parsed
        }
        other => other,
    };
    let files: Vec<Value> = object
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, d)| d.as_array().is_some_and(|a| !a.is_empty()))
                .map(|(uri, d)| json!({"uri": uri, "diagnostics": d}))
                .collect()
        })
        .unwrap_or_default();
    Value::Array(files).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_are_a_list_of_uri_and_diagnostics() {
        let pi = json!({"file:///a": [{"message": "m"}], "file:///empty": []});
        let claude: Value = serde_json::from_str(&diagnostics(&pi)).unwrap();
        assert_eq!(claude, json!([{"uri": "file:///a", "diagnostics": [{"message": "m"}]}]));
        // Lua answers JSON text; nothing is "[]".
        assert_eq!(diagnostics(&json!("{}")), "[]");
        let t = AGENT.tool("getDiagnostics").unwrap();
        assert_eq!(AGENT.shape(t, json!("{}"), None).unwrap()["content"][0]["text"], "[]");
        assert_eq!(super::super::pi::AGENT.shape(t, json!("{}"), None).unwrap()["content"][0]["text"], "{}");
    }
}
