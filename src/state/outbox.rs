//! What waits to be written to one client. Two classes of frames:
//!
//! - **Answers** to the client's own tool calls. An answer is a promise (the Pi extension writes
//!   a file unreviewed when an openDiff goes unanswered), so it is never dropped and never
//!   counted against the bound. They cannot grow without end either: while answers wait, the
//!   transport stops reading the client's further calls (see [`Outbox::answers_waiting`]).
//! - **Optional frames**: our requests to the agent, `request_cancelled`, other notifications
//!   and the selection. They give way: the selection is "latest wins" (one slot); a newer
//!   request of a method replaces one of the same method not written yet (at most one
//!   getSuggestions waits per client); a `request_cancelled` takes its request out of the queue
//!   when that was not written yet, and nothing goes on the wire. Beyond the bound on the rest
//!   the client is given up (Close 1008): it would never catch up.
//!
//! Once the transport closes the connection ([`Outbox::begin_closing`]), optional frames are
//! dropped and refused; answers are still taken (the abandon answers of parked calls).

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Optional frames (besides the selection) that may wait for one client.
pub const MAX_FRAMES: usize = 1024;

/// Answers waiting to be written beyond which the transport stops reading the client's calls.
pub const MAX_ANSWERS_WAITING: usize = 256;

/// The next thing for a client's writer.
#[derive(Debug, PartialEq, Eq)]
pub enum Outbound {
    /// A frame to write.
    Frame(String),
    /// Over the bound: close the connection with 1008 ([`NOT_READING`]). Given once; the
    /// answers still waiting come after it.
    GiveUp,
}

/// What a queued frame is, for the rules above.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    Answer,
    /// Our request `req` to the agent.
    Request { req: u64, method: String },
    /// Any other notification (request_cancelled included).
    Notification,
}

struct Item {
    frame: String,
    class: Class,
}

impl Item {
    fn optional(&self) -> bool {
        self.class != Class::Answer
    }
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Optional frames in `items`, and their bytes.
    optional: usize,
    optional_bytes: usize,
    answers: usize,
    selection: Option<String>,
    /// Over the bound: optional frames are dropped and refused; the writer closes.
    overflowed: bool,
    /// The writer has taken its GiveUp.
    given_up: bool,
    /// The transport is closing the connection: only answers from now on.
    closing: bool,
}

impl Queue {
    fn drop_optional(&mut self) {
        self.items.retain(|i| !i.optional());
        self.optional = 0;
        self.optional_bytes = 0;
        self.selection = None;
    }

    fn remove_at(&mut self, at: usize) -> Option<Item> {
        let item = self.items.remove(at)?;
        if item.optional() {
            self.optional -= 1;
            self.optional_bytes -= item.frame.len();
        } else {
            self.answers -= 1;
        }
        Some(item)
    }

    fn push(&mut self, item: Item, max_bytes: usize) {
        if item.optional() {
            self.optional += 1;
            self.optional_bytes += item.frame.len();
        } else {
            self.answers += 1;
        }
        self.items.push_back(item);
        let over_bytes = self.optional_bytes > max_bytes && self.optional > 1;
        if self.optional > MAX_FRAMES || over_bytes {
            self.overflowed = true;
            self.drop_optional();
        }
    }

    /// Optional frames are not taken (the socket is full, closing, or given up).
    fn refuses_optional(&self) -> bool {
        self.overflowed || self.closing
    }
}

pub struct Outbox {
    queue: Mutex<Queue>,
    /// Bytes of optional frames that may wait (the largest frame we accept).
    max_bytes: usize,
    ready: Notify,
}

/// Why a client was given up.
pub const NOT_READING: &str = "the client does not read what the editor sends";

/// What became of a request of ours queued with [`Outbox::push_request`].
#[derive(Debug, PartialEq, Eq)]
pub enum Queued {
    /// Queued; `superseded` is an older request of the same method it replaced (never sent).
    Yes { superseded: Option<u64> },
    /// The client is being closed: not queued.
    No,
}

/// What became of a `request_cancelled` given to [`Outbox::push_cancel`].
#[derive(Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// The request was still in the queue: it was taken out; nothing goes on the wire.
    Unsent,
    /// The request went out already: the cancel is queued after it.
    Queued,
    /// The client is being closed.
    Closing,
}

impl Outbox {
    pub fn new(max_bytes: usize) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue::default()),
            max_bytes,
            ready: Notify::new(),
        }
    }

    fn wake(&self) {
        self.ready.notify_one();
    }

    /// Queues the answer to one of the client's calls. Never dropped; false only once the
    /// connection is over (nothing can be written any more).
    pub fn push_answer(&self, frame: String) -> bool {
        self.queue.lock().push(
            Item {
                frame,
                class: Class::Answer,
            },
            self.max_bytes,
        );
        self.wake();
        true
    }

    /// Queues a request of ours (`req`, of `method`). An older one of the same method that was
    /// not written yet is replaced: the agent could only answer the newer one in time.
    pub fn push_request(&self, req: u64, method: &str, frame: String) -> Queued {
        let mut q = self.queue.lock();
        if q.refuses_optional() {
            return Queued::No;
        }
        let older = q
            .items
            .iter()
            .position(|i| matches!(&i.class, Class::Request { method: m, .. } if m == method));
        let superseded = older.and_then(|at| match q.remove_at(at)?.class {
            Class::Request { req, .. } => Some(req),
            _ => None,
        });
        let class = Class::Request {
            req,
            method: method.to_owned(),
        };
        q.push(Item { frame, class }, self.max_bytes);
        drop(q);
        self.wake();
        Queued::Yes { superseded }
    }

    /// `request_cancelled` for `req`: when the request was not written yet it is taken out of
    /// the queue and nothing is sent; else `frame` is queued after it.
    pub fn push_cancel(&self, req: u64, frame: String) -> Cancelled {
        let mut q = self.queue.lock();
        if q.refuses_optional() {
            return Cancelled::Closing;
        }
        let unsent = q
            .items
            .iter()
            .position(|i| matches!(i.class, Class::Request { req: r, .. } if r == req));
        if let Some(at) = unsent {
            q.remove_at(at);
            return Cancelled::Unsent;
        }
        drop(q);
        match self.push_notification(frame) {
            true => Cancelled::Queued,
            false => Cancelled::Closing,
        }
    }

    /// Queues a notification. False when the client is being closed or given up.
    pub fn push_notification(&self, frame: String) -> bool {
        let mut q = self.queue.lock();
        if q.refuses_optional() {
            return false;
        }
        q.push(
            Item {
                frame,
                class: Class::Notification,
            },
            self.max_bytes,
        );
        drop(q);
        self.wake();
        true
    }

    /// The selection as it is now, replacing one not yet written.
    pub fn set_selection(&self, frame: String) -> bool {
        let mut q = self.queue.lock();
        if q.refuses_optional() {
            return false;
        }
        q.selection = Some(frame);
        drop(q);
        self.wake();
        true
    }

    #[cfg(test)]
    /// Whether the client was given up for not reading.
    pub fn overflowed(&self) -> bool {
        self.queue.lock().overflowed
    }

    /// The connection is closing: optional frames are dropped and refused from now on.
    pub fn begin_closing(&self) {
        let mut q = self.queue.lock();
        q.closing = true;
        q.drop_optional();
    }

    /// Answers not yet written (the transport reads no more calls while there are many).
    pub fn answers_waiting(&self) -> usize {
        self.queue.lock().answers
    }

    /// Whether anything waits that [`Outbox::take`] would give with `optional` as given.
    pub fn has_waiting(&self, optional: bool) -> bool {
        let q = self.queue.lock();
        if q.overflowed && !q.given_up {
            return true;
        }
        q.answers > 0 || (optional && (q.optional > 0 || q.selection.is_some()))
    }

    /// The next thing to write: queued frames in order, then the latest selection. With
    /// `optional` false (the socket's send queue is long: room is kept for answers), only
    /// answers. Over the bound: GiveUp once, then the answers still waiting.
    pub fn take(&self, optional: bool) -> Option<Outbound> {
        let mut q = self.queue.lock();
        if q.overflowed && !std::mem::replace(&mut q.given_up, true) {
            return Some(Outbound::GiveUp);
        }
        let optional = optional && !q.refuses_optional();
        let next = q.items.iter().position(|i| optional || !i.optional());
        if let Some(at) = next {
            return q.remove_at(at).map(|i| Outbound::Frame(i.frame));
        }
        if optional {
            return q.selection.take().map(Outbound::Frame);
        }
        None
    }

    /// Waits until something may be there to take.
    pub async fn ready(&self) {
        self.ready.notified().await
    }

    /// For tests: the next frame written to this client, as JSON (panics on anything else).
    #[cfg(test)]
    pub fn next_json(&self) -> serde_json::Value {
        match self.take(true).expect("a frame") {
            Outbound::Frame(f) => serde_json::from_str(&f).unwrap(),
            other => panic!("{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(s: &str) -> Option<Outbound> {
        Some(Outbound::Frame(s.into()))
    }

    #[test]
    fn the_selection_is_latest_wins_and_comes_after_queued_frames() {
        let o = Outbox::new(1 << 20);
        for i in 0..20_000 {
            o.set_selection(format!("sel {i}"));
        }
        o.push_answer("answer".into());
        assert_eq!(o.take(true), frame("answer"));
        assert_eq!(o.take(true), frame("sel 19999"));
        assert_eq!(o.take(true), None);
    }

    #[test]
    fn answers_are_never_dropped_nor_counted_against_the_bound() {
        let o = Outbox::new(1 << 20);
        o.push_answer("FILE_SAVED".into());
        for i in 0..MAX_FRAMES {
            assert!(o.push_notification(format!("n{i}")));
        }
        for i in 0..5000 {
            o.push_answer(format!("a{i}"));
        }
        assert!(!o.overflowed(), "answers do not count");
        assert!(o.push_notification("one too many".into()));
        assert!(o.overflowed());
        assert!(!o.push_notification("more".into()), "refused after the overflow");
        assert_eq!(o.take(true), Some(Outbound::GiveUp));
        assert_eq!(o.take(true), frame("FILE_SAVED"), "the answer queued first survives");
        for i in 0..5000 {
            assert_eq!(o.take(true), frame(&format!("a{i}")));
        }
        assert_eq!(o.take(true), None);
        // Bytes: one large optional frame is fine; a second one beyond the bound is not.
        let o = Outbox::new(1000);
        assert!(o.push_notification("x".repeat(5000)));
        o.push_answer("y".repeat(5000));
        assert!(!o.overflowed());
        o.push_notification("z".into());
        assert!(o.overflowed());
    }

    #[test]
    fn a_cancel_takes_its_unsent_request_out_and_a_newer_request_replaces_an_older_one() {
        let o = Outbox::new(1 << 20);
        // Pi suspended while the user types: each pause is a request and its cancel.
        for req in 0..10_000u64 {
            assert_eq!(
                o.push_request(req, "getSuggestions", format!("r{req}")),
                Queued::Yes { superseded: None }
            );
            assert_eq!(o.push_cancel(req, format!("c{req}")), Cancelled::Unsent);
        }
        assert!(!o.overflowed());
        assert_eq!(o.take(true), None, "nothing went on the wire");
        // Not cancelled: the newer replaces the older of the same method, not other methods.
        o.push_request(1, "getSuggestions", "r1".into());
        o.push_request(2, "listSuggestionModels", "m2".into());
        assert_eq!(
            o.push_request(3, "getSuggestions", "r3".into()),
            Queued::Yes { superseded: Some(1) }
        );
        assert_eq!(o.take(true), frame("m2"));
        assert_eq!(o.take(true), frame("r3"));
        // Written already: the cancel goes out after it.
        assert_eq!(o.push_cancel(3, "c3".into()), Cancelled::Queued);
        assert_eq!(o.take(true), frame("c3"));
    }

    #[test]
    fn with_the_socket_full_only_answers_are_taken_and_closing_keeps_only_answers() {
        let o = Outbox::new(1 << 20);
        o.push_notification("n1".into());
        o.push_answer("a1".into());
        o.set_selection("s".into());
        assert!(o.has_waiting(false));
        assert_eq!(o.take(false), frame("a1"));
        assert!(!o.has_waiting(false));
        assert_eq!(o.take(false), None);
        assert!(o.has_waiting(true));
        o.begin_closing();
        assert!(!o.has_waiting(true), "optional frames are dropped");
        assert!(!o.push_notification("n2".into()));
        assert_eq!(o.push_request(9, "getSuggestions", "r".into()), Queued::No);
        o.push_answer("DIFF_REJECTED".into());
        assert_eq!(o.answers_waiting(), 1);
        assert_eq!(o.take(true), frame("DIFF_REJECTED"));
        assert_eq!(o.take(true), None);
    }
}
