//! Which Neovim to use, from the records Neovims with pi-ide.nvim keep (one file each, in
//! `$XDG_RUNTIME_DIR/pi-ide/mcp`, else `/tmp/pi-ide-<uid>/mcp`; the core's agents/mcp/record.rs
//! writes them). In order: the one named (`--nvim`, `PI_IDE_NVIM`: its socket, its server
//! address or its pid); the one whose terminal runs us (`$NVIM`); the one whose workspace folder
//! holds our working folder (the deepest; among equals, the one focused last); the one focused
//! last. Records of processes that are gone are passed over.

use std::path::{Path, PathBuf};

use serde::Deserialize;

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

pub fn dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("pi-ide").join("mcp"),
        // SAFETY: getuid has no preconditions.
        _ => std::env::temp_dir().join(format!("pi-ide-{}", unsafe { libc::getuid() })).join("mcp"),
    }
}

/// The records of live Neovims, in a folder that is ours alone (another user's is not read).
pub fn records(dir: &Path) -> Vec<Record> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else { return Vec::new() };
    // SAFETY: getuid has no preconditions.
    if meta.uid() != unsafe { libc::getuid() } || meta.mode() & 0o022 != 0 {
        eprintln!("pi-ide-mcp: {} is not private to you: ignored", dir.display());
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "lock"))
        .filter_map(|e| serde_json::from_slice::<Record>(&std::fs::read(e.path()).ok()?).ok())
        .filter(|r| alive(r.pid))
        .collect()
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && (unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// The Neovim to use, or a message saying why there is none and what to do.
pub fn pick(wanted: &Wanted, records: &[Record], cwd: &Path) -> Result<Record, String> {
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
        return Err(format!(
            "no Neovim with pi-ide.nvim is running for this user (looked in {}): start Neovim in {} (pi-ide.nvim starts its server), then call the tool again",
            dir().display(),
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
        }
    }

    fn wanted(named: Option<&str>, nvim: Option<&str>) -> Wanted {
        Wanted { named: named.map(Into::into), nvim_env: nvim.map(Into::into) }
    }

    #[test]
    fn named_then_nvim_then_the_deepest_folder_then_the_focus() {
        let rs = [rec(1, &["/w"], 5), rec(2, &["/w/sub"], 1), rec(3, &["/other"], 9)];
        let cwd = Path::new("/w/sub/x");
        assert_eq!(pick(&wanted(Some("3"), None), &rs, cwd).unwrap().pid, 3);
        assert_eq!(pick(&wanted(Some("/s/1"), None), &rs, cwd).unwrap().pid, 1);
        assert!(pick(&wanted(Some("7"), None), &rs, cwd).unwrap_err().contains("pid 3 in /other"));
        assert_eq!(pick(&wanted(None, Some("/run/nvim.3")), &rs, cwd).unwrap().pid, 3);
        assert_eq!(pick(&wanted(None, Some("/elsewhere")), &rs, cwd).unwrap().pid, 2);
        assert_eq!(pick(&wanted(None, None), &rs, Path::new("/w/y")).unwrap().pid, 1);
        // No folder holds it: the one focused last.
        assert_eq!(pick(&wanted(None, None), &rs, Path::new("/tmp")).unwrap().pid, 3);
        // A folder that only shares a prefix of the name does not hold it.
        assert_eq!(pick(&wanted(None, None), &rs, Path::new("/wx")).unwrap().pid, 3);
    }

    #[test]
    fn none_or_a_tie_says_what_to_do() {
        let cwd = Path::new("/w");
        assert!(pick(&wanted(None, None), &[], cwd).unwrap_err().contains("no Neovim with pi-ide.nvim is running"));
        let tie = [rec(1, &["/w"], 5), rec(2, &["/w"], 5)];
        let e = pick(&wanted(None, None), &tie, cwd).unwrap_err();
        assert!(e.contains("--nvim") && e.contains("pid 1") && e.contains("pid 2"), "{e}");
        let later = [rec(1, &["/w"], 5), rec(2, &["/w"], 6)];
        assert_eq!(pick(&wanted(None, None), &later, cwd).unwrap().pid, 2);
    }
}
