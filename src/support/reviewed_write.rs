//! Writing the text a user accepted in a review onto the file they reviewed — and only onto that
//! file. What the review showed is looked at when it opens ([`Seen::look`]): the file's real
//! folder (links resolved then, so a dotfile linked elsewhere is written where it lives) and the
//! file's identity (device, inode, size, mtime), or that there was none. The write
//! ([`Seen::write`]) happens in that very folder (its identity checked through the handle every
//! step uses), only if the file is still the one reviewed, through a new temporary file renamed
//! over it: a link, a pipe or another file swapped in since is refused by name, never followed
//! or opened; a full disk or a crash leaves the old file or the new one, never half of one.
//!
//! Blocking (fsync): run it off any thread that serves an agent or Neovim.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::at;

/// What a file's identity was when it was reviewed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    kind: u32,
    mode: u32,
}

/// The file a review showed, as it was then.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Its real form then: the nearest existing folder (canonical), the folders to create
    /// below it, and the file's name.
    folder: PathBuf,
    folder_id: (u64, u64),
    missing: Vec<OsString>,
    name: OsString,
    /// None: there was no file.
    file: Option<Stamp>,
}

impl Seen {
    /// Looks at `path` (absolute) as the review opens. Err: it cannot be a reviewed write (not
    /// absolute, not a regular file, a folder on the way that is not one).
    pub fn look(path: &Path) -> Result<Seen, String> {
        if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(format!("{} is not an absolute path without `..`", path.display()));
        }
        // A link to the file is followed now, once: the review showed the file it leads to
        // (and said where that is: support/real.rs, as its staging does).
        let real = super::real::target(path).ok_or_else(|| format!("cannot tell where {} leads", path.display()))?;
        let name = real.file_name().ok_or_else(|| format!("{} names no file", path.display()))?.to_owned();
        let (mut folder, mut missing) = (real.parent().unwrap_or(Path::new("/")).to_path_buf(), Vec::new());
        while !folder.exists() {
            missing.push(folder.file_name().ok_or("no folder on the way exists")?.to_owned());
            folder = folder.parent().unwrap_or(Path::new("/")).to_path_buf();
        }
        missing.reverse();
        let folder = std::fs::canonicalize(&folder).map_err(|e| format!("cannot look at {}: {e}", folder.display()))?;
        let dir = open(None, folder.as_os_str())?;
        let meta = std::fs::File::from(dir.try_clone().map_err(|e| e.to_string())?).metadata().map_err(|e| e.to_string())?;
        let file = if missing.is_empty() { stamp_of(&dir, &name)? } else { None };
        if file.as_ref().is_some_and(|s| s.kind != at::FILE) {
            return Err(format!("{} is not a regular file", path.display()));
        }
        Ok(Seen { folder, folder_id: (meta.dev(), meta.ino()), missing, name, file })
    }

    /// Writes `bytes` as the file, if it is still the one reviewed. Err says what stood in the
    /// way (the file is then as it was), as in "{path} was not written: {why}".
    pub fn write(&self, bytes: &[u8]) -> Result<(), String> {
        let mut dir = open(None, self.folder.as_os_str()).map_err(|e| format!("its folder is gone ({e})"))?;
        let meta = std::fs::File::from(dir.try_clone().map_err(|e| e.to_string())?).metadata().map_err(|e| e.to_string())?;
        if (meta.dev(), meta.ino()) != self.folder_id {
            return Err(format!("its folder {} was replaced since the review", self.folder.display()));
        }
        for part in &self.missing {
            let c = c_name(part)?;
            at::make_dir(&dir, &c, 0o777).map_err(|e| format!("cannot create folder {}: {e}", part.to_string_lossy()))?;
            dir = open(Some(&dir), part)?;
        }
        let now = stamp_of(&dir, &self.name)?;
        if now != self.file {
            return Err(changed(self.file.as_ref(), now.as_ref()));
        }
        let tmp = c_name(&OsString::from(format!(".{}.pi-ide-{}", self.name.to_string_lossy(), uuid::Uuid::new_v4().simple())))?;
        let written = write_new(&dir, &tmp, bytes, self.file.as_ref().map(|s| s.mode & 0o7777))
            .and_then(|()| self.put_in_place(&dir, &tmp));
        if written.is_err() {
            let _ = at::unlink(&dir, &tmp, false);
        }
        written
    }

    /// Moves the written temporary file over the reviewed one (checked once more right before),
    /// or into the free name, never over a file that appeared meanwhile.
    fn put_in_place(&self, dir: &OwnedFd, tmp: &CStr) -> Result<(), String> {
        let name = c_name(&self.name)?;
        if self.file.is_none() {
            at::link(dir, tmp, &name).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => "a file appeared there since the review".to_string(),
                _ => e.to_string(),
            })?;
            return at::unlink(dir, tmp, false).map_err(|e| e.to_string());
        }
        let now = stamp_of(dir, &self.name)?;
        if now != self.file {
            return Err(changed(self.file.as_ref(), now.as_ref()));
        }
        at::rename(dir, tmp, &name).map_err(|e| e.to_string())
    }

    /// The file it writes: where the path led when it was looked at.
    pub fn real(&self) -> PathBuf {
        let mut real = self.folder.clone();
        real.extend(&self.missing);
        real.join(&self.name)
    }

    /// Whether the file is still as the review saw it (the agent has not written it yet).
    pub fn untouched(&self) -> bool {
        let Ok(dir) = self.folder_now() else { return false };
        stamp_of(&dir, &self.name).is_ok_and(|now| now == self.file)
    }

    /// Writes `bytes` over the agent's own write of its proposal: only if the file, in the
    /// folder reviewed, is now a regular file holding exactly `proposal` (never a link, a pipe
    /// or other text), and is still that file right before the rename. Err as [`Seen::write`].
    pub fn write_over(&self, proposal: &[u8], bytes: &[u8]) -> Result<(), String> {
        let dir = self.folder_now()?;
        let agents = self.regular_now(&dir)?;
        if read_whole(&dir, &self.name, &agents, proposal.len())? != proposal {
            return Err("it holds other text than the agent's proposal".into());
        }
        self.put_over(&dir, &agents, bytes)
    }

    /// Whether the file, in the folder reviewed, is a regular file holding exactly `text`.
    /// Err: it is not one (gone, a link, a pipe), or cannot be read.
    pub fn holds(&self, text: &[u8]) -> Result<bool, String> {
        let dir = self.folder_now()?;
        let now = self.regular_now(&dir)?;
        Ok(read_whole(&dir, &self.name, &now, text.len())? == text)
    }

    /// The file's identity now, when it is a regular file; else what it is.
    fn regular_now(&self, dir: &OwnedFd) -> Result<Stamp, String> {
        match stamp_of(dir, &self.name)? {
            Some(s) if s.kind == at::FILE => Ok(s),
            Some(s) if s.kind == at::LINK => Err("it was replaced by a link".into()),
            Some(_) => Err("it is no longer a regular file".into()),
            None => Err("it is gone".into()),
        }
    }

    /// Writes `bytes` as a new file renamed over the one `agents` saw, if it is still that one.
    fn put_over(&self, dir: &OwnedFd, agents: &Stamp, bytes: &[u8]) -> Result<(), String> {
        let tmp = c_name(&OsString::from(format!(".{}.pi-ide-{}", self.name.to_string_lossy(), uuid::Uuid::new_v4().simple())))?;
        let written = write_new(dir, &tmp, bytes, Some(agents.mode & 0o7777)).and_then(|()| {
            let now = stamp_of(dir, &self.name)?;
            if now.as_ref() != Some(agents) {
                return Err(changed(Some(agents), now.as_ref()).replace("since the review", "since the agent wrote it"));
            }
            at::rename(dir, &tmp, &c_name(&self.name)?).map_err(|e| e.to_string())
        });
        if written.is_err() {
            let _ = at::unlink(dir, &tmp, false);
        }
        written
    }

    /// The file's folder as it is now, which must be the one reviewed (folders that were
    /// missing then are walked, never created: the agent made them).
    fn folder_now(&self) -> Result<OwnedFd, String> {
        let mut dir = open(None, self.folder.as_os_str()).map_err(|e| format!("its folder is gone ({e})"))?;
        let meta = std::fs::File::from(dir.try_clone().map_err(|e| e.to_string())?).metadata().map_err(|e| e.to_string())?;
        if (meta.dev(), meta.ino()) != self.folder_id {
            return Err(format!("its folder {} was replaced since the review", self.folder.display()));
        }
        for part in &self.missing {
            dir = open(Some(&dir), part)?;
        }
        Ok(dir)
    }
}

/// The whole of regular file `name` in `dir`, which must still be the one `stamp` saw; at most
/// `limit` bytes and one (enough to tell a longer text).
fn read_whole(dir: &OwnedFd, name: &OsStr, stamp: &Stamp, limit: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = at::open_file(dir, &c_name(name)?).map_err(|e| format!("cannot read it: {e}"))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if (meta.dev(), meta.ino()) != (stamp.dev, stamp.ino) {
        return Err("it was replaced while being read".into());
    }
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read it: {e}"))?;
    Ok(bytes)
}

/// Why the file is not the one reviewed.
fn changed(was: Option<&Stamp>, now: Option<&Stamp>) -> String {
    match (was, now) {
        (Some(_), None) => "it was deleted since the review".into(),
        (None, Some(n)) if n.kind == at::LINK => "a link appeared there since the review".into(),
        (None, Some(_)) => "a file appeared there since the review".into(),
        (Some(_), Some(n)) if n.kind == at::LINK => "it was replaced by a link since the review".into(),
        (Some(_), Some(n)) if n.kind != at::FILE => "it is no longer a regular file".into(),
        (Some(w), Some(n)) if (w.dev, w.ino) != (n.dev, n.ino) => "it was replaced by another file since the review".into(),
        _ => "it changed on disk since the review".into(),
    }
}

fn c_name(name: &OsStr) -> Result<CString, String> {
    at::name(name.as_bytes()).map_err(|e| e.to_string())
}

/// Opens folder `name` (in `dir`, or an absolute path), never through a link as its last part.
fn open(dir: Option<&OwnedFd>, name: &OsStr) -> Result<OwnedFd, String> {
    at::open_dir(dir, &c_name(name)?).map_err(|e| format!("{}: {e}", name.to_string_lossy()))
}

/// The identity of `name` in `dir`, not following a link; None when there is none.
#[allow(clippy::unnecessary_cast)] // the field types differ between platforms
fn stamp_of(dir: &OwnedFd, name: &OsStr) -> Result<Option<Stamp>, String> {
    let st = at::lstat(dir, &c_name(name)?).map_err(|e| format!("cannot look at {}: {e}", name.to_string_lossy()))?;
    Ok(st.map(|st| Stamp {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
        kind: at::kind(&st),
        mode: st.st_mode as u32,
    }))
}

/// Creates `name` in `dir` (it must not exist; never a link), writes `bytes`, gives it `mode`
/// (None: a new file's, 0666 less the umask) and makes it durable before it is renamed.
fn write_new(dir: &OwnedFd, name: &CStr, bytes: &[u8], mode: Option<u32>) -> Result<(), String> {
    let mut f = at::create_new(dir, name, if mode.is_some() { 0o600 } else { 0o666 })
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(|e| e.to_string())?;
    }
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_reviewed_file_is_replaced_whole_keeping_its_mode_and_a_new_one_gets_its_folders() {
        let d = crate::scratch_dir("reviewed-write");
        let f = d.join("a.txt");
        std::fs::write(&f, "old\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
        let seen = Seen::look(&f).unwrap();
        assert!(seen.file.is_some());
        seen.write(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new\n");
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o750);
        let n = d.join("x/y/new.txt");
        let seen = Seen::look(&n).unwrap();
        assert!(seen.file.is_none());
        seen.write(b"hi").unwrap();
        assert_eq!(std::fs::read_to_string(&n).unwrap(), "hi");
        assert_eq!(std::fs::read_dir(d.join("x/y")).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_a_pipe_another_file_or_a_change_since_the_review_is_refused_and_nothing_is_written() {
        let d = crate::scratch_dir("reviewed-write-swap");
        let outside = d.join("outside.txt");
        std::fs::write(&outside, "secret\n").unwrap();
        let f = d.join("a.txt");
        let cases: [(&str, &dyn Fn()); 5] = [
            ("replaced by a link", &|| {
                std::fs::remove_file(&f).unwrap();
                std::os::unix::fs::symlink(&outside, &f).unwrap();
            }),
            ("no longer a regular file", &|| {
                std::fs::remove_file(&f).unwrap();
                let c = CString::new(f.as_os_str().as_bytes()).unwrap();
                // SAFETY: a valid C string.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }),
            ("replaced by another file", &|| {
                std::fs::write(d.join("other"), "other\n").unwrap();
                std::fs::rename(d.join("other"), &f).unwrap();
            }),
            ("changed on disk", &|| std::fs::write(&f, "edited meanwhile, longer\n").unwrap()),
            ("deleted", &|| std::fs::remove_file(&f).unwrap()),
        ];
        for (said, swap) in cases {
            let _ = std::fs::remove_file(&f);
            std::fs::write(&f, "old\n").unwrap();
            let seen = Seen::look(&f).unwrap();
            swap();
            let e = seen.write(b"accepted\n").unwrap_err();
            assert!(e.contains(said), "{said}: {e}");
            assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
            assert!(std::fs::read_dir(&d).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("pi-ide")));
        }
        // A new file's name taken meanwhile; a folder swapped for a link to elsewhere.
        let n = d.join("new.txt");
        let seen = Seen::look(&n).unwrap();
        std::fs::write(&n, "theirs\n").unwrap();
        assert!(seen.write(b"mine\n").unwrap_err().contains("appeared"));
        assert_eq!(std::fs::read_to_string(&n).unwrap(), "theirs\n");
        let l = d.join("linked.txt");
        let seen = Seen::look(&l).unwrap();
        std::os::unix::fs::symlink(&outside, &l).unwrap();
        assert!(seen.write(b"mine\n").unwrap_err().contains("a link appeared there"));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
        let sub = d.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let seen = Seen::look(&sub.join("f.txt")).unwrap();
        std::fs::rename(&sub, d.join("sub.old")).unwrap();
        let elsewhere = crate::scratch_dir("reviewed-write-elsewhere");
        std::os::unix::fs::symlink(&elsewhere, &sub).unwrap();
        assert!(seen.write(b"mine\n").is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through the link");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&elsewhere).unwrap();
    }

    #[test]
    fn a_file_linked_from_elsewhere_is_written_where_it_lives_and_the_link_stays() {
        let d = crate::scratch_dir("reviewed-write-link");
        std::fs::create_dir(d.join("dotfiles")).unwrap();
        std::fs::write(d.join("dotfiles/rc"), "old\n").unwrap();
        std::os::unix::fs::symlink(d.join("dotfiles/rc"), d.join("rc")).unwrap();
        Seen::look(&d.join("rc")).unwrap().write(b"new\n").unwrap();
        assert!(std::fs::symlink_metadata(d.join("rc")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(d.join("dotfiles/rc")).unwrap(), "new\n");
        assert!(Seen::look(Path::new("relative.txt")).is_err());
        assert!(Seen::look(&d.join("dotfiles")).unwrap_err().contains("not a regular file"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
