//! Gemini CLI's IDE mode (the companion protocol of its VS Code extension, checked against the
//! CLI 0.61): MCP over Streamable HTTP on a loopback port of its own, a discovery file of its
//! own format (discovery.rs), two tools (tools.rs: openDiff answered at once, its outcome told
//! later as a notification) and `ide/contextUpdate` for the selection (context.rs). It answers
//! none of our requests. Its ACP chat is another entry (chat.rs serves every chat's agent).

pub mod context;
pub mod discovery;
pub mod tools;

use super::{Agent, Lockfile, Transport};

pub static AGENT: Agent = Agent {
    name: "gemini",
    transport: Transport::Http { session_header: "mcp-session-id", scheme: "Bearer", loopback: true },
    lockfile: Lockfile::Own(&discovery::Discovery),
    tools: tools::TOOLS,
    answers: &[],
    notification: context::frame,
    takes_requests: false,
    listening_after: None,
};
