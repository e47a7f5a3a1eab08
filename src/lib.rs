//! pi-ide.nvim's Rust core: the loopback MCP server Neovim runs for the Pi agent.
//!
//! Everything here is plain Rust that never touches the Neovim API; `lua_api` is the one narrow
//! boundary Lua calls through. See README.md ("Design") for the shape of the whole.

pub mod auth;
pub mod bridge;
pub mod chat;
pub mod clients;
pub mod diagnostics;
pub mod diff;
pub mod dispatch;
pub mod events;
pub mod failpoint;
mod fuzz;
pub mod jsonrpc;
pub mod limits;
pub mod lockfile;
pub mod log;
pub mod mcp;
pub mod notify;
pub mod opening;
pub mod outbox;
pub mod oversized;
pub mod parked;
pub mod requests;
pub mod resolve;
pub mod review;
pub mod selection;
pub mod server;
pub mod stamp;
pub mod tools;
pub mod transport;
pub mod waker;

// The Lua entry point needs the Lua C API, which only exists inside Neovim; unit tests are
// linked as ordinary executables, so they leave it out.
#[cfg(all(feature = "module", not(test)))]
mod lua_api;
#[cfg(all(feature = "module", not(test)))]
mod lua_chat;
#[cfg(all(feature = "module", not(test)))]
mod lua_json;

/// Bumped whenever the functions Lua calls change shape; `lua/pi-ide/native.lua` holds the same
/// number and refuses a library that differs.
pub const ABI: u32 = 4;

/// For unit tests: an empty folder of this name, private to this test process.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pi-ide-{name}-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
