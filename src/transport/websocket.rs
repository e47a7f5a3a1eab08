//! The WebSocket transport (of the agents whose transport it is): the
//! authenticated upgrade, whose header tells the agent, then a loop that moves messages between
//! the socket and the MCP core (mcp/dispatch.rs) and writes what waits in the client's outbox.
//! It knows framing only; every message goes to the core.
//!
//! Every way a connection ends goes through one place, [`Conn::close`]: the client closed,
//! the editor stops or quits, the client stopped reading (1008), it sent a message over
//! `max_message_size` (1009), writing failed, or the connection task panicked (1011). Before
//! anything is closed, every parked call of the client is answered (openDiff:
//! DIFF_REJECTED) and those answers are written ahead of the Close frame.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::transport::auth::{Credential, Credentials, UpgradeCheck};
use crate::state::Shared;
use crate::state::events::{Event, Level};
use crate::protocol::jsonrpc::{self, RpcError};
use crate::transport::limits::{Activity, Handshakes, HANDSHAKE_DEADLINE};
use crate::mcp::methods::Session;
use crate::state::outbox::{Outbound, Outbox, MAX_ANSWERS_WAITING};
use crate::mcp::oversized::Oversized;
use crate::transport::gate::{Gate, GateHandle};
use crate::{debug, error, info, warn};

pub struct Config {
    /// The headers and tokens accepted (the server adds to them as it serves more agents).
    pub credentials: Credentials,
    /// Caps on connections (see limits.rs).
    pub limits: crate::transport::limits::Limits,
}

type Ws = WebSocketStream<Gate<TcpStream>>;
type Sink = futures_util::stream::SplitSink<Ws, Message>;
type Source = futures_util::stream::SplitStream<Ws>;

/// Stopping: a message that has begun to arrive is read to its end (and answered, an openDiff
/// with DIFF_REJECTED, before our Close) while its bytes keep coming: no longer than DRAIN_MAX
/// in all, and not past a pause of DRAIN_STALL. Where none has begun, DRAIN_IDLE for bytes
/// already on their way.
pub const DRAIN_MAX: Duration = Duration::from_secs(15);
pub const DRAIN_STALL: Duration = Duration::from_secs(1);
pub const DRAIN_IDLE: Duration = Duration::from_millis(50);
/// Stopping: how long the last frames and the Close may take to write (an agent suspended with
/// Ctrl-Z reads nothing; Neovim must still quit at once).
pub const FLUSH_GRACE: Duration = Duration::from_millis(500);
/// Closing for any other reason: how long answers may take to reach a client that reads.
pub const ANSWER_GRACE: Duration = Duration::from_secs(30);
/// After our Close, how long the client's reply is waited for (reading what it still sends, so
/// that the kernel never resets the connection over unread bytes and loses our last frames).
pub const LINGER: Duration = Duration::from_secs(5);

/// Optional frames (our requests, notifications, the selection) are written only while the
/// socket's send queue holds less than this: then an answer owed on a close (DIFF_REJECTED)
/// always finds room, even with an agent suspended with Ctrl-Z that reads nothing.
pub const OPTIONAL_ROOM: usize = 32 * 1024;
/// How often held optional frames look for room again.
const HOLD_RECHECK: Duration = Duration::from_millis(20);

/// Serves one TCP connection to its end. Never panics outward: a panic in the connection task
/// is caught and the connection is closed like any other (its parked calls answered first).
pub async fn serve(
    stream: TcpStream,
    client: u64,
    shared: Arc<Shared>,
    config: Arc<Config>,
    shutdown: watch::Receiver<bool>,
    handshakes: Arc<Handshakes>,
) {
    let fd = stream.as_raw_fd();
    let Some((ws, gate, came_as)) =
        upgrade(stream, client, &shared, &config, &shutdown, &handshakes).await
    else {
        return;
    };
    gate.arm();
    let outbox = shared.clients.add(client, came_as.agent, came_as.tag);
    info!("client {client} connected");
    shared.events.push(Event::ClientConnected { client }).await;

    let (mut sink, mut source) = ws.split();
    let mut conn = Conn {
        client,
        shared: &shared,
        outbox,
        gate,
        fd,
        session: Session::new(came_as.agent),
        shutdown,
        unsent: None,
    };
    let ran = std::panic::AssertUnwindSafe(conn.run(&mut sink, &mut source))
        .catch_unwind()
        .await;
    let ending = ran.unwrap_or_else(|_| {
        error!("client {client}: connection task panicked; closing the connection");
        Ending::Panicked
    });
    let closed = std::panic::AssertUnwindSafe(conn.close(&mut sink, &mut source, &ending))
        .catch_unwind()
        .await;
    if closed.is_err() {
        error!("client {client}: closing panicked");
    }
    // A message too big was told about already, with its size (close): not twice.
    let told = matches!(ending, Ending::TooBig(_));
    let events = shared.forget_client(client, ending.reason().filter(|_| !told));
    info!("client {client} disconnected");
    if !shared.is_stopping() {
        for event in events {
            shared.events.push(event).await;
        }
    }
}

/// The stages before the upgrade (limits.rs): silent until the first byte, then a handshake
/// slot, then the authenticated upgrade, all within the deadline.
async fn upgrade(
    stream: TcpStream,
    client: u64,
    shared: &Arc<Shared>,
    config: &Config,
    shutdown: &watch::Receiver<bool>,
    handshakes: &Handshakes,
) -> Option<(Ws, GateHandle, Credential)> {
    let deadline = Instant::now() + HANDSHAKE_DEADLINE;
    let mut stopping = shutdown.clone();
    let spoke = first_bytes(&stream, client, deadline, &mut stopping, handshakes).await;
    handshakes.spoke(client);
    if !spoke {
        debug!("connection {client}: nothing received; closed");
        return None;
    }
    let activity = Activity::new();
    let slot = tokio::select! {
        s = handshakes.slot(client, activity.clone()) => s,
        _ = tokio::time::sleep_until(deadline) => None,
        _ = stopping.changed() => None,
    };
    let Some(slot) = slot else {
        debug!("connection {client}: no handshake slot in time; closed");
        return None;
    };
    let (gate, handle) = Gate::new(stream, shared.max_message_size, activity);
    let (ws, came_as) = handshake(gate, client, shared, config, deadline, stopping, slot).await?;
    Some((ws, handle, came_as))
}

/// Stage 1: waits for the socket's first bytes. False: nothing came in time, it was pushed
/// out as silent, or the server stops.
async fn first_bytes(
    stream: &TcpStream,
    client: u64,
    deadline: Instant,
    stopping: &mut watch::Receiver<bool>,
    handshakes: &Handshakes,
) -> bool {
    let mut pushed_out = handshakes.silent(client);
    let fd = stream.as_raw_fd();
    loop {
        tokio::select! {
            r = stream.readable() => {
                if r.is_err() {
                    return false;
                }
                // Readiness may be a false alarm: look at the bytes (without taking them).
                match stream.try_io(tokio::io::Interest::READABLE, || peek(fd)) {
                    Ok(n) => return n > 0,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => return false,
                }
            }
            _ = tokio::time::sleep_until(deadline) => return false,
            // Pushed out as silent, unless its first bytes came meanwhile (its task may not have
            // had a turn yet while newer sockets were accepted).
            _ = &mut pushed_out => return peek(fd).is_ok_and(|n| n > 0),
            _ = stopping.changed() => return false,
        }
    }
}

/// Stage 3, holding a handshake slot: the WebSocket upgrade with its auth check (auth.rs) and
/// the client cap. Returns the socket and the credential it came with (its agent, its launch).
async fn handshake(
    gate: Gate<TcpStream>,
    client: u64,
    shared: &Arc<Shared>,
    config: &Config,
    deadline: Instant,
    mut stopping: watch::Receiver<bool>,
    mut slot: crate::transport::limits::Slot<'_>,
) -> Option<(Ws, Credential)> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    // Small buffers: each would otherwise be 128 KiB resident per client. The size limit is the
    // gate's (it answers what is too big); tungstenite's own is only a backstop.
    let ws_config = WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
        .write_buffer_size(0)
        .max_message_size(Some(shared.max_message_size))
        .max_frame_size(Some(shared.max_message_size));
    let mut refused = None;
    let admitted = AtomicBool::new(false);
    let admit = || {
        let ok = shared.clients.reserve(config.limits.max_clients);
        admitted.store(ok, Relaxed);
        ok
    };
    let accepted = config.credentials.read().clone();
    let mut matched = None;
    let check = UpgradeCheck {
        accepted: &accepted,
        refused: &mut refused,
        matched: &mut matched,
        admit: &admit,
    };
    let upgraded = tokio::select! {
        r = tokio_tungstenite::accept_hdr_async_with_config(gate, check, Some(ws_config)) => Some(r),
        _ = tokio::time::sleep_until(deadline) => {
            debug!("connection {client}: no upgrade within {HANDSHAKE_DEADLINE:?}; closed");
            None
        }
        _ = &mut slot.evicted => {
            debug!("connection {client}: its handshake stalled while others waited; closed");
            None
        }
        _ = stopping.changed() => None,
    };
    drop(slot);
    if admitted.load(Relaxed) && !matches!(upgraded, Some(Ok(_))) {
        // Passed the check, but the upgrade did not complete: release the slot.
        shared.clients.release();
    }
    match upgraded? {
        Ok(ws) => Some((ws, matched?)),
        Err(e) => {
            match refused {
                Some(r) => warn!("connection {client} refused before upgrade: {r:?}"),
                // The Pi extension probes the port with a bare TCP connect: not worth more.
                None => debug!("connection {client} ended before the handshake: {e}"),
            }
            None
        }
    }
}

fn close_message(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }))
}

/// Why a connection ends.
#[derive(Debug)]
enum Ending {
    /// The client closed it (a Close frame, the end of the stream, a read error).
    ClientGone,
    /// The editor stops or quits (1001).
    Stopping,
    /// Its outbox overflowed: it does not read what we send (1008).
    NotReading,
    /// It sent a message over max_message_size (1009).
    TooBig(Oversized),
    /// tungstenite refused a message as too big (the gate's backstop; nothing to answer).
    TooBigUnread,
    /// It broke the protocol (a bad frame, a text frame that is not UTF-8): 1002 or 1007, after
    /// its answers (the socket can still be written to).
    Broken(CloseCode, &'static str),
    /// Writing to it failed.
    WriteFailed,
    /// The connection task panicked (1011).
    Panicked,
}

impl Ending {
    /// What the client is told in the Close frame, and how long answers may take before it;
    /// None when nothing can be written any more.
    fn close_frame(&self, limit: usize) -> Option<(CloseCode, String, Duration)> {
        let (code, reason, grace) = match self {
            Ending::ClientGone | Ending::WriteFailed => return None,
            Ending::Stopping => (CloseCode::Away, "editor shutting down".into(), FLUSH_GRACE),
            // It reads nothing now: its answers wait until it reads again (or the editor stops).
            Ending::NotReading => (CloseCode::Policy, crate::state::outbox::NOT_READING.into(), Duration::MAX),
            Ending::TooBig(_) | Ending::TooBigUnread => {
                let reason = format!("message too big (max_message_size is {limit} bytes)");
                (CloseCode::Size, reason, ANSWER_GRACE)
            }
            Ending::Panicked => (CloseCode::Error, "internal error in the editor".into(), ANSWER_GRACE),
            Ending::Broken(code, why) => (*code, (*why).into(), ANSWER_GRACE),
        };
        Some((code, reason, grace))
    }

    /// Why the editor closed the connection, for the user (None when the client left).
    fn reason(&self) -> Option<String> {
        match self {
            Ending::ClientGone | Ending::Stopping | Ending::WriteFailed => None,
            Ending::NotReading => Some(crate::state::outbox::NOT_READING.into()),
            Ending::TooBig(_) | Ending::TooBigUnread => {
                Some("it sent a message over max_message_size".into())
            }
            Ending::Panicked => Some("an internal error in the editor".into()),
            Ending::Broken(_, why) => Some(format!("it broke the protocol ({why})")),
        }
    }

    /// Whether the client's socket can still be read: then calls already on their way are read
    /// and answered before the Close (those a rejection is owed to, at least).
    fn readable(&self) -> bool {
        !matches!(self, Ending::ClientGone | Ending::WriteFailed)
    }
}

/// One upgraded client.
struct Conn<'a> {
    client: u64,
    shared: &'a Arc<Shared>,
    outbox: Arc<Outbox>,
    gate: GateHandle,
    /// The socket, to ask how much it still has to send.
    fd: RawFd,
    session: Session,
    shutdown: watch::Receiver<bool>,
    /// A frame taken from the outbox that the sink has not accepted yet (a write was cut short).
    unsent: Option<String>,
}

/// How writing went.
enum Wrote {
    /// Everything that may go now went.
    Done,
    /// The outbox overflowed: give the client up.
    GiveUp,
    /// The socket failed.
    Failed,
    /// The editor began to stop meanwhile.
    Stopping,
}

impl Conn<'_> {
    fn stopping(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Whether an optional frame may be written now (see [`OPTIONAL_ROOM`]).
    fn room_for_optional(&self) -> bool {
        unsent_bytes(self.fd) < OPTIONAL_ROOM
    }

    /// Writes one frame; the editor stopping interrupts it (a frame the sink accepted stays
    /// buffered there and goes out with the next flush; one it did not is kept in `unsent`).
    async fn write(&mut self, sink: &mut Sink, frame: String) -> Wrote {
        // Kept here until the sink takes it: a write cut short (the editor stopping, a
        // deadline) loses nothing; the next flush writes it first.
        self.unsent = Some(frame);
        let mut shutdown = self.shutdown.clone();
        let stop = async move {
            while !*shutdown.borrow_and_update() {
                if shutdown.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::pin!(stop);
        tokio::select! {
            r = futures_util::future::poll_fn(|cx| sink.poll_ready_unpin(cx)) => if r.is_err() {
                return Wrote::Failed;
            },
            _ = &mut stop, if !self.stopping() => return Wrote::Stopping,
        }
        let frame = self.unsent.take().expect("kept above");
        if sink.start_send_unpin(Message::text(frame)).is_err() {
            return Wrote::Failed;
        }
        tokio::select! {
            r = sink.flush() => if r.is_err() { Wrote::Failed } else { Wrote::Done },
            _ = &mut stop, if !self.stopping() => Wrote::Stopping,
        }
    }

    /// Writes what waits in the outbox (optional frames only while the socket has room).
    async fn flush(&mut self, sink: &mut Sink) -> Wrote {
        loop {
            let next = match self.unsent.take() {
                Some(f) => Some(Outbound::Frame(f)),
                None => self.outbox.take(self.room_for_optional()),
            };
            match next {
                None => return Wrote::Done,
                Some(Outbound::GiveUp) => return Wrote::GiveUp,
                Some(Outbound::Frame(f)) => match self.write(sink, f).await {
                    Wrote::Done => {}
                    other => return other,
                },
            }
        }
    }

    /// Serves the client until the connection must end, and says why.
    async fn run(&mut self, sink: &mut Sink, source: &mut Source) -> Ending {
        loop {
            if self.stopping() {
                return Ending::Stopping;
            }
            match self.flush(sink).await {
                Wrote::Done => {}
                Wrote::GiveUp => return Ending::NotReading,
                Wrote::Failed => return Ending::WriteFailed,
                Wrote::Stopping => return Ending::Stopping,
            }
            // While many answers wait, the client's further calls stay unread (its socket
            // pushes back): answers are never dropped, so this is what bounds them.
            let reading = self.outbox.answers_waiting() < MAX_ANSWERS_WAITING;
            let held = self.outbox.has_waiting(true) && !self.room_for_optional();
            let mut shutdown = self.shutdown.clone();
            let gate = self.gate.oversized.clone();
            tokio::select! {
                biased;
                _ = shutdown.changed() => return Ending::Stopping,
                _ = gate.notified() => {
                    if let Some(o) = self.gate.state.lock().take_oversized() {
                        return Ending::TooBig(o);
                    }
                }
                _ = self.outbox.ready() => {}
                _ = tokio::time::sleep(HOLD_RECHECK), if held => {}
                incoming = source.next(), if reading => {
                    if let Some(ending) = self.incoming(incoming).await {
                        return ending;
                    }
                }
            }
        }
    }

    /// Handles one read from the socket; Some when the connection must end. What the core
    /// answers goes to the outbox (an answer is never dropped).
    async fn incoming(&mut self, incoming: Option<Result<Message, WsError>>) -> Option<Ending> {
        let client = self.client;
        let text = match incoming {
            Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
            // Not what the protocol sends, but harmless to serve when it is UTF-8.
            Some(Ok(Message::Binary(bytes))) => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => text,
                Err(_) => {
                    let e = RpcError::new(jsonrpc::PARSE_ERROR, "parse error: binary frame is not UTF-8");
                    self.outbox.push_answer(jsonrpc::error_frame(None, &e));
                    return None;
                }
            },
            // Pings are answered by tungstenite itself; pongs need nothing.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => return None,
            Some(Ok(Message::Close(_))) | None => return Some(Ending::ClientGone),
            Some(Err(e)) => return Some(self.read_error(e)),
        };
        let replies =
            crate::mcp::dispatch::handle_text(&text, client, self.shared, &mut self.session).await;
        for reply in replies {
            self.outbox.push_answer(reply);
        }
        None
    }

    /// Why a read failed, as an ending. A message over the limit that ended just before (its
    /// fragments mixed up tungstenite) is what it was: too big.
    fn read_error(&mut self, e: WsError) -> Ending {
        if let Some(o) = self.gate.state.lock().take_oversized() {
            return Ending::TooBig(o);
        }
        debug!("client {}: read error: {e}", self.client);
        match e {
            WsError::Capacity(CapacityError::MessageTooLong { .. }) => Ending::TooBigUnread,
            WsError::Utf8(_) => Ending::Broken(CloseCode::Invalid, "a text frame that is not UTF-8"),
            // An agent killed (or crashed) drops its socket without a Close: it is gone, it did
            // not break the protocol.
            WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => Ending::ClientGone,
            WsError::Protocol(_) | WsError::Capacity(_) => {
                Ending::Broken(CloseCode::Protocol, "a frame that breaks the WebSocket protocol")
            }
            _ => Ending::ClientGone,
        }
    }

    /// The one way a connection ends (see the module's comment).
    async fn close(&mut self, sink: &mut Sink, source: &mut Source, ending: &Ending) {
        if let Ending::TooBig(o) = ending {
            self.shared
                .events
                .notice("message-too-big", Level::Warn, o.notice(self.session.agent, true))
                .await;
            if let Some(answer) = o.answer(self.session.agent) {
                self.outbox.push_answer(answer);
            }
        }
        if ending.readable() {
            // Stopping, what arrives is served (an openDiff is rejected by the core); any other
            // way, only the rejections owed are sent.
            self.drain_arriving(source, matches!(ending, Ending::Stopping)).await;
        }
        self.answer_dropped();
        self.outbox.begin_closing();
        for event in self.shared.abandon_client(self.client, ending.reason()) {
            self.shared.events.push(event).await;
        }
        let Some((code, reason, grace)) = ending.close_frame(self.shared.max_message_size) else {
            // The client closed: tungstenite has queued the reply to its Close; send it.
            let _ = tokio::time::timeout(FLUSH_GRACE, sink.close()).await;
            return;
        };
        if !matches!(ending, Ending::Stopping | Ending::NotReading) {
            warn!("client {}: {}; closing it ({})", self.client, ending.reason().unwrap_or_default(), u16::from(code));
        }
        if self.flush_within(sink, grace).await {
            let close = sink.send(close_message(code, &reason));
            if tokio::time::timeout(FLUSH_GRACE, close).await.is_ok_and(|r| r.is_ok()) {
                let linger = if let Ending::Stopping = ending { DRAIN_IDLE } else { LINGER };
                self.linger(source, linger).await;
            }
        }
    }

    /// Writes the answers still waiting, for at most `grace` (and no longer than the stop grace
    /// once the editor stops). True when everything was written.
    async fn flush_within(&mut self, sink: &mut Sink, grace: Duration) -> bool {
        let until = Instant::now().checked_add(grace);
        loop {
            let budget = match (self.stopping(), until) {
                (true, _) => FLUSH_GRACE,
                (false, Some(until)) => until.saturating_duration_since(Instant::now()),
                (false, None) => Duration::from_secs(3600),
            };
            match tokio::time::timeout(budget, self.flush(sink)).await {
                Ok(Wrote::Done) => return true,
                // Told to stop mid-write: go on within the stop grace.
                Ok(Wrote::Stopping) | Ok(Wrote::GiveUp) => continue,
                Ok(Wrote::Failed) => return false,
                Err(_) if self.stopping() || until.is_some_and(|u| Instant::now() >= u) => {
                    warn!("client {}: answers could not be written in time", self.client);
                    return false;
                }
                Err(_) => continue,
            }
        }
    }

    /// The rejections owed to messages the gate dropped unread (see gate.rs, `poisoned`).
    fn answer_dropped(&self) {
        for scan in self.gate.state.lock().take_dropped() {
            if let Some(answer) = crate::mcp::oversized::owed(self.session.agent, &scan) {
                self.outbox.push_answer(answer);
            }
        }
    }

    /// After our Close: reads (and drops) what the client still sends until its Close.
    async fn linger(&mut self, source: &mut Source, within: Duration) {
        let _ = tokio::time::timeout(within, async {
            while let Some(Ok(msg)) = source.next().await {
                if let Message::Close(_) = msg {
                    break;
                }
            }
        })
        .await;
    }

    /// Before a close: messages that have begun to arrive are read to their end and answered
    /// (an openDiff as DIFF_REJECTED: the Pi extension writes unreviewed if the socket closes
    /// first) — served as usual when `serve` (the editor is stopping), else only the rejections
    /// owed. Bounded throughout, so that Neovim quits promptly.
    async fn drain_arriving(&mut self, source: &mut Source, serve: bool) {
        let until = Instant::now() + DRAIN_MAX;
        loop {
            let (mid, read) = {
                let g = self.gate.state.lock();
                (g.mid_message(), g.read)
            };
            let left = until.saturating_duration_since(Instant::now());
            let wait = if mid { DRAIN_STALL.min(left) } else { DRAIN_IDLE };
            let gate = self.gate.oversized.clone();
            let next = tokio::select! {
                n = tokio::time::timeout(wait, source.next()) => n,
                _ = gate.notified() => {
                    // A message over the limit ended: it is answered like any other.
                    if let Some(o) = self.gate.state.lock().take_oversized() {
                        if let Some(answer) = o.answer(self.session.agent) {
                            self.outbox.push_answer(answer);
                        }
                    }
                    self.answer_dropped();
                    continue;
                }
            };
            match next {
                // Nothing whole yet: go on while the message's bytes still come.
                Err(_) => {
                    let g = self.gate.state.lock();
                    if g.mid_message() && g.read > read && !left.is_zero() {
                        continue;
                    }
                    break;
                }
                Ok(Some(Ok(msg))) if serve => {
                    if self.incoming(Some(Ok(msg))).await.is_some() {
                        break;
                    }
                }
                Ok(Some(Ok(msg))) => {
                    let text = match &msg {
                        Message::Text(t) => Some(t.as_str()),
                        Message::Binary(b) => std::str::from_utf8(b).ok(),
                        _ => None,
                    };
                    let agent = self.session.agent;
                    let owed = text.and_then(|t| crate::mcp::dispatch::owed_answer(agent, t));
                    if let Some(answer) = owed {
                        self.outbox.push_answer(answer);
                    }
                }
                Ok(_) => break,
            }
            if Instant::now() >= until {
                break;
            }
        }
    }
}

/// How many bytes wait to be read on this socket, looked at without taking them (0: its end).
fn peek(fd: RawFd) -> std::io::Result<usize> {
    let mut b = 0u8;
    // SAFETY: recv into one byte of ours, on a socket we own; MSG_PEEK leaves it there.
    let n = unsafe {
        libc::recv(fd, (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Bytes the kernel still holds to send on this socket (0 where it cannot be asked).
fn unsent_bytes(fd: RawFd) -> usize {
    #[cfg(target_os = "linux")]
    {
        let mut n: libc::c_int = 0;
        // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int for a socket we own.
        if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) } == 0 {
            return n.max(0) as usize;
        }
    }
    #[cfg(target_os = "macos")]
    {
        let mut n: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: SO_NWRITE writes one int for a socket we own.
        let rc = unsafe {
            libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_NWRITE, (&mut n as *mut libc::c_int).cast(), &mut len)
        };
        if rc == 0 {
            return n.max(0) as usize;
        }
    }
    let _ = fd;
    0
}
