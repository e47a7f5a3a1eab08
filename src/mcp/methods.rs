//! The MCP subset we serve: `initialize`, `ping`, `tools/list`, `tools/call`, and the
//! notifications clients send. Pure functions over one client's session; no I/O.

use serde_json::{json, Value};

use crate::protocol::jsonrpc::{RpcError, METHOD_NOT_FOUND};
use crate::agents::Agent;
use crate::protocol::tools::Tool;

/// The protocol version the Pi extension speaks; also what we answer with when a client asks
/// for one we do not know.
pub const PROTOCOL_VERSION: &str = "2024-11-05";
const KNOWN_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

pub const SERVER_NAME: &str = "pi-ide.nvim";

/// The key in `initialize`'s `_meta` that names the client's folder (absolute), against which
/// its relative paths are resolved (bridge/src/relay.rs sends it).
pub const FOLDER_KEY: &str = "pi-ide/cwd";

/// What one client told us about itself.
#[derive(Debug, Clone)]
pub struct Session {
    /// The agent the client came as (its transport told): whose tools it lists and calls.
    pub agent: &'static Agent,
    pub client_name: Option<String>,
    pub client_version: Option<String>,
    /// The folder the client resolves a relative path against (its `initialize`'s
    /// [`FOLDER_KEY`]: pi-ide-mcp sends its own, which its client gave it).
    pub folder: Option<std::path::PathBuf>,
    /// The tools off unless asked for ([`Tool::opt_in`]) that the user turned on.
    pub opted_in: Vec<String>,
}

impl Session {
    pub fn new(agent: &'static Agent) -> Session {
        Session {
            agent,
            client_name: None,
            client_version: None,
            folder: None,
            opted_in: Vec::new(),
        }
    }

    /// Whether this session lists and may call `tool`.
    pub fn offers(&self, tool: &Tool) -> bool {
        !tool.opt_in || self.opted_in.iter().any(|n| n == tool.name)
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::new(crate::agents::HOME)
    }
}

/// What to do with a request.
#[derive(Debug)]
pub enum Dispatch {
    /// Answer now.
    Reply(Result<Value, RpcError>),
    /// Park it and hand it to Lua, which answers it later.
    Park { tool: &'static Tool, args: Value },
}

pub fn handle_request(session: &mut Session, method: &str, params: Option<Value>) -> Dispatch {
    match method {
        "initialize" => Dispatch::Reply(Ok(initialize(session, params.as_ref()))),
        "ping" => Dispatch::Reply(Ok(json!({}))),
        "tools/list" => Dispatch::Reply(Ok(json!({
            "tools": session.agent.tools.iter().filter(|t| session.offers(t)).map(Tool::describe).collect::<Vec<_>>()
        }))),
        "tools/call" => match tools_call(session.agent, params) {
            Dispatch::Park { tool, .. } if !session.offers(tool) => Dispatch::Reply(Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("unknown tool: {} (the user has not turned it on)", tool.name),
            ))),
            other => other,
        },
        other => Dispatch::Reply(Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        ))),
    }
}

/// Notifications are never answered; this returns whether we knew the method (for the log).
pub fn handle_notification(agent: &Agent, method: &str) -> bool {
    match method {
        // Nothing to do: `initialize` alone counts (the Pi extension never sends this).
        "notifications/initialized" => true,
        "notifications/cancelled" => true,
        // The agent's hello after connecting: see `wants_selection_again`.
        other => agent.listening_after == Some(other),
    }
}

/// Whether a notification says the client only now listens for the selection (it drops the
/// one sent right after `initialize`).
pub fn wants_selection_again(agent: &Agent, method: &str) -> bool {
    agent.listening_after == Some(method)
}

fn initialize(session: &mut Session, params: Option<&Value>) -> Value {
    let info = params.and_then(|p| p.get("clientInfo"));
    session.client_name = info
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    session.client_version = info
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let folder = params.and_then(|p| p.get("_meta")?.get(FOLDER_KEY)?.as_str()).map(std::path::PathBuf::from);
    session.folder = folder.filter(|f| f.is_absolute());
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = asked
        .filter(|v| KNOWN_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") },
    })
}

fn tools_call(agent: &Agent, params: Option<Value>) -> Dispatch {
    let Some(Value::Object(mut params)) = params else {
        return Dispatch::Reply(Err(RpcError::invalid_params(
            "tools/call needs an object with 'name'",
        )));
    };
    let name = match params.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Dispatch::Reply(Err(RpcError::invalid_params("'name' must be a string")))
        }
        None => {
            return Dispatch::Reply(Err(RpcError::invalid_params(
                "missing required parameter 'name'",
            )))
        }
    };
    let Some(tool) = agent.tool(&name) else {
        return Dispatch::Reply(Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("unknown tool: {name}"),
        )));
    };
    let args = match params.remove("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(v) => v,
    };
    if let Err(e) = tool.validate(&args) {
        let context = tool.abandon_context(&args);
        return Dispatch::Reply(tool.owed(Err(e), context.as_deref()));
    }
    let args = match tool.adapt {
        Some(adapt) => adapt(args),
        None => args,
    };
    Dispatch::Park { tool, args }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::INVALID_PARAMS;

    fn reply(d: Dispatch) -> Result<Value, RpcError> {
        match d {
            Dispatch::Reply(r) => r,
            Dispatch::Park { tool, .. } => panic!("parked {}", tool.name),
        }
    }

    #[test]
    fn initialize_records_the_client_and_answers_our_version() {
        let mut s = Session::default();
        let r = reply(handle_request(
            &mut s,
            "initialize",
            Some(json!({"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"pi-ide","version":"0.1.0"}})),
        ))
        .unwrap();
        assert_eq!(r["protocolVersion"], "2024-11-05");
        assert_eq!(r["serverInfo"]["name"], SERVER_NAME);
        assert!(r["capabilities"]["tools"].is_object());
        assert_eq!(s.client_name.as_deref(), Some("pi-ide"));
        let r = reply(handle_request(
            &mut s,
            "initialize",
            Some(json!({"protocolVersion":"1999-01-01"})),
        ))
        .unwrap();
        assert_eq!(r["protocolVersion"], PROTOCOL_VERSION);
        let r = reply(handle_request(
            &mut s,
            "initialize",
            Some(json!({"protocolVersion":"2025-06-18"})),
        ))
        .unwrap();
        assert_eq!(r["protocolVersion"], "2025-06-18");
    }

    #[test]
    fn tools_list_names_every_tool() {
        let r = reply(handle_request(&mut Session::default(), "tools/list", None)).unwrap();
        let names: Vec<&str> = r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"getDiagnostics"));
        for t in r["tools"].as_array().unwrap() {
            assert_eq!(t["inputSchema"]["type"], "object");
        }
    }

    #[test]
    fn unknown_method_and_tool_are_method_not_found() {
        let e = reply(handle_request(
            &mut Session::default(),
            "resources/list",
            None,
        ))
        .unwrap_err();
        assert_eq!(e.code, METHOD_NOT_FOUND);
        let e = reply(tools_call(crate::agents::HOME, Some(json!({"name": "nope"})))).unwrap_err();
        assert_eq!(e.code, METHOD_NOT_FOUND);
        assert!(e.message.contains("nope"));
    }

    #[test]
    fn tools_call_checks_its_params() {
        assert_eq!(reply(tools_call(crate::agents::HOME, None)).unwrap_err().code, INVALID_PARAMS);
        assert_eq!(
            reply(tools_call(crate::agents::HOME, Some(json!([])))).unwrap_err().code,
            INVALID_PARAMS
        );
        let e = reply(tools_call(crate::agents::HOME, Some(json!({"arguments": {}})))).unwrap_err();
        assert!(e.message.contains("'name'"));
        let e = reply(tools_call(crate::agents::HOME, Some(
            json!({"name": "getDiagnostics", "arguments": {"uri": []}}),
        )))
        .unwrap_err();
        assert!(e.message.contains("'uri'"));
        match tools_call(crate::agents::HOME, Some(json!({"name": "getDiagnostics"}))) {
            Dispatch::Park { tool, args } => {
                assert_eq!(tool.name, "getDiagnostics");
                assert_eq!(args, json!({}));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn notifications() {
        let pi = crate::agents::HOME;
        assert!(handle_notification(pi, "notifications/initialized"));
        assert!(!handle_notification(pi, "something/else"));
        // An agent that listens anew after a hello of its own.
        let hello = crate::agents::ALL.iter().find_map(|a| Some((*a, a.listening_after?))).unwrap();
        assert!(handle_notification(hello.0, hello.1) && wants_selection_again(hello.0, hello.1));
        assert!(!wants_selection_again(pi, hello.1));
    }
}
