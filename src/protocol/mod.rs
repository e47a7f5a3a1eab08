//! The wire, with no state: JSON-RPC framing (jsonrpc.rs), pi-ide's lockfile (lockfile.rs), and
//! the tool entries (tools/).

pub mod jsonrpc;
pub mod lockfile;
pub mod tools;
