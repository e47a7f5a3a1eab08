//! The server's life: bind a free loopback port, run the accept loop on a background thread
//! with its own tokio runtime, keep the lockfile, and stop in the order the protocol needs
//! (answer parked calls, Close frames, short wait, detach the waker, remove the lockfile).

use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use crate::bridge::Shared;
use crate::events::Event;
use crate::limits::Handshakes;
use crate::transport::websocket;
use crate::lockfile::copilot::{self as copilot_lock, CopilotLock};
use crate::lockfile::{self, LockInfo};
use crate::transport::http;
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
    /// Also serve the Copilot CLI (transport/http/): its socket and lockfile. None: nothing of
    /// it runs.
    pub copilot: Option<CopilotOptions>,
}

#[derive(Debug, Clone)]
pub struct CopilotOptions {
    /// A private folder for the socket (Neovim's run directory).
    pub socket_dir: PathBuf,
    /// Write `isTrusted` (the user said the workspace is trusted).
    pub trust_workspace: bool,
}

/// The Copilot CLI's side of a running server.
pub struct CopilotSide {
    pub socket_path: PathBuf,
    pub lock_path: PathBuf,
    lock_dir: PathBuf,
    lock: Mutex<CopilotLock>,
}

pub struct Server {
    pub shared: Arc<Shared>,
    pub port: u16,
    pub lock_path: PathBuf,
    /// The same lockfile in Claude Code's folder, when its compatibility is on (from the start,
    /// or since an agent was launched that needs it: `serve_claude`).
    claude_lock_path: OnceLock<PathBuf>,
    /// Whether Claude Code's auth header is accepted (the WebSocket side reads it).
    claude_accepted: Arc<AtomicBool>,
    /// Every folder we keep a lockfile in (ours first; then Claude's, private ones).
    lock_dirs: Mutex<Vec<PathBuf>>,
    /// Folders `add_lock_dir` created: removed on stop when nothing else is left in them.
    created_dirs: Mutex<Vec<PathBuf>>,
    copilot: OnceLock<CopilotSide>,
    /// Hands the Copilot socket to the server thread when it is turned on after the start.
    copilot_later: Mutex<Option<oneshot::Sender<std::os::unix::net::UnixListener>>>,
    /// Names (prefixes) of editors whose dead lockfiles we may clean up.
    own_names: Vec<String>,
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
        let (listener, port) = bind_loopback()?;
        let copilot_socket = opts.copilot.as_ref().map(bind_copilot).transpose()?;
        let lock_dirs = lock_dirs(&opts)?;
        sweep_stale(&lock_dirs, &opts);
        let lock = LockInfo {
            pid: std::process::id(),
            workspace_folders: opts.workspace_folders.clone(),
            ide_name: opts.ide_name.clone(),
            transport: "ws".into(),
            auth_token: auth::new_token(),
        };
        let (copilot_listener, copilot_path) = match copilot_socket {
            Some((l, p)) => (Some(l), Some(p)),
            None => (None, None),
        };
        let claude_accepted = Arc::new(AtomicBool::new(opts.claude_code));
        let (copilot_tx, copilot_rx) = oneshot::channel();
        let copilot_later = match copilot_listener {
            Some(l) => {
                let _ = copilot_tx.send(l);
                None
            }
            None => Some(copilot_tx),
        };
        let sockets = Sockets { ws: listener, copilot: copilot_rx, claude: claude_accepted.clone() };
        let (shutdown, done) = spawn_runtime(&lock, sockets, shared.clone())?;
        let mut running = Running { shared: &shared, shutdown: &shutdown, done: &done, debounce: None };
        running.debounce = Some(spawn_debounce(&shared).inspect_err(|_| running.halt())?);
        let paths = write_lockfiles(&lock_dirs, port, &lock).inspect_err(|_| running.halt())?;
        let copilot = match (&opts.copilot, copilot_path) {
            (Some(c), Some(socket)) => Some(
                write_copilot_lock(c, socket, &lock, &opts.workspace_folders).inspect_err(|_| {
                    remove_lockfiles(&paths, &lock.auth_token);
                    running.halt();
                })?,
            ),
            _ => None,
        };
        let debounce = running.debounce.take();
        let mut paths = paths.into_iter();
        let lock_path = paths.next().ok_or("no lock folder")?;
        let claude_lock_path = OnceLock::new();
        if let Some(p) = paths.next() {
            let _ = claude_lock_path.set(p);
        }
        let copilot = copilot.map(OnceLock::from).unwrap_or_default();
        info!("listening on 127.0.0.1:{port}, lockfile {}", lock_path.display());
        Ok(Server {
            shared,
            port,
            lock_path,
            claude_lock_path,
            claude_accepted,
            lock_dirs: Mutex::new(lock_dirs),
            created_dirs: Mutex::new(Vec::new()),
            copilot,
            copilot_later: Mutex::new(copilot_later),
            own_names: opts.own_names.clone(),
            lock: Mutex::new(lock),
            shutdown,
            done,
            debounce,
        })
    }

    pub fn token(&self) -> String {
        self.lock.lock().auth_token.clone()
    }

    pub fn lock_info(&self) -> LockInfo {
        self.lock.lock().clone()
    }

    /// Our lockfile in Claude Code's folder, when Claude Code is served.
    pub fn claude_lock_path(&self) -> Option<&PathBuf> {
        self.claude_lock_path.get()
    }

    /// The Copilot CLI's side, when it is served.
    pub fn copilot(&self) -> Option<&CopilotSide> {
        self.copilot.get()
    }

    /// Every lockfile of ours in the pi-ide format (ours, Claude Code's, private ones).
    fn lock_paths(&self) -> Vec<PathBuf> {
        self.lock_dirs.lock().iter().map(|d| lockfile::path_for(d, self.port)).collect()
    }

    /// Keeps our lockfile in one more folder too (kept in step, removed on stop): a private
    /// folder that only an agent launched from this Neovim reads. Returns the lockfile's path.
    pub fn add_lock_dir(&self, dir: &Path) -> Result<PathBuf, String> {
        // The lock info first: set_workspace_folders holds it while it takes lock_dirs.
        let lock = self.lock.lock().clone();
        let mut dirs = self.lock_dirs.lock();
        if !dirs.iter().any(|d| d == dir) {
            let existed = dir.exists();
            lockfile::write(dir, self.port, &lock)?;
            dirs.push(dir.to_path_buf());
            if !existed {
                self.created_dirs.lock().push(dir.to_path_buf());
            }
        }
        Ok(lockfile::path_for(dir, self.port))
    }

    /// Serves Claude Code from now on (its lockfile and auth header), for a Claude Code that
    /// Neovim launches while the `claude_code` option is off. Returns its lockfile's path.
    pub fn serve_claude(&self) -> Result<PathBuf, String> {
        if let Some(p) = self.claude_lock_path.get() {
            return Ok(p.clone());
        }
        let path = self.add_lock_dir(&lockfile::claude_dir()?)?;
        self.claude_accepted.store(true, Ordering::Relaxed);
        let _ = self.claude_lock_path.set(path.clone());
        info!("serving Claude Code too: lockfile {}", path.display());
        Ok(path)
    }

    /// Serves the Copilot CLI from now on (its socket and lockfile), for a CLI that Neovim
    /// launches while the `copilot` option is off.
    pub fn serve_copilot(&self, opts: &CopilotOptions) -> Result<&CopilotSide, String> {
        if let Some(c) = self.copilot.get() {
            return Ok(c);
        }
        let (listener, socket) = bind_copilot(opts)?;
        if let Ok(dir) = copilot_lock::dir() {
            let is_ours = |name: &str| self.own_names.iter().any(|o| name.starts_with(o.as_str()));
            for p in copilot_lock::remove_stale(&dir, is_ours) {
                info!("removed stale lockfile {}", p.display());
            }
        }
        let lock = self.lock.lock().clone();
        let side = write_copilot_lock(opts, socket, &lock, &lock.workspace_folders)?;
        // Taken last: a failure above leaves it for the next try.
        let handed = match self.copilot_later.lock().take() {
            Some(sender) => sender.send(listener).is_ok(),
            None => false,
        };
        if !handed {
            copilot_lock::remove(&side.lock_path, &lock.auth_token);
            let _ = std::fs::remove_file(&side.socket_path);
            return Err("the server thread has stopped".into());
        }
        Ok(self.copilot.get_or_init(|| side))
    }

    /// Checks that our lockfiles are there, private, and still ours (for :checkhealth).
    pub fn check_lockfiles(&self) -> Vec<(PathBuf, Result<(), String>)> {
        use std::os::unix::fs::PermissionsExt;
        let lock = self.lock.lock().clone();
        self.lock_paths()
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
            .chain(self.copilot().map(|c| {
                (c.lock_path.clone(), copilot_lock::check(&c.lock_path, &c.lock.lock()))
            }))
            .collect()
    }

    /// Each lock folder, and why it is no place for the token if it is not (for :checkhealth).
    pub fn check_lock_dirs(&self) -> Vec<(PathBuf, Option<String>)> {
        let mut dirs = self.lock_dirs.lock().clone();
        dirs.extend(self.copilot().map(|c| c.lock_dir.clone()));
        dirs.iter().map(|d| (d.clone(), lockfile::check_dir(d))).collect()
    }

    /// Rewrites the lockfiles when the folders changed. Returns whether it wrote. Every file is
    /// tried; the first error is returned (and the next call tries again).
    pub fn set_workspace_folders(&self, folders: Vec<String>) -> Result<bool, String> {
        let mut lock = self.lock.lock();
        if lock.workspace_folders == folders {
            return Ok(false);
        }
        let mut next = lock.clone();
        next.workspace_folders = folders.clone();
        let mut errors: Vec<String> = Vec::new();
        for dir in self.lock_dirs.lock().iter() {
            errors.extend(lockfile::write(dir, self.port, &next).err());
        }
        if let Some(c) = self.copilot() {
            let mut copilot = c.lock.lock();
            copilot.workspace_folders = folders;
            copilot.timestamp = copilot_lock::now_ms();
            errors.extend(copilot_lock::rewrite(&c.lock_dir, &c.lock_path, &copilot).err());
        }
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => {
                *lock = next;
                Ok(true)
            }
        }
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
        remove_lockfiles(&self.lock_paths(), &token);
        for dir in self.created_dirs.lock().iter() {
            // Only when empty: another file there is not ours to remove.
            let _ = std::fs::remove_dir(dir);
        }
        if let Some(c) = self.copilot() {
            copilot_lock::remove(&c.lock_path, &token);
            let _ = std::fs::remove_file(&c.socket_path);
        }
        info!("stopped; removed {}", self.lock_path.display());
    }
}

/// What is running while `start` is not done yet, to undo it on an error.
struct Running<'a> {
    shared: &'a Arc<Shared>,
    shutdown: &'a watch::Sender<bool>,
    done: &'a std::sync::mpsc::Receiver<()>,
    debounce: Option<std::thread::JoinHandle<()>>,
}

impl Running<'_> {
    fn halt(&mut self) {
        let _ = self.shutdown.send(true);
        let _ = self.done.recv_timeout(STOP_GRACE);
        self.shared.selection.stop();
        if let Some(t) = self.debounce.take() {
            let _ = t.join();
        }
    }
}

fn bind_loopback() -> Result<(StdListener, u16), String> {
    let listener = StdListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    Ok((listener, port))
}

/// The Copilot CLI's socket, in a folder only this user can enter (the socket is 0600 too).
fn bind_copilot(opts: &CopilotOptions) -> Result<(std::os::unix::net::UnixListener, PathBuf), String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = &opts.socket_dir;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the socket folder {}: {e}", dir.display()))?;
    if let Some(problem) = lockfile::check_dir(dir) {
        return Err(format!("the Copilot socket cannot go there: {problem}"));
    }
    let path = dir.join(format!("pi-ide-copilot.{}.sock", std::process::id()));
    // sun_path holds 108 bytes with its NUL.
    if path.as_os_str().len() > 107 {
        return Err(format!("the socket path {} is too long for a Unix socket", path.display()));
    }
    // Ours by name (our pid): left by a server of this process that did not stop.
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok((listener, path))
}

fn lock_dirs(opts: &Options) -> Result<Vec<PathBuf>, String> {
    let mut dirs = vec![lockfile::lock_dir()?];
    if opts.claude_code {
        dirs.push(lockfile::claude_dir()?);
    }
    Ok(dirs)
}

/// Lockfiles of editors like us that died without removing them.
fn sweep_stale(lock_dirs: &[PathBuf], opts: &Options) {
    let own = &opts.own_names;
    let is_ours = |name: &str| own.iter().any(|o| name.starts_with(o.as_str()));
    let mut removed: Vec<PathBuf> = lock_dirs
        .iter()
        .flat_map(|dir| lockfile::remove_stale(dir, is_ours))
        .collect();
    if opts.copilot.is_some() {
        if let Ok(dir) = copilot_lock::dir() {
            removed.extend(copilot_lock::remove_stale(&dir, is_ours));
        }
    }
    for p in removed {
        info!("removed stale lockfile {}", p.display());
    }
}

/// What the server thread listens on: the WebSocket port, and the Copilot socket when (or
/// once) it is on.
struct Sockets {
    ws: StdListener,
    copilot: oneshot::Receiver<std::os::unix::net::UnixListener>,
    /// Whether Claude Code's header is accepted (it may be turned on later).
    claude: Arc<AtomicBool>,
}

/// The server thread: its own single-threaded runtime running the WebSocket accept loop and,
/// when on, the Copilot transport. Returns the stop signal and what tells it has stopped.
fn spawn_runtime(
    lock: &LockInfo,
    sockets: Sockets,
    shared: Arc<Shared>,
) -> Result<(watch::Sender<bool>, std::sync::mpsc::Receiver<()>), String> {
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
    let Sockets { ws: listener, copilot, claude } = sockets;
    let limits = crate::limits::Limits::for_this_process();
    let config = websocket::Config { token: lock.auth_token.clone(), limits, claude };
    let http_config = http::Config { token: lock.auth_token.clone(), limits };
    let main = async move {
        let ws = accept_loop(listener, shared.clone(), config, shutdown_rx.clone());
        let copilot = async {
            let mut stop = shutdown_rx.clone();
            let l = tokio::select! {
                l = copilot => match l { Ok(l) => l, Err(_) => return },
                _ = stop.changed() => return,
            };
            match tokio::net::UnixListener::from_std(l) {
                Ok(l) => http::serve(l, shared.clone(), http_config, shutdown_rx.clone()).await,
                Err(e) => error!("cannot use the Copilot socket: {e}"),
            }
        };
        tokio::join!(ws, copilot);
    };
    std::thread::Builder::new()
        .name("pi-ide-server".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                runtime.block_on(main)
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
    Ok((shutdown, done))
}

/// The selection debounce: a small thread of its own (see selection.rs for why).
fn spawn_debounce(shared: &Arc<Shared>) -> Result<std::thread::JoinHandle<()>, String> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("pi-ide-debounce".into())
        .spawn(move || {
            while shared.selection.wait_due() {
                if !shared.events.push_blocking(Event::SelectionDue) {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start the debounce thread: {e}"))
}

/// Our lockfile in every folder (ours first); on an error, none is left behind.
fn write_lockfiles(dirs: &[PathBuf], port: u16, lock: &LockInfo) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    for dir in dirs {
        match lockfile::write(dir, port, lock) {
            Ok(p) => paths.push(p),
            Err(e) => {
                remove_lockfiles(&paths, &lock.auth_token);
                return Err(e);
            }
        }
    }
    Ok(paths)
}

fn remove_lockfiles(paths: &[PathBuf], token: &str) {
    for p in paths {
        lockfile::remove(p, token);
    }
}

fn write_copilot_lock(
    c: &CopilotOptions,
    socket_path: PathBuf,
    lock: &LockInfo,
    folders: &[String],
) -> Result<CopilotSide, String> {
    let lock_dir = copilot_lock::dir()?;
    let copilot = CopilotLock::new(&socket_path, &lock.auth_token, folders.to_vec(), &lock.ide_name, c.trust_workspace);
    let lock_path = copilot_lock::write(&lock_dir, &copilot_lock::new_path(&lock_dir), &copilot)
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&socket_path);
        })?;
    info!("copilot: listening on {}, lockfile {}", socket_path.display(), lock_path.display());
    Ok(CopilotSide { socket_path, lock_path, lock_dir, lock: Mutex::new(copilot) })
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
