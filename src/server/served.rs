//! What the server keeps for the agents it serves, so that each finds this editor: pi-ide's
//! lockfile in the folders the agents on the WebSocket read (each with the token it holds), and
//! the lockfile and socket of each agent with a socket of its own. All of it is kept in step
//! with the workspace folders, checked for :checkhealth, and removed on stop.

use std::path::{Path, PathBuf};

use crate::agents::{Agent, KeptLockfile};
use crate::protocol::lockfile::{self, LockInfo};
use crate::transport::auth::Credential;

/// A folder holding our pi-ide lockfile, for an agent on the WebSocket.
pub struct LockDir {
    pub agent: &'static Agent,
    pub dir: PathBuf,
    /// The token its lockfile holds: the server's, or one made for a launch.
    pub token: String,
    /// The launch it was made for (see auth.rs, `Credential`).
    pub tag: Option<String>,
    /// We created the folder: removed on stop when nothing else is left in it.
    pub created: bool,
}

/// An agent with a socket of its own and a lockfile of its own format.
pub struct OwnSide {
    pub agent: &'static Agent,
    pub socket: PathBuf,
    pub lockfile: Box<dyn KeptLockfile>,
}

#[derive(Default)]
pub struct Served {
    pub dirs: Vec<LockDir>,
    pub own: Vec<OwnSide>,
}

impl Served {
    /// The lock folder kept for `agent` at `dir`, if there is one.
    pub fn dir(&self, agent: &Agent, dir: &Path) -> Option<&LockDir> {
        self.dirs.iter().find(|d| d.agent == agent && d.dir == dir)
    }

    pub fn own(&self, agent: &Agent) -> Option<&OwnSide> {
        self.own.iter().find(|o| o.agent == agent)
    }

    /// What Lua shows of `agent`'s side: its (first) lockfile, and its socket when it has one.
    pub fn paths_of(&self, agent: &Agent, port: u16) -> Vec<(&'static str, PathBuf)> {
        if let Some(o) = self.own(agent) {
            return vec![("socket", o.socket.clone()), ("lockfile", o.lockfile.path().to_owned())];
        }
        let first = self.dirs.iter().find(|d| d.agent == agent);
        first.map(|d| vec![("lockfile", lockfile::path_for(&d.dir, port))]).unwrap_or_default()
    }

    /// The agents served, in the order they were.
    pub fn agents(&self) -> Vec<&'static Agent> {
        let mut out: Vec<&'static Agent> = Vec::new();
        for a in self.dirs.iter().map(|d| d.agent).chain(self.own.iter().map(|o| o.agent)) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    /// Who may upgrade on the WebSocket: each folder's agent with the token its lockfile holds.
    pub fn credentials(&self) -> Vec<Credential> {
        let mut out: Vec<Credential> = Vec::new();
        for d in &self.dirs {
            let seen = out.iter().any(|c| c.agent == d.agent && c.token == d.token);
            if !seen {
                out.push(Credential { agent: d.agent, token: d.token.clone(), tag: d.tag.clone() });
            }
        }
        out
    }

    /// Rewrites every lockfile for `lock`'s folders. Every file is tried; returns the errors.
    pub fn set_folders(&mut self, port: u16, lock: &LockInfo) -> Vec<String> {
        let mut errors = Vec::new();
        for d in &self.dirs {
            errors.extend(lockfile::write(&d.dir, port, &with_token(lock, &d.token)).err());
        }
        for o in &mut self.own {
            errors.extend(o.lockfile.set_folders(&lock.workspace_folders).err());
        }
        errors
    }

    /// Each lockfile, and what is wrong with it (for :checkhealth).
    pub fn check(&self, port: u16, lock: &LockInfo) -> Vec<(PathBuf, Result<(), String>)> {
        let ours = self.dirs.iter().map(|d| {
            let path = lockfile::path_for(&d.dir, port);
            let check = lockfile::check(&path, &with_token(lock, &d.token));
            (path, check)
        });
        let own = self.own.iter().map(|o| (o.lockfile.path().to_owned(), o.lockfile.check()));
        ours.chain(own).collect()
    }

    /// Each lock folder, and why it is no place for a token if it is not (for :checkhealth).
    pub fn check_dirs(&self) -> Vec<(PathBuf, Option<String>)> {
        let dirs = self.dirs.iter().map(|d| d.dir.clone());
        let own = self.own.iter().map(|o| o.lockfile.dir().to_owned());
        dirs.chain(own).map(|d| {
            let problem = lockfile::check_dir(&d);
            (d, problem)
        }).collect()
    }

    /// Removes every lockfile that still holds our token, the folders we made when empty, and
    /// the sockets.
    pub fn remove(&self, port: u16, token: &str) {
        for d in &self.dirs {
            lockfile::remove(&lockfile::path_for(&d.dir, port), &d.token);
        }
        for d in self.dirs.iter().filter(|d| d.created) {
            // Only when empty: another file there is not ours to remove.
            remove_empty_folder(&d.dir);
        }
        for o in &self.own {
            o.lockfile.remove(token);
            super::remove_socket(&o.socket);
        }
    }
}

/// Removes the folder at `dir` if it is empty, through its parent's handle (a link there is not
/// followed).
fn remove_empty_folder(dir: &Path) {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else { return };
    let on_the_way = crate::support::safe_dir::Rules { own: 0, ..crate::support::safe_dir::LOCK_CHECK };
    if let Ok(folder) = crate::support::safe_dir::open(parent, on_the_way) {
        let _ = folder.remove_empty_folder(name);
    }
}

/// `lock` as a lockfile holding `token`.
pub fn with_token(lock: &LockInfo, token: &str) -> LockInfo {
    LockInfo { auth_token: token.to_owned(), ..lock.clone() }
}
