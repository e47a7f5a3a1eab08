//! pi-ide.nvim's Rust core: the server Neovim runs for coding agents, in layers (each uses only
//! the ones above it in this list):
//!
//! - `support`: logging, fail points, the source stamp, waking Neovim, resolving paths.
//! - `protocol`: the wire: JSON-RPC, pi-ide's lockfile, the tool entries.
//! - `agents`: one module per agent (its dialect, answer shapes, lockfile, transport) and the
//!   registry that lists them.
//! - `state`: what the server thread and Neovim's main thread share (clients, events, calls
//!   parked for Lua, reviews, requests, the selection, diagnostics).
//! - `mcp`: the MCP core every transport hands its messages to.
//! - `transport`: how messages arrive and leave (WebSocket, HTTP or lines on a Unix socket).
//! - `server`: the server's life (bind, threads, the agents served, stop in order).
//! - `ffi`: the one narrow boundary Lua calls through.
//!
//! `chat` runs a chat's agent as a child process, beside the server; `checkpoint` records the
//! workspace at each agent turn (a shadow git repository) and puts it back. See README.md
//! ("Architecture").
//!
//! The words, one per idea, in Rust and Lua alike:
//!
//! - *review*: a write an agent proposes, shown in two panes (the proposal, the file on disk)
//!   until the user accepts or rejects it; the option `review`, events `PiIdeReview*`. Agents
//!   call it a diff (`openDiff`, `open_diff`, `DIFF_REJECTED`): those are their words on the
//!   wire and stay. *diff* is otherwise only Neovim's diff mode or a diff of texts.
//! - *agent*: a product (Pi, Codex, each one agents/ or lua/pi-ide/agents/ names). A *client* is
//!   one connection of one. The registries (agents/, lua/pi-ide/agents/) hold an entry per agent
//!   served with a dialect of its own, and an entry per way that many agents come alike: `mcp`
//!   (every MCP client) and, in the core, `chat` (whichever agent runs in a chat).
//! - *transport*: how an agent's bytes reach us (WebSocket, HTTP on a Unix socket, lines on a
//!   Unix socket, in-process): transport/. *protocol*: what is said over it: MCP (JSON-RPC; the
//!   MCP core every transport feeds is `mcp`), ACP (a chat and its agent: chat/acp/), Pi's RPC
//!   mode (Pi's chat). *dialect*: where an agent's tools, answers and notifications differ.
//! - `mcp`: the MCP core here; the entry of MCP clients (agents/mcp_clients/, named `mcp` to Lua
//!   and the user); their program is `pi-ide-mcp`, the *bridge* (bridge/).
//! - *release*: what is held (a slot, a staged proposal) goes back; never "give back". (A
//!   *release* of the plugin is a tagged version.)
//! - In tests, a *fake* plays a program or a plugin (a fake Pi, a fake ACP agent, fake file
//!   explorers); a *mock* is only a model's API server on loopback (the tests' `*_mock` modules).

pub mod agents;
pub mod chat;
pub mod checkpoint;
pub mod mcp;
pub mod protocol;
pub mod server;
pub mod state;
pub mod support;
pub mod transport;
pub mod watch;

// The Lua entry point needs the Lua C API, which only exists inside Neovim; unit tests are
// linked as ordinary executables, so they leave it out.
#[cfg(all(feature = "module", not(test)))]
mod ffi;

/// Bumped whenever the functions Lua calls change shape; `lua/pi-ide/core/native.lua` holds the same
/// number and refuses a library that differs.
pub const ABI: u32 = 11;

/// For unit tests: an empty folder of this name, private to this test process.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pi-ide-{name}-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
