//! The file through which a companion CLI finds us (its IDE mode: mod.rs), in the format both
//! read: `{port, workspacePath, authToken, ideInfo}`, mode 0600, naming our port and the token it
//! must send; Qwen Code's also names our pid (`ppid`: it deletes a file whose pid is dead). Where
//! it goes and how it is named is each CLI's own ([`Format`]: gemini.rs, qwen.rs). The folders
//! on the way must be ours or root's (protocol/lockfile.rs, `open_dir`), else we refuse to serve;
//! support/discovery.rs writes it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::{KeptLockfile, OwnLockfile};
use crate::protocol::lockfile::{self, LockInfo};
use crate::support::discovery::{Place, Written};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompanionFile {
    pub port: u16,
    /// The workspace folders, joined with ':'.
    pub workspace_path: String,
    pub auth_token: String,
    /// This editor's pid, for a CLI that deletes the files of dead editors (Qwen Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppid: Option<u32>,
    /// Without it the CLI says the editor is not supported.
    pub ide_info: IdeInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdeInfo {
    pub name: String,
    pub display_name: String,
}

/// Where one CLI looks for the file and what it calls it.
#[derive(Clone, Copy)]
pub struct Format {
    /// How messages name the file: "Gemini CLI's discovery file".
    pub what: &'static str,
    /// Its folder.
    pub dir: fn() -> Result<PathBuf, String>,
    /// Its name for our port.
    pub file_name: fn(u16) -> String,
    /// Whether it names our pid (`ppid`).
    pub ppid: bool,
    /// Whether the CLI takes the newest file among those that hold its folder: then it is
    /// written anew when Neovim gets the focus (the Neovim used last wins).
    pub newest_wins: bool,
}

impl Format {
    pub fn file(&self, port: u16, folders: &[String], token: &str, ide_name: &str) -> CompanionFile {
        CompanionFile {
            port,
            workspace_path: folders.join(":"),
            auth_token: token.to_owned(),
            ppid: self.ppid.then(std::process::id),
            ide_info: IdeInfo { name: "neovim".into(), display_name: ide_name.to_owned() },
        }
    }

    /// Writes it in `dir`, atomically, 0600.
    fn write(&self, dir: PathBuf, file: CompanionFile) -> Result<Kept, String> {
        let path = dir.join((self.file_name)(file.port));
        let kept = Kept { format: *self, file: Written { place: &PLACE, dir, path, body: file } };
        kept.save()?;
        Ok(kept)
    }
}

/// In a lock folder of ours, as protocol/lockfile.rs opens it.
static PLACE: Place = Place { not_one: "not such a file", ..lockfile::PLACE };

/// The port in `127.0.0.1:<port>`, where a loopback agent listens.
fn port_of(at: &Path) -> Result<u16, String> {
    let text = at.to_string_lossy();
    let port = text.rsplit(':').next().and_then(|p| p.parse().ok());
    port.ok_or_else(|| format!("not a loopback address: {text}"))
}

struct Kept {
    format: Format,
    file: Written<CompanionFile>,
}

impl Kept {
    fn save(&self) -> Result<(), String> {
        self.file.save().map_err(|e| format!("{}: {e}", self.format.what))
    }
}

impl OwnLockfile for Format {
    /// `socket` is `127.0.0.1:<port>` (its transport is loopback HTTP).
    fn write(&self, socket: &Path, lock: &LockInfo, _: &Value) -> Result<Box<dyn KeptLockfile>, String> {
        let file = self.file(port_of(socket)?, &lock.workspace_folders, &lock.auth_token, &lock.ide_name);
        Ok(Box::new(Format::write(self, (self.dir)()?, file)?))
    }

    /// Files of dead Neovims are left alone: the CLIs skip (or delete) files of dead pids
    /// themselves, and other users' editors may write there too.
    fn sweep(&self, _: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
        Vec::new()
    }
}

impl KeptLockfile for Kept {
    fn path(&self) -> &Path {
        &self.file.path
    }

    fn set_folders(&mut self, folders: &[String]) -> Result<(), String> {
        self.file.body.workspace_path = folders.join(":");
        self.save()
    }

    fn focused(&mut self) -> Result<(), String> {
        match self.format.newest_wins {
            true => self.save(),
            false => Ok(()),
        }
    }

    /// Ours as long as it names our port and token.
    fn check(&self) -> Result<(), String> {
        let on_disk = self.file.on_disk()?;
        if on_disk.port != self.file.body.port || on_disk.auth_token != self.file.body.auth_token {
            return Err("it does not match this server (port or token differ)".into());
        }
        Ok(())
    }

    fn remove(&self, _: &str) {
        self.file.remove_if(|f| f.auth_token == self.file.body.auth_token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static PLAIN: Format = Format { what: "a test's file", dir: || Ok(PathBuf::new()), file_name: |p| format!("{p}.lock"), ppid: false, newest_wins: false };
    static WITH_PID: Format = Format { ppid: true, ..PLAIN };

    #[test]
    fn fields_in_the_clis_spelling_written_private_and_removed_only_with_our_token() {
        let f = PLAIN.file(4242, &["/a".into(), "/b".into()], "tok", "Neovim");
        let v: Value = serde_json::to_value(&f).unwrap();
        assert_eq!(v["port"], 4242);
        assert_eq!(v["workspacePath"], "/a:/b");
        assert_eq!(v["authToken"], "tok");
        assert_eq!(v["ideInfo"]["displayName"], "Neovim");
        assert!(v.get("ppid").is_none());
        let p: Value = serde_json::to_value(WITH_PID.file(1, &[], "t", "N")).unwrap();
        assert_eq!(p["ppid"], std::process::id());
        assert_eq!(port_of(Path::new("127.0.0.1:4242")), Ok(4242));
        let dir = std::env::temp_dir().join(format!("pi-ide-companion-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let kept = PLAIN.write(dir.clone(), f).unwrap();
        let p = kept.file.path.clone();
        assert!(p.ends_with("4242.lock"));
        assert!(kept.check().is_ok());
        let mut theirs = kept.file.body.clone();
        theirs.auth_token = "other".into();
        std::fs::write(&p, serde_json::to_vec(&theirs).unwrap()).unwrap();
        kept.remove("");
        assert!(p.exists(), "another editor's since: not ours to remove");
        kept.save().unwrap();
        kept.remove("");
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
