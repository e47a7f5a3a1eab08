//! The `selection_changed` feed: a trailing debounce that runs on the server thread, and the
//! last state sent (for deduplication, for new clients, and for `getLatestSelection`).
//!
//! Per cursor move Lua only calls [`Selection::touch`] (a lock and an atomic, no allocation);
//! when the cursor has been still for the debounce time the server asks Lua once for the full
//! state ([`crate::bridge::Event::SelectionDue`]) and broadcasts it if it changed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

pub struct Selection {
    debounce: Duration,
    last_touch: Mutex<Option<Instant>>,
    armed: AtomicBool,
    wake: Notify,
    /// The last state sent, as params JSON and as a whole notification frame.
    last: Mutex<Option<(Value, String)>>,
}

impl Selection {
    pub fn new(debounce: Duration) -> Self {
        Selection {
            debounce,
            last_touch: Mutex::new(None),
            armed: AtomicBool::new(false),
            wake: Notify::new(),
            last: Mutex::new(None),
        }
    }

    /// Something moved: (re)start the debounce.
    pub fn touch(&self) {
        *self.last_touch.lock() = Some(Instant::now());
        if !self.armed.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }

    /// Waits for a touch, then until nothing was touched for the debounce time.
    pub async fn next_due(&self) {
        self.wake.notified().await;
        loop {
            let last = self.last_touch.lock().unwrap_or_else(Instant::now);
            let due = last + self.debounce;
            if Instant::now() >= due {
                break;
            }
            tokio::time::sleep_until(due).await;
        }
        self.armed.store(false, Ordering::Release);
    }

    /// Records a new state. Returns the notification frame to broadcast, or None when it is the
    /// same as the last one.
    pub fn set(&self, params: Value) -> Option<String> {
        let mut last = self.last.lock();
        if last.as_ref().is_some_and(|(v, _)| *v == params) {
            return None;
        }
        let frame = crate::jsonrpc::notification_frame("selection_changed", &params);
        *last = Some((params, frame.clone()));
        Some(frame)
    }

    /// The last notification frame sent, for a client that just initialized.
    pub fn last_frame(&self) -> Option<String> {
        self.last.lock().as_ref().map(|(_, f)| f.clone())
    }

    pub fn last_params(&self) -> Option<Value> {
        self.last.lock().as_ref().map(|(v, _)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn trailing_debounce_fires_once_after_the_last_touch() {
        let s = Arc::new(Selection::new(Duration::from_millis(100)));
        let fired = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (s2, f2) = (s.clone(), fired.clone());
        tokio::spawn(async move {
            loop {
                s2.next_due().await;
                f2.fetch_add(1, Ordering::SeqCst);
            }
        });
        // Ten touches 50 ms apart: still moving, nothing fires.
        for _ in 0..10 {
            s.touch();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            fired.load(Ordering::SeqCst),
            1,
            "no touch, no second firing"
        );
        s.touch();
        tokio::time::sleep(Duration::from_millis(101)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn unchanged_state_is_not_sent_twice() {
        let s = Selection::new(Duration::from_millis(100));
        assert!(s.last_frame().is_none());
        let a = json!({"filePath": "/a", "text": ""});
        let f = s.set(a.clone()).unwrap();
        let v: Value = serde_json::from_str(&f).unwrap();
        assert_eq!(v["method"], "selection_changed");
        assert_eq!(v["params"], a);
        assert!(s.set(a.clone()).is_none());
        assert!(s.set(json!({"filePath": "/b", "text": ""})).is_some());
        assert_eq!(s.last_params().unwrap()["filePath"], "/b");
    }
}
