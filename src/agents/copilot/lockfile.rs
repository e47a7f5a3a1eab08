//! The Copilot CLI's lockfile (its IDE bridge: mod.rs): `${COPILOT_HOME:-~/.copilot}/ide/<uuid>.lock`,
//! mode 0600, naming our Unix socket and the header the CLI must send. The CLI connects on its
//! own when one of `workspaceFolders` is exactly its cwd.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agents::{KeptLockfile, OwnLockfile};
use crate::protocol::lockfile::{self, LockInfo};
use crate::support::discovery::Written;

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
    lockfile::agent_dir("COPILOT_HOME", ".copilot", "the Copilot CLI's lockfile")
}

/// Writes our lockfile at `path` in `dir`, atomically, 0600.
pub fn write(dir: &Path, path: &Path, lock: &CopilotLock) -> Result<Written<CopilotLock>, String> {
    Written::new(&lockfile::PLACE, dir.to_owned(), path.to_owned(), lock.clone())
}

/// A new name for our lockfile in `dir`.
pub fn new_path(dir: &Path) -> PathBuf {
    dir.join(format!("{}.lock", uuid::Uuid::new_v4()))
}

/// Removes lockfiles of editors like us (by `is_ours(ideName)`) whose process is gone.
pub fn remove_stale(dir: &Path, is_ours: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    lockfile::remove_stale_by(
        dir,
        |text| {
            let l = serde_json::from_slice::<CopilotLock>(text).ok()?;
            Some((l.ide_name, l.pid))
        },
        is_ours,
    )
}

/// The Copilot CLI's lockfile as an agent's own ([`OwnLockfile`]).
pub struct Lockfile;

impl OwnLockfile for Lockfile {
    /// `options.trust_workspace`: write `isTrusted` (the user said the folders are trusted).
    fn write(&self, socket: &Path, lock: &LockInfo, options: &Value) -> Result<Box<dyn KeptLockfile>, String> {
        let trusted = options.get("trust_workspace").and_then(Value::as_bool).unwrap_or(false);
        let folders = lock.workspace_folders.clone();
        let ours = CopilotLock::new(socket, &lock.auth_token, folders, &lock.ide_name, trusted);
        let dir = dir()?;
        Ok(Box::new(write(&dir, &new_path(&dir), &ours)?))
    }

    fn sweep(&self, is_ours: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
        dir().map(|d| remove_stale(&d, is_ours)).unwrap_or_default()
    }
}

impl KeptLockfile for Written<CopilotLock> {
    fn path(&self) -> &Path {
        &self.path
    }

    /// In place: the CLI watches the lockfile it connected through, and a rename over it reads
    /// as the editor going away (it disconnects and reconnects, dropping a pending review).
    fn set_folders(&mut self, folders: &[String]) -> Result<(), String> {
        self.body.workspace_folders = folders.to_vec();
        self.body.timestamp = now_ms();
        self.save_in_place()
    }

    /// Ours as long as it names our socket and token.
    fn check(&self) -> Result<(), String> {
        let on_disk = self.on_disk()?;
        if on_disk.socket_path != self.body.socket_path || on_disk.headers != self.body.headers {
            return Err("it does not match this server (socket or token differ)".into());
        }
        Ok(())
    }

    fn remove(&self, token: &str) {
        self.remove_if(|l| l.holds_token(token));
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
        let mut kept = write(&dir, &new_path(&dir), &l).unwrap();
        let p = kept.path.clone();
        assert!(kept.check().is_ok());
        // New folders go into the same file (the CLI takes a rename for the editor leaving).
        use std::os::unix::fs::MetadataExt;
        let inode = std::fs::metadata(&p).unwrap().ino();
        kept.set_folders(&["/a".into(), "/b".into()]).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().ino(), inode);
        assert!(kept.check().is_ok());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(r#""workspaceFolders":["/a","/b"]"#), "{text}");
        // A link planted in its place is not followed.
        let victim = dir.join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let link = dir.join("link.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let planted = Written { place: &lockfile::PLACE, dir: dir.clone(), path: link, body: kept.body.clone() };
        assert!(planted.save_in_place().is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        kept.remove("other");
        assert!(p.exists(), "not ours to remove");
        kept.remove("tok");
        assert!(!p.exists());
        let mut dead = l.clone();
        dead.pid = 999_999_999;
        let stale = write(&dir, &new_path(&dir), &dead).unwrap().path;
        let live = write(&dir, &new_path(&dir), &l).unwrap().path;
        assert_eq!(remove_stale(&dir, |n| n.starts_with("Neovim")), vec![stale]);
        assert!(live.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
