//! The files of a review: the private copies Lua reads (mode 0600 in a 0700 folder), deleted
//! with whoever owns them. (The file on disk is read by support/on_disk.rs.)

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Writes the proposal where Lua will read it. The folder is private to this user.
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents)
}

/// Staged files: deleted when dropped (a staging that finished after its review was given up
/// leaves nothing behind; a review deletes its own when it ends or Lua has read them).
#[derive(Debug, Default)]
pub struct StagedFiles(Vec<PathBuf>);

impl StagedFiles {
    pub fn push(&mut self, file: PathBuf) {
        self.0.push(file);
    }

    /// Deletes them now.
    pub fn clear(&mut self) {
        drop(std::mem::take(self));
    }

    #[cfg(test)]
    pub fn paths(&self) -> &[PathBuf] {
        &self.0
    }
}

impl Drop for StagedFiles {
    fn drop(&mut self) {
        for f in self.0.drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }
}
