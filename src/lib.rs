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
//! - `transport`: how messages arrive and leave (WebSocket, HTTP on a Unix socket).
//! - `server`: the server's life (bind, threads, the agents served, stop in order).
//! - `ffi`: the one narrow boundary Lua calls through.
//!
//! `chat` runs a chat's agent as a child process, beside the server; `checkpoint` records the
//! workspace at each agent turn (a shadow git repository) and puts it back. See README.md
//! ("Architecture").

pub mod agents;
pub mod chat;
pub mod checkpoint;
pub mod mcp;
pub mod protocol;
pub mod server;
pub mod state;
pub mod support;
pub mod transport;

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
