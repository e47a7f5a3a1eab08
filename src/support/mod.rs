//! What every layer uses: the log file, fail points for tests, the source stamp, waking
//! Neovim's main loop, resolving paths off the main thread, giving back pages only loading used,
//! and opening folders of ours so that no other user can slip theirs in (shared with bridge/).

pub mod failpoint;
pub mod log;
pub mod pages;
pub mod resolve;
pub mod safe_dir;
pub mod stamp;
pub mod waker;
