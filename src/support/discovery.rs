//! A discovery file: how an agent finds this editor. A private file (0600) in a folder that must
//! be ours (safe_dir/: refused when another user's, made 0700 when missing), written whole (temp
//! file + rename), checked for :checkhealth, and removed on stop only while it is still ours. Each
//! agent keeps its file's folder, name and fields (src/agents/); the writing is done here.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::support::safe_dir::Folder;

/// Where a kind of discovery file goes, and how messages name it.
pub struct Place {
    /// Opens its folder to write: made when missing and made private (the log says so).
    pub open: fn(&Path) -> Result<Folder, String>,
    /// Opens its folder to read: only checked.
    pub look: fn(&Path) -> Result<Folder, String>,
    /// "cannot write {noun} <path>".
    pub noun: &'static str,
    /// Its contents cannot be read as one: "not a lockfile".
    pub not_one: &'static str,
}

/// Ours as written: its folder, its path in it, and what it says.
pub struct Written<T> {
    pub place: &'static Place,
    pub dir: PathBuf,
    pub path: PathBuf,
    pub body: T,
}

impl<T: Serialize + DeserializeOwned> Written<T> {
    /// Writes `body` at `path` in `dir`.
    pub fn new(place: &'static Place, dir: PathBuf, path: PathBuf, body: T) -> Result<Self, String> {
        let written = Written { place, dir, path, body };
        written.save()?;
        Ok(written)
    }

    pub fn name(&self) -> &OsStr {
        self.path.file_name().unwrap_or_default()
    }

    /// (Re)writes it whole, atomically, 0600.
    pub fn save(&self) -> Result<(), String> {
        let body = serde_json::to_vec(&self.body).map_err(|e| e.to_string())?;
        let folder = (self.place.open)(&self.dir)?;
        folder.write(self.name(), &body).map_err(|e| format!("cannot write {} {}: {e}", self.place.noun, self.path.display()))
    }

    /// Rewrites it in place, through its folder's handle, without following a link (it must be
    /// a regular file of ours); when it is gone, it is written anew. For a reader that watches
    /// the file itself, to which a rename reads as the editor going away.
    pub fn save_in_place(&self) -> Result<(), String> {
        let body = serde_json::to_vec(&self.body).map_err(|e| e.to_string())?;
        match (self.place.open)(&self.dir)?.rewrite(self.name(), &body) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.save(),
            Err(e) => Err(format!("cannot rewrite {}: {e}", self.path.display())),
        }
    }

    /// What it says on disk, when it is there and private.
    pub fn on_disk(&self) -> Result<T, String> {
        let folder = (self.place.look)(&self.dir)?;
        read_private(&folder, self.name(), self.place.not_one)
    }

    /// Removes it when `still_ours(what it says)`; read and removed through its folder's handle
    /// (a link there is removed itself, never followed).
    pub fn remove_if(&self, still_ours: impl Fn(&T) -> bool) {
        let Ok(folder) = (self.place.look)(&self.dir) else { return };
        let Ok(text) = folder.read(self.name()) else { return };
        if serde_json::from_slice::<T>(&text).is_ok_and(|body| still_ours(&body)) {
            let _ = folder.remove(self.name());
        }
    }
}

/// `name` in `folder` read as a `T`, when it is there and 0600 (`not_one`: the message when it
/// is no `T`).
pub fn read_private<T: DeserializeOwned>(folder: &Folder, name: &OsStr, not_one: &str) -> Result<T, String> {
    let mode = folder.mode(name).map_err(|e| format!("missing: {e}"))? & 0o777;
    if mode != 0o600 {
        return Err(format!("mode is {mode:o}, not 600"));
    }
    let text = folder.read(name).map_err(|e| format!("unreadable: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("{not_one}: {e}"))
}
