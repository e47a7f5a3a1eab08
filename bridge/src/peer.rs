//! Whose process serves a socket. A record may lead anywhere (another user may have planted
//! it, or a link to their folder): nothing is sent to a socket until the kernel says that the
//! process at its other end runs as this user (SO_PEERCRED on Linux, getpeereid elsewhere).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

use crate::find::Record;

/// Refuses the connection to `record`'s socket unless its peer is this user.
pub fn check(stream: &UnixStream, record: &Record) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match uid_of(stream) {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(format!(
            "refused the socket {}: another user's process (uid {uid}) serves it, not a Neovim of yours; nothing was sent to it. Its record {} was not written by your Neovim: remove it",
            record.socket_path,
            record.file.display()
        )),
        Err(e) => Err(format!("refused the socket {}: whose process serves it is unknown ({e}); nothing was sent to it", record.socket_path)),
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn uid_of(stream: &UnixStream) -> io::Result<u32> {
    // SAFETY: an all-zero ucred is a valid value for getsockopt to fill.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt on a socket we hold, into a ucred of the length given.
    let r = unsafe {
        libc::getsockopt(stream.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut cred).cast(), &mut len)
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn uid_of(stream: &UnixStream) -> io::Result<u32> {
    let (mut uid, mut gid) = (0, 0);
    // SAFETY: getpeereid on a socket we hold, into two ids.
    if unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_of_ours_is_ours() {
        let (a, _b) = UnixStream::pair().unwrap();
        // SAFETY: geteuid has no preconditions.
        assert_eq!(uid_of(&a).unwrap(), unsafe { libc::geteuid() });
        let record = Record { socket_path: "/s".into(), pid: 1, nvim: String::new(), workspace_folders: vec![], focused_at: 0, file: "/r".into() };
        assert!(check(&a, &record).is_ok());
    }
}
