//! The ops waiting for Lua. The stdout reader appends (coalescing as it goes: a stream of text
//! deltas is one op, a tool's cumulative output replaces its previous one); Lua drains all of
//! them at once. Two conditions hang off the one lock: `ready` tells the pump there is
//! something to wake Lua for, `room` lets a reader blocked on a full queue go on.

use std::collections::VecDeque;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::op::Op;

/// More ops than this and the reader stops reading stdout until Lua drains: Pi honours
/// back-pressure on its stdout, so memory stays bounded while Lua is busy or stuck.
pub const MAX_OPS: usize = 4096;
/// The same bound on what the queued ops weigh (their records' size on the wire): 4096
/// `message_end`s of a long conversation would otherwise hold gigabytes.
pub const MAX_BYTES: usize = 64 << 20;

#[derive(Default)]
struct State {
    ops: VecDeque<Op>,
    bytes: usize,
    /// Something arrived since the pump last woke Lua.
    dirty: bool,
    /// ...and it should not wait for the next frame.
    urgent: bool,
    /// Stopped: ops are dropped, nobody waits for room, the pump ends.
    closed: bool,
    /// The exit op is queued: nothing comes after it.
    finished: bool,
}

#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    ready: Condvar,
    room: Condvar,
}

/// What the pump should do next.
pub enum Due {
    /// Wake Lua now.
    Wake,
    /// Nothing more will come.
    Done,
}

impl Queue {
    /// Appends `op` (weighing `bytes`), waiting for room when Lua is behind; false once
    /// closed or finished (the op is dropped).
    pub fn push(&self, op: Op, bytes: usize) -> bool {
        let mut s = self.state.lock();
        if s.closed || s.finished {
            return false;
        }
        let op = match coalesce(&mut s.ops, op) {
            None => return self.touched(s, bytes, false),
            Some(op) => op,
        };
        while (s.ops.len() >= MAX_OPS || s.bytes >= MAX_BYTES) && !s.closed {
            self.room.wait(&mut s);
        }
        if s.closed {
            return false;
        }
        let urgent = op.urgent();
        s.finished = matches!(op, Op::Exit { .. });
        s.ops.push_back(op);
        self.touched(s, bytes, urgent)
    }

    fn touched(&self, mut s: MutexGuard<State>, bytes: usize, urgent: bool) -> bool {
        s.bytes += bytes;
        s.dirty = true;
        s.urgent |= urgent;
        self.ready.notify_all();
        true
    }

    /// Every queued op, in order.
    pub fn drain(&self) -> Vec<Op> {
        let mut s = self.state.lock();
        s.bytes = 0;
        let ops = s.ops.drain(..).collect();
        self.room.notify_all();
        ops
    }

    /// Drops what is queued and everything after; wakes every waiter.
    pub fn close(&self) {
        let mut s = self.state.lock();
        s.closed = true;
        s.ops.clear();
        s.bytes = 0;
        self.room.notify_all();
        self.ready.notify_all();
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.state.lock().ops.len()
    }

    /// For the pump: blocks until something has arrived, then until `not_before` unless it is
    /// urgent. Clears the flags it answers for.
    pub fn wait_due(&self, not_before: Instant) -> Due {
        let mut s = self.state.lock();
        while !s.dirty && !s.closed && !s.finished {
            self.ready.wait(&mut s);
        }
        while !s.urgent && !s.closed && Instant::now() < not_before {
            self.ready.wait_until(&mut s, not_before);
        }
        if s.closed || (!s.dirty && s.finished) {
            return Due::Done;
        }
        s.dirty = false;
        s.urgent = false;
        Due::Wake
    }
}

/// Merges `op` into the last queued one when it continues it; returns it when it does not.
fn coalesce(ops: &mut VecDeque<Op>, op: Op) -> Option<Op> {
    let Some(last) = ops.back_mut() else {
        return Some(op);
    };
    match (last, op) {
        (Op::Text { index: a, text }, Op::Text { index: b, text: more })
        | (Op::Thinking { index: a, text }, Op::Thinking { index: b, text: more })
            if *a == b =>
        {
            text.push_str(&more);
            None
        }
        (last, op) => {
            // A tool's partial result is cumulative: only the latest one matters.
            if let (Op::ToolOutput { id: a, .. }, Op::ToolOutput { id: b, .. }) = (&*last, &op) {
                if a == b {
                    *last = op;
                    return None;
                }
            }
            Some(op)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(index: i64, t: &str) -> Op {
        Op::Text { index: Some(index), text: t.into() }
    }

    #[test]
    fn deltas_of_one_block_coalesce_and_blocks_do_not() {
        let q = Queue::default();
        for t in ["a", "b", "c"] {
            q.push(text(0, t), 1);
        }
        q.push(Op::Thinking { index: Some(0), text: "t".into() }, 1);
        q.push(text(1, "x"), 1);
        q.push(text(1, "y"), 1);
        assert_eq!(q.drain(), vec![
            text(0, "abc"),
            Op::Thinking { index: Some(0), text: "t".into() },
            text(1, "xy"),
        ]);
        // After a drain, a delta starts a new op (Lua appends it to what it drew).
        q.push(text(1, "z"), 1);
        assert_eq!(q.drain(), vec![text(1, "z")]);
    }

    #[test]
    fn the_exit_op_is_the_last() {
        let q = Queue::default();
        assert!(q.push(Op::Exit { code: Some(0), signal: None, stderr: vec![] }, 0));
        assert!(!q.push(text(0, "late"), 1));
        assert_eq!(q.drain().len(), 1);
        assert!(matches!(q.wait_due(Instant::now()), Due::Wake));
        assert!(matches!(q.wait_due(Instant::now()), Due::Done));
    }
}
