use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use super::*;
use super::runtime::RUNTIME_FIX;

/// An empty folder of this test's (0755, in the system's temp folder).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pi-ide-safe-dir-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn refused(r: Result<Folder, Problem>) -> String {
    match r {
        Err(Problem::Refused(m) | Problem::Mode(m)) => m,
        other => panic!("not refused: {other:?}"),
    }
}

fn root() -> bool {
    euid() == 0
}

#[test]
fn missing_folders_are_made_private_and_files_go_through_the_handle() {
    let d = scratch("make");
    let lock = d.join("a/b/ide");
    assert!(matches!(open(&lock, LOCK_CHECK), Err(Problem::Missing(_))));
    let f = open(&lock, LOCK_FIX).unwrap();
    assert_eq!((mode(&d.join("a")), mode(&lock)), (0o700, 0o700));
    f.write(OsStr::new("1.lock"), b"one").unwrap();
    assert_eq!(mode(&lock.join("1.lock")), 0o600);
    assert_eq!(f.read(OsStr::new("1.lock")).unwrap(), b"one");
    assert_eq!(f.mode(OsStr::new("1.lock")).unwrap(), 0o600);
    // Rewritten in place: the same file.
    use std::os::unix::fs::MetadataExt;
    let inode = fs::metadata(lock.join("1.lock")).unwrap().ino();
    f.rewrite(OsStr::new("1.lock"), b"two").unwrap();
    assert_eq!((fs::read(lock.join("1.lock")).unwrap(), fs::metadata(lock.join("1.lock")).unwrap().ino()), (b"two".to_vec(), inode));
    f.write(OsStr::new("1.lock"), b"three").unwrap();
    assert_eq!(f.names().unwrap(), vec![OsStr::new("1.lock").to_owned()], "no temp file left");
    assert_eq!(f.names().unwrap().len(), 1, "listed again from its start");
    f.remove(OsStr::new("1.lock")).unwrap();
    assert!(f.names().unwrap().is_empty());
    assert_eq!(f.rewrite(OsStr::new("1.lock"), b"x").unwrap_err().kind(), std::io::ErrorKind::NotFound);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_folder_of_ours_others_may_write_to_is_fixed_or_refused_with_the_fix() {
    let d = scratch("modes");
    let lock = d.join("ide");
    fs::create_dir(&lock).unwrap();
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o777)).unwrap();
    let e = refused(open(&lock, LOCK_CHECK));
    assert!(e.contains("writable by group or others (mode 777)") && e.contains("chmod go-w"), "{e}");
    let f = open(&lock, LOCK_FIX).unwrap();
    assert_eq!(f.fixed, vec![(lock.clone(), 0o777)]);
    assert_eq!(mode(&lock), 0o755);
    // A runtime folder: 0700, nothing less.
    let run = d.join("run");
    fs::create_dir_all(run.join("pi-ide/mcp")).unwrap();
    let e = refused(open(&run.join("pi-ide/mcp"), Rules { fix: false, ..RUNTIME_FIX }));
    assert!(e.contains("open to group or others") && e.contains("chmod go-rwx"), "{e}");
    open(&run.join("pi-ide/mcp"), RUNTIME_FIX).unwrap();
    assert_eq!((mode(&run.join("pi-ide")), mode(&run.join("pi-ide/mcp"))), (0o700, 0o700));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn links_of_ours_are_followed_where_allowed_and_never_for_a_runtime_folder() {
    let d = scratch("links");
    let dotfiles = d.join("dotfiles/agent");
    fs::create_dir_all(dotfiles.join("ide")).unwrap();
    // ~/.agent -> dotfiles/agent (relative, through ..): an ancestor and a lock folder.
    fs::create_dir(d.join("home")).unwrap();
    symlink("../dotfiles/agent", d.join("home/.agent")).unwrap();
    let f = open(&d.join("home/.agent/ide"), LOCK_FIX).unwrap();
    f.write(OsStr::new("x.lock"), b"x").unwrap();
    assert!(dotfiles.join("ide/x.lock").exists());
    symlink(dotfiles.join("ide"), d.join("ide-link")).unwrap();
    assert!(open(&d.join("ide-link"), LOCK_FIX).is_ok());
    // A runtime folder of ours is never a link.
    fs::create_dir_all(d.join("run/pi-ide")).unwrap();
    fs::set_permissions(d.join("run/pi-ide"), fs::Permissions::from_mode(0o700)).unwrap();
    symlink(dotfiles.join("ide"), d.join("run/pi-ide/mcp")).unwrap();
    let e = refused(open(&d.join("run/pi-ide/mcp"), RUNTIME_FIX));
    assert!(e.contains("run/pi-ide/mcp is a symbolic link"), "{e}");
    // A link to / cannot stand for a folder of ours; a loop ends.
    symlink("/", d.join("slash")).unwrap();
    assert!(refused(open(&d.join("slash"), LOCK_FIX)).contains("points at /"));
    symlink("loop", d.join("loop")).unwrap();
    assert!(refused(open(&d.join("loop/x"), LOCK_FIX)).contains("too many symbolic links"));
    // A file where a folder should be.
    fs::write(d.join("file"), "").unwrap();
    assert!(refused(open(&d.join("file/ide"), LOCK_FIX)).contains("is not a folder"));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_link_planted_where_a_file_goes_is_never_followed() {
    let d = scratch("files");
    let f = open(&d.join("ide"), LOCK_FIX).unwrap();
    let victim = d.join("victim");
    fs::write(&victim, "mine").unwrap();
    symlink(&victim, d.join("ide/1.lock")).unwrap();
    assert!(f.read(OsStr::new("1.lock")).is_err());
    assert!(f.rewrite(OsStr::new("1.lock"), b"token").is_err());
    // Written over, the link itself is replaced.
    f.write(OsStr::new("1.lock"), b"token").unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
    assert!(!fs::symlink_metadata(d.join("ide/1.lock")).unwrap().file_type().is_symlink());
    // A FIFO is not waited on.
    let fifo = std::ffi::CString::new(d.join("ide/2.lock").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(f.read(OsStr::new("2.lock")).is_err());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn another_users_folders_links_and_files_are_refused() {
    if !root() {
        eprintln!("skipped: only root can make files of another user here");
        return;
    }
    use std::os::unix::fs::{chown, lchown};
    let nobody = Some(65534);
    let d = scratch("theirs");
    // Their folder on the way.
    fs::create_dir_all(d.join("theirs/ide")).unwrap();
    chown(d.join("theirs"), nobody, nobody).unwrap();
    let e = refused(open(&d.join("theirs/ide"), LOCK_FIX));
    assert!(e.contains("theirs belongs to another user (uid 65534)"), "{e}");
    // Their folder as ours.
    fs::create_dir(d.join("ide")).unwrap();
    chown(d.join("ide"), nobody, nobody).unwrap();
    assert!(refused(open(&d.join("ide"), LOCK_FIX)).contains("ide belongs to another user (uid 65534)"));
    // Their link in a shared sticky folder, even to a folder of ours.
    let shared = d.join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::create_dir(d.join("mine")).unwrap();
    symlink(d.join("mine"), shared.join("link")).unwrap();
    lchown(shared.join("link"), nobody, nobody).unwrap();
    let e = refused(open(&shared.join("link"), LOCK_FIX));
    assert!(e.contains("is a symbolic link of another user (uid 65534)"), "{e}");
    // A sticky shared folder on the way is fine; one without the sticky bit is not.
    assert!(open(&shared.join("ours"), LOCK_FIX).is_ok());
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(refused(open(&shared.join("ours"), LOCK_FIX)).contains("is writable by anyone (mode 777)"));
    // Their file in a folder of ours is not read.
    let f = open(&d.join("mine"), LOCK_FIX).unwrap();
    fs::write(d.join("mine/1.lock"), "theirs").unwrap();
    chown(d.join("mine/1.lock"), nobody, nobody).unwrap();
    assert!(f.read(OsStr::new("1.lock")).is_err());
    fs::remove_dir_all(&d).unwrap();
}

