//! What every layer uses: the log file, fail points for tests, the source stamp, waking
//! Neovim's main loop, and resolving paths off the main thread.

pub mod failpoint;
pub mod log;
pub mod resolve;
pub mod stamp;
pub mod waker;
