//! pi-ide's lockfile, which lets an agent find this editor: `<lock dir>/<port>.lock`, mode
//! 0600, written whole (temp file + rename) so a reader never sees half of it. An agent with a
//! lockfile of its own format writes it in its module (src/agents/) by support/discovery.rs, in a
//! folder opened as here ([`PLACE`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::support::discovery::{self, Place};
use crate::support::safe_dir::{self, Folder, Problem};

/// Exactly the fields of the protocol, in its spelling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockInfo {
    pub pid: u32,
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    pub transport: String,
    pub auth_token: String,
}

/// `$PI_IDE_LOCK_DIR`, or `~/.pi/ide` when it is unset or empty (as the Pi extension reads it).
pub fn lock_dir() -> Result<PathBuf, String> {
    match std::env::var_os("PI_IDE_LOCK_DIR") {
        Some(d) if !d.is_empty() => Ok(PathBuf::from(d)),
        _ => match std::env::var_os("HOME") {
            Some(h) if !h.is_empty() => Ok(Path::new(&h).join(".pi").join("ide")),
            _ => {
                Err("neither PI_IDE_LOCK_DIR nor HOME is set: nowhere to write the lockfile".into())
            }
        },
    }
}

/// An agent's lock folder: `$<var>/ide`, or `~/<in_home>/ide` when the variable is unset or
/// empty. `what` names the file for the error.
pub fn agent_dir(var: &str, in_home: &str, what: &str) -> Result<PathBuf, String> {
    match std::env::var_os(var) {
        Some(d) if !d.is_empty() => Ok(PathBuf::from(d).join("ide")),
        _ => match std::env::var_os("HOME") {
            Some(h) if !h.is_empty() => Ok(Path::new(&h).join(in_home).join("ide")),
            _ => Err(format!("neither {var} nor HOME is set: nowhere to write {what}")),
        },
    }
}

pub fn path_for(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("{port}.lock"))
}

/// Opens our lock folder `dir`, made when missing, by the rules of support/safe_dir/: every
/// folder on the way ours or root's, no link of another user's, the folder itself ours. One of
/// ours that group or others can write to (a umask of 002 makes them so) loses that write
/// permission, through its handle, and the log says so.
pub fn open_dir(dir: &Path) -> Result<Folder, String> {
    let folder = safe_dir::open(dir, safe_dir::LOCK_FIX).map_err(|p| refusal(dir, &p))?;
    for (path, was) in &folder.fixed {
        crate::info!("made the lock folder {} private (it was mode {was:o}; group and others may no longer write there)", path.display());
    }
    Ok(folder)
}

/// Why `dir` is no place for our token, checked without changing anything: a folder on the
/// way or the folder itself of another user, a link of another user's, or a folder others may
/// write to (anyone who can write there can plant a lockfile that sends the agent elsewhere,
/// or swap ours). None when it is private enough, or not there.
pub fn check_dir(dir: &Path) -> Option<String> {
    match safe_dir::open(dir, safe_dir::LOCK_CHECK) {
        Ok(_) | Err(Problem::Missing(_)) => None,
        Err(p) => Some(refusal(dir, &p)),
    }
}

fn refusal(dir: &Path, problem: &Problem) -> String {
    match problem {
        Problem::Refused(_) => format!(
            "the lock folder {} is refused: {problem}; the token must stay private: point the variable that names it to a folder of your own",
            dir.display()
        ),
        Problem::Mode(_) | Problem::Missing(_) => format!("the lock folder {}: {problem}", dir.display()),
    }
}

/// The folder holding `path` (only checked) and the file's name in it.
fn in_folder(path: &Path) -> Result<(Folder, &OsStr), String> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{} names no file", path.display()));
    };
    let folder = safe_dir::open(dir, safe_dir::LOCK_CHECK).map_err(|p| p.to_string())?;
    Ok((folder, name))
}

/// An agent's lockfile in a folder of ours ([`open_dir`]), for support/discovery.rs.
pub const PLACE: Place = Place {
    open: open_dir,
    look: |dir| safe_dir::open(dir, safe_dir::LOCK_CHECK).map_err(|p| p.to_string()),
    noun: "lockfile",
    not_one: "not a lockfile",
};

/// Writes the lockfile atomically, creating the folder (0700) when it is missing (see
/// [`open_dir`]); the temp file is new (O_EXCL) and never a link (O_NOFOLLOW), 0600.
/// No fsync: the rename is what readers need, and after a crash the pid is dead anyway.
pub fn write(dir: &Path, port: u16, info: &LockInfo) -> Result<PathBuf, String> {
    let body = serde_json::to_vec(info).map_err(|e| e.to_string())?;
    write_named(dir, &format!("{port}.lock"), &body)
}

/// Writes `dir/name` atomically (see [`write`]).
fn write_named(dir: &Path, name: &str, body: &[u8]) -> Result<PathBuf, String> {
    let path = dir.join(name);
    open_dir(dir)?.write(OsStr::new(name), body).map_err(|e| format!("cannot write lockfile {}: {e}", path.display()))?;
    Ok(path)
}

/// Whether the lockfile at `path` is there, private, and says what `expected` says (for
/// :checkhealth).
pub fn check(path: &Path, expected: &LockInfo) -> Result<(), String> {
    let (folder, name) = in_folder(path)?;
    let on_disk: LockInfo = discovery::read_private(&folder, name, PLACE.not_one)?;
    if &on_disk != expected {
        return Err("it does not match this server (token, pid or folders differ)".into());
    }
    Ok(())
}

/// Removes our lockfile, but only if it still holds our token (another editor may have taken
/// the port number since, and its lockfile is not ours to delete).
pub fn remove(path: &Path, token: &str) {
    remove_if(path, |text| serde_json::from_slice::<LockInfo>(text).map_or(true, |info| info.auth_token == token));
}

/// Removes the file at `path` when `still_ours(its contents)` says so; read and removed
/// through its folder's handle (a link there is removed itself, never followed).
fn remove_if(path: &Path, still_ours: impl Fn(&[u8]) -> bool) {
    let Ok((folder, name)) = in_folder(path) else { return };
    if folder.read(name).is_ok_and(|text| still_ours(&text)) {
        let _ = folder.remove(name);
    }
}

/// Whether `pid` may be alive: only "no such process" (ESRCH) is dead, so that a live editor
/// of ours is never taken for dead (a sweep deletes what a dead one left).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes lockfiles left by editors like us that died without cleaning up: the pid is dead and
/// `is_ours(ideName)` says it was one of ours. Live editors' and other programs' files stay.
pub fn remove_stale(dir: &Path, is_ours: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    remove_stale_by(dir, |text| {
        let info = serde_json::from_slice::<LockInfo>(text).ok()?;
        Some((info.ide_name, info.pid))
    }, is_ours)
}

/// [`remove_stale`] for lockfiles read by `read` as (ideName, pid).
pub fn remove_stale_by(
    dir: &Path,
    read: impl Fn(&[u8]) -> Option<(String, u32)>,
    is_ours: impl Fn(&str) -> bool,
) -> Vec<PathBuf> {
    match safe_dir::open(dir, safe_dir::LOCK_CHECK) {
        Ok(folder) => remove_stale_in(&folder, read, is_ours),
        Err(_) => Vec::new(),
    }
}

/// [`remove_stale_by`] in a folder already opened.
pub fn remove_stale_in(
    folder: &Folder,
    read: impl Fn(&[u8]) -> Option<(String, u32)>,
    is_ours: impl Fn(&str) -> bool,
) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for name in folder.names().unwrap_or_default() {
        if Path::new(&name).extension().and_then(|e| e.to_str()) != Some("lock") {
            continue;
        }
        let Ok(text) = folder.read(&name) else { continue };
        let Some((ide, pid)) = read(&text) else {
            continue;
        };
        if is_ours(&ide) && !pid_alive(pid) && folder.remove(&name).is_ok() {
            removed.push(folder.path().join(&name));
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("pi-ide-lock-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn info(pid: u32, name: &str, token: &str) -> LockInfo {
        LockInfo {
            pid,
            workspace_folders: vec!["/tmp/w".into()],
            ide_name: name.into(),
            transport: "ws".into(),
            auth_token: token.into(),
        }
    }

    #[test]
    fn writes_exact_fields_with_private_modes() {
        let dir = tmpdir("fields").join("nested");
        let p = write(&dir, 4242, &info(7, "Neovim", "tok")).unwrap();
        assert_eq!(p, dir.join("4242.lock"));
        let v: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"pid":7,"workspaceFolders":["/tmp/w"],"ideName":"Neovim","transport":"ws","authToken":"tok"})
        );
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // No temp file is left behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        // Rewriting replaces it whole.
        write(&dir, 4242, &info(7, "Neovim", "tok2")).unwrap();
        remove(&p, "tok");
        assert!(
            p.exists(),
            "a lockfile with another token is not ours to remove"
        );
        remove(&p, "tok2");
        assert!(!p.exists());
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn stale_cleanup_touches_only_dead_editors_of_ours() {
        let dir = tmpdir("stale");
        let dead = 0x7fff_fff0; // above pid_max: never a live process
        let me = std::process::id();
        write(&dir, 1, &info(dead, "Neovim (pts/1)", "a")).unwrap();
        write(&dir, 2, &info(me, "Neovim", "b")).unwrap();
        write(&dir, 3, &info(dead, "VS Code", "c")).unwrap();
        fs::write(dir.join("4.lock"), "not json").unwrap();
        let removed = remove_stale(&dir, |n| n.starts_with("Neovim"));
        assert_eq!(removed, vec![dir.join("1.lock")]);
        assert!(
            dir.join("2.lock").exists()
                && dir.join("3.lock").exists()
                && dir.join("4.lock").exists()
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_shared_lock_folder_is_refused_and_a_planted_link_is_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmpdir("shared");
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir(&dir).unwrap();
        assert!(e.contains("writable by group or others") && e.contains("chmod go-w"), "{e}");
        // Ours: made private before anything is written there.
        write(&dir, 1, &info(7, "Neovim", "tok")).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o755);
        assert!(check_dir(&dir).is_none(), "others may read a folder, not write to it");
        fs::remove_file(dir.join("1.lock")).unwrap();
        assert!(check_dir(Path::new("/")).is_some() || unsafe { libc::geteuid() } == 0);
        // A link planted where the lockfile goes is replaced, never followed; nor is one read.
        let victim = dir.join("victim");
        fs::write(&victim, "mine").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("2.lock")).unwrap();
        assert!(check(&dir.join("2.lock"), &info(7, "Neovim", "tok")).is_err());
        write(&dir, 2, &info(7, "Neovim", "tok")).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
        assert!(check(&dir.join("2.lock"), &info(7, "Neovim", "tok")).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0x7fff_fff0));
        assert!(!pid_alive(0));
    }
}
