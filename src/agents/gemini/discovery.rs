//! Gemini CLI's discovery file (its IDE mode: mod.rs): `$TMPDIR/gemini/ide/gemini-ide-server-
//! <pid>-<port>.json`, mode 0600, naming our port and the token it must send. The CLI keeps the
//! files whose workspacePath holds its cwd and, among several, prefers the pid and port in
//! GEMINI_CLI_IDE_PID / GEMINI_CLI_IDE_SERVER_PORT. The temp folder is shared: the folders on
//! the way must be ours or root's (protocol/lockfile.rs, `open_dir`), else we refuse to serve.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::{KeptLockfile, OwnLockfile};
use crate::protocol::lockfile::LockInfo;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GeminiDiscovery {
    pub port: u16,
    /// The workspace folders, joined with ':'.
    pub workspace_path: String,
    pub auth_token: String,
    /// Without it the CLI says the editor is not supported.
    pub ide_info: IdeInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdeInfo {
    pub name: String,
    pub display_name: String,
}

impl GeminiDiscovery {
    pub fn new(port: u16, folders: &[String], token: &str, ide_name: &str) -> Self {
        GeminiDiscovery {
            port,
            workspace_path: folders.join(":"),
            auth_token: token.to_owned(),
            ide_info: IdeInfo { name: "neovim".into(), display_name: ide_name.to_owned() },
        }
    }
}

/// `$TMPDIR/gemini/ide` (Node's os.tmpdir(), as the CLI reads it).
pub fn dir() -> PathBuf {
    std::env::temp_dir().join("gemini").join("ide")
}

/// Our file's name: the CLI reads the pid and port from it.
pub fn file_name(port: u16) -> String {
    format!("gemini-ide-server-{}-{port}.json", std::process::id())
}

/// Writes (or rewrites) it in `dir`, atomically, 0600.
pub fn write(dir: &Path, file: &GeminiDiscovery) -> Result<PathBuf, String> {
    let body = serde_json::to_vec(file).map_err(|e| e.to_string())?;
    crate::protocol::lockfile::write_named(dir, &file_name(file.port), &body)
        .map_err(|e| format!("Gemini CLI's discovery file: {e}"))
}

/// Removes it, if it still holds our token.
pub fn remove(path: &Path, token: &str) {
    let holds = |text: &[u8]| serde_json::from_slice::<GeminiDiscovery>(text).is_ok_and(|f| f.auth_token == token);
    crate::protocol::lockfile::remove_if(path, holds);
}

/// Whether it is there, private and ours (for :checkhealth).
pub fn check(path: &Path, file: &GeminiDiscovery) -> Result<(), String> {
    let (folder, name) = crate::protocol::lockfile::in_folder(path)?;
    let mode = folder.mode(name).map_err(|e| format!("missing: {e}"))? & 0o777;
    if mode != 0o600 {
        return Err(format!("mode is {mode:o}, not 600"));
    }
    let text = folder.read(name).map_err(|e| format!("unreadable: {e}"))?;
    let on_disk: GeminiDiscovery = serde_json::from_slice(&text).map_err(|e| format!("not a discovery file: {e}"))?;
    if on_disk.port != file.port || on_disk.auth_token != file.auth_token {
        return Err("it does not match this server (port or token differ)".into());
    }
    Ok(())
}

/// The port in `127.0.0.1:<port>`, where a loopback agent listens.
fn port_of(at: &Path) -> Result<u16, String> {
    let text = at.to_string_lossy();
    let port = text.rsplit(':').next().and_then(|p| p.parse().ok());
    port.ok_or_else(|| format!("not a loopback address: {text}"))
}

/// Gemini CLI's discovery file as an agent's own lockfile ([`OwnLockfile`]).
pub struct Discovery;

struct Kept {
    dir: PathBuf,
    path: PathBuf,
    file: GeminiDiscovery,
}

impl OwnLockfile for Discovery {
    /// `socket` is `127.0.0.1:<port>` (its transport is loopback HTTP).
    fn write(&self, socket: &Path, lock: &LockInfo, _: &Value) -> Result<Box<dyn KeptLockfile>, String> {
        let file = GeminiDiscovery::new(port_of(socket)?, &lock.workspace_folders, &lock.auth_token, &lock.ide_name);
        let dir = dir();
        let path = write(&dir, &file)?;
        Ok(Box::new(Kept { dir, path, file }))
    }

    /// Files of dead Neovims are left alone: the CLI skips files of dead pids itself, and
    /// other users' editors write there too.
    fn sweep(&self, _: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
        Vec::new()
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
        self.file.workspace_path = folders.join(":");
        write(&self.dir, &self.file).map(|_| ())
    }

    fn check(&self) -> Result<(), String> {
        check(&self.path, &self.file)
    }

    fn remove(&self, _: &str) {
        remove(&self.path, &self.file.auth_token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_the_clis_spelling_written_private_and_removed_only_with_our_token() {
        let f = GeminiDiscovery::new(4242, &["/a".into(), "/b".into()], "tok", "Neovim");
        let v: Value = serde_json::to_value(&f).unwrap();
        assert_eq!(v["port"], 4242);
        assert_eq!(v["workspacePath"], "/a:/b");
        assert_eq!(v["authToken"], "tok");
        assert_eq!(v["ideInfo"]["displayName"], "Neovim");
        assert_eq!(port_of(Path::new("127.0.0.1:4242")), Ok(4242));
        let dir = std::env::temp_dir().join(format!("pi-ide-gemini-disc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let p = write(&dir, &f).unwrap();
        assert!(p.ends_with(file_name(4242)));
        assert!(check(&p, &f).is_ok());
        remove(&p, "other");
        assert!(p.exists(), "not ours to remove");
        remove(&p, "tok");
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
