//! One folder's checkpoints are changed by one process at a time: two Neovims in one folder
//! share its shadow repository and its log of turns. An exclusive flock(2) on a file beside
//! them, held for the whole of an operation (the snapshot, the log's read-modify-write, the
//! refs and the pruning), and let go by the kernel if the process dies.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// The lock, held until dropped.
pub struct Held {
    _file: File,
}

/// Takes the lock of `dir`, waiting up to `patience` for another process to let it go.
pub fn hold(dir: &Path, patience: Duration) -> Result<Held, String> {
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("could not open {}: {e}", path.display()))?;
    let deadline = Instant::now() + patience;
    loop {
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Held { _file: file });
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("could not lock {}: {e}", path.display()));
        }
        if Instant::now() > deadline {
            return Err(format!("another Neovim has held this folder's checkpoints for {} s ({})", patience.as_secs(), path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
