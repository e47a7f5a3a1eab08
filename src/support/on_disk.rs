//! A file someone else may have put there (an agent, its shell), read without being fooled:
//! never a FIFO, a device or a folder, never more than a limit, never a file swapped in between
//! the look and the read.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// What is on disk at a path.
#[derive(Debug, PartialEq, Eq)]
pub enum OnDisk {
    /// No file (yet).
    Missing,
    /// A regular file, read whole (at most the limit).
    Contents(Vec<u8>),
    /// It exists but cannot be read (permissions...).
    Unreadable(String),
    /// Not a file to read (a folder, a FIFO, a device, too large): why, in words.
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

/// Reads the file at `path`, safely: stat first (a FIFO, a device or a folder is never opened
/// for reading; opening a FIFO would wait for a writer forever, reading /dev/zero would never
/// end), open without blocking and check it is still that regular file, and read at most
/// `limit` bytes.
pub fn read(path: impl AsRef<Path>, limit: usize) -> OnDisk {
    let path = path.as_ref();
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let before = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return OnDisk::Missing,
        Err(e) => return OnDisk::Unreadable(e.to_string()),
    };
    if let Some(why) = not_a_file(&before) {
        return OnDisk::Refused(why.into());
    }
    let too_big = |size: u64| {
        OnDisk::Refused(format!(
            "it is {size} bytes, over the {limit}-byte limit"
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
        Err(e) => return OnDisk::Unreadable(e.to_string()),
    };
    // Swapped for something else between the stat and the open?
    match file.metadata() {
        Ok(m) if m.is_file() && m.dev() == before.dev() && m.ino() == before.ino() => {}
        Ok(m) => {
            return OnDisk::Refused(not_a_file(&m).unwrap_or("it changed while being read").into())
        }
        Err(e) => return OnDisk::Unreadable(e.to_string()),
    }
    let mut contents = Vec::with_capacity(before.len() as usize);
    if let Err(e) = file.take(limit as u64 + 1).read_to_end(&mut contents) {
        return OnDisk::Unreadable(e.to_string());
    }
    if contents.len() > limit {
        return too_big(contents.len() as u64);
    }
    OnDisk::Contents(contents)
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
            match read(&path, 1000) {
                OnDisk::Refused(w) => assert!(w.contains(why), "{path}: {w}"),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert_eq!(read(dir.join("none"), 10), OnDisk::Missing);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
