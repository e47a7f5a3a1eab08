//! Resolving a path the agent chose to its real path (through links). `realpath` can hang for
//! minutes on an NFS or autofs mount that does not answer, so it is never run on Neovim's main
//! thread or on the server's runtime thread: a small pool of workers resolves, a caller waits
//! at most a deadline (and then treats the path as unresolved), and when every worker is stuck
//! on such a mount, new requests fail at once instead of piling up threads or memory.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;

/// How long Neovim's main thread waits for a path (a healthy one takes microseconds).
pub const MAIN_THREAD_DEADLINE: Duration = Duration::from_millis(200);
/// How long a call of the agent's waits (getDiagnostics with a uri).
pub const CALL_DEADLINE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Real(PathBuf),
    /// It does not exist (or cannot be resolved).
    Missing,
    /// No answer within the deadline, or every worker is stuck.
    TimedOut,
}

enum Reply {
    Blocking(SyncSender<Option<PathBuf>>),
    Async(tokio::sync::oneshot::Sender<Option<PathBuf>>),
}

struct Job {
    path: PathBuf,
    reply: Reply,
}

type ResolveFn = fn(&Path) -> Option<PathBuf>;

/// A pool of `workers` threads (started on first use) with room for `queue` waiting jobs.
pub struct Resolver {
    workers: usize,
    queue: usize,
    resolve: ResolveFn,
    jobs: OnceLock<Option<SyncSender<Job>>>,
}

impl Resolver {
    pub const fn new(workers: usize, queue: usize, resolve: ResolveFn) -> Resolver {
        Resolver {
            workers,
            queue,
            resolve,
            jobs: OnceLock::new(),
        }
    }

    fn sender(&self) -> Option<&SyncSender<Job>> {
        self.jobs
            .get_or_init(|| {
                let (tx, rx) = mpsc::sync_channel::<Job>(self.queue);
                let rx = Arc::new(Mutex::new(rx));
                let mut started = 0;
                for i in 0..self.workers {
                    let (rx, resolve) = (rx.clone(), self.resolve);
                    let spawned = std::thread::Builder::new()
                        .name(format!("pi-ide-resolve-{i}"))
                        .spawn(move || work(&rx, resolve));
                    started += spawned.is_ok() as usize;
                }
                (started > 0).then_some(tx)
            })
            .as_ref()
    }

    fn submit(&self, path: &Path, reply: Reply) -> bool {
        let Some(tx) = self.sender() else {
            return false;
        };
        let job = Job {
            path: path.to_owned(),
            reply,
        };
        match tx.try_send(job) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
        }
    }

    /// Resolves `path`, waiting at most `deadline` (for threads that may block).
    pub fn blocking(&self, path: &Path, deadline: Duration) -> Resolved {
        let (tx, rx) = mpsc::sync_channel(1);
        if !self.submit(path, Reply::Blocking(tx)) {
            return Resolved::TimedOut;
        }
        match rx.recv_timeout(deadline) {
            Ok(Some(real)) => Resolved::Real(real),
            Ok(None) => Resolved::Missing,
            Err(_) => Resolved::TimedOut,
        }
    }

    /// Resolves `path`, waiting at most `deadline`, without blocking the runtime.
    pub async fn resolve(&self, path: &Path, deadline: Duration) -> Resolved {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if !self.submit(path, Reply::Async(tx)) {
            return Resolved::TimedOut;
        }
        match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(Some(real))) => Resolved::Real(real),
            Ok(Ok(None)) => Resolved::Missing,
            _ => Resolved::TimedOut,
        }
    }
}

fn work(jobs: &Mutex<Receiver<Job>>, resolve: ResolveFn) {
    loop {
        let job = match jobs.lock().recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let real = resolve(&job.path);
        // The caller may have given up waiting: nothing to do then.
        match job.reply {
            Reply::Blocking(tx) => {
                let _ = tx.try_send(real);
            }
            Reply::Async(tx) => {
                let _ = tx.send(real);
            }
        }
    }
}

fn canonicalize(path: &Path) -> Option<PathBuf> {
    crate::support::failpoint::hang_if_under(path);
    std::fs::canonicalize(path).ok()
}

/// The resolver every agent-chosen path goes through.
pub static PATHS: Resolver = Resolver::new(2, 8, canonicalize);

fn exists(path: &Path) -> Option<PathBuf> {
    crate::support::failpoint::hang_if_under(path);
    // Through a final link, as the read that follows will go.
    std::fs::metadata(path).ok().map(|_| path.to_owned())
}

/// Looks at a path before a worker reads it (openDiff's staging): a mount that does not answer
/// is found out within a deadline, without tying up the threads that stage other reviews.
pub static PROBE: Resolver = Resolver::new(2, 8, exists);

/// How long the probe of an openDiff's path may take.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn hangs_on_hung(path: &Path) -> Option<PathBuf> {
        if path.starts_with("/hung") {
            std::thread::sleep(Duration::from_secs(3600));
        }
        std::fs::canonicalize(path).ok()
    }

    #[test]
    fn a_hung_path_costs_the_caller_at_most_the_deadline_and_stuck_workers_fail_fast() {
        static R: Resolver = Resolver::new(2, 2, hangs_on_hung);
        let me = std::env::current_exe().unwrap();
        assert_eq!(
            R.blocking(&me, Duration::from_secs(30)),
            Resolved::Real(std::fs::canonicalize(&me).unwrap())
        );
        assert_eq!(R.blocking(Path::new("/no/such/file"), Duration::from_secs(30)), Resolved::Missing);
        // Each hung path holds the caller no longer than its deadline.
        for _ in 0..2 {
            let t = Instant::now();
            assert_eq!(R.blocking(Path::new("/hung/x"), Duration::from_millis(50)), Resolved::TimedOut);
            assert!(t.elapsed() < Duration::from_secs(5));
        }
        // Both workers are stuck now: two more jobs fill the queue, and then every new
        // request fails at once rather than waiting.
        for _ in 0..2 {
            R.blocking(Path::new("/hung/y"), Duration::from_millis(1));
        }
        let t = Instant::now();
        assert_eq!(R.blocking(&me, Duration::from_secs(30)), Resolved::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn the_async_form_never_blocks_the_runtime() {
        static R: Resolver = Resolver::new(1, 4, hangs_on_hung);
        let t = Instant::now();
        assert_eq!(R.resolve(Path::new("/hung/z"), Duration::from_millis(50)).await, Resolved::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(R.resolve(Path::new("/"), Duration::from_millis(50)).await, Resolved::TimedOut, "its one worker is stuck");
    }
}
