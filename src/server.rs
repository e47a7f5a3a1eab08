//! The server's life: bind a free loopback port, run the accept loop on a background thread
//! with its own tokio runtime, keep the lockfile, and stop in the order the protocol needs
//! (answer parked calls, Close frames, short wait, detach the waker, remove the lockfile).

use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::bridge::Shared;
use crate::events::Event;
use crate::limits::Handshakes;
use crate::transport::websocket;
use crate::lockfile::{self, LockInfo};
use crate::{auth, debug, error, info};

/// What Lua passes to `start`.
#[derive(Debug, Clone)]
pub struct Options {
    pub ide_name: String,
    pub workspace_folders: Vec<String>,
    /// Names (prefixes) of editors whose dead lockfiles we may clean up.
    pub own_names: Vec<String>,
    /// How long Lua may take on getDiagnostics before Rust answers from the last answer.
    pub diagnostics_timeout: Duration,
    /// Also serve Claude Code: its lockfile folder and its auth header.
    pub claude_code: bool,
}

pub struct Server {
    pub shared: Arc<Shared>,
    pub port: u16,
    pub lock_path: PathBuf,
    /// The same lockfile in Claude Code's folder, when its compatibility is on.
    pub claude_lock_path: Option<PathBuf>,
    /// Every folder we keep a lockfile in (ours first).
    lock_dirs: Vec<PathBuf>,
    lock: Mutex<LockInfo>,
    shutdown: watch::Sender<bool>,
    done: std::sync::mpsc::Receiver<()>,
    debounce: Option<std::thread::JoinHandle<()>>,
}

/// How long `stop` waits for connection tasks to finish: to read a message that has begun to
/// arrive, answer it and send their Close (each step bounded; see connection.rs). Only an
/// openDiff still arriving takes more than a few milliseconds.
pub const STOP_GRACE: Duration = Duration::from_millis(
    websocket::DRAIN_MAX.as_millis() as u64 + 3 * websocket::FLUSH_GRACE.as_millis() as u64,
);

impl Server {
    /// Binds, spawns the server thread and writes the lockfile. Errors are sentences for the user.
    /// On an error nothing is left running and the waker is detached (Lua may close its handle).
    pub fn start(opts: Options, shared: Arc<Shared>) -> Result<Server, String> {
        let started = Self::start_threads(opts, shared.clone());
        if started.is_err() {
            shared.selection.stop();
            shared.events.waker.detach();
        }
        started
    }

    fn start_threads(opts: Options, shared: Arc<Shared>) -> Result<Server, String> {
        let listener = StdListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();

        let mut lock_dirs = vec![lockfile::lock_dir()?];
        if opts.claude_code {
            lock_dirs.push(lockfile::claude_dir()?);
        }
        let own = opts.own_names.clone();
        for dir in &lock_dirs {
            for p in
                lockfile::remove_stale(dir, |name| own.iter().any(|o| name.starts_with(o.as_str())))
            {
                info!("removed stale lockfile {}", p.display());
            }
        }
        let lock = LockInfo {
            pid: std::process::id(),
            workspace_folders: opts.workspace_folders.clone(),
            ide_name: opts.ide_name.clone(),
            transport: "ws".into(),
            auth_token: auth::new_token(),
        };

        // Blocking work (staging and diffing large proposals) gets at most three threads: every
        // extra thread would keep a malloc arena of its own alive in Neovim's process. Staging
        // takes one at a time (review.rs), so a read stuck on a hung mount leaves two.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(3)
            .build()
            .map_err(|e| format!("cannot start the server runtime: {e}"))?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (done_tx, done) = std::sync::mpsc::channel();
        let mut auth_headers = vec![auth::HEADER];
        if opts.claude_code {
            auth_headers.push(auth::CLAUDE_HEADER);
        }
        let config = websocket::Config {
            token: lock.auth_token.clone(),
            limits: crate::limits::Limits::for_this_process(),
            auth_headers,
        };
        let task_shared = shared.clone();
        std::thread::Builder::new()
            .name("pi-ide-server".into())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runtime.block_on(accept_loop(listener, task_shared, config, shutdown_rx))
                }));
                if result.is_err() {
                    error!("the server thread panicked; the server is down");
                }
                // Whatever is left is cancelled; a worker stuck on a hung mount is not waited for
                // (dropping the runtime would, and Neovim would not quit).
                runtime.shutdown_background();
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("cannot start the server thread: {e}"))?;

        // The selection debounce: a small thread of its own (see selection.rs for why).
        let debounce_shared = shared.clone();
        let debounce = std::thread::Builder::new()
            .name("pi-ide-debounce".into())
            .spawn(move || {
                while debounce_shared.selection.wait_due() {
                    if !debounce_shared.events.push_blocking(Event::SelectionDue) {
                        return;
                    }
                }
            });
        let debounce = match debounce {
            Ok(t) => t,
            Err(e) => {
                let _ = shutdown.send(true);
                let _ = done.recv_timeout(STOP_GRACE);
                return Err(format!("cannot start the debounce thread: {e}"));
            }
        };
        let mut paths = Vec::new();
        for dir in &lock_dirs {
            match lockfile::write(dir, port, &lock) {
                Ok(p) => paths.push(p),
                Err(e) => {
                    for p in &paths {
                        lockfile::remove(p, &lock.auth_token);
                    }
                    let _ = shutdown.send(true);
                    let _ = done.recv_timeout(STOP_GRACE);
                    shared.selection.stop();
                    let _ = debounce.join();
                    return Err(e);
                }
            }
        }
        let lock_path = paths.remove(0);
        let claude_lock_path = paths.pop();
        info!(
            "listening on 127.0.0.1:{port}, lockfile {}",
            lock_path.display()
        );
        Ok(Server {
            shared,
            port,
            lock_path,
            claude_lock_path,
            lock_dirs,
            lock: Mutex::new(lock),
            shutdown,
            done,
            debounce: Some(debounce),
        })
    }

    pub fn token(&self) -> String {
        self.lock.lock().auth_token.clone()
    }

    pub fn lock_info(&self) -> LockInfo {
        self.lock.lock().clone()
    }

    /// Checks that our lockfiles are there, private, and still ours (for :checkhealth).
    pub fn check_lockfiles(&self) -> Vec<(PathBuf, Result<(), String>)> {
        use std::os::unix::fs::PermissionsExt;
        let lock = self.lock.lock().clone();
        let mut paths = vec![self.lock_path.clone()];
        paths.extend(self.claude_lock_path.clone());
        paths
            .into_iter()
            .map(|p| {
                let check = (|| {
                    let meta = std::fs::metadata(&p).map_err(|e| format!("missing: {e}"))?;
                    let mode = meta.permissions().mode() & 0o777;
                    if mode != 0o600 {
                        return Err(format!("mode is {mode:o}, not 600"));
                    }
                    let text = std::fs::read(&p).map_err(|e| format!("unreadable: {e}"))?;
                    let on_disk: LockInfo = serde_json::from_slice(&text)
                        .map_err(|e| format!("not a lockfile: {e}"))?;
                    if on_disk != lock {
                        return Err(
                            "it does not match this server (token, pid or folders differ)".into(),
                        );
                    }
                    Ok(())
                })();
                (p, check)
            })
            .collect()
    }

    /// Each lock folder, and why it is no place for the token if it is not (for :checkhealth).
    pub fn check_lock_dirs(&self) -> Vec<(PathBuf, Option<String>)> {
        (self.lock_dirs.iter())
            .map(|d| (d.clone(), lockfile::check_dir(d)))
            .collect()
    }

    /// Rewrites the lockfile when the folders changed. Returns whether it wrote.
    pub fn set_workspace_folders(&self, folders: Vec<String>) -> Result<bool, String> {
        let mut lock = self.lock.lock();
        if lock.workspace_folders == folders {
            return Ok(false);
        }
        lock.workspace_folders = folders;
        for dir in &self.lock_dirs {
            lockfile::write(dir, self.port, &lock)?;
        }
        Ok(true)
    }

    /// Stops in protocol order. Every parked call is answered before any Close frame: each
    /// connection reads what has begun to arrive, answers it and every call of its client
    /// still parked, then sends its Close (transport/websocket.rs, `close`).
    pub fn stop(mut self) {
        let shared = &self.shared;
        shared.selection.stop();
        shared.begin_stopping();
        shared.events.close();
        let _ = self.shutdown.send(true);
        if self.done.recv_timeout(STOP_GRACE + Duration::from_millis(500)).is_err() {
            debug!(
                "server thread still busy after {:?}; leaving it",
                STOP_GRACE
            );
        }
        if let Some(t) = self.debounce.take() {
            let _ = t.join();
        }
        shared.events.waker.detach();
        // Proposals Lua did not get to read; and calls whose connection never got to close.
        shared.abandon_all();
        let _ = std::fs::remove_dir_all(&shared.stage_dir);
        let token = self.lock.lock().auth_token.clone();
        lockfile::remove(&self.lock_path, &token);
        if let Some(p) = &self.claude_lock_path {
            lockfile::remove(p, &token);
        }
        info!("stopped; removed {}", self.lock_path.display());
    }
}

async fn accept_loop(
    listener: StdListener,
    shared: Arc<Shared>,
    config: websocket::Config,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            error!("cannot use the listening socket: {e}");
            return;
        }
    };
    let config = Arc::new(config);
    let handshakes = Arc::new(Handshakes::new(config.limits));
    shared.set_runtime(tokio::runtime::Handle::current());
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let client = shared.next_id();
                    debug!("tcp connection {client} from {peer}");
                    tasks.spawn(websocket::serve(stream, client, shared.clone(), config.clone(), shutdown.clone(), handshakes.clone()));
                }
                // Out of file descriptors and the like: wait a moment instead of spinning.
                Err(e) => {
                    error!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}
