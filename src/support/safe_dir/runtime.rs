//! The records folder MCP clients' `pi-ide-mcp` finds Neovims by, one for all of this user's
//! Neovims: `$XDG_RUNTIME_DIR/pi-ide/mcp`; with no XDG_RUNTIME_DIR, `/run/user/<uid>/pi-ide/mcp`
//! when that runtime folder is there and private to us (so a client that strips the variable
//! from its environment, as some MCP clients do, finds the same folder), else
//! `$TMPDIR/pi-ide-<uid>/mcp` (`/tmp` when TMPDIR is unset). Each folder of ours in it is
//! private (0700), ours, and never a link: in a shared /tmp another user may have made
//! `pi-ide-<uid>` first, or put a link there, to be sent what the records lead to.

use std::path::{Path, PathBuf};

use super::{open, Folder, Problem, Rules};

/// The records folder as the core keeps it: made when missing, and made private (0700): a
/// folder of ours is fixed, not refused, since nothing in it is trusted for being there (a
/// record must be a file of ours, and the bridge checks whose socket it leads to).
pub(super) const RUNTIME_FIX: Rules = Rules { own: 2, links: false, forbidden: 0o077, fix: true };
/// As the bridge reads it: only checked.
const RUNTIME_CHECK: Rules = Rules { fix: false, ..RUNTIME_FIX };

fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

fn xdg() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()).map(PathBuf::from)
}

/// `/run/user/<uid>`, when it is there and private to us (as systemd makes it).
fn run_user() -> Option<PathBuf> {
    let dir = PathBuf::from(format!("/run/user/{}", uid()));
    let own = Rules { own: 1, ..RUNTIME_CHECK };
    open(&dir, own).ok().map(|_| dir)
}

fn in_tmp() -> PathBuf {
    std::env::temp_dir().join(format!("pi-ide-{}", uid())).join("mcp")
}

/// Where the records may be, most likely first: where the core writes them and, with no
/// XDG_RUNTIME_DIR, each place a core that had one or not may have written them.
pub fn candidates() -> Vec<PathBuf> {
    if let Some(d) = xdg() {
        return vec![d.join("pi-ide").join("mcp")];
    }
    let mut out: Vec<PathBuf> = run_user().map(|d| d.join("pi-ide").join("mcp")).into_iter().collect();
    out.push(in_tmp());
    out
}

/// The records folder the core writes in.
pub fn records_path() -> PathBuf {
    candidates().swap_remove(0)
}

/// Opens the records folder at `path`: with `fix`, made when missing and made private; else
/// only checked.
pub fn open_records(path: &Path, fix: bool) -> Result<Folder, String> {
    open(path, if fix { RUNTIME_FIX } else { RUNTIME_CHECK }).map_err(|p| refusal(path, &p))
}

/// Each candidate's folder opened for reading, or why it was refused; missing ones are left out.
pub fn to_read() -> Vec<Result<Folder, String>> {
    let opened = candidates().into_iter().map(|path| open(&path, RUNTIME_CHECK).map_err(|p| (path, p)));
    opened
        .filter(|r| !matches!(r, Err((_, Problem::Missing(_)))))
        .map(|r| r.map_err(|(path, p)| refusal(&path, &p)))
        .collect()
}

/// The one message for a records folder refused: which, why, what to do.
fn refusal(path: &Path, problem: &Problem) -> String {
    let what_to_do = match problem {
        Problem::Mode(_) | Problem::Missing(_) => "",
        Problem::Refused(_) => ". It must be yours alone: remove what is not yours there, or set XDG_RUNTIME_DIR to a folder of your own (mode 0700)",
    };
    format!("the records folder {} is refused: {problem}{what_to_do}", path.display())
}

