//! What waits to be written to one client. Bounded: an agent that stops reading (Pi suspended
//! with Ctrl-Z for a day is ordinary) must not grow Neovim. `selection_changed` is "latest
//! wins": one slot, replaced, never a history. Any other frame is queued; beyond the bound the
//! client is given up (Close 1008): it would never catch up, and holding its frames is what
//! grew the editor.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Frames (other than the selection) that may wait for one client.
pub const MAX_FRAMES: usize = 1024;

/// The next thing for a client's writer.
#[derive(Debug, PartialEq, Eq)]
pub enum Outbound {
    Frame(String),
    /// Over the bound: close the connection with 1008 ([`NOT_READING`]). Given once.
    GiveUp,
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<String>,
    bytes: usize,
    selection: Option<String>,
    /// Over the bound: nothing more is queued, the writer closes.
    overflowed: bool,
    /// The writer has taken its GiveUp.
    given_up: bool,
}

pub struct Outbox {
    queue: Mutex<Queue>,
    /// Bytes that may wait besides the frames' count bound (the largest frame we accept).
    max_bytes: usize,
    ready: Notify,
}

/// Why a client was given up.
pub const NOT_READING: &str = "the client does not read what the editor sends";

impl Outbox {
    pub fn new(max_bytes: usize) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue::default()),
            max_bytes,
            ready: Notify::new(),
        }
    }

    /// Queues a frame. False when the client is being given up.
    pub fn push(&self, frame: String) -> bool {
        let mut q = self.queue.lock();
        if q.overflowed {
            return false;
        }
        q.bytes += frame.len();
        q.frames.push_back(frame);
        if q.frames.len() > MAX_FRAMES || (q.bytes > self.max_bytes && q.frames.len() > 1) {
            q.overflowed = true;
            q.frames.clear();
            q.bytes = 0;
            q.selection = None;
        }
        drop(q);
        self.ready.notify_one();
        true
    }

    /// The selection as it is now, replacing one not yet written.
    pub fn set_selection(&self, frame: String) -> bool {
        let mut q = self.queue.lock();
        if q.overflowed {
            return false;
        }
        q.selection = Some(frame);
        drop(q);
        self.ready.notify_one();
        true
    }

    /// Whether the client was given up for not reading (its writer must not wait on it).
    pub fn overflowed(&self) -> bool {
        self.queue.lock().overflowed
    }

    /// The next thing to write, if any: queued frames in order, then the latest selection; once
    /// over the bound, only GiveUp.
    pub fn take(&self) -> Option<Outbound> {
        let mut q = self.queue.lock();
        if q.overflowed {
            let first = !std::mem::replace(&mut q.given_up, true);
            return first.then_some(Outbound::GiveUp);
        }
        if let Some(f) = q.frames.pop_front() {
            q.bytes -= f.len();
            return Some(Outbound::Frame(f));
        }
        q.selection.take().map(Outbound::Frame)
    }

    /// Waits until something may be there to take.
    pub async fn ready(&self) {
        self.ready.notified().await
    }

    /// Frames waiting (not counting the selection).
    pub fn len(&self) -> usize {
        self.queue.lock().frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// For tests: the next frame written to this client, as JSON (panics on anything else).
    #[cfg(test)]
    pub fn next_json(&self) -> serde_json::Value {
        match self.take().expect("a frame") {
            Outbound::Frame(f) => serde_json::from_str(&f).unwrap(),
            other => panic!("{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selection_is_latest_wins_and_comes_after_queued_frames() {
        let o = Outbox::new(1 << 20);
        for i in 0..20_000 {
            o.set_selection(format!("sel {i}"));
        }
        o.push("answer".into());
        assert_eq!(o.take(), Some(Outbound::Frame("answer".into())));
        assert_eq!(o.take(), Some(Outbound::Frame("sel 19999".into())));
        assert_eq!(o.take(), None);
    }

    #[test]
    fn beyond_the_bound_the_client_is_closed_with_1008_and_nothing_more_is_kept() {
        let o = Outbox::new(1 << 20);
        for i in 0..MAX_FRAMES {
            assert!(o.push(format!("f{i}")));
        }
        assert!(!o.overflowed());
        o.push("one too many".into());
        assert!(o.overflowed());
        assert!(o.is_empty());
        assert!(!o.push("more".into()), "nothing is queued after the overflow");
        assert_eq!(o.take(), Some(Outbound::GiveUp));
        assert_eq!(o.take(), None, "given up once");
        // Bytes: one large frame is fine; a second one beyond the bound is not.
        let o = Outbox::new(1000);
        assert!(o.push("x".repeat(5000)));
        assert!(!o.overflowed());
        o.push("y".into());
        assert!(o.overflowed());
    }
}
