//! What every layer uses: the log file, the discovery files agents find us by, fail points for tests, the source stamp, waking
//! Neovim's main loop, resolving paths off the main thread, where a path really leads, opening folders of ours so that no
//! other user can slip theirs in (shared with bridge/), a text's git blob id, writing an
//! accepted text onto the very file a review showed, and over an agent's own write of its proposal.

pub mod at;
pub mod blob;
pub mod discovery;
pub mod failpoint;
pub mod log;
pub mod on_disk;
pub mod real;
pub mod own_write;
pub mod resolve;
pub mod reviewed_write;
pub mod safe_dir;
pub mod stamp;
pub mod waker;
