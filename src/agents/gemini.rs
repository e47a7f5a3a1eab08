//! Gemini CLI's IDE mode (the companion protocol, checked against the CLI 0.61: companion/). It
//! finds us through a discovery file in `$TMPDIR/gemini/ide`, `gemini-ide-server-<pid>-<port>.json`:
//! it keeps the files whose workspacePath holds its cwd and, among several, prefers the pid and
//! port in GEMINI_CLI_IDE_PID / GEMINI_CLI_IDE_SERVER_PORT. The temp folder is shared: its
//! folders must be ours or root's. Its ACP chat is another entry (chat.rs serves every chat's
//! agent).

use super::companion::{self, lockfile::Format};
use super::Agent;

pub static DISCOVERY: Format = Format {
    what: "Gemini CLI's discovery file",
    // Node's os.tmpdir(), as the CLI reads it.
    dir: || Ok(std::env::temp_dir().join("gemini").join("ide")),
    // The CLI reads the pid and port from it.
    file_name: |port| format!("gemini-ide-server-{}-{port}.json", std::process::id()),
    ppid: false,
    // It prefers the live pid, then the higher one.
    newest_wins: false,
};

pub static AGENT: Agent = companion::agent("gemini", &DISCOVERY);
