//! Transports: how messages reach the MCP core (dispatch.rs) and leave it. Each knows its own
//! framing and limits; none knows a tool by name.

pub mod gate;
pub mod websocket;
