//! The IDE companion protocol (that of Gemini CLI's VS Code extension), which Gemini CLI's and
//! Qwen Code's IDE modes speak alike: MCP over Streamable HTTP on a loopback port of its own, a
//! file naming that port and its token (lockfile.rs; its folder and name each CLI's own), two
//! tools (tools.rs: openDiff answered at once, its outcome told later as a notification) and
//! `ide/contextUpdate` for the selection (context.rs). The CLI answers none of our requests.
//! Each CLI is an agent of its own (gemini.rs, qwen.rs): its name and where its file goes.

pub mod context;
pub mod lockfile;
pub mod tools;

use super::{Agent, Lockfile, OwnLockfile, Transport};

/// The agent `name`, a companion CLI that finds us through `file`.
pub const fn agent(name: &'static str, file: &'static dyn OwnLockfile) -> Agent {
    Agent {
        name,
        transport: Transport::Http { session_header: "mcp-session-id", scheme: "Bearer", loopback: true },
        lockfile: Lockfile::Own(file),
        tools: tools::TOOLS,
        answers: &[],
        notification: context::frame,
        takes_requests: false,
        listening_after: None,
    }
}
