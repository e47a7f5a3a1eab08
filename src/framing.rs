//! Where a client's incoming bytes stand between WebSocket frames. tungstenite hands over whole
//! messages only; to stop without losing an openDiff that is still arriving (the Pi extension
//! writes the file unreviewed when the socket closes first), the connection must know whether
//! a message has begun. The socket is wrapped so that every byte read also goes through a tiny
//! frame-header parser.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Frame boundaries in the bytes read so far (client frames: masked, RFC 6455 section 5.2).
#[derive(Default, Debug)]
pub struct Frames {
    header: [u8; 14],
    have: usize,
    need: usize,
    payload_left: u64,
    /// A data frame without FIN was read: its message continues in later frames.
    in_message: bool,
    /// False until the upgrade is done (the HTTP request is not frames).
    armed: bool,
    /// Bytes read since the upgrade (to tell a message still arriving from a stalled one).
    pub read: u64,
}

impl Frames {
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if !self.armed {
            return;
        }
        self.read += bytes.len() as u64;
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let n = (self.payload_left.min(bytes.len() as u64)) as usize;
                self.payload_left -= n as u64;
                bytes = &bytes[n..];
                if self.payload_left == 0 {
                    self.frame_done();
                }
                continue;
            }
            self.header[self.have] = bytes[0];
            self.have += 1;
            bytes = &bytes[1..];
            if self.have == 2 {
                let ext = match self.header[1] & 0x7f {
                    126 => 2,
                    127 => 8,
                    _ => 0,
                };
                let mask = if self.header[1] & 0x80 != 0 { 4 } else { 0 };
                self.need = 2 + ext + mask;
            }
            if self.have >= 2 && self.have == self.need {
                let len = match self.header[1] & 0x7f {
                    126 => u16::from_be_bytes([self.header[2], self.header[3]]) as u64,
                    127 => u64::from_be_bytes(self.header[2..10].try_into().expect("8 bytes")),
                    n => n as u64,
                };
                self.have = 0;
                if len == 0 {
                    self.frame_done();
                } else {
                    self.payload_left = len;
                }
            }
        }
    }

    fn frame_done(&mut self) {
        let (fin, opcode) = (self.header[0] & 0x80 != 0, self.header[0] & 0x0f);
        // Control frames (8 and up) may come between the frames of a message.
        if opcode < 8 {
            self.in_message = !fin;
        }
    }

    /// Whether a message has begun and not ended.
    pub fn mid_message(&self) -> bool {
        self.have > 0 || self.payload_left > 0 || self.in_message
    }
}

/// A stream whose reads are also fed to a [`Frames`].
pub struct Watched<S> {
    inner: S,
    pub frames: Arc<Mutex<Frames>>,
}

impl<S> Watched<S> {
    pub fn new(inner: S) -> Watched<S> {
        Watched {
            inner,
            frames: Arc::default(),
        }
    }

    /// From now on the bytes are WebSocket frames.
    pub fn arm(frames: &Mutex<Frames>) {
        frames.lock().armed = true;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let new = &buf.filled()[before..];
            if !new.is_empty() {
                self.frames.lock().feed(new);
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
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

    /// A masked client frame with `payload_len` bytes of payload.
    fn frame(fin: bool, opcode: u8, payload_len: usize) -> Vec<u8> {
        pi_ide_peer::peer::raw_frame(fin, opcode, &vec![b'x'; payload_len])
    }

    #[test]
    fn knows_when_a_message_has_begun_whatever_the_chunks() {
        for len in [0, 5, 125, 126, 70_000] {
            let bytes = frame(true, 1, len);
            for chunk in [1, 3, 4096] {
                let mut f = Frames {
                    armed: true,
                    ..Default::default()
                };
                for (i, part) in bytes.chunks(chunk).enumerate() {
                    f.feed(part);
                    let done = (i + 1) * chunk >= bytes.len();
                    assert_eq!(f.mid_message(), !done, "len {len}, chunk {chunk}, part {i}");
                }
            }
        }
        // A fragmented message, with a ping in between.
        let mut f = Frames {
            armed: true,
            ..Default::default()
        };
        f.feed(&frame(false, 1, 10));
        assert!(f.mid_message());
        f.feed(&frame(true, 9, 0));
        assert!(f.mid_message(), "a ping does not end a message");
        f.feed(&frame(true, 0, 10));
        assert!(!f.mid_message());
        // Not armed (the HTTP upgrade request): nothing is parsed.
        let mut f = Frames::default();
        f.feed(b"GET / HTTP/1.1\r\n");
        assert!(!f.mid_message());
    }
}
