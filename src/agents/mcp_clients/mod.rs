//! Every MCP client (Codex, Gemini CLI, opencode, Claude Desktop, mcporter, Pi's MCP adapter),
//! as one entry, named `mcp` (to Lua and to the user): MCP's stdio transport, relayed by the
//! `pi-ide-mcp` program the client runs (bridge/) over a private Unix socket of ours
//! (transport/lines.rs). It finds this Neovim by a record of its own (record.rs); its tools are
//! written for a model that knows nothing of Neovim (tools.rs). It takes no requests and gets no
//! notifications: MCP clients read neither. (The MCP core every transport feeds is src/mcp/.)

pub mod record;
pub mod tools;

use serde_json::Value;

use super::{Agent, Lockfile, Transport};

pub static AGENT: Agent = Agent {
    name: "mcp",
    transport: Transport::Lines,
    lockfile: Lockfile::Own(&record::Records),
    tools: tools::TOOLS,
    answers: &[],
    notification: no_notifications,
    takes_requests: false,
    listening_after: None,
};

fn no_notifications(_method: &str, _params: &Value) -> Option<String> {
    None
}
