//! Qwen Code's IDE mode: Gemini CLI's companion protocol, renamed (companion/). It finds us
//! through `${QWEN_HOME:-~/.qwen}/ide/<port>.lock`, which names our pid (`ppid`: it deletes the
//! file of a dead one) and `ideInfo` (without it, "not supported"); among several it takes the
//! port in QWEN_CODE_IDE_SERVER_PORT, else the newest whose workspacePath holds its cwd (ours is
//! written anew when Neovim gets the focus: the one used last wins). It checks no owner: the
//! folder must be ours (protocol/lockfile.rs). Unlike Gemini CLI it writes its own proposal
//! after a yes in its terminal, whatever closeDiff answers (Lua says so:
//! features/review/ignored.lua). Its ACP chat is another entry (chat.rs).

use super::companion::{self, lockfile::Format};
use super::Agent;

pub static LOCK: Format = Format {
    what: "Qwen Code's lock file",
    dir: || crate::protocol::lockfile::agent_dir("QWEN_HOME", ".qwen", "Qwen Code's lock file"),
    file_name: |port| format!("{port}.lock"),
    ppid: true,
    newest_wins: true,
};

pub static AGENT: Agent = companion::agent("qwen", &LOCK);
