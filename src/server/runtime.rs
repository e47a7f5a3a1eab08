//! The server thread: its own single-threaded tokio runtime, running the WebSocket accept loop
//! and one server (HTTP, or lines) per agent with a socket of its own (handed over when it is served, at
//! the start or later), until the stop signal. And the selection's debounce thread.

use std::net::TcpListener as StdListener;
use std::os::unix::net::UnixListener as StdUnixListener;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::agents::Agent;
use crate::state::events::Event;
use crate::state::Shared;
use crate::transport::auth::Credentials;
use crate::transport::limits::{Handshakes, Limits};
use crate::agents::Transport;
use crate::transport::{http, lines, websocket, STOP_GRACE};
use crate::{debug, error};

/// An agent's own socket, for the server thread to serve.
pub struct Socket {
    pub agent: &'static Agent,
    pub listener: OwnListener,
    /// The tools off unless asked for that the user turned on for this agent.
    pub opted_in: Vec<String>,
}

/// Where an agent with a socket of its own listens.
pub enum OwnListener {
    Unix(StdUnixListener),
    /// A loopback port of its own (the WebSocket's is another).
    Loopback(StdListener, u16),
}

/// What the thread needs: the WebSocket listener and who may upgrade on it, the server's token
/// (HTTP agents present it), and where sockets of HTTP agents arrive.
pub struct Spec {
    pub ws: StdListener,
    pub credentials: Credentials,
    pub token: String,
    pub sockets: mpsc::UnboundedReceiver<Socket>,
}

/// Starts the thread. Returns the stop signal and what tells it has stopped.
pub fn spawn(
    spec: Spec,
    shared: Arc<Shared>,
) -> Result<(watch::Sender<bool>, std::sync::mpsc::Receiver<()>), String> {
    // Blocking work (staging and diffing large proposals) gets at most three threads: every
    // extra thread would keep a malloc arena of its own alive in Neovim's process. Staging
    // takes one at a time (state/reviews/), so a read stuck on a hung mount leaves two.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(3)
        .build()
        .map_err(|e| format!("cannot start the server runtime: {e}"))?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let (done_tx, done) = std::sync::mpsc::channel();
    let limits = Limits::for_this_process();
    let Spec { ws, credentials, token, sockets } = spec;
    let config = websocket::Config { credentials, limits };
    let main = async move {
        let ws = accept_loop(ws, shared.clone(), config, shutdown_rx.clone());
        let http = serve_sockets(sockets, shared, token, limits, shutdown_rx);
        tokio::join!(ws, http);
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

/// Serves each HTTP agent's socket as it is handed over, until the stop.
async fn serve_sockets(
    mut sockets: mpsc::UnboundedReceiver<Socket>,
    shared: Arc<Shared>,
    token: String,
    limits: Limits,
    shutdown: watch::Receiver<bool>,
) {
    let mut servers = JoinSet::new();
    let mut stop = shutdown.clone();
    loop {
        let Socket { agent, listener, opted_in } = tokio::select! {
            s = sockets.recv() => match s { Some(s) => s, None => break },
            _ = stop.changed() => break,
        };
        let listener = match listener {
            OwnListener::Unix(l) => tokio::net::UnixListener::from_std(l).map(http::Listener::Unix),
            OwnListener::Loopback(l, port) => TcpListener::from_std(l).map(|l| http::Listener::Loopback(l, port)),
        };
        match (listener, &agent.transport) {
            (Ok(http::Listener::Unix(l)), Transport::Lines) => {
                let config = lines::Config { agent, limits, opted_in };
                servers.spawn(lines::serve(l, shared.clone(), config, shutdown.clone()));
            }
            (Ok(l), Transport::Http { scheme, .. }) => {
                let config = http::Config { agent, token: token.clone(), scheme, limits };
                servers.spawn(http::serve(l, shared.clone(), config, shutdown.clone()));
            }
            (Ok(_), _) => error!("{}: no server for its transport", agent.name),
            (Err(e), _) => error!("{}: cannot use its socket: {e}", agent.name),
        }
    }
    while servers.join_next().await.is_some() {}
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

/// The selection debounce: a small thread of its own (see state/selection.rs for why).
pub fn spawn_debounce(shared: &Arc<Shared>) -> Result<std::thread::JoinHandle<()>, String> {
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
