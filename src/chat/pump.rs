//! Waking Lua at most once per frame. Pi can stream thousands of deltas a second; the queue
//! coalesces them, and this thread turns "something arrived" into at most one wake per
//! `frame`, so the main loop redraws ~60 times a second however fast Pi goes. An urgent op
//! (a response, a dialog, the exit) does not wait for the frame.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::queue::Due;
use super::Shared;

pub fn run(shared: &Shared) {
    let mut last: Option<Instant> = None;
    loop {
        let not_before = last.map_or_else(Instant::now, |t| t + shared.frame);
        match shared.queue.wait_due(not_before) {
            Due::Done => return,
            Due::Wake => {
                (shared.wake)();
                shared.stats.wakes.fetch_add(1, Relaxed);
                last = Some(Instant::now());
            }
        }
    }
}
