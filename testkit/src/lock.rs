//! Reading lockfiles the way the Pi extension does.

use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug, Clone)]
pub struct LockFile {
    pub path: PathBuf,
    pub port: u16,
    pub pid: i64,
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    pub transport: String,
    pub auth_token: String,
    /// The file as JSON, to check exact fields.
    pub raw: Value,
}

/// `$PI_IDE_LOCK_DIR`, or `~/.pi/ide`.
pub fn lock_dir() -> PathBuf {
    match std::env::var_os("PI_IDE_LOCK_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".pi/ide"),
    }
}

/// Every valid lockfile in `dir` (the port comes from the file name, as the extension reads it).
pub fn read_all(dir: &Path) -> Vec<LockFile> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Some(port) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".lock"))
            .and_then(|p| p.parse::<u16>().ok())
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(raw) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let (Some(pid), Some(token)) = (raw["pid"].as_i64(), raw["authToken"].as_str()) else {
            continue;
        };
        out.push(LockFile {
            path: path.clone(),
            port,
            pid,
            workspace_folders: raw["workspaceFolders"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            ide_name: raw["ideName"].as_str().unwrap_or_default().to_owned(),
            transport: raw["transport"].as_str().unwrap_or_default().to_owned(),
            auth_token: token.to_owned(),
            raw,
        });
    }
    out.sort_by_key(|l| l.port);
    out
}

/// The lockfiles whose workspace contains `cwd` (plain string prefix, as the extension does).
pub fn matching(dir: &Path, cwd: &str) -> Vec<LockFile> {
    read_all(dir)
        .into_iter()
        .filter(|l| {
            l.workspace_folders.iter().any(|f| {
                let f = if f.ends_with('/') {
                    f.clone()
                } else {
                    format!("{f}/")
                };
                cwd == f.trim_end_matches('/') || format!("{cwd}/").starts_with(&f)
            })
        })
        .collect()
}
