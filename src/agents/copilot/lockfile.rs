//! The Copilot CLI's lockfile (its IDE bridge: mod.rs): `${COPILOT_HOME:-~/.copilot}/ide/<uuid>.lock`,
//! mode 0600, naming our Unix socket and the header the CLI must send. The CLI connects on its
//! own when one of `workspaceFolders` is exactly its cwd.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agents::{KeptLockfile, OwnLockfile};
use crate::protocol::lockfile::LockInfo;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CopilotLock {
    pub socket_path: String,
    pub scheme: String,
    pub headers: Map<String, Value>,
    pub pid: u32,
    /// When it was written, in ms since the epoch.
    pub timestamp: u64,
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    /// Skips the CLI's "do you trust this folder?": only when the user said so in setup().
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_trusted: Option<bool>,
}

impl CopilotLock {
    pub fn new(socket: &Path, token: &str, folders: Vec<String>, ide_name: &str, trusted: bool) -> Self {
        let mut headers = Map::new();
        headers.insert("Authorization".into(), Value::String(format!("Nonce {token}")));
        CopilotLock {
            socket_path: socket.to_string_lossy().into_owned(),
            scheme: "unix".into(),
            headers,
            pid: std::process::id(),
            timestamp: now_ms(),
            workspace_folders: folders,
            ide_name: ide_name.to_owned(),
            is_trusted: trusted.then_some(true),
        }
    }

    fn holds_token(&self, token: &str) -> bool {
        let want = format!("Nonce {token}");
        self.headers.get("Authorization").and_then(Value::as_str) == Some(want.as_str())
    }
}

pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

/// `$COPILOT_HOME/ide`, or `~/.copilot/ide`.
pub fn dir() -> Result<PathBuf, String> {
    crate::protocol::lockfile::agent_dir("COPILOT_HOME", ".copilot", "the Copilot CLI's lockfile")
}

/// Writes (or rewrites) our lockfile at `path` in `dir`, atomically, 0600.
pub fn write(dir: &Path, path: &Path, lock: &CopilotLock) -> Result<PathBuf, String> {
    let name = path.file_name().and_then(|n| n.to_str()).ok_or("bad lockfile name")?;
    let body = serde_json::to_vec(lock).map_err(|e| e.to_string())?;
    crate::protocol::lockfile::write_named(dir, name, &body)
}

/// Rewrites our lockfile in place (new workspace folders): the CLI watches the lockfile it
/// connected through, and a rename over it reads as the editor going away (it disconnects
/// and reconnects, dropping a pending review). The file is opened through its folder's handle,
/// without following a link, and must be a regular file of ours; when it is gone, it is
/// written anew.
pub fn rewrite(dir: &Path, path: &Path, lock: &CopilotLock) -> Result<PathBuf, String> {
    let name = path.file_name().ok_or("bad lockfile name")?;
    let body = serde_json::to_vec(lock).map_err(|e| e.to_string())?;
    match crate::protocol::lockfile::open_dir(dir)?.rewrite(name, &body) {
        Ok(()) => Ok(path.to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write(dir, path, lock),
        Err(e) => Err(format!("cannot rewrite {}: {e}", path.display())),
    }
}

/// A new name for our lockfile in `dir`.
pub fn new_path(dir: &Path) -> PathBuf {
    dir.join(format!("{}.lock", uuid::Uuid::new_v4()))
}

/// Removes our lockfile, if it still holds our token.
pub fn remove(path: &Path, token: &str) {
    let holds = |text: &[u8]| serde_json::from_slice::<CopilotLock>(text).is_ok_and(|l| l.holds_token(token));
    crate::protocol::lockfile::remove_if(path, holds);
}

/// Removes lockfiles of editors like us (by `is_ours(ideName)`) whose process is gone.
pub fn remove_stale(dir: &Path, is_ours: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    crate::protocol::lockfile::remove_stale_by(
        dir,
        |text| {
            let l = serde_json::from_slice::<CopilotLock>(text).ok()?;
            Some((l.ide_name, l.pid))
        },
        is_ours,
    )
}

/// Whether the lockfile at `path` is there, private and ours as `lock` says (for :checkhealth).
pub fn check(path: &Path, lock: &CopilotLock) -> Result<(), String> {
    let (folder, name) = crate::protocol::lockfile::in_folder(path)?;
    let mode = folder.mode(name).map_err(|e| format!("missing: {e}"))? & 0o777;
    if mode != 0o600 {
        return Err(format!("mode is {mode:o}, not 600"));
    }
    let text = folder.read(name).map_err(|e| format!("unreadable: {e}"))?;
    let on_disk: CopilotLock =
        serde_json::from_slice(&text).map_err(|e| format!("not a lockfile: {e}"))?;
    if on_disk.socket_path != lock.socket_path || on_disk.headers != lock.headers {
        return Err("it does not match this server (socket or token differ)".into());
    }
    Ok(())
}

/// The Copilot CLI's lockfile as an agent's own ([`OwnLockfile`]).
pub struct Lockfile;

/// Ours as written: where, and what it says (kept to rewrite it in place).
struct Kept {
    dir: PathBuf,
    path: PathBuf,
    lock: CopilotLock,
}

impl OwnLockfile for Lockfile {
    /// `options.trust_workspace`: write `isTrusted` (the user said the folders are trusted).
    fn write(&self, socket: &Path, lock: &LockInfo, options: &Value) -> Result<Box<dyn KeptLockfile>, String> {
        let trusted = options.get("trust_workspace").and_then(Value::as_bool).unwrap_or(false);
        let folders = lock.workspace_folders.clone();
        let ours = CopilotLock::new(socket, &lock.auth_token, folders, &lock.ide_name, trusted);
        let dir = dir()?;
        let path = write(&dir, &new_path(&dir), &ours)?;
        Ok(Box::new(Kept { dir, path, lock: ours }))
    }

    fn sweep(&self, is_ours: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
        dir().map(|d| remove_stale(&d, is_ours)).unwrap_or_default()
    }
}

impl KeptLockfile for Kept {
    fn path(&self) -> &Path {
        &self.path
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn set_folders(&mut self, folders: &[String]) -> Result<(), String> {
        self.lock.workspace_folders = folders.to_vec();
        self.lock.timestamp = now_ms();
        rewrite(&self.dir, &self.path, &self.lock).map(|_| ())
    }

    fn check(&self) -> Result<(), String> {
        check(&self.path, &self.lock)
    }

    fn remove(&self, token: &str) {
        remove(&self.path, token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_the_clis_spelling_and_trust_only_when_asked() {
        let l = CopilotLock::new(Path::new("/run/s.sock"), "tok", vec!["/w".into()], "Neovim", false);
        let v: Value = serde_json::to_value(&l).unwrap();
        assert_eq!(v["socketPath"], "/run/s.sock");
        assert_eq!(v["scheme"], "unix");
        assert_eq!(v["headers"]["Authorization"], "Nonce tok");
        assert_eq!(v["workspaceFolders"][0], "/w");
        assert_eq!(v["ideName"], "Neovim");
        assert!(v.get("isTrusted").is_none(), "never trusted unless the user says so");
        assert!(v["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
        let t = CopilotLock::new(Path::new("/s"), "tok", vec![], "Neovim", true);
        assert_eq!(serde_json::to_value(&t).unwrap()["isTrusted"], true);
    }

    #[test]
    fn written_private_removed_only_with_our_token_and_stale_ones_swept() {
        let dir = std::env::temp_dir().join(format!("pi-ide-copilot-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let l = CopilotLock::new(Path::new("/s"), "tok", vec![], "Neovim", false);
        let p = write(&dir, &new_path(&dir), &l).unwrap();
        assert!(check(&p, &l).is_ok());
        // New folders go into the same file (the CLI takes a rename for the editor leaving).
        use std::os::unix::fs::MetadataExt;
        let inode = std::fs::metadata(&p).unwrap().ino();
        let mut moved = l.clone();
        moved.workspace_folders = vec!["/a".into(), "/b".into()];
        rewrite(&dir, &p, &moved).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().ino(), inode);
        assert!(check(&p, &moved).is_ok());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(r#""workspaceFolders":["/a","/b"]"#), "{text}");
        // A link planted in its place is not followed.
        let victim = dir.join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let link = dir.join("link.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(rewrite(&dir, &link, &moved).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        remove(&p, "other");
        assert!(p.exists(), "not ours to remove");
        remove(&p, "tok");
        assert!(!p.exists());
        let mut dead = l.clone();
        dead.pid = 999_999_999;
        let stale = write(&dir, &new_path(&dir), &dead).unwrap();
        let live = write(&dir, &new_path(&dir), &l).unwrap();
        assert_eq!(remove_stale(&dir, |n| n.starts_with("Neovim")), vec![stale]);
        assert!(live.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
