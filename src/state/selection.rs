//! The `selection_changed` feed: a trailing debounce, and the last state sent (for
//! deduplication, for new clients, and for `getLatestSelection`).
//!
//! Per cursor move Lua only calls [`Selection::touch`] (a lock, an atomic, no allocation); when
//! the cursor has been still for the debounce time, the debounce thread asks Lua once for the
//! full state ([`crate::state::events::Event::SelectionDue`]), which is broadcast if it changed.
//!
//! The debounce runs on a thread of its own with a condition variable rather than on the tokio
//! runtime: tokio's timer rounds deadlines up to whole milliseconds, which measured as ~1-2 ms
//! of extra latency per notification here.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

#[derive(Default)]
struct Timer {
    /// The last touch, while a firing is due.
    last_touch: Option<Instant>,
    stopped: bool,
}

pub struct Selection {
    debounce: Duration,
    timer: Mutex<Timer>,
    wake: Condvar,
    /// The last state sent, as params JSON (each dialect's frame is made from it: notify.rs).
    last: Mutex<Option<Value>>,
}

impl Selection {
    pub fn new(debounce: Duration) -> Self {
        Selection {
            debounce,
            timer: Mutex::new(Timer::default()),
            wake: Condvar::new(),
            last: Mutex::new(None),
        }
    }

    /// Something moved: (re)start the debounce.
    pub fn touch(&self) {
        let mut t = self.timer.lock();
        let was_idle = t.last_touch.is_none();
        t.last_touch = Some(Instant::now());
        drop(t);
        if was_idle {
            self.wake.notify_one();
        }
    }

    /// Blocks until the cursor has been still for the debounce time after a touch. Returns
    /// false once [`Selection::stop`] was called.
    pub fn wait_due(&self) -> bool {
        let mut t = self.timer.lock();
        loop {
            if t.stopped {
                return false;
            }
            match t.last_touch {
                None => self.wake.wait(&mut t),
                Some(last) => {
                    let due = last + self.debounce;
                    if Instant::now() >= due {
                        t.last_touch = None;
                        return true;
                    }
                    self.wake.wait_until(&mut t, due);
                }
            }
        }
    }

    pub fn stop(&self) {
        self.timer.lock().stopped = true;
        self.wake.notify_all();
    }

    /// Records a new state. Returns whether it differs from the last one (then it is sent).
    pub fn set(&self, params: &Value) -> bool {
        let mut last = self.last.lock();
        if last.as_ref() == Some(params) {
            return false;
        }
        *last = Some(params.clone());
        true
    }

    /// The last state sent, for a client that just initialized.
    pub fn last_params(&self) -> Option<Value> {
        self.last.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn trailing_debounce_fires_once_after_the_last_touch() {
        let debounce = Duration::from_millis(500);
        let s = Arc::new(Selection::new(debounce));
        let fired = Arc::new(AtomicUsize::new(0));
        let (s2, f2) = (s.clone(), fired.clone());
        let thread = std::thread::spawn(move || {
            while s2.wait_due() {
                f2.fetch_add(1, Ordering::SeqCst);
            }
        });
        // Touches 10 ms apart (well under the debounce): still moving, nothing fires. A loaded
        // machine may oversleep; the check only holds when every gap really was short.
        let mut longest = Duration::ZERO;
        let mut last = std::time::Instant::now();
        for _ in 0..10 {
            s.touch();
            longest = longest.max(last.elapsed());
            last = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(10));
        }
        let n = fired.load(Ordering::SeqCst);
        longest = longest.max(last.elapsed());
        if longest < debounce {
            assert_eq!(n, 0, "fired while still moving");
        }
        // Wait for the firing without a timed assertion: it must come, and only once.
        while fired.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let once = fired.load(Ordering::SeqCst);
        std::thread::sleep(debounce * 2);
        assert_eq!(
            fired.load(Ordering::SeqCst),
            once,
            "no touch, no second firing"
        );
        s.touch();
        while fired.load(Ordering::SeqCst) == once {
            std::thread::sleep(Duration::from_millis(5));
        }
        s.stop();
        thread.join().unwrap();
        assert_eq!(fired.load(Ordering::SeqCst), once + 1);
    }

    #[test]
    fn unchanged_state_is_not_sent_twice() {
        let s = Selection::new(Duration::from_millis(100));
        assert!(s.last_params().is_none());
        let a = json!({"filePath": "/a", "text": ""});
        assert!(s.set(&a));
        let f = crate::agents::as_pi_ide("selection_changed", &s.last_params().unwrap()).unwrap();
        let v: Value = serde_json::from_str(&f).unwrap();
        assert_eq!(v["method"], "selection_changed");
        assert_eq!(v["params"], a);
        assert!(!s.set(&a));
        assert!(s.set(&json!({"filePath": "/b", "text": ""})));
        assert_eq!(s.last_params().unwrap()["filePath"], "/b");
    }
}
