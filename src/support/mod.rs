//! What every layer uses: the log file, fail points for tests, the source stamp, waking
//! Neovim's main loop, resolving paths off the main thread, and giving back pages only loading used.

pub mod blob;
pub mod failpoint;
pub mod log;
pub mod pages;
pub mod resolve;
pub mod reviewed_write;
pub mod stamp;
pub mod waker;
