//! The MCP core every transport hands its messages to: dispatch.rs carries one message out
//! (methods.rs answers what needs no state; a tool call as its entry says); oversized.rs answers
//! a message too big to keep.

pub mod dispatch;
mod fuzz;
pub mod methods;
pub mod oversized;
