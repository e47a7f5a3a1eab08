//! How an MCP client's `pi-ide-mcp` finds this Neovim: a record per Neovim in a private folder
//! every Neovim of this user shares (support/safe_dir/runtime.rs says which: with
//! XDG_RUNTIME_DIR `$XDG_RUNTIME_DIR/pi-ide/mcp`, else `/run/user/<uid>/pi-ide/mcp` or
//! `$TMPDIR/pi-ide-<uid>/mcp`), naming its socket, its process, its server address (`$NVIM` in
//! its terminals), its workspace folders and when it last had the focus. It holds no token:
//! the socket lets in this user's processes only, and the bridge checks that the socket is
//! this user's before it sends anything. The folder is opened and checked each time it is
//! written (a swap since is refused), and the record written through its handle
//! (support/discovery.rs).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::{KeptLockfile, OwnLockfile};
use crate::protocol::lockfile::{self, LockInfo};
use crate::support::discovery::{Place, Written};
use crate::support::safe_dir::{self, Folder};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub socket_path: String,
    pub pid: u32,
    /// Neovim's server address (`v:servername`), which its terminals have as `$NVIM`.
    pub nvim: String,
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    /// When it last had the focus (or started), in ms since the epoch.
    pub focused_at: u64,
}

fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

/// The record as an agent's own lockfile ([`OwnLockfile`]).
pub struct Records;

/// In the records folder (support/safe_dir/runtime.rs).
static PLACE: Place = Place {
    open,
    look: |dir| safe_dir::open_records(dir, false),
    noun: "the record",
    not_one: "not a record",
};

/// The records folder at `dir`, made if missing and made private (the log says so).
fn open(dir: &Path) -> Result<Folder, String> {
    let folder = safe_dir::open_records(dir, true)?;
    for (path, was) in &folder.fixed {
        crate::info!("made the records folder {} private (it was mode {was:o})", path.display());
    }
    Ok(folder)
}

impl OwnLockfile for Records {
    /// `options.nvim`: Neovim's server address.
    fn write(&self, socket: &Path, lock: &LockInfo, options: &Value) -> Result<Box<dyn KeptLockfile>, String> {
        let record = Record {
            socket_path: socket.to_string_lossy().into_owned(),
            pid: lock.pid,
            nvim: options.get("nvim").and_then(Value::as_str).unwrap_or_default().to_owned(),
            workspace_folders: lock.workspace_folders.clone(),
            ide_name: lock.ide_name.clone(),
            focused_at: now_ms(),
        };
        let dir = safe_dir::records_path();
        let path = dir.join(format!("{}.lock", lock.pid));
        Ok(Box::new(Written::new(&PLACE, dir, path, record)?))
    }

    fn sweep(&self, is_ours: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
        let read = |text: &[u8]| {
            let r = serde_json::from_slice::<Record>(text).ok()?;
            Some((r.ide_name, r.pid))
        };
        open(&safe_dir::records_path()).map(|f| lockfile::remove_stale_in(&f, read, is_ours)).unwrap_or_default()
    }
}

impl KeptLockfile for Written<Record> {
    fn path(&self) -> &Path {
        &self.path
    }

    fn set_folders(&mut self, folders: &[String]) -> Result<(), String> {
        self.body.workspace_folders = folders.to_vec();
        self.save()
    }

    fn focused(&mut self) -> Result<(), String> {
        self.body.focused_at = now_ms();
        self.save()
    }

    /// Ours as long as it names our socket and process.
    fn check(&self) -> Result<(), String> {
        let on_disk = self.on_disk()?;
        if on_disk.socket_path != self.body.socket_path || on_disk.pid != self.body.pid {
            return Err("it does not match this server (socket or process differ)".into());
        }
        Ok(())
    }

    fn remove(&self, _token: &str) {
        self.remove_if(|r| r.pid == self.body.pid);
    }
}
