//! Transports: how messages reach the MCP core (mcp/dispatch.rs) and leave it. Each knows its
//! own framing and limits; none knows a tool by name, and none an agent but as the agent a
//! client came as.
//!
//! - websocket.rs (+ gate.rs, auth.rs): on a loopback port, for the agents whose transport it
//!   is, told apart by their auth headers.
//! - http/: MCP Streamable HTTP on a Unix socket, one per agent whose transport it is.
//! - limits.rs: the caps on connections both share.

pub mod auth;
pub mod gate;
pub mod http;
pub mod limits;
pub mod lines;
pub mod websocket;

use std::time::Duration;

/// How long a stop waits for connection tasks to finish: to read a message that has begun to
/// arrive, answer it and send their Close (each step bounded; see websocket.rs). Only an
/// openDiff still arriving takes more than a few milliseconds.
pub const STOP_GRACE: Duration = Duration::from_millis(
    websocket::DRAIN_MAX.as_millis() as u64 + 3 * websocket::FLUSH_GRACE.as_millis() as u64,
);
