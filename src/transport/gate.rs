//! The bytes between a client's socket and tungstenite. tungstenite hands over whole messages
//! only, and refuses one over the size limit by failing the connection, with no way to answer
//! it; but an openDiff must be answered before any close (the Pi extension writes the file
//! unreviewed when the socket closes first). So every byte read goes through this gate, which
//! parses the frame headers itself (RFC 6455 section 5.2, client frames: masked):
//!
//! - a frame header is held back until it is whole, so that a data frame that would take its
//!   message over `max_message_size` never reaches tungstenite: the gate reads that message to
//!   its end instead, discarding the payload while a bounded scanner finds its `id`, method and
//!   tool (oversized.rs), then reports it ([`GateState::take_oversized`]); what follows is
//!   passed on as usual, so the connection can answer it and close with a proper handshake;
//! - the connection can tell whether a message has begun to arrive (stopping reads it to its
//!   end and answers it) and when the client last sent anything (handshakes idle past a grace
//!   can be pushed out: limits.rs).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::transport::limits::Activity;
use crate::mcp::oversized::{Oversized, Scan};

/// Where the incoming bytes stand between frames.
#[derive(Debug)]
pub struct GateState {
    header: [u8; 14],
    have: usize,
    need: usize,
    payload_left: u64,
    mask: [u8; 4],
    mask_at: usize,
    /// The frame being read: its opcode and FIN bit.
    opcode: u8,
    fin: bool,
    /// A data frame without FIN was read: its message continues in later frames.
    in_message: bool,
    /// Payload bytes of the message so far.
    message_len: u64,
    /// The message is over the limit: its frames are read here and dropped.
    discarding: bool,
    /// Fragments of the current message went on to tungstenite.
    forwarded_part: bool,
    /// A message over the limit was dropped after some of its fragments went on: tungstenite
    /// holds half a message and would fail on the next one, losing it. From then on every data
    /// message is read here, dropped and reported ([`GateState::take_dropped`]), so that the
    /// rejections owed to them are sent before the close.
    poisoned: bool,
    dropped: Vec<Scan>,
    /// Scans the message's payload for what its answer needs: for a message being discarded,
    /// and for the forwarded fragments of a fragmented one (it may turn out too big later).
    scan: Option<Scan>,
    limit: usize,
    /// False until the upgrade is done (the HTTP request is not frames).
    armed: bool,
    /// Bytes read since the upgrade (to tell a message still arriving from a stalled one).
    pub read: u64,
    oversized: Option<Oversized>,
}

/// What the header just completed means.
enum Admit {
    Forward,
    Discard,
}

impl GateState {
    fn new(limit: usize) -> GateState {
        GateState {
            header: [0; 14],
            have: 0,
            need: 0,
            payload_left: 0,
            mask: [0; 4],
            mask_at: 0,
            opcode: 0,
            fin: true,
            in_message: false,
            message_len: 0,
            discarding: false,
            forwarded_part: false,
            poisoned: false,
            dropped: Vec::new(),
            scan: None,
            limit,
            armed: false,
            read: 0,
            oversized: None,
        }
    }

    /// Whether a message has begun and not ended.
    pub fn mid_message(&self) -> bool {
        self.have > 0 || self.payload_left > 0 || self.in_message
    }

    /// A message over the limit that was read and dropped, to be answered.
    pub fn take_oversized(&mut self) -> Option<Oversized> {
        self.oversized.take()
    }

    /// Messages dropped after one over the limit left tungstenite with half a message.
    pub fn take_dropped(&mut self) -> Vec<Scan> {
        std::mem::take(&mut self.dropped)
    }

    /// One header byte; the header's length once it is whole.
    fn header_byte(&mut self, b: u8) -> Option<usize> {
        self.header[self.have] = b;
        self.have += 1;
        if self.have == 2 {
            let ext = match self.header[1] & 0x7f {
                126 => 2,
                127 => 8,
                _ => 0,
            };
            let mask = if self.header[1] & 0x80 != 0 { 4 } else { 0 };
            self.need = 2 + ext + mask;
        }
        if self.have < 2 || self.have < self.need {
            return None;
        }
        let len = match self.header[1] & 0x7f {
            126 => u16::from_be_bytes([self.header[2], self.header[3]]) as u64,
            127 => u64::from_be_bytes(self.header[2..10].try_into().expect("8 bytes")),
            n => n as u64,
        };
        let masked = self.header[1] & 0x80 != 0;
        self.mask = if masked {
            self.header[self.need - 4..self.need].try_into().expect("4 bytes")
        } else {
            [0; 4]
        };
        self.mask_at = 0;
        self.opcode = self.header[0] & 0x0f;
        self.fin = self.header[0] & 0x80 != 0;
        self.payload_left = len;
        let whole = self.have;
        self.have = 0;
        Some(whole)
    }

    /// Decides the frame whose header is complete: forwarded, or dropped with its message.
    fn admit(&mut self) -> Admit {
        // Control frames may come between the frames of a message; tungstenite checks them.
        if self.opcode >= 8 {
            return Admit::Forward;
        }
        if self.opcode != 0 {
            // A new message.
            self.message_len = 0;
            self.discarding = self.poisoned;
            self.forwarded_part = false;
            self.scan = (!self.fin || self.poisoned).then(Scan::default);
        }
        self.message_len = self.message_len.saturating_add(self.payload_left);
        if !self.discarding && self.message_len > self.limit as u64 {
            self.discarding = true;
            self.scan.get_or_insert_with(Scan::default);
        }
        if self.discarding {
            Admit::Discard
        } else {
            self.forwarded_part |= !self.fin;
            Admit::Forward
        }
    }

    /// Payload bytes of the current data frame (masked, as read): scanned when a scan runs.
    fn payload(&mut self, bytes: &[u8]) {
        if self.opcode < 8 {
            if let Some(scan) = &mut self.scan {
                let mut clear = [0u8; 512];
                for part in bytes.chunks(clear.len()) {
                    for (i, b) in part.iter().enumerate() {
                        clear[i] = b ^ self.mask[(self.mask_at + i) % 4];
                    }
                    self.mask_at = (self.mask_at + part.len()) % 4;
                    scan.feed(&clear[..part.len()]);
                }
            }
        }
        self.payload_left -= bytes.len() as u64;
    }

    /// The current frame's payload is all read. Returns true when a message was dropped (the
    /// connection has something to answer).
    fn frame_done(&mut self) -> bool {
        if self.opcode >= 8 {
            return false;
        }
        self.in_message = !self.fin;
        if !self.fin {
            return false;
        }
        let scan = self.scan.take();
        if !std::mem::replace(&mut self.discarding, false) {
            return false;
        }
        let mut scan = scan.unwrap_or_default();
        scan.finish();
        if self.poisoned {
            // A few are enough to answer what a closing connection still sends.
            if self.dropped.len() < 64 {
                self.dropped.push(scan);
            }
            return true;
        }
        self.poisoned = self.forwarded_part;
        self.oversized = Some(Oversized {
            size: self.message_len,
            limit: self.limit,
            scan,
        });
        true
    }
}

/// The socket, as tungstenite reads it through the gate.
pub struct Gate<S> {
    inner: S,
    state: Arc<Mutex<GateState>>,
    /// Fired when an oversized message was read to its end.
    oversized: Arc<Notify>,
    activity: Arc<Activity>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// A whole header waiting to be handed on (held back until it was whole).
    out: [u8; 14],
    out_len: usize,
    out_at: usize,
}

/// What the connection keeps of its gate.
#[derive(Clone)]
pub struct GateHandle {
    pub state: Arc<Mutex<GateState>>,
    pub oversized: Arc<Notify>,
}

impl<S> Gate<S> {
    pub fn new(inner: S, limit: usize, activity: Arc<Activity>) -> (Gate<S>, GateHandle) {
        let handle = GateHandle {
            state: Arc::new(Mutex::new(GateState::new(limit))),
            oversized: Arc::new(Notify::new()),
        };
        let gate = Gate {
            inner,
            state: handle.state.clone(),
            oversized: handle.oversized.clone(),
            activity,
            buf: vec![0; 16 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
            out: [0; 14],
            out_len: 0,
            out_at: 0,
        };
        (gate, handle)
    }
}

impl GateHandle {
    /// From now on the bytes are WebSocket frames.
    pub fn arm(&self) {
        self.state.lock().armed = true;
    }
}

impl<S: AsyncRead + Unpin> Gate<S> {
    /// Reads more from the socket into the buffer. Ready(Ok(false)) at the end of the stream.
    fn refill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<bool>> {
        let mut rb = ReadBuf::new(&mut self.buf);
        match Pin::new(&mut self.inner).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                self.start = 0;
                self.end = n;
                if n > 0 {
                    self.activity.touch();
                    let mut st = self.state.lock();
                    if st.armed {
                        st.read += n as u64;
                    }
                }
                Poll::Ready(Ok(n > 0))
            }
        }
    }

    /// Moves buffered bytes on: into `out` when forwarded (returns how many), or through the
    /// frame parser. None when nothing could be given to the reader yet.
    fn step(&mut self, out: &mut ReadBuf<'_>) -> Option<usize> {
        let mut st = self.state.lock();
        let avail = self.end - self.start;
        if !st.armed {
            let n = avail.min(out.remaining());
            out.put_slice(&self.buf[self.start..self.start + n]);
            self.start += n;
            return Some(n);
        }
        if st.payload_left > 0 {
            let discarding = st.discarding;
            let mut n = (st.payload_left.min(avail as u64)) as usize;
            if !discarding {
                n = n.min(out.remaining());
            }
            let bytes = &self.buf[self.start..self.start + n];
            st.payload(bytes);
            if !discarding {
                out.put_slice(bytes);
            }
            self.start += n;
            if st.payload_left == 0 && st.frame_done() {
                self.oversized.notify_one();
            }
            return (!discarding).then_some(n);
        }
        let b = self.buf[self.start];
        self.start += 1;
        let whole = st.header_byte(b)?;
        if let Admit::Forward = st.admit() {
            self.out[..whole].copy_from_slice(&st.header[..whole]);
            self.out_len = whole;
            self.out_at = 0;
        }
        if st.payload_left == 0 && st.frame_done() {
            self.oversized.notify_one();
        }
        None
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gate<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.out_at < this.out_len {
                let n = (this.out_len - this.out_at).min(out.remaining());
                out.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                match this.refill(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    // The end of the stream: nothing added is how a reader sees it.
                    Poll::Ready(Ok(false)) => return Poll::Ready(Ok(())),
                    Poll::Ready(Ok(true)) => {}
                }
            }
            if out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.step(out).is_some() {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gate<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A masked client frame with `payload_len` bytes of payload.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        pi_ide_testkit::peer::raw_frame(fin, opcode, payload)
    }

    /// Runs `bytes` through an armed gate, read in `chunk`-byte reads; returns what the reader
    /// got, and what was reported as oversized.
    fn through(bytes: &[u8], limit: usize, chunk: usize) -> (Vec<u8>, Vec<Oversized>) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let (gate, handle) = Gate::new(bytes, limit, Arc::new(Activity::default()));
            handle.arm();
            let mut gate = gate;
            let mut got = Vec::new();
            let mut found = Vec::new();
            let mut buf = vec![0u8; chunk];
            loop {
                let n = gate.read(&mut buf).await.unwrap();
                found.extend(handle.state.lock().take_oversized());
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            (got, found)
        })
    }

    #[test]
    fn frames_under_the_limit_pass_whole_and_a_message_over_it_is_dropped_and_reported() {
        let small = frame(true, 1, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let big_text = serde_json::json!({"jsonrpc":"2.0","id":"d7","method":"tools/call","params":{"name":"openDiff",
            "arguments":{"new_file_path":"/x.rs","new_file_contents":"z".repeat(5000),"tab_name":"pi-edit:1"}}})
        .to_string();
        let big = frame(true, 1, big_text.as_bytes());
        let ping = frame(true, 9, b"p");
        let mut bytes = small.clone();
        bytes.extend(&big);
        bytes.extend(&ping);
        bytes.extend(&small);
        for chunk in [1, 2, 13, 4096] {
            let (got, found) = through(&bytes, 1000, chunk);
            let mut want = small.clone();
            want.extend(&ping);
            want.extend(&small);
            assert_eq!(got, want, "chunk {chunk}: the big message is cut out whole");
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].size, big_text.len() as u64);
            assert_eq!(found[0].scan.id.as_ref().unwrap().raw(), "\"d7\"");
            assert_eq!(found[0].scan.tab_name.as_deref(), Some("pi-edit:1"));
        }
    }

    #[test]
    fn a_fragmented_message_that_grows_over_the_limit_is_reported_with_its_id() {
        let text = serde_json::json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"openDiff",
            "arguments":{"tab_name":"t","new_file_contents":"q".repeat(3000)}}})
        .to_string();
        let (a, b) = text.as_bytes().split_at(600);
        let mut bytes = frame(false, 1, a);
        bytes.extend(frame(true, 9, b"")); // a ping in between
        bytes.extend(frame(true, 0, b));
        // Then another message: tungstenite holds half of the first, so it is read here too.
        let next = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"openDiff","arguments":{"tab_name":"u"}}}"#;
        bytes.extend(frame(true, 1, next.as_bytes()));
        bytes.extend(frame(true, 8, b""));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (got, found, dropped) = rt.block_on(async {
            let (gate, handle) = Gate::new(&bytes[..], 1000, Arc::new(Activity::default()));
            handle.arm();
            let mut gate = gate;
            let mut got = Vec::new();
            let mut buf = [0u8; 7];
            loop {
                let n = gate.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let mut st = handle.state.lock();
            (got, st.take_oversized(), st.take_dropped())
        });
        let mut want = frame(false, 1, a);
        want.extend(frame(true, 9, b""));
        want.extend(frame(true, 8, b""));
        assert_eq!(got, want, "what was under the limit went on, and the Close; the rest was dropped");
        let found = found.unwrap();
        assert_eq!(found.scan.id.as_ref().unwrap().raw(), "4");
        assert_eq!(found.scan.tab_name.as_deref(), Some("t"));
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].tab_name.as_deref(), Some("u"));
    }

    #[test]
    fn knows_when_a_message_has_begun_whatever_the_chunks() {
        for len in [0, 5, 125, 126, 70_000] {
            let bytes = frame(true, 1, &vec![b'x'; len]);
            for chunk in [1, 3, 4096] {
                let mut st = GateState::new(1 << 20);
                st.armed = true;
                let mut fed = 0;
                for part in bytes.chunks(chunk) {
                    for &b in part {
                        if st.payload_left > 0 {
                            st.payload(&[b]);
                            if st.payload_left == 0 {
                                st.frame_done();
                            }
                        } else if st.header_byte(b).is_some() {
                            st.admit();
                            if st.payload_left == 0 {
                                st.frame_done();
                            }
                        }
                        fed += 1;
                    }
                    assert_eq!(st.mid_message(), fed < bytes.len(), "len {len}, chunk {chunk}");
                }
            }
        }
    }
}
