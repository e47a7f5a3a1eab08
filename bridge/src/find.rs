//! Which Neovim to use, from the records Neovims with pi-ide.nvim keep (one file each, in the
//! records folder: `$XDG_RUNTIME_DIR/pi-ide/mcp`, else `/run/user/<uid>/pi-ide/mcp` or
//! `$TMPDIR/pi-ide-<uid>/mcp`, see the core's support/safe_dir/runtime.rs, which this program
//! shares; the core's agents/mcp_clients/record.rs writes them). In order: the one named (`--nvim`,
//! `PI_IDE_NVIM`: its socket, its server address or its pid); the one whose terminal runs us
//! (`$NVIM`); the one whose workspace folder holds our working folder (the deepest; among
//! equals, the one focused last); the one focused last. Records of processes that are gone, or
//! are another user's, are passed over; a folder that is not ours alone is not read.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::safe_dir::{self, Folder};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub socket_path: String,
    pub pid: u32,
    #[serde(default)]
    pub nvim: String,
    #[serde(default)]
    pub workspace_folders: Vec<String>,
    #[serde(default)]
    pub focused_at: u64,
    /// The file it was read from.
    #[serde(skip)]
    pub file: PathBuf,
}

/// What the records folders hold: the records of live Neovims of ours, the folders looked in,
/// and why any of them was refused.
#[derive(Default)]
pub struct Found {
    pub records: Vec<Record>,
    pub looked_in: Vec<PathBuf>,
    pub refused: Vec<String>,
}

/// What the user asked for, read once at start.
pub struct Wanted {
    named: Option<String>,
    nvim_env: Option<String>,
}

impl Wanted {
    pub fn from_env(flag: Option<String>) -> Wanted {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Wanted { named: flag.or_else(|| var("PI_IDE_NVIM")), nvim_env: var("NVIM") }
    }
}

/// Reads every records folder this user's Neovims may have written in (each checked: ours,
/// 0700, never a link; read through its handle).
pub fn look() -> Found {
    let mut found = Found { looked_in: safe_dir::candidates(), ..Found::default() };
    for folder in safe_dir::to_read() {
        match folder {
            Ok(folder) => found.records.extend(records_in(&folder)),
            Err(why) => {
                eprintln!("pi-ide-mcp: {why}");
                found.refused.push(why);
            }
        }
    }
    found
}

/// The records of live Neovims in `folder` (files of ours only).
fn records_in(folder: &Folder) -> Vec<Record> {
    let names = folder.names().unwrap_or_default();
    let lockfiles = names.into_iter().filter(|n| Path::new(n).extension().is_some_and(|x| x == "lock"));
    lockfiles
        .filter_map(|name| {
            let mut record = serde_json::from_slice::<Record>(&folder.read(&name).ok()?).ok()?;
            record.file = folder.path().join(&name);
            Some(record)
        })
        .filter(|r| alive(r.pid))
        .collect()
}

/// Whether `pid` is a live process we may signal: one of another user's (EPERM) is not a
/// Neovim of ours, whatever a record says (its pid may have been reused).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists and that we may signal it.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// The Neovim to use, or a message saying why there is none and what to do.
/// A folder refused comes first in it: the record wanted may be in it.
pub fn pick(wanted: &Wanted, found: &Found, cwd: &Path) -> Result<Record, String> {
    pick_among(wanted, found, cwd).map_err(|why| {
        let refused: String = found.refused.iter().map(|r| format!("pi-ide-mcp: {r}.\n")).collect();
        refused + &why
    })
}

fn pick_among(wanted: &Wanted, found: &Found, cwd: &Path) -> Result<Record, String> {
    let records = &found.records[..];
    if let Some(named) = &wanted.named {
        let hit = records.iter().find(|r| &r.socket_path == named || &r.nvim == named || r.pid.to_string() == *named);
        return hit.cloned().ok_or_else(|| format!("no Neovim with pi-ide.nvim is {named} (--nvim or PI_IDE_NVIM); {}", listing(records)));
    }
    if let Some(nvim) = &wanted.nvim_env {
        if let Some(r) = records.iter().find(|r| &r.nvim == nvim) {
            return Ok(r.clone());
        }
    }
    if records.is_empty() {
        let looked_in: Vec<String> = found.looked_in.iter().map(|d| d.display().to_string()).collect();
        return Err(format!(
            "no Neovim with pi-ide.nvim is running for this user (looked in {}): start Neovim in {} (pi-ide.nvim starts its server), then call the tool again",
            looked_in.join(", "),
            cwd.display()
        ));
    }
    let depth = |r: &Record| r.workspace_folders.iter().filter(|f| cwd.starts_with(f)).map(|f| Path::new(f).components().count()).max();
    let deepest = records.iter().filter_map(depth).max();
    let pool: Vec<&Record> = match deepest {
        Some(d) => records.iter().filter(|r| depth(r) == Some(d)).collect(),
        None => records.iter().collect(),
    };
    let last = pool.iter().map(|r| r.focused_at).max().unwrap_or(0);
    let mut best = pool.into_iter().filter(|r| r.focused_at == last);
    match (best.next(), best.next()) {
        (Some(r), None) => Ok(r.clone()),
        _ => Err(format!("several Neovims fit {} equally: pass --nvim <pid> (or set PI_IDE_NVIM); {}", cwd.display(), listing(records))),
    }
}

/// The candidates, for a message.
fn listing(records: &[Record]) -> String {
    if records.is_empty() {
        return "none is running".into();
    }
    let each: Vec<String> = records
        .iter()
        .map(|r| format!("pid {} in {}", r.pid, if r.workspace_folders.is_empty() { "?".into() } else { r.workspace_folders.join(", ") }))
        .collect();
    format!("running: {}", each.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pid: u32, folders: &[&str], focused_at: u64) -> Record {
        Record {
            socket_path: format!("/s/{pid}"),
            pid,
            nvim: format!("/run/nvim.{pid}"),
            workspace_folders: folders.iter().map(|f| f.to_string()).collect(),
            focused_at,
            file: PathBuf::new(),
        }
    }

    fn found(records: &[Record]) -> Found {
        Found { records: records.to_vec(), ..Found::default() }
    }

    fn wanted(named: Option<&str>, nvim: Option<&str>) -> Wanted {
        Wanted { named: named.map(Into::into), nvim_env: nvim.map(Into::into) }
    }

    #[test]
    fn named_then_nvim_then_the_deepest_folder_then_the_focus() {
        let rs = [rec(1, &["/w"], 5), rec(2, &["/w/sub"], 1), rec(3, &["/other"], 9)];
        let cwd = Path::new("/w/sub/x");
        assert_eq!(pick(&wanted(Some("3"), None), &found(&rs), cwd).unwrap().pid, 3);
        assert_eq!(pick(&wanted(Some("/s/1"), None), &found(&rs), cwd).unwrap().pid, 1);
        assert!(pick(&wanted(Some("7"), None), &found(&rs), cwd).unwrap_err().contains("pid 3 in /other"));
        assert_eq!(pick(&wanted(None, Some("/run/nvim.3")), &found(&rs), cwd).unwrap().pid, 3);
        assert_eq!(pick(&wanted(None, Some("/elsewhere")), &found(&rs), cwd).unwrap().pid, 2);
        assert_eq!(pick(&wanted(None, None), &found(&rs), Path::new("/w/y")).unwrap().pid, 1);
        // No folder holds it: the one focused last.
        assert_eq!(pick(&wanted(None, None), &found(&rs), Path::new("/tmp")).unwrap().pid, 3);
        // A folder that only shares a prefix of the name does not hold it.
        assert_eq!(pick(&wanted(None, None), &found(&rs), Path::new("/wx")).unwrap().pid, 3);
    }

    #[test]
    fn none_or_a_tie_says_what_to_do() {
        let cwd = Path::new("/w");
        assert!(pick(&wanted(None, None), &found(&[]), cwd).unwrap_err().contains("no Neovim with pi-ide.nvim is running"));
        let tie = [rec(1, &["/w"], 5), rec(2, &["/w"], 5)];
        let e = pick(&wanted(None, None), &found(&tie), cwd).unwrap_err();
        assert!(e.contains("--nvim") && e.contains("pid 1") && e.contains("pid 2"), "{e}");
        let later = [rec(1, &["/w"], 5), rec(2, &["/w"], 6)];
        assert_eq!(pick(&wanted(None, None), &found(&later), cwd).unwrap().pid, 2);
        // A folder refused comes first, with what to do.
        let refused = Found { refused: vec!["the records folder /t is refused: why".into()], ..Found::default() };
        let e = pick(&wanted(None, None), &refused, cwd).unwrap_err();
        assert!(e.starts_with("pi-ide-mcp: the records folder /t is refused: why.\nno Neovim"), "{e}");
    }

    #[test]
    fn another_users_process_is_not_alive_for_us() {
        assert!(alive(std::process::id()));
        assert!(!alive(0x7fff_fff0) && !alive(0));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(!alive(1), "init is root's: EPERM");
        }
    }
}
