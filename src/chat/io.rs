//! The threads on Pi's three pipes: stdout records become ops, stderr keeps a short tail for
//! the exit op (it is diagnostics, never protocol), and stdin is written from a channel so
//! that Lua never waits on a Pi that is not reading.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;

use serde_json::{Map, Value};

use super::lines::{Line, Lines};
use super::op::{self, cut, Op, LINE_CHARS};
use super::Shared;

/// A longer stdout line is dropped (and counted as malformed); reading goes on at the next LF.
pub const MAX_LINE: usize = 32 << 20;
/// How many of Pi's last stderr lines the exit op carries.
pub const STDERR_LINES: usize = 20;

/// Marks one output stream as finished when dropped, even by a panic: the exit op waits for
/// both.
struct Closing<'a>(&'a Shared);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.stream_closed();
    }
}

pub fn read_stdout(shared: &Shared, out: ChildStdout) {
    let _closing = Closing(shared);
    let mut lines = Lines::new(BufReader::with_capacity(64 << 10, out), MAX_LINE);
    while let Some(line) = lines.next_line() {
        let stats = &shared.stats;
        stats.lines.fetch_add(1, Relaxed);
        stats.bytes_in.fetch_add(line.wire as u64, Relaxed);
        if line.dropped == 0 && line.bytes.trim_ascii().is_empty() {
            continue;
        }
        let record = match parse(&line) {
            Ok(r) => r,
            Err(why) => {
                stats.malformed.fetch_add(1, Relaxed);
                let start = cut(&String::from_utf8_lossy(&line.bytes[..line.bytes.len().min(1024)]), 120);
                crate::warn!("pi rpc: skipped a malformed line: {start}: {why}");
                continue;
            }
        };
        let op = match &shared.acp {
            Some(acp) => acp.record(record, shared.cap_lines),
            None => op::from_record(record, shared.cap_lines),
        };
        let Some(op) = op else {
            continue;
        };
        if matches!(op, Op::Text { .. } | Op::Thinking { .. }) {
            stats.text_deltas.fetch_add(1, Relaxed);
        }
        // Once stopped the op is dropped, but stdout is still read: a Pi blocked on a full
        // pipe could not exit.
        shared.queue.push(op, line.wire);
    }
}

fn parse(line: &Line) -> Result<Map<String, Value>, String> {
    if line.dropped > 0 {
        return Err(format!("longer than {} MiB", MAX_LINE >> 20));
    }
    match serde_json::from_slice(&line.bytes) {
        Ok(Value::Object(record)) => Ok(record),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

pub fn read_stderr(shared: &Shared, err: ChildStderr) {
    let _closing = Closing(shared);
    // Room for LINE_CHARS characters of up to four bytes each; the rest is cut.
    let mut lines = Lines::new(BufReader::new(err), LINE_CHARS * 4);
    while let Some(line) = lines.next_line() {
        let text = cut(&String::from_utf8_lossy(&line.bytes), LINE_CHARS);
        crate::debug!("pi stderr: {text}");
        push_tail(&mut shared.stderr.lock(), text);
    }
}

fn push_tail(tail: &mut VecDeque<String>, line: String) {
    if tail.len() == STDERR_LINES {
        tail.pop_front();
    }
    tail.push_back(line);
}

pub fn write_stdin(shared: &Shared, mut stdin: ChildStdin, lines: Receiver<Vec<u8>>) {
    block_sigpipe();
    for line in lines {
        if shared.stopping.load(Relaxed) || stdin.write_all(&line).is_err() {
            break;
        }
    }
    shared.stdin_open.store(false, Relaxed);
    // Dropping stdin closes it: Pi's cue for an orderly exit.
}

/// Writing to a Pi that has exited raises SIGPIPE, which kills a process that has not set it
/// aside. Neovim handles it, but blocked in this thread the signal stays pending here (it is
/// aimed at the writing thread) and the write fails with EPIPE whatever the host does.
fn block_sigpipe() {
    // SAFETY: plain signal-set calls on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_last_lines() {
        let mut tail = VecDeque::new();
        for i in 0..50 {
            push_tail(&mut tail, i.to_string());
        }
        assert_eq!(tail.len(), STDERR_LINES);
        assert_eq!(tail.front().map(String::as_str), Some("30"));
    }
}
