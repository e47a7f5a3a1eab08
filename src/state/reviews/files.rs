//! The files of a review: the one on disk, read safely (never a FIFO, a device or a folder,
//! never more than the limit), and the private copies Lua reads (mode 0600 in a 0700 folder),
//! deleted with whoever owns them.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What openDiff found on disk at `old_file_path`.
#[derive(Debug, PartialEq, Eq)]
pub enum Old {
    /// No file yet (a new file): the left pane is empty.
    Missing,
    /// A regular file, read whole (at most the limit).
    Contents(Vec<u8>),
    /// It exists but cannot be read (permissions...): shown as such, diffed as empty.
    Unreadable(String),
    /// Not something to review (a folder, a FIFO, a device, too large): the review is refused.
    Refused(String),
}

/// Why a path that exists is not a file we may read, in words (None: a regular file).
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("it is a folder")
    } else if t.is_fifo() {
        Some("it is a named pipe (FIFO)")
    } else if t.is_socket() {
        Some("it is a socket")
    } else if t.is_char_device() {
        Some("it is a character device")
    } else if t.is_block_device() {
        Some("it is a block device")
    } else {
        Some("it is not a regular file")
    }
}

/// Reads the file an openDiff is about, safely: stat first (a FIFO, a device or a folder is
/// never opened for reading; opening a FIFO would wait for a writer forever, reading /dev/zero
/// would never end), open without blocking and check it is still that regular file, and read
/// at most `limit` bytes.
pub fn read_old(path: &str, limit: usize) -> Old {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let before = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Old::Missing,
        Err(e) => return Old::Unreadable(e.to_string()),
    };
    if let Some(why) = not_a_file(&before) {
        return Old::Refused(why.into());
    }
    let too_big = |size: u64| {
        Old::Refused(format!(
            "it is {size} bytes, over the {limit}-byte limit (max_message_size)"
        ))
    };
    if before.len() > limit as u64 {
        return too_big(before.len());
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return Old::Unreadable(e.to_string()),
    };
    // Swapped for something else between the stat and the open?
    match file.metadata() {
        Ok(m) if m.is_file() && m.dev() == before.dev() && m.ino() == before.ino() => {}
        Ok(m) => {
            return Old::Refused(not_a_file(&m).unwrap_or("it changed while being read").into())
        }
        Err(e) => return Old::Unreadable(e.to_string()),
    }
    let mut contents = Vec::with_capacity(before.len() as usize);
    if let Err(e) = file.take(limit as u64 + 1).read_to_end(&mut contents) {
        return Old::Unreadable(e.to_string());
    }
    if contents.len() > limit {
        return too_big(contents.len() as u64);
    }
    Old::Contents(contents)
}

/// Writes the proposal where Lua will read it. The folder is private to this user.
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents)
}

/// Staged files: deleted when dropped (a staging that finished after its review was given up
/// leaves nothing behind; a review deletes its own when it ends or Lua has read them).
#[derive(Debug, Default)]
pub struct StagedFiles(Vec<PathBuf>);

impl StagedFiles {
    pub fn push(&mut self, file: PathBuf) {
        self.0.push(file);
    }

    /// Deletes them now.
    pub fn clear(&mut self) {
        drop(std::mem::take(self));
    }

    #[cfg(test)]
    pub fn paths(&self) -> &[PathBuf] {
        &self.0
    }
}

impl Drop for StagedFiles {
    fn drop(&mut self) {
        for f in self.0.drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_regular_file_is_refused_without_being_read() {
        let dir = crate::scratch_dir("refuse");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2000]).unwrap();
        let sock = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        for (path, why) in [
            (fifo.to_string_lossy().to_string(), "named pipe"),
            ("/dev/zero".into(), "character device"),
            ("/dev/urandom".into(), "character device"),
            (dir.to_string_lossy().to_string(), "folder"),
            (sock.to_string_lossy().to_string(), "socket"),
            (big.to_string_lossy().to_string(), "over the 1000-byte limit"),
        ] {
            match read_old(&path, 1000) {
                Old::Refused(w) => assert!(w.contains(why), "{path}: {w}"),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert_eq!(read_old(&dir.join("none").to_string_lossy(), 10), Old::Missing);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
