//! Files reached through a folder already open (openat and its kin), never by a path walked
//! again: a link or a pipe an agent plants on the way cannot redirect them. Used where we write
//! into folders others may change under us (an accepted review's file, an undo) and by
//! safe_dir's walk to a private folder; the bridge compiles this file by path too. Nothing here
//! follows a link as a name's last part.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A name as the system takes it; one with a NUL byte cannot be a file's.
pub fn name(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte cannot be a file's"))
}

/// [`name`] of an OsStr.
pub fn os_name(name: &OsStr) -> io::Result<CString> {
    self::name(name.as_bytes())
}

/// A system call's result: its error when it returned less than 0.
pub fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Opens folder `name` in `at` (or an absolute path, with None) to read it, never through a
/// link.
pub fn open_dir(at: Option<&OwnedFd>, name: &CStr) -> io::Result<OwnedFd> {
    open_folder(at, name, libc::O_RDONLY)
}

/// Opens folder `name` in `at` only to go on from it: no read permission is needed (O_PATH on
/// Linux; elsewhere it is read), but it can neither be read nor have its mode changed.
pub fn pass_dir(at: Option<&OwnedFd>, name: &CStr) -> io::Result<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let how = libc::O_PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let how = libc::O_RDONLY;
    open_folder(at, name, how)
}

fn open_folder(at: Option<&OwnedFd>, name: &CStr, how: libc::c_int) -> io::Result<OwnedFd> {
    let dir = at.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    let flags = how | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid descriptor (or AT_FDCWD) and a NUL-terminated name.
    let fd = check(unsafe { libc::openat(dir, name.as_ptr(), flags) })?;
    // SAFETY: a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // O_PATH with O_NOFOLLOW may open a link itself: only a folder goes on.
    match kind(&stat(&fd)?) {
        FOLDER => Ok(fd),
        _ => Err(io::Error::from_raw_os_error(libc::ELOOP)),
    }
}

/// Makes folder `name` in `at` (`mode` less the umask); one that is there already is no error
/// (open it with [`open_dir`], which refuses a link, and check whose it is).
pub fn make_dir(at: &OwnedFd, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: a valid descriptor and a NUL-terminated name.
    match check(unsafe { libc::mkdirat(at.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) }) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        r => r.map(|_| ()),
    }
}

/// What `name` in `at` is (a link itself, not what it leads to); None when there is nothing.
pub fn lstat(at: &OwnedFd, name: &CStr) -> io::Result<Option<libc::stat>> {
    // SAFETY: stat is plain data, filled in by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, a NUL-terminated name and a stat buffer.
    match check(unsafe { libc::fstatat(at.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) }) {
        Ok(_) => Ok(Some(st)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What an open file or folder is, through its handle.
pub fn stat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data, filled in by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor we hold.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// Sets the permission bits of an open file or folder (one opened to read: not [`pass_dir`]'s).
pub fn chmod(fd: &OwnedFd, mode: u32) -> io::Result<()> {
    // SAFETY: fchmod on a descriptor we hold.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) }).map(|_| ())
}

/// Where link `name` in `at` points, as written in it.
pub fn read_link(at: &OwnedFd, name: &CStr) -> io::Result<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: readlinkat into a buffer of the length given.
    let n = unsafe { libc::readlinkat(at.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(PathBuf::from(OsStr::from_bytes(&buf)))
}

/// A mode's file type bits (mode_t is u32 on Linux, u16 on macOS).
#[allow(clippy::unnecessary_cast)]
pub fn kind(st: &libc::stat) -> u32 {
    (st.st_mode & libc::S_IFMT) as u32
}

#[allow(clippy::unnecessary_cast)]
pub const FILE: u32 = libc::S_IFREG as u32;
#[allow(clippy::unnecessary_cast)]
pub const FOLDER: u32 = libc::S_IFDIR as u32;
#[allow(clippy::unnecessary_cast)]
pub const LINK: u32 = libc::S_IFLNK as u32;

/// Creates file `name` in `at` for writing: it must not exist, and is never a link (O_EXCL,
/// O_NOFOLLOW). `mode`, less the umask.
pub fn create_new(at: &OwnedFd, name: &CStr, mode: u32) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid descriptor and a NUL-terminated name.
    let fd = check(unsafe { libc::openat(at.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) })?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Opens regular file `name` in `at` for reading, never through a link, never waiting on a
/// pipe (check what it is before reading).
pub fn open_file(at: &OwnedFd, name: &CStr) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: a valid descriptor and a NUL-terminated name.
    let fd = check(unsafe { libc::openat(at.as_raw_fd(), name.as_ptr(), flags) })?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Opens regular file `name` in `at` to write it over in place, as [`open_file`] opens one to
/// read (check what it is before writing).
pub fn open_to_rewrite(at: &OwnedFd, name: &CStr) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: a valid descriptor and a NUL-terminated name.
    let fd = check(unsafe { libc::openat(at.as_raw_fd(), name.as_ptr(), flags) })?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Makes `name` in `at` a symbolic link to `target` (failing when the name is taken).
pub fn symlink(at: &OwnedFd, target: &CStr, name: &CStr) -> io::Result<()> {
    // SAFETY: a valid descriptor and NUL-terminated names.
    check(unsafe { libc::symlinkat(target.as_ptr(), at.as_raw_fd(), name.as_ptr()) }).map(|_| ())
}

/// Renames `from` to `to`, both in `at` (what was at `to` is replaced, a link included, never
/// followed).
pub fn rename(at: &OwnedFd, from: &CStr, to: &CStr) -> io::Result<()> {
    let fd = at.as_raw_fd();
    // SAFETY: a valid descriptor and NUL-terminated names.
    check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) }).map(|_| ())
}

/// Gives file `from` in `at` the name `to` too, failing when `to` is taken (a rename that never
/// replaces).
pub fn link(at: &OwnedFd, from: &CStr, to: &CStr) -> io::Result<()> {
    let fd = at.as_raw_fd();
    // SAFETY: a valid descriptor and NUL-terminated names.
    check(unsafe { libc::linkat(fd, from.as_ptr(), fd, to.as_ptr(), 0) }).map(|_| ())
}

/// Removes `name` from `at` (a link itself; a folder, if empty, with `folder`).
pub fn unlink(at: &OwnedFd, name: &CStr, folder: bool) -> io::Result<()> {
    let flags = if folder { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: a valid descriptor and a NUL-terminated name.
    check(unsafe { libc::unlinkat(at.as_raw_fd(), name.as_ptr(), flags) }).map(|_| ())
}
