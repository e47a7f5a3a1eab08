//! The workspace watched for writes while an agent is connected or running, so that a change no
//! review showed is seen the moment it lands (a "pending change", lua/pi-ide/features/pending/).
//!
//! One watch per folder, on a thread of its own: every folder of the workspace is watched on its
//! own (inotify here, FSEvents on macOS), except `.git` and the folders the checkpoints ignore
//! (`node_modules/`, a `.gitignore`d `target/`), which are never walked: a build writing 10,000
//! files there costs no event. Events are gathered until the workspace has been quiet for
//! SETTLE (or the oldest waited MAX_WAIT: a storm still reports), then handed over as one batch
//! of paths, each with when it first changed. Nothing wakes Neovim while nothing changes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, EventKind, ModifyKind};
use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

/// Quiet this long after the last event: the write has settled (an editor's or an agent's
/// write is a truncate and a few writes, or a temporary file renamed over).
const SETTLE: Duration = Duration::from_millis(60);
/// A batch is handed over at the latest this long after its first event, quiet or not.
const MAX_WAIT: Duration = Duration::from_millis(200);
/// Folders watched at most: beyond, the watch gives up (the turn-end scan still sees all).
const MAX_FOLDERS: usize = 50_000;

/// A path that changed (relative to the folder, as bytes) and when first, in ms since the epoch.
pub type Changed = (Vec<u8>, u64);

/// A folder being watched; dropping it stops the watch and its thread.
pub struct Watch {
    stop: Option<Sender<notify::Result<Event>>>,
    /// How many folders are watched.
    pub folders: usize,
    /// Why the watch gave up (the system's watch limit), if it did: the turn-end scan is left.
    pub gave_up: Option<String>,
    /// How long setting it up took, in ms.
    pub setup_ms: u64,
}

/// What the thread is told to stop by (no event of notify's says "stop").
const STOP: &str = "pi-ide: stop";

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(Err(notify::Error::generic(STOP)));
        }
    }
}

/// Watches `folder` (absolute, canonical), skipping the folders in `skip` (absolute) and every
/// `.git`; `settled` gets each batch, on the watch's thread.
pub fn start(folder: &Path, skip: HashSet<PathBuf>, settled: impl FnMut(Vec<Changed>) + Send + 'static) -> Result<Watch, String> {
    let began = Instant::now();
    let (tx, rx) = channel::<notify::Result<Event>>();
    let mut watcher = notify::recommended_watcher(tx.clone()).map_err(|e| format!("cannot watch {}: {e}", folder.display()))?;
    let mut tree = Tree { root: folder.to_path_buf(), skip, folders: 0 };
    let gave_up = tree.add(&mut watcher, folder).err();
    let mut watch = Watch { stop: None, folders: tree.folders, gave_up, setup_ms: began.elapsed().as_millis() as u64 };
    if watch.gave_up.is_none() {
        spawn(rx, watcher, tree, settled)?;
        watch.stop = Some(tx);
    }
    Ok(watch)
}

/// The watched tree: which folders are left out, how many are watched.
struct Tree {
    root: PathBuf,
    skip: HashSet<PathBuf>,
    folders: usize,
}

impl Tree {
    fn skipped(&self, dir: &Path) -> bool {
        dir.file_name().is_some_and(|n| n == ".git" || n == "node_modules") || self.skip.contains(dir)
    }

    /// Watches `dir` and the folders below it (no link followed); the files found in it, for a
    /// folder that was just made (an agent's `mkdir -p src/new && write`: written before the
    /// watch was there).
    fn add(&mut self, w: &mut impl Watcher, dir: &Path) -> Result<Vec<PathBuf>, String> {
        let mut files = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            if self.skipped(&d) {
                continue;
            }
            if self.folders >= MAX_FOLDERS {
                return Err(format!("over {MAX_FOLDERS} folders to watch"));
            }
            w.watch(&d, RecursiveMode::NonRecursive).map_err(limit_reached)?;
            self.folders += 1;
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => todo.push(entry.path()),
                    Ok(_) => files.push(entry.path()),
                    Err(_) => {}
                }
            }
        }
        Ok(files)
    }

    fn relative(&self, p: &Path) -> Option<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let rel = p.strip_prefix(&self.root).ok()?;
        let skipped = rel.ancestors().any(|a| a.file_name().is_some_and(|n| n == ".git") || self.skip.contains(&self.root.join(a)));
        (!rel.as_os_str().is_empty() && !skipped).then(|| rel.as_os_str().as_bytes().to_vec())
    }
}

fn limit_reached(e: notify::Error) -> String {
    match e.kind {
        notify::ErrorKind::MaxFilesWatch => {
            "the system's limit of watched folders is reached (fs.inotify.max_user_watches)".to_string()
        }
        _ => format!("cannot watch: {e}"),
    }
}

/// Whether `kind` may have changed a file's content or existence (a read does not).
fn writes(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(notify::event::AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) | EventKind::Other => false,
        _ => true,
    }
}

fn spawn(rx: Receiver<notify::Result<Event>>, mut watcher: RecommendedWatcher, mut tree: Tree, mut settled: impl FnMut(Vec<Changed>) + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name("pi-ide-watch".into())
        .spawn(move || {
            let mut batch: HashMap<Vec<u8>, u64> = HashMap::new();
            let mut first: Option<Instant> = None;
            loop {
                // Blocked until an event while nothing is gathered: no wake-up at all.
                let got = match first {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(f) => rx.recv_timeout(SETTLE.min(MAX_WAIT.saturating_sub(f.elapsed()))),
                };
                match got {
                    Ok(Err(e)) if e.to_string().contains(STOP) => return,
                    Ok(Ok(ev)) if writes(&ev.kind) => {
                        note(&mut tree, &mut watcher, &ev, &mut batch);
                        first.get_or_insert_with(Instant::now);
                        if first.is_some_and(|f| f.elapsed() < MAX_WAIT) {
                            continue;
                        }
                    }
                    Ok(_) => continue,
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                // Quiet for SETTLE, or the batch is MAX_WAIT old.
                if !batch.is_empty() {
                    settled(batch.drain().collect());
                }
                first = None;
            }
        })
        .map_err(|e| format!("cannot start the watch: {e}"))?;
    Ok(())
}

/// Adds the paths of `ev` to `batch`; a folder made is watched, and its files added.
fn note(tree: &mut Tree, w: &mut impl Watcher, ev: &Event, batch: &mut HashMap<Vec<u8>, u64>) {
    let now = crate::checkpoint::now_ms();
    for p in &ev.paths {
        let made_dir = matches!(ev.kind, EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)))
            && std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        if made_dir {
            if tree.relative(p).is_some() {
                for f in tree.add(w, p).unwrap_or_default() {
                    if let Some(rel) = tree.relative(&f) {
                        batch.entry(rel).or_insert(now);
                    }
                }
            }
            continue;
        }
        if let Some(rel) = tree.relative(p) {
            batch.entry(rel).or_insert(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn a_write_settles_into_one_batch_and_an_ignored_folder_is_not_watched() {
        let dir = std::env::temp_dir().join(format!("pi-ide-watch-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("skip")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let (tx, rx) = channel();
        let skip = [dir.join("skip")].into_iter().collect();
        let w = super::start(&dir, skip, move |b| tx.send(b).unwrap()).unwrap();
        assert_eq!(w.folders, 1);
        std::fs::write(dir.join("skip/x"), "x").unwrap();
        std::fs::write(dir.join("a.txt"), "one").unwrap();
        std::fs::write(dir.join("a.txt"), "two").unwrap();
        let batch = rx.recv_timeout(Duration::from_secs(5)).expect("a batch");
        assert_eq!(batch.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(), vec![b"a.txt".to_vec()]);
        std::fs::create_dir(dir.join("new")).unwrap();
        std::fs::write(dir.join("new/b.txt"), "b").unwrap();
        let mut seen = Vec::new();
        while let Ok(b) = rx.recv_timeout(Duration::from_secs(2)) {
            seen.extend(b.into_iter().map(|(p, _)| p));
        }
        assert!(seen.contains(&b"new/b.txt".to_vec()), "{seen:?}");
        drop(w);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
