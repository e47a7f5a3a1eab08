//! The log of turns of one folder: what each agent turn started from and ended with, kept in
//! `turns.json` beside the shadow repository so that it survives a Neovim restart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How many turns a folder keeps (the oldest go first).
const KEPT: usize = 500;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    /// Counted from 1 per folder, across Neovim sessions.
    pub n: u64,
    /// Who acted: an agent's name, or "you" for `:PiIde checkpoint`.
    pub agent: String,
    /// The prompt that started it, when a chat knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    pub started_ms: u64,
    /// The tree of the workspace when the turn started.
    pub start: String,
    /// The tree when it ended (a chat's turn end, or the next checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// The files the turn changed (start → end), relative to the workspace.
    #[serde(default)]
    pub changed: Vec<String>,
    /// Those of them that no review showed (nor a write of the user's in Neovim).
    #[serde(default)]
    pub unreviewed: Vec<String>,
    /// Files left out of the start's checkpoint (over the size cap).
    #[serde(default)]
    pub skipped: Vec<String>,
    /// Put back by `:PiIde undo`.
    #[serde(default)]
    pub undone: bool,
}

pub struct Log {
    path: PathBuf,
}

impl Log {
    pub fn at(dir: &Path) -> Log {
        Log { path: dir.join("turns.json") }
    }

    /// Every turn kept, oldest first; a missing or unreadable log is an empty one.
    pub fn read(&self) -> Vec<Turn> {
        std::fs::read(&self.path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    /// Replaces the log, through a temporary file so a crash leaves the old one or the new one.
    pub fn write(&self, turns: &[Turn]) -> Result<(), String> {
        let from = turns.len().saturating_sub(KEPT);
        let bytes = serde_json::to_vec(&turns[from..]).map_err(|e| e.to_string())?;
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| format!("could not write {}: {e}", self.path.display()))
    }

    /// Reads, lets `f` change the turns, writes them back; `f`'s answer.
    pub fn update<R>(&self, f: impl FnOnce(&mut Vec<Turn>) -> Result<R, String>) -> Result<R, String> {
        let mut turns = self.read();
        let r = f(&mut turns)?;
        self.write(&turns)?;
        Ok(r)
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
