//! The HTTP connections: each served by hyper on the core's runtime, at most a fixed number at
//! once of each kind: those that have not shown the token yet (strangers, and the CLI's before
//! its first request) and those that have. A newcomer beyond its kind's cap pushes out the
//! oldest idle one of its kind (no request in flight, no event stream: a silent socket or a
//! spent keep-alive), so idle sockets cannot lock the CLI out, and a stranger's never push out
//! the CLI's kept-alive one; when none is idle, the newcomer is refused.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;

use super::Http;

struct Entry {
    /// Requests in flight (an event stream counts until it closes).
    busy: Arc<AtomicUsize>,
    close: Arc<Notify>,
    /// A request on it showed the token (and came from loopback).
    trusted: Arc<AtomicBool>,
}

impl Entry {
    fn is(&self, trusted: bool) -> bool {
        self.trusted.load(Ordering::Acquire) == trusted
    }
}

pub struct Connections {
    max: usize,
    next: AtomicU64,
    /// By age (ids grow).
    open: Arc<Mutex<BTreeMap<u64, Entry>>>,
    tasks: Mutex<JoinSet<()>>,
}

/// Counts a request in flight on its connection while it lives.
struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connections {
    pub fn new(max: usize) -> Connections {
        Connections {
            max,
            next: AtomicU64::new(1),
            open: Arc::new(Mutex::new(BTreeMap::new())),
            tasks: Mutex::new(JoinSet::new()),
        }
    }

    /// Serves one accepted connection, making room for it first.
    pub fn serve<S>(&self, stream: S, http: Arc<Http>, shutdown: watch::Receiver<bool>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        if !make_room(&self.open, self.max, false) {
            crate::debug!("http: {} connections are busy; refused a new one", self.max);
            return;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let busy = Arc::new(AtomicUsize::new(0));
        let close = Arc::new(Notify::new());
        let trusted = Arc::new(AtomicBool::new(false));
        let entry = Entry { busy: busy.clone(), close: close.clone(), trusted: trusted.clone() };
        self.open.lock().insert(id, entry);
        let open = self.open.clone();
        let max = self.max;
        let trust = move || {
            if !trusted.swap(true, Ordering::AcqRel) {
                // Among the trusted now: room is made there (this one is busy, never pushed out).
                make_room(&open, max + 1, true);
            }
        };
        let open = self.open.clone();
        let mut tasks = self.tasks.lock();
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            run(stream, http, busy, close, trust, shutdown).await;
            open.lock().remove(&id);
        });
    }

    /// Waits (at most `grace`) for every connection to finish its responses and close.
    pub async fn finish(&self, grace: Duration) {
        let mut tasks = std::mem::take(&mut *self.tasks.lock());
        let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    }
}

/// Pushes out the oldest idle connection of the kind `trusted` says when `max` of that kind
/// are open; false when none is idle. It leaves the count at once (its task closes it on its
/// next turn).
fn make_room(open: &Mutex<BTreeMap<u64, Entry>>, max: usize, trusted: bool) -> bool {
    let mut open = open.lock();
    if open.values().filter(|e| e.is(trusted)).count() < max {
        return true;
    }
    let idle = open.iter().find(|(_, e)| e.is(trusted) && e.busy.load(Ordering::Acquire) == 0);
    let Some(id) = idle.map(|(id, _)| *id) else {
        return false;
    };
    if let Some(e) = open.remove(&id) {
        e.close.notify_one();
    }
    true
}

/// One connection: requests until the client closes it, it is pushed out, or the server
/// stops (then the responses in progress are finished, and no new request is read).
async fn run<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    http: Arc<Http>,
    busy: Arc<AtomicUsize>,
    close: Arc<Notify>,
    trust: impl Fn() + Send + Sync + 'static,
    mut shutdown: watch::Receiver<bool>,
) {
    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        busy.fetch_add(1, Ordering::AcqRel);
        if http.admits(req.headers()) {
            trust();
        }
        let guard = Busy(busy.clone());
        let http = http.clone();
        async move {
            let mut reply = http.handle(req).await;
            // An event stream stays busy until its body ends.
            if reply.headers().get("content-type").is_some_and(|v| v == "text/event-stream") {
                reply = hold_busy(reply, guard);
            }
            Ok::<_, Infallible>(reply)
        }
    });
    // No header timer (it would cost every request one): a connection that sends its headers
    // slowly, or nothing, is idle, and the cap pushes out the oldest idle one (make_room).
    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        // Pushed out: it was idle, nothing is lost by dropping it.
        _ = close.notified() => return,
        _ = shutdown.wait_for(|s| *s) => conn.as_mut().graceful_shutdown(),
    }
    let _ = tokio::time::timeout(super::super::STOP_GRACE, conn).await;
}

/// Keeps `guard` alive as long as the event stream's body.
fn hold_busy(reply: super::Reply, guard: Busy) -> super::Reply {
    use http_body_util::{BodyExt, Either};
    let (parts, body) = reply.into_parts();
    let body = match body {
        Either::Right(stream) => Either::Right(http_body_util::combinators::BoxBody::new(
            stream.map_frame(move |f| {
                let _ = &guard;
                f
            }),
        )),
        whole => whole,
    };
    hyper::Response::from_parts(parts, body)
}
