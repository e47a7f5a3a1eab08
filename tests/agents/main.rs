//! How agents find this Neovim, connect and speak: the lockfile and its token, the protocol,
//! the server's life with clients, Claude Code's and the Copilot CLI's ways in, MCP clients
//! through `pi-ide-mcp`, and agents launched from Neovim.

#[path = "../support/harness.rs"]
mod harness;

mod claude_code;
mod copilot;
mod gemini_ide;
mod launch;
mod lifecycle;
mod lockfile_and_auth;
mod mcp_bridge;
mod protocol;
mod qwen_ide;
mod served_on_request;
