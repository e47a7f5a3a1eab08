//! Reading LF-terminated lines with a cap on their length. `BufRead::read_until` would keep a
//! line of any size in memory; this is the same loop over `fill_buf`, except that bytes past
//! the cap are counted and dropped up to the next LF.
//!
//! Lines split on LF only: U+2028 and U+2029 are valid inside JSON strings, and Pi's framing
//! (the RPC mode's page of Pi's documentation, "Framing") says they are not record boundaries.
//! A CR before the LF is dropped.

use std::io::{BufRead, ErrorKind};

/// One line, without its LF (or CRLF).
pub struct Line {
    /// Its first `cap` bytes.
    pub bytes: Vec<u8>,
    /// How many bytes past the cap were dropped (0: `bytes` is the whole line).
    pub dropped: usize,
    /// What it cost on the wire, LF included (for the statistics).
    pub wire: usize,
}

pub struct Lines<R> {
    reader: R,
    cap: usize,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, cap: usize) -> Lines<R> {
        Lines { reader, cap }
    }

    /// The next line; None at the end of the stream (or on a read error: the pipe is gone).
    /// A last line without an LF is still a line.
    pub fn next_line(&mut self) -> Option<Line> {
        let mut line = Line { bytes: Vec::new(), dropped: 0, wire: 0 };
        loop {
            let buf = match self.reader.fill_buf() {
                Ok([]) => return (line.wire > 0).then(|| finish(line)),
                Ok(buf) => buf,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return (line.wire > 0).then(|| finish(line)),
            };
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1),
                None => (buf, buf.len()),
            };
            let room = self.cap.saturating_sub(line.bytes.len());
            let kept = chunk.len().min(room);
            line.bytes.extend_from_slice(&chunk[..kept]);
            line.dropped += chunk.len() - kept;
            line.wire += done;
            let ended = done > chunk.len();
            self.reader.consume(done);
            if ended {
                return Some(finish(line));
            }
        }
    }
}

fn finish(mut line: Line) -> Line {
    // A CR just before the LF is part of the framing (only when the whole line was kept: a
    // dropped line is thrown away anyway).
    if line.dropped == 0 && line.bytes.last() == Some(&b'\r') {
        line.bytes.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], cap: usize) -> Vec<(Vec<u8>, usize)> {
        // A tiny buffer, so that lines straddle refills.
        let mut l = Lines::new(std::io::BufReader::with_capacity(3, input), cap);
        std::iter::from_fn(|| l.next_line().map(|x| (x.bytes, x.dropped))).collect()
    }

    #[test]
    fn splits_on_lf_only_and_strips_cr() {
        let text = "a\u{2028}b\r\nc\u{2029}\n\nlast".as_bytes();
        let got = all(text, 100);
        let want: Vec<(Vec<u8>, usize)> = vec![
            ("a\u{2028}b".into(), 0),
            ("c\u{2029}".into(), 0),
            (vec![], 0),
            ("last".into(), 0),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_long_line_keeps_its_cap_and_counts_the_rest() {
        let got = all(b"0123456789\nok\n", 4);
        assert_eq!(got, vec![(b"0123".to_vec(), 6), (b"ok".to_vec(), 0)]);
    }
}
