//! The agent side of pi-ide, for tests, benchmarks and demos: find an editor through its
//! lockfile, connect with its token, and send the frames the Pi extension sends. Also a small
//! driver for an embedded Neovim (`nvim --embed`) over msgpack-RPC.

pub mod copilot;
pub mod lock;
pub mod nvim;
pub mod peer;
mod pty;
pub mod tui;

pub use lock::LockFile;
pub use nvim::Nvim;
pub use peer::{ConnectError, Peer};
