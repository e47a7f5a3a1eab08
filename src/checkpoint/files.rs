//! Files in a folder someone else may have booby-trapped (an agent's shell, a repository someone
//! wrote). A read opens no FIFO or device (it would hang the checkpoint). A write under the
//! workspace follows no symbolic link on the way: each folder is opened from the one before with
//! O_NOFOLLOW, the missing ones are made only once every existing one was checked, and the file is
//! written to a temporary name created with O_EXCL|O_NOFOLLOW, then renamed into place.

use std::ffi::CString;
use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::at;

/// Opens `path` for reading if it is a regular file (following a symlink to one).
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((f, meta))
}

/// At most `max` bytes of `path`, a regular file.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let (f, _) = open_regular(path)?;
    let mut out = Vec::new();
    f.take(max).read_to_end(&mut out)?;
    Ok(out)
}

/// The folder holding a name under the workspace, opened without following a symlink, and the
/// name's last part.
pub struct Parent {
    dir: OwnedFd,
    leaf: CString,
}

fn c(bytes: &[u8]) -> Result<CString, String> {
    at::name(bytes).map_err(|e| e.to_string())
}

/// lstat of `part` in `dir`, when there is one.
fn stat_at(dir: &OwnedFd, part: &CString) -> Option<libc::stat> {
    at::lstat(dir, part).ok().flatten()
}

fn is(st: &libc::stat, kind: u32) -> bool {
    at::kind(st) == kind
}

/// Why folder `shown` (a prefix of the name) could not be opened.
fn refused(dir: &OwnedFd, part: &CString, shown: &[u8], e: io::Error) -> String {
    let shown = String::from_utf8_lossy(shown);
    match stat_at(dir, part) {
        Some(st) if is(&st, at::LINK) => format!("{shown} is a symbolic link now: not followed"),
        Some(st) if !is(&st, at::FOLDER) => format!("{shown} is not a folder now"),
        _ => format!("{shown}: {e}"),
    }
}

/// The parts of `name`, which must be a plain relative name (no `.`, `..`, empty part or NUL).
fn parts(name: &[u8]) -> Result<Vec<&[u8]>, String> {
    let parts: Vec<&[u8]> = name.split(|b| *b == b'/').collect();
    let bad = |p: &&[u8]| p.is_empty() || *p == b"." || *p == b".." || p.contains(&0);
    if parts.iter().any(bad) {
        return Err("not a name inside the workspace".into());
    }
    Ok(parts)
}

/// Opens the folder holding `name` under `root` (a real path), each part from the one before
/// without following a symlink: one that is a symlink now is refused by name, wherever it
/// leads. `create`: the missing folders are made, after every existing one was opened.
/// `Ok(None)`: a folder is missing, and `create` is false.
pub fn parent(root: &Path, name: &[u8], create: bool) -> Result<Option<Parent>, String> {
    let parts = parts(name)?;
    let (leaf, folders) = parts.split_last().ok_or("an empty name")?;
    let root_dir = File::open(root).map_err(|e| format!("the workspace {}: {e}", root.display()))?;
    let mut dir = OwnedFd::from(root_dir);
    let mut missing = None;
    for (i, part) in folders.iter().enumerate() {
        let cpart = c(part)?;
        match at::open_dir(Some(&dir), &cpart) {
            Ok(next) => dir = next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = Some(i);
                break;
            }
            Err(e) => return Err(refused(&dir, &cpart, &folders[..=i].join(&b'/'), e)),
        }
    }
    if let Some(from) = missing {
        if !create {
            return Ok(None);
        }
        for (i, part) in folders.iter().enumerate().skip(from) {
            let cpart = c(part)?;
            at::make_dir(&dir, &cpart, 0o777).map_err(|e| format!("could not create {}: {e}", String::from_utf8_lossy(&folders[..=i].join(&b'/'))))?;
            // Opened without following too: a symlink put there since is refused.
            dir = at::open_dir(Some(&dir), &cpart).map_err(|e| refused(&dir, &cpart, &folders[..=i].join(&b'/'), e))?;
        }
    }
    Ok(Some(Parent { dir, leaf: c(leaf)? }))
}

static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl Parent {
    /// A fresh temporary name in the folder, made by `make` (which must fail with EEXIST when
    /// the name is taken: O_EXCL, symlinkat); its name.
    fn temporary<T>(&self, mut make: impl FnMut(&CString) -> io::Result<T>) -> Result<(CString, T), String> {
        for _ in 0..100 {
            let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
            let name = c(format!(".pi-ide-undo-{}-{n}", std::process::id()).as_bytes())?;
            match make(&name) {
                Ok(t) => return Ok((name, t)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("could not create a temporary file: {e}")),
            }
        }
        Err("could not create a temporary file: every name tried is taken".into())
    }

    /// What is at the name now: refused when it is a folder (an empty one, left by the files
    /// an undo deleted, is removed); the permission bits of a file.
    fn current_mode(&self) -> Result<Option<u32>, String> {
        match stat_at(&self.dir, &self.leaf) {
            Some(st) if is(&st, at::FOLDER) => match at::unlink(&self.dir, &self.leaf, true) {
                Ok(()) => Ok(None),
                Err(_) => Err("it is a folder now".into()),
            },
            #[allow(clippy::unnecessary_cast)] // mode_t is u16 on macOS
            Some(st) if is(&st, at::FILE) => Ok(Some(st.st_mode as u32 & 0o777)),
            _ => Ok(None),
        }
    }

    /// Renames temporary `tmp` onto the name (a symlink there is replaced, not followed).
    fn put(&self, tmp: &CString) -> Result<(), String> {
        at::rename(&self.dir, tmp, &self.leaf).map_err(|e| {
            let _ = at::unlink(&self.dir, tmp, false);
            e.to_string()
        })
    }

    /// Writes `bytes` as the file, executable for whoever may read it when `exec`; the other
    /// permission bits are those of the file it replaces (0644 for a new one).
    pub fn write_file(&self, bytes: &[u8], exec: bool) -> Result<(), String> {
        let old = self.current_mode()?.unwrap_or(0o644);
        let bits = (old & !0o111) | if exec { (old & 0o444) >> 2 } else { 0 };
        let (tmp, mut file): (CString, File) = self.temporary(|name| at::create_new(&self.dir, name, 0o600))?;
        let written = file.write_all(bytes).and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(bits))?;
            file.sync_all()
        });
        if let Err(e) = written {
            let _ = at::unlink(&self.dir, &tmp, false);
            return Err(e.to_string());
        }
        self.put(&tmp)
    }

    /// Makes the name a symbolic link to `target`.
    pub fn write_symlink(&self, target: &[u8]) -> Result<(), String> {
        self.current_mode()?;
        let target = c(target)?;
        let (tmp, ()) = self.temporary(|name| at::symlink(&self.dir, &target, name))?;
        self.put(&tmp)
    }

    /// Removes the file (or symlink) at the name; nothing there is no error.
    pub fn remove(&self) -> Result<(), String> {
        match stat_at(&self.dir, &self.leaf) {
            None => return Ok(()),
            Some(st) if is(&st, at::FOLDER) => return Err("it is a folder now".into()),
            Some(_) => {}
        }
        at::unlink(&self.dir, &self.leaf, false).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_out_or_are_not_plain_are_refused() {
        for bad in [&b"../x"[..], b"/etc/passwd", b"a//b", b"a/./b", b"a/\0b", b"", b"a/"] {
            assert!(parts(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parts(b"a/b\xff").unwrap(), [&b"a"[..], b"b\xff"]);
    }

    #[test]
    fn a_fifo_is_not_read() {
        let d = crate::scratch_dir("files-fifo");
        let fifo = d.join("pipe");
        let path = CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert!(read_regular(&fifo, 10).is_err());
    }
}
