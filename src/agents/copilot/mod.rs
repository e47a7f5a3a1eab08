//! The GitHub Copilot CLI (npm `@github/copilot`) and its IDE bridge, as observed with the CLI
//! (the editor side Microsoft publishes for VS Code is in microsoft/vscode-copilot-chat): MCP
//! over HTTP on a Unix socket of its own, a lockfile of its own format (lockfile.rs), its own
//! tools (tools.rs, each mapped onto the pi-ide tool of the same meaning) and notifications
//! (notify.rs). It answers none of our requests.

pub mod lockfile;
pub mod notify;
pub mod tools;

use super::{Agent, Lockfile, Transport};

pub static AGENT: Agent = Agent {
    name: "copilot",
    transport: Transport::Http { session_header: "x-copilot-session-id", scheme: "Nonce", loopback: false },
    lockfile: Lockfile::Own(&lockfile::Lockfile),
    tools: tools::TOOLS,
    answers: &[],
    notification: notify::frame,
    takes_requests: false,
    listening_after: None,
};
