//! The agents, one module each, and the registry that lists them ([`ALL`]). An agent's module
//! holds everything the core knows of that agent: how it reaches us (its transport and, on the
//! WebSocket, its auth header), how it finds us (its lockfile), the tools it lists and calls,
//! where its answers and notifications differ from pi-ide's, and whether it takes our requests.
//! The rest of the core asks the agent a client came as (`&'static Agent`), never its name.
//!
//! An entry is an agent (a product: `pi`, `claude`, `copilot`) or, where the core serves many
//! agents alike, the one way they all come: `mcp` (every MCP client, through the bridge:
//! mcp_clients/) and `chat` (whichever agent runs in a chat, through the chat's client in this
//! process: chat.rs). Lua names the entries as the core does (lua/pi-ide/agents/), except
//! `chat`: there each agent a chat runs is a module of its own (gemini's only lives there). `mcp`
//! is the user's word too (its option, `:PiIde mcp`, its line in `:PiIde status`).
//!
//! Adding an agent that speaks an existing transport is a module here and a line in [`ALL`]
//! (with its Lua side: lua/pi-ide/agents/). README.md ("Architecture") has the steps.

pub mod chat;
pub mod claude;
pub mod companion;
pub mod copilot;
pub mod gemini;
pub mod mcp_clients;
pub mod pi;
pub mod qwen;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::protocol::jsonrpc::{notification_frame, RpcError};
use crate::protocol::lockfile::LockInfo;
use crate::protocol::tools::Tool;

/// Every agent the core can serve, by the name Lua gives it.
pub static ALL: &[&Agent] = &[&pi::AGENT, &claude::AGENT, &copilot::AGENT, &gemini::AGENT, &qwen::AGENT, &mcp_clients::AGENT, &chat::AGENT];

/// The agent served always, whose lockfile is the server's own.
pub static HOME: &Agent = &pi::AGENT;

pub struct Agent {
    /// Its name in the registry, to Lua and in `:PiIde status`.
    pub name: &'static str,
    pub transport: Transport,
    pub lockfile: Lockfile,
    /// The tools it lists and calls.
    pub tools: &'static [Tool],
    /// Its shape of a shared tool's answer, where it differs from the tool's own.
    pub answers: &'static [Answer],
    /// One of our notifications (in pi-ide's words) as this agent reads it: its frame, or None
    /// when it has no such notification.
    pub notification: fn(&str, &Value) -> Option<String>,
    /// Whether it takes our requests (suggestions).
    pub takes_requests: bool,
    /// A notification after which it listens for the selection anew (the one sent after
    /// `initialize` is dropped by it).
    pub listening_after: Option<&'static str>,
}

/// An agent's own shape of the answer of `tool`: from what Lua answered to the MCP result's
/// one text.
pub struct Answer {
    pub tool: &'static str,
    pub shape: fn(&Value) -> String,
}

/// How an agent reaches us.
pub enum Transport {
    /// Our WebSocket on a loopback port, told apart from other agents by its auth header.
    WebSocket { header: &'static str },
    /// MCP over HTTP/1.1 on a Unix socket of its own, in a private folder (or, `loopback`, on
    /// a loopback port of its own: Host and Origin must be loopback too); sessions are keyed
    /// by this header, else by MCP's `Mcp-Session-Id`; `Authorization: <scheme> <token>`.
    Http { session_header: &'static str, scheme: &'static str, loopback: bool },
    /// Newline-delimited JSON-RPC (MCP's stdio transport, relayed) on a Unix socket of its
    /// own, in a private folder; only this user's processes may connect.
    Lines,
    /// None: it comes with a chat, whose client lives in this process (server/local.rs).
    InProcess,
}

/// How an agent finds us.
pub enum Lockfile {
    /// pi-ide's lockfile (protocol/lockfile.rs) in the folder this gives.
    PiIde(fn() -> Result<PathBuf, String>),
    /// A lockfile of its own format, kept by its module.
    Own(&'static dyn OwnLockfile),
    /// None: nothing has to find us.
    None,
}

/// An agent's own lockfile, for an agent that has its own socket (HTTP).
pub trait OwnLockfile: Sync {
    /// Writes it for a server listening on `socket`; `options` are the agent's, from Lua.
    fn write(&self, socket: &Path, lock: &LockInfo, options: &Value) -> Result<Box<dyn KeptLockfile>, String>;
    /// Removes lockfiles of editors like us (`is_ours(ideName)`) whose process is gone.
    fn sweep(&self, is_ours: &dyn Fn(&str) -> bool) -> Vec<PathBuf>;
}

/// An agent's own lockfile as written, kept in step until the server stops.
pub trait KeptLockfile: Send {
    fn path(&self) -> &Path;
    /// The folder it is in.
    fn dir(&self) -> &Path {
        self.path().parent().unwrap_or(Path::new(""))
    }
    /// Rewrites it for new workspace folders.
    fn set_folders(&mut self, folders: &[String]) -> Result<(), String>;
    /// The editor got the focus (for an agent that picks the editor used last).
    fn focused(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Whether it is there, private and still ours (for :checkhealth).
    fn check(&self) -> Result<(), String>;
    /// Removes it, if it still holds our token.
    fn remove(&self, token: &str);
}

impl Agent {
    /// A tool this agent may call.
    pub fn tool(&self, name: &str) -> Option<&'static Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Lua's answer to a call of `tool` as this agent reads it (`context`: see
    /// [`Tool::finish`]).
    pub fn shape(&self, tool: &Tool, value: Value, context: Option<&str>) -> Result<Value, RpcError> {
        match self.answers.iter().find(|a| a.tool == tool.name) {
            Some(a) => tool.shape_result(Value::String((a.shape)(&value))),
            None => tool.finish(value, context),
        }
    }

    /// The auth header it connects with, when it comes over the WebSocket.
    pub fn header(&self) -> Option<&'static str> {
        match self.transport {
            Transport::WebSocket { header } => Some(header),
            Transport::Http { .. } | Transport::Lines | Transport::InProcess => None,
        }
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Agent) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The agent of this name.
pub fn find(name: &str) -> Option<&'static Agent> {
    ALL.iter().copied().find(|a| a.name == name)
}

/// pi-ide's notifications, as they are: what Pi and Claude Code read.
pub fn as_pi_ide(method: &str, params: &Value) -> Option<String> {
    Some(notification_frame(method, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tool_names_never_repeat() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
            for (j, t) in a.tools.iter().enumerate() {
                assert!(a.tools[j + 1..].iter().all(|u| u.name != t.name), "{}.{}", a.name, t.name);
            }
            for answer in a.answers {
                assert!(a.tool(answer.tool).is_some(), "{} reshapes {}, which it has not", a.name, answer.tool);
            }
        }
        assert_eq!(find("claude").map(|a| a.name), Some("claude"));
        assert!(find("nope").is_none());
    }

    #[test]
    fn websocket_agents_have_headers_of_their_own() {
        let headers: Vec<_> = ALL.iter().filter_map(|a| a.header()).collect();
        for (i, h) in headers.iter().enumerate() {
            assert!(!headers[i + 1..].contains(h), "{h}");
        }
    }
}
