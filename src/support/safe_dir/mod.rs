//! Folders of ours, opened so that no other user can slip theirs in: every component from `/`
//! opened with openat(O_DIRECTORY|O_NOFOLLOW) and checked through its handle, then every read
//! and write done through the folder's handle (openat, renameat, unlinkat), never by its path
//! again. Shared by the core and the bridge (bridge/ includes this folder by path): it uses
//! std and libc only.
//!
//! The rules (README, "Hardening"):
//! - A folder on the way (an ancestor) belongs to us or to root, and if anyone may write to it,
//!   it has the sticky bit (as /tmp has): else whoever may write there can rename ours away and
//!   put theirs in its place. Group-writable ancestors are accepted: with a group of one's own
//!   (user private groups) a umask of 002 makes them so.
//! - The folders we use for ourselves (the last `own` components) belong to us and have none of
//!   the `forbidden` permission bits; with `fix`, missing ones are created (0700) and the bits
//!   taken away through the handle (said in `fixed`).
//! - A link on the way belongs to us or to root (a link of another user's, in a shared folder,
//!   may point elsewhere at any moment) and is followed; the folder it leads to is checked as
//!   if it stood there. A folder of ours may be reached through a link only where `links` says
//!   so (lock folders: `~/.agent -> dotfiles/agent`); a runtime folder never.

mod runtime;
mod walk;

// The openat helpers: support/at.rs, a sibling of this module in both crates that compile it.
use super::at;

pub use runtime::{candidates, open_records, records_path, to_read};

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// What a folder must be, and whether to make it so.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// How many of the path's last components are folders of ours.
    pub own: usize,
    /// Whether a folder of ours may be reached through a link (of ours or root's).
    pub links: bool,
    /// Permission bits a folder of ours must not have.
    pub forbidden: u32,
    /// Create missing folders (0700) and take the forbidden bits away; else only check.
    pub fix: bool,
}

/// A lock folder: ours, writable by us alone, maybe reached through a link of ours.
pub const LOCK_FIX: Rules = Rules { own: 1, links: true, forbidden: 0o022, fix: true };
pub const LOCK_CHECK: Rules = Rules { fix: false, ..LOCK_FIX };

/// Why a folder cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It does not exist (only when not fixing).
    Missing(String),
    /// A folder of ours others may write to (only when not fixing): the message says the fix.
    Mode(String),
    Refused(String),
}

impl Problem {
    pub fn message(&self) -> &str {
        match self {
            Problem::Missing(m) | Problem::Mode(m) | Problem::Refused(m) => m,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// A folder opened and checked; what is in it is reached through its handle only.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
    /// Folders of ours made private on the way, with the mode each had.
    pub fixed: Vec<(PathBuf, u32)>,
}

/// The largest file read (records and lockfiles are a few hundred bytes).
pub const MAX_READ: u64 = 1 << 20;

/// Opens `path` by the rules (see the module's doc).
pub fn open(path: &Path, rules: Rules) -> Result<Folder, Problem> {
    let (fd, fixed) = walk::walk(path, rules)?;
    Ok(Folder { fd, path: path.to_owned(), fixed })
}

/// Our effective uid, which files get and which we compare owners with.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

impl Folder {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names in it (not `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        // fdopendir takes the descriptor it is given: a copy of ours, read from its start.
        // SAFETY: fcntl on a descriptor we own; the copy is handed to fdopendir, which owns it
        // from then on (closedir closes it), or closed here when fdopendir fails.
        unsafe {
            let copy = at::check(libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0))?;
            let dir = libc::fdopendir(copy);
            if dir.is_null() {
                let e = io::Error::last_os_error();
                libc::close(copy);
                return Err(e);
            }
            libc::rewinddir(dir);
            let mut names = Vec::new();
            loop {
                let entry = libc::readdir(dir);
                if entry.is_null() {
                    break;
                }
                let name = CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes();
                if name != b"." && name != b".." {
                    names.push(OsString::from_vec(name.to_vec()));
                }
            }
            libc::closedir(dir);
            Ok(names)
        }
    }

    /// Opens `name` in it to read or to write over: never through a link, never anything but
    /// a regular file of ours.
    fn open_file(&self, name: &OsStr, write: bool) -> io::Result<File> {
        let c = at::os_name(name)?;
        let file = if write { at::open_to_rewrite(&self.fd, &c)? } else { at::open_file(&self.fd, &c)? };
        let meta = file.metadata()?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.uid() != euid() {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "not a regular file of ours"));
        }
        Ok(file)
    }

    /// The contents of `name` (at most [`MAX_READ`] bytes).
    pub fn read(&self, name: &OsStr) -> io::Result<Vec<u8>> {
        let file = self.open_file(name, false)?;
        let mut body = Vec::new();
        file.take(MAX_READ + 1).read_to_end(&mut body)?;
        if body.len() as u64 > MAX_READ {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "larger than a lockfile is"));
        }
        Ok(body)
    }

    /// `name`'s permission bits, read through a handle on it (it must be a file of ours).
    pub fn mode(&self, name: &OsStr) -> io::Result<u32> {
        use std::os::unix::fs::PermissionsExt;
        Ok(self.open_file(name, false)?.metadata()?.permissions().mode() & 0o7777)
    }

    /// Writes `name` whole: a new temp file (O_EXCL, never a link, 0600), then renamed over it,
    /// so a reader never sees half of it. No fsync: readers need the rename only.
    pub fn write(&self, name: &OsStr, body: &[u8]) -> io::Result<()> {
        let (tmp, mut file) = self.new_temp(name)?;
        let written = file.write_all(body).and_then(|()| at::rename(&self.fd, &at::os_name(&tmp)?, &at::os_name(name)?));
        if written.is_err() {
            let _ = self.remove(&tmp);
        }
        written
    }

    /// A new temp file beside `name`, of a name no one had.
    fn new_temp(&self, name: &OsStr) -> io::Result<(OsString, File)> {
        for attempt in 0u32..100 {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let mut tmp = OsString::from(".");
            tmp.push(name);
            tmp.push(format!(".{}.{nanos}.{attempt}.tmp", std::process::id()));
            match at::create_new(&self.fd, &at::os_name(&tmp)?, 0o600) {
                Ok(file) => return Ok((tmp, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free name for a temp file"))
    }

    /// Rewrites `name` in place (same file, same inode): for a reader that watches the file
    /// and takes a rename for the writer going away. NotFound when it is gone.
    pub fn rewrite(&self, name: &OsStr, body: &[u8]) -> io::Result<()> {
        let mut file = self.open_file(name, true)?;
        file.set_len(0)?;
        file.write_all(body)
    }

    /// Removes `name` (a link itself, never what it points to).
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        at::unlink(&self.fd, &at::os_name(name)?, false)
    }

    /// Removes the folder `name` in it, if it is empty.
    pub fn remove_empty_folder(&self, name: &OsStr) -> io::Result<()> {
        at::unlink(&self.fd, &at::os_name(name)?, true)
    }
}

#[cfg(test)]
mod tests;
