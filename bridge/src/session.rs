//! One client's MCP session: what the program answers itself (initialize, ping), what it
//! relays (tool calls, cancellations), and tools/list: Neovim's when one is found, else
//! tools.json (the core's default list for MCP clients, kept the same by a test of the core). A call that cannot reach a Neovim is answered
//! with an error *result* (`isError: true`) that says why and what to do, never a JSON-RPC
//! error: on one of those some clients kill the server and send the call again, which would
//! open a review twice.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::frame::{error, error_result, result};
use crate::relay::Relay;

/// The protocol versions we speak; a client asking for another gets the newest.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const TOOLS: &str = include_str!("../tools.json");

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    params: Option<Value>,
}

/// Handles one line from the client.
pub fn handle(relay: &Relay, line: &[u8]) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let msg = match serde_json::from_slice::<Message>(line) {
        Ok(m) => m,
        Err(e) => return relay.send(&error(None, -32700, &format!("parse error: {e}"))),
    };
    let id = msg.id.map(|i| i.get().trim().to_owned());
    match (msg.method.as_deref(), id) {
        (Some("tools/call"), Some(id)) => {
            if let Err(why) = relay.call(&id, line) {
                relay.send(&error_result(&id, &why));
            }
        }
        // Neovim's own list when one is found (it has the tools the user turned on), else ours.
        (Some("tools/list"), Some(id)) => {
            if relay.call(&id, line).is_err() {
                relay.send(&answer(relay, "tools/list", msg.params, &id));
            }
        }
        (Some("notifications/cancelled"), None) => relay.notify(line),
        (Some(_), None) | (None, _) => {}
        (Some(method), Some(id)) => relay.send(&answer(relay, method, msg.params, &id)),
    }
}

/// The answer to a request the program answers itself.
fn answer(relay: &Relay, method: &str, params: Option<Value>, id: &str) -> String {
    match method {
        "initialize" => {
            let asked = params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
            let version = asked.filter(|v| VERSIONS.contains(v)).unwrap_or(VERSIONS[0]).to_owned();
            *relay.init.lock().unwrap_or_else(|e| e.into_inner()) = params;
            result(id, &json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "pi-ide.nvim", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Tools of the user's editor (Neovim): what they are looking at, the \
                    diagnostics their language servers report, and openDiff, which shows a proposed \
                    change of a file to the user and waits for their decision before you write it.",
            }))
        }
        "ping" => result(id, &json!({})),
        "tools/list" => match serde_json::from_str::<Value>(TOOLS) {
            Ok(list) => result(id, &list),
            Err(e) => error(Some(id), -32603, &format!("the tool list is broken: {e}")),
        },
        other => error(Some(id), -32601, &format!("method not found: {other}")),
    }
}
