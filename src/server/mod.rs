//! The server's life: bind a free loopback port, run the transports on a background thread
//! with its own tokio runtime (runtime.rs), serve agents (the home agent always; others from
//! the start or once Neovim launches one: served.rs keeps what lets each find us), and stop in
//! the order the protocol needs (answer parked calls, Close frames, short wait, detach the
//! waker, remove the lockfiles).

pub mod local;
mod runtime;
mod served;

use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::agents::{self, Agent, Transport};
use crate::protocol::lockfile::{self, LockInfo};
use crate::state::Shared;
use crate::transport::auth::{self, Credentials};
use crate::transport::STOP_GRACE;
use crate::{debug, info, warn};

use self::served::{LockDir, OwnSide, Served};

/// What Lua passes to `start`.
#[derive(Debug, Clone)]
pub struct Options {
    pub ide_name: String,
    pub workspace_folders: Vec<String>,
    /// Names (prefixes) of editors whose dead lockfiles we may clean up.
    pub own_names: Vec<String>,
    /// Agents served from the start besides the home agent, each with its options.
    pub serve: Vec<(&'static Agent, Value)>,
}

pub struct Server {
    pub shared: Arc<Shared>,
    pub port: u16,
    /// What every lockfile says (a launch's holds a token of its own).
    lock: Mutex<LockInfo>,
    served: Mutex<Served>,
    /// Who may upgrade on the WebSocket (kept in step with `served`).
    credentials: Credentials,
    /// Hands the server thread the socket of an agent served later.
    sockets: mpsc::UnboundedSender<runtime::Socket>,
    own_names: Vec<String>,
    shutdown: watch::Sender<bool>,
    done: std::sync::mpsc::Receiver<()>,
    debounce: Option<std::thread::JoinHandle<()>>,
    /// The chats' clients in this process (local.rs).
    locals: local::Locals,
    /// The agents asked for at the start that could not be served, and why (Lua says so once).
    pub refused: Vec<(&'static str, String)>,
}

impl Server {
    /// Binds, spawns the server thread and serves the agents. Errors are sentences for the user.
    /// On an error nothing is left running and the waker is detached (Lua may close its handle).
    /// An agent besides the home one that cannot be served is left out, with why, in `refused`.
    pub fn start(opts: Options, shared: Arc<Shared>) -> Result<Server, String> {
        let mut server = match Self::spawn(&opts, shared.clone()) {
            Ok(s) => s,
            Err(e) => {
                shared.selection.stop();
                shared.events.waker.detach();
                return Err(e);
            }
        };
        if let Err(e) = server.serve(agents::HOME, &Value::Null) {
            server.stop();
            return Err(e);
        }
        // Another agent that cannot be served (its folder refused) is left out, not the server.
        for (agent, options) in opts.serve {
            if let Err(e) = server.serve(agent, &options) {
                warn!("not serving {}: {e}", agent.name);
                server.refused.push((agent.name, e));
            }
        }
        info!("listening on 127.0.0.1:{}, lockfile {}", server.port, server.lock_path().display());
        Ok(server)
    }

    /// The threads, with nothing served yet.
    fn spawn(opts: &Options, shared: Arc<Shared>) -> Result<Server, String> {
        let (ws, port) = bind_loopback()?;
        let lock = LockInfo {
            pid: std::process::id(),
            workspace_folders: opts.workspace_folders.clone(),
            ide_name: opts.ide_name.clone(),
            transport: "ws".into(),
            auth_token: auth::new_token(),
        };
        let credentials: Credentials = Arc::new(RwLock::new(Vec::new()));
        let (sockets, received) = mpsc::unbounded_channel();
        let spec = runtime::Spec { ws, credentials: credentials.clone(), token: lock.auth_token.clone(), sockets: received };
        let (shutdown, done) = runtime::spawn(spec, shared.clone())?;
        let debounce = runtime::spawn_debounce(&shared).inspect_err(|_| {
            let _ = shutdown.send(true);
            let _ = done.recv_timeout(STOP_GRACE);
        })?;
        Ok(Server {
            shared,
            port,
            lock: Mutex::new(lock),
            served: Mutex::new(Served::default()),
            credentials,
            sockets,
            own_names: opts.own_names.clone(),
            shutdown,
            done,
            debounce: Some(debounce),
            locals: local::Locals::default(),
            refused: Vec::new(),
        })
    }

    /// The home agent's lockfile: the server's own.
    pub fn lock_path(&self) -> PathBuf {
        let served = self.served.lock();
        let home = served.paths_of(agents::HOME, self.port).into_iter().next();
        home.map(|(_, p)| p).unwrap_or_default()
    }

    pub fn lock_info(&self) -> LockInfo {
        self.lock.lock().clone()
    }

    fn is_ours(&self, name: &str) -> bool {
        self.own_names.iter().any(|o| name.starts_with(o.as_str()))
    }

    /// Serves `agent` from now on (idempotent). `options` are the agent's, from Lua: for an
    /// agent on the WebSocket `lock_dir` (a folder of its own for one launch, else the agent's
    /// own folder) and `tag` (that launch: its lockfile gets a token of its own, and clients
    /// that come with it carry the tag); for one with a socket of its own `socket_dir` and what
    /// its lockfile takes. Returns what Lua shows of the agent's side (lockfile, socket).
    pub fn serve(&self, agent: &'static Agent, options: &Value) -> Result<Vec<(&'static str, PathBuf)>, String> {
        let text = |k: &str| options.get(k).and_then(Value::as_str).map(str::to_owned);
        match (&agent.transport, &agent.lockfile) {
            (Transport::WebSocket { .. }, agents::Lockfile::PiIde(default_dir)) => {
                let dir = match text("lock_dir") {
                    Some(d) => PathBuf::from(d),
                    None => default_dir()?,
                };
                let path = self.serve_in(agent, &dir, text("tag"))?;
                Ok(vec![("lockfile", path)])
            }
            (Transport::Http { .. } | Transport::Lines, agents::Lockfile::Own(own)) => {
                let dir = text("socket_dir").ok_or("no socket_dir given")?;
                self.serve_own(agent, *own, Path::new(&dir), options)?;
                Ok(self.served.lock().paths_of(agent, self.port))
            }
            _ => Err(format!("{}: this kind of agent cannot be served", agent.name)),
        }
    }

    /// Our pi-ide lockfile in `dir` for `agent` (with a token of its own for a tagged launch),
    /// and its header with that token accepted. Returns the lockfile's path.
    fn serve_in(&self, agent: &'static Agent, dir: &Path, tag: Option<String>) -> Result<PathBuf, String> {
        let path = lockfile::path_for(dir, self.port);
        // The lock info first: set_workspace_folders holds it while it takes `served`.
        let lock = self.lock.lock().clone();
        let mut served = self.served.lock();
        let before = served.dir(agent, dir);
        if before.is_some_and(|d| d.tag == tag) {
            return Ok(path);
        }
        let token = if tag.is_some() { auth::new_token() } else { lock.auth_token.clone() };
        let created = before.map_or(!dir.exists(), |d| d.created);
        lockfile::write(dir, self.port, &served::with_token(&lock, &token))?;
        // After the write, which made the folder private if it was not (a sweep only reads a
        // folder that is).
        if before.is_none() && tag.is_none() {
            self.sweep(dir);
        }
        served.dirs.retain(|d| !(d.agent == agent && d.dir == dir));
        served.dirs.push(LockDir { agent, dir: dir.to_owned(), token, tag, created });
        *self.credentials.write() = served.credentials();
        if agent != agents::HOME {
            info!("serving {} too: lockfile {}", agent.name, path.display());
        }
        Ok(path)
    }

    /// Lockfiles in `dir` of editors like us that died without removing them.
    fn sweep(&self, dir: &Path) {
        for p in lockfile::remove_stale(dir, |n| self.is_ours(n)) {
            info!("removed stale lockfile {}", p.display());
        }
    }

    /// An agent with a socket of its own: the socket in `socket_dir`, its lockfile, and the
    /// socket handed to the server thread.
    fn serve_own(
        &self,
        agent: &'static Agent,
        own: &dyn agents::OwnLockfile,
        socket_dir: &Path,
        options: &Value,
    ) -> Result<(), String> {
        let mut served = self.served.lock();
        if served.own(agent).is_some() {
            return Ok(());
        }
        let (listener, socket) = match agent.transport {
            Transport::Http { loopback: true, .. } => {
                let (l, port) = bind_loopback()?;
                (runtime::OwnListener::Loopback(l, port), PathBuf::from(format!("127.0.0.1:{port}")))
            }
            _ => {
                let (l, path) = bind_socket(agent, socket_dir)?;
                (runtime::OwnListener::Unix(l), path)
            }
        };
        let lock = self.lock.lock().clone();
        let kept = own.write(&socket, &lock, options).inspect_err(|_| {
            remove_socket(&socket);
        })?;
        // After the write, as in serve_in.
        for p in own.sweep(&|n| self.is_ours(n)) {
            info!("removed stale lockfile {}", p.display());
        }
        // `tools`: the names of tools off unless asked for, that the user turned on.
        let opted_in = options.get("tools").and_then(Value::as_array).into_iter().flatten();
        let opted_in = opted_in.filter_map(Value::as_str).map(str::to_owned).collect();
        if self.sockets.send(runtime::Socket { agent, listener, opted_in }).is_err() {
            kept.remove(&lock.auth_token);
            remove_socket(&socket);
            return Err("the server thread has stopped".into());
        }
        info!("{}: listening on {}, lockfile {}", agent.name, socket.display(), kept.path().display());
        served.own.push(OwnSide { agent, socket, lockfile: kept });
        Ok(())
    }

    /// What Lua shows of every agent served: its name and its side's paths.
    pub fn served(&self) -> Vec<(&'static str, Vec<(&'static str, PathBuf)>)> {
        let served = self.served.lock();
        served.agents().into_iter().map(|a| (a.name, served.paths_of(a, self.port))).collect()
    }

    /// Checks that our lockfiles are there, private, and still ours (for :checkhealth).
    pub fn check_lockfiles(&self) -> Vec<(PathBuf, Result<(), String>)> {
        let lock = self.lock.lock().clone();
        self.served.lock().check(self.port, &lock)
    }

    /// Each lock folder, and why it is no place for the token if it is not (for :checkhealth).
    pub fn check_lock_dirs(&self) -> Vec<(PathBuf, Option<String>)> {
        self.served.lock().check_dirs()
    }

    /// Neovim got the focus: the agents' records that say so are rewritten (the first error is
    /// returned).
    pub fn focused(&self) -> Result<(), String> {
        let mut served = self.served.lock();
        let errors: Vec<String> = served.own.iter_mut().filter_map(|o| o.lockfile.focused().err()).collect();
        errors.into_iter().next().map_or(Ok(()), Err)
    }

    /// Rewrites the lockfiles when the folders changed. Returns whether it wrote. Every file is
    /// tried; the first error is returned (and the next call tries again).
    pub fn set_workspace_folders(&self, folders: Vec<String>) -> Result<bool, String> {
        let mut lock = self.lock.lock();
        if lock.workspace_folders == folders {
            return Ok(false);
        }
        let next = LockInfo { workspace_folders: folders, ..lock.clone() };
        match self.served.lock().set_folders(self.port, &next).into_iter().next() {
            Some(e) => Err(e),
            None => {
                *lock = next;
                Ok(true)
            }
        }
    }

    /// A change the chat `tag`'s agent proposes, to review (local.rs).
    pub fn review_for_chat(&self, chat: (&str, &str), proposal: agents::chat::Proposal, done: agents::chat::Done) {
        self.locals.review(&self.shared, chat, proposal, done);
    }

    /// The chat `tag`'s agent withdrew the question of its review `tab`: that review goes.
    pub fn close_chat_review(&self, tag: &str, tab: &str) {
        self.locals.close(&self.shared, tag, tab);
    }

    /// The chat `tag` ended its turn or its agent: its reviews go, each answered.
    pub fn end_chat_reviews(&self, tag: &str) {
        self.locals.end(&self.shared, tag);
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
            debug!("server thread still busy after {:?}; leaving it", STOP_GRACE);
        }
        if let Some(t) = self.debounce.take() {
            let _ = t.join();
        }
        shared.events.waker.detach();
        // Proposals Lua did not get to read; and calls whose connection never got to close.
        shared.abandon_all();
        self.locals.end_all();
        let _ = std::fs::remove_dir_all(&shared.stage_dir);
        let token = self.lock.lock().auth_token.clone();
        let lock_path = self.lock_path();
        self.served.lock().remove(self.port, &token);
        info!("stopped; removed {}", lock_path.display());
    }
}

/// Removes an agent's Unix socket; a loopback port (`127.0.0.1:<port>`) is no file.
pub(crate) fn remove_socket(socket: &Path) {
    if socket.is_absolute() {
        let _ = std::fs::remove_file(socket);
    }
}

fn bind_loopback() -> Result<(StdListener, u16), String> {
    let listener = StdListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    Ok((listener, port))
}

/// An agent's socket, in a folder only this user can enter (the socket is 0600 too), opened
/// and checked as a lock folder is (protocol/lockfile.rs, `open_dir`).
fn bind_socket(agent: &Agent, dir: &Path) -> Result<(std::os::unix::net::UnixListener, PathBuf), String> {
    use std::os::unix::fs::PermissionsExt;
    let folder = lockfile::open_dir(dir).map_err(|problem| format!("the {} socket cannot go there: {problem}", agent.name))?;
    let name = format!("pi-ide-{}.{}.sock", agent.name, std::process::id());
    let path = dir.join(&name);
    // sun_path holds 108 bytes with its NUL.
    if path.as_os_str().len() > 107 {
        return Err(format!("the socket path {} is too long for a Unix socket", path.display()));
    }
    // Ours by name (our pid): left by a server of this process that did not stop.
    let _ = folder.remove(std::ffi::OsStr::new(&name));
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok((listener, path))
}
