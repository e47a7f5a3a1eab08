//! Transports: how messages reach the MCP core (dispatch.rs) and leave it. Each knows its own
//! framing and limits; none knows a tool by name.
//!
//! - websocket.rs (+ gate.rs): pi-ide's, for Pi and Claude Code, on a loopback port.
//! - http/: the Copilot CLI's, MCP Streamable HTTP on a Unix socket.

pub mod gate;
pub mod http;
pub mod websocket;
