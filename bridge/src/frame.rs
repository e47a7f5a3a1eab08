//! The JSON-RPC frames the program writes to the client itself (session.rs, and relay.rs for
//! the calls a Neovim that went away owes): built here, below both.

use serde_json::{json, Value};

pub fn result(id: &str, value: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{value}}}"#)
}

pub fn error(id: Option<&str>, code: i64, message: &str) -> String {
    let e = json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{e}}}"#, id.unwrap_or("null"))
}

/// A tool result that says the call failed, and why.
pub fn error_result(id: &str, why: &str) -> String {
    result(id, &json!({"content": [{"type": "text", "text": why}], "isError": true}))
}

/// The answer to a line over `max` bytes (its id is not known: it was not kept).
pub fn too_long(max: usize) -> String {
    error(None, -32600, &format!("a message over {} MiB: not read", max >> 20))
}
