//! Newline-delimited JSON-RPC on a Unix socket, for an agent whose transport it is: MCP's stdio
//! transport, relayed by the `pi-ide-mcp` program that an MCP client runs (bridge/). The socket
//! is private (0600 in a 0700 folder) and each peer's uid is checked: no token is needed, so
//! none is written in any client's config. Each connection is one client of the core.
//!
//! A line over `max_message_size` is read to its end in bounded memory and answered (an
//! openDiff as rejected, anything else with an error); the session goes on. A connection that
//! ends, however it ends (the client's stdin closed, the program killed, the editor stopping),
//! answers every call of its client first, so a review it waited on is taken away in Neovim.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::agents::Agent;
use crate::mcp::methods::Session;
use crate::mcp::oversized::Oversized;
use crate::protocol::jsonrpc::{self, RpcError};
use crate::state::events::{Event, Level};
use crate::state::outbox::{Outbound, Outbox, MAX_ANSWERS_WAITING};
use crate::state::Shared;
use crate::transport::limits::Limits;
use crate::{error, info, warn};

pub struct Config {
    pub agent: &'static Agent,
    pub limits: Limits,
    /// The tools off unless asked for that the user turned on.
    pub opted_in: Vec<String>,
}

/// How long the answers owed on a close may take to reach a client that reads.
const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// Serves `listener` until the editor stops, then ends every connection (answers first).
pub async fn serve(listener: UnixListener, shared: Arc<Shared>, config: Config, shutdown: watch::Receiver<bool>) {
    let mut tasks = JoinSet::new();
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if let Some(conn) = admit(stream, &shared, &config).await {
                        tasks.spawn(conn.run(shutdown.clone()));
                    }
                }
                Err(e) => {
                    error!("{}: accept failed: {e}", config.agent.name);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(super::STOP_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
}

/// A new connection as a client, when its peer is this user and there is room.
async fn admit(mut stream: UnixStream, shared: &Arc<Shared>, config: &Config) -> Option<Conn> {
    let ours = unsafe { libc::getuid() };
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == ours => {}
        Ok(cred) => {
            warn!("{}: refused a connection of uid {} (only this user's processes may connect)", config.agent.name, cred.uid());
            return None;
        }
        Err(e) => {
            warn!("{}: refused a connection whose peer is unknown: {e}", config.agent.name);
            return None;
        }
    }
    if !shared.clients.reserve(config.limits.max_clients) {
        let e = RpcError::new(jsonrpc::INTERNAL_ERROR, "too many clients are connected to this Neovim");
        let _ = stream.write_all(format!("{}\n", jsonrpc::error_frame(None, &e)).as_bytes()).await;
        return None;
    }
    let client = shared.next_id();
    let outbox = shared.clients.add(client, config.agent, None);
    info!("client {client} connected ({})", config.agent.name);
    shared.events.push(Event::ClientConnected { client }).await;
    let opted_in = config.opted_in.clone();
    Some(Conn { client, shared: shared.clone(), outbox, agent: config.agent, stream, opted_in })
}

struct Conn {
    client: u64,
    shared: Arc<Shared>,
    outbox: Arc<Outbox>,
    agent: &'static Agent,
    stream: UnixStream,
    opted_in: Vec<String>,
}

/// How a connection ended.
enum Ending {
    ClientGone,
    Stopping,
    NotReading,
    WriteFailed,
    Panicked,
}

impl Ending {
    fn reason(&self) -> Option<String> {
        match self {
            Ending::NotReading => Some(crate::state::outbox::NOT_READING.into()),
            Ending::Panicked => Some("an internal error in the editor".into()),
            _ => None,
        }
    }
}

/// What a connection serves with, borrowed by its loop.
struct Serving<'a> {
    client: u64,
    shared: &'a Arc<Shared>,
    outbox: &'a Outbox,
    agent: &'static Agent,
    write: &'a mut OwnedWriteHalf,
}

impl Conn {
    /// Serves the connection to its end; a panic in its loop ends it like any other ending:
    /// every call and review of its client is answered before it is forgotten.
    async fn run(self, shutdown: watch::Receiver<bool>) {
        use futures_util::FutureExt;
        let Conn { client, shared, outbox, agent, stream, opted_in } = self;
        let (read, mut write) = stream.into_split();
        let mut lines = Lines::new(read, shared.max_message_size);
        let mut session = Session::new(agent);
        session.opted_in = opted_in;
        let mut s = Serving { client, shared: &shared, outbox: &outbox, agent, write: &mut write };
        let served = std::panic::AssertUnwindSafe(s.serve(&mut lines, &mut session, shutdown)).catch_unwind().await;
        let ending = served.unwrap_or_else(|_| {
            error!("client {client}: connection task panicked; closing the connection");
            Ending::Panicked
        });
        for event in shared.abandon_client(client, ending.reason()) {
            shared.events.push(event).await;
        }
        outbox.begin_closing();
        if !matches!(ending, Ending::ClientGone | Ending::WriteFailed) {
            let _ = tokio::time::timeout(ANSWER_GRACE, flush(&outbox, &mut write)).await;
        }
        let _ = write.shutdown().await;
        let events = shared.forget_client(client, ending.reason());
        info!("client {client} disconnected");
        if !shared.is_stopping() {
            for event in events {
                shared.events.push(event).await;
            }
        }
    }
}

impl Serving<'_> {
    /// Moves lines until the connection must end, and says why.
    async fn serve(&mut self, lines: &mut Lines, session: &mut Session, mut shutdown: watch::Receiver<bool>) -> Ending {
        loop {
            if *shutdown.borrow() {
                return Ending::Stopping;
            }
            match flush(self.outbox, self.write).await {
                Ok(true) => {}
                Ok(false) => return Ending::NotReading,
                Err(_) => return Ending::WriteFailed,
            }
            let reading = self.outbox.answers_waiting() < MAX_ANSWERS_WAITING;
            tokio::select! {
                biased;
                _ = shutdown.changed() => return Ending::Stopping,
                _ = self.outbox.ready() => {}
                line = lines.next(), if reading => match line {
                    Some(line) => self.incoming(line, session).await,
                    None => return Ending::ClientGone,
                },
            }
        }
    }

    /// One line from the client: what the core answers goes to the outbox.
    async fn incoming(&mut self, line: Line, session: &mut Session) {
        match line {
            Line::Text(text) => {
                for reply in crate::mcp::dispatch::handle_text(&text, self.client, self.shared, session).await {
                    self.outbox.push_answer(reply);
                }
            }
            Line::NotUtf8 => {
                let e = RpcError::new(jsonrpc::PARSE_ERROR, "parse error: the line is not UTF-8");
                self.outbox.push_answer(jsonrpc::error_frame(None, &e));
            }
            Line::TooLong(o) => {
                self.shared.events.notice("message-too-big", Level::Warn, o.notice(self.agent, false)).await;
                if let Some(answer) = o.answer(self.agent) {
                    self.outbox.push_answer(answer);
                }
            }
        }
    }
}

/// Writes what waits in the outbox, a line per frame. Ok(false) when the client does not read
/// and the outbox overflowed.
async fn flush(outbox: &Outbox, write: &mut OwnedWriteHalf) -> std::io::Result<bool> {
    while let Some(next) = outbox.take(true) {
        match next {
            Outbound::GiveUp => return Ok(false),
            Outbound::Frame(mut frame) => {
                frame.push('\n');
                write.write_all(frame.as_bytes()).await?;
            }
        }
    }
    Ok(true)
}

enum Line {
    Text(String),
    NotUtf8,
    /// A line over the limit, scanned for what its answer needs.
    TooLong(Oversized),
}

/// Reads lines, each at most `limit` bytes kept; cancel-safe (what was read stays in `buf`).
struct Lines {
    read: BufReader<OwnedReadHalf>,
    limit: usize,
    buf: Vec<u8>,
    over: Option<Oversized>,
}

impl Lines {
    fn new(read: OwnedReadHalf, limit: usize) -> Lines {
        Lines { read: BufReader::new(read), limit, buf: Vec::new(), over: None }
    }

    /// The next non-blank line; None at the end of the stream.
    async fn next(&mut self) -> Option<Line> {
        loop {
            let chunk = self.read.fill_buf().await.ok()?;
            if chunk.is_empty() {
                return None;
            }
            let (len, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, i + 1),
                None => (chunk.len(), chunk.len()),
            };
            let ended = done > len;
            take(&mut self.buf, &mut self.over, self.limit, &chunk[..len]);
            self.read.consume(done);
            if ended {
                if let Some(line) = self.finish() {
                    return Some(line);
                }
            }
        }
    }

    /// The line just ended, unless it was blank.
    fn finish(&mut self) -> Option<Line> {
        if let Some(mut o) = self.over.take() {
            o.scan.finish();
            return Some(Line::TooLong(o));
        }
        let bytes = std::mem::take(&mut self.buf);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(String::from_utf8(bytes).map_or(Line::NotUtf8, Line::Text))
    }
}

/// Adds `part` to the line being read: to `buf` while it is within `limit`, then to the scan of
/// an oversized one (what was kept moves there).
fn take(buf: &mut Vec<u8>, over: &mut Option<Oversized>, limit: usize, part: &[u8]) {
    if over.is_none() && buf.len() + part.len() > limit {
        let mut o = Oversized { size: buf.len() as u64, limit, scan: Default::default() };
        o.scan.feed(buf);
        *buf = Vec::new();
        *over = Some(o);
    }
    match over.as_mut() {
        Some(o) => {
            o.size += part.len() as u64;
            o.scan.feed(part);
        }
        None => buf.extend_from_slice(part),
    }
}
