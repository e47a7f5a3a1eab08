//! How much of Neovim a local process can hold through our port. Any process on this machine
//! can connect; one that opens sockets and never completes a handshake would otherwise keep a
//! file descriptor of Neovim's each, until Neovim can open no file at all (no swap file, no
//! buffer read). So: a deadline from accept to a valid upgrade, a cap on upgraded clients (HTTP
//! 503 beyond it), and two stages before the upgrade:
//!
//! 1. **Silent**: accepted, nothing received yet (the Pi extension's bare TCP probe, an idle
//!    socket, or one of a burst of clients whose library connects them all before it sends any
//!    request). Room for a burst; beyond it a new one pushes out the oldest silent one, so a
//!    flood of idle sockets cannot lock the real agent out.
//! 2. **Handshaking**: its request has begun to arrive. A few hold a slot; a newcomer beyond
//!    them pushes out a holder only if that one has sent nothing for [`IDLE_GRACE`] (it stalls);
//!    otherwise it waits its turn, since a real handshake takes a millisecond: a burst of
//!    well-behaved clients is served whole. The waiting are capped too.
//!
//! The caps shrink with a low open-file limit, so sockets never take more than a small share.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

/// From accept to a valid WebSocket upgrade (a real client needs a millisecond).
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(3);

/// A handshake that has sent nothing for this long may be pushed out by a newcomer.
pub const IDLE_GRACE: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections that have sent nothing yet.
    pub max_silent: usize,
    /// Connections holding a handshake slot.
    pub max_handshaking: usize,
    /// Connections whose request has begun, waiting for a slot.
    pub max_waiting: usize,
    /// Upgraded clients.
    pub max_clients: usize,
}

impl Limits {
    /// For an open-file limit of `nofile`: at most 1/16 of it silent, 1/64 handshaking, 1/16
    /// waiting and 1/16 for clients (64, 16, 64 and 64 from a limit of 1024 up).
    pub fn for_nofile(nofile: u64) -> Limits {
        let share = |div: u64, max: usize, min: usize| ((nofile / div) as usize).clamp(min, max);
        Limits {
            max_silent: share(16, 64, 4),
            max_handshaking: share(64, 16, 2),
            max_waiting: share(16, 64, 4),
            max_clients: share(16, 64, 4),
        }
    }

    /// For this process's current soft limit.
    pub fn for_this_process() -> Limits {
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we pass.
        let nofile = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
            rl.rlim_cur
        } else {
            1024
        };
        Limits::for_nofile(nofile)
    }
}

/// When a connection last received bytes (written by its reader, read by [`Handshakes`]).
#[derive(Debug, Default)]
pub struct Activity {
    /// Milliseconds since [`epoch`], at the last read.
    last: AtomicU64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        let a = Arc::new(Activity::default());
        a.touch();
        a
    }

    pub fn touch(&self) {
        self.last.store(now_ms(), Ordering::Relaxed);
    }

    pub fn idle(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.last.load(Ordering::Relaxed)))
    }
}

struct Holder {
    client: u64,
    activity: Arc<Activity>,
    evict: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Stages {
    silent: VecDeque<(u64, oneshot::Sender<()>)>,
    holders: Vec<Holder>,
    waiting: usize,
}

/// The connections before their upgrade (see the module's comment).
pub struct Handshakes {
    limits: Limits,
    stages: Mutex<Stages>,
    freed: Notify,
}

/// A handshake slot, released when dropped. `evicted` fires if it is pushed out.
pub struct Slot<'a> {
    owner: &'a Handshakes,
    client: u64,
    pub evicted: oneshot::Receiver<()>,
}

/// A place among the connections waiting for a slot; released when the wait ends in any way.
struct Queued<'a> {
    owner: &'a Handshakes,
    counted: bool,
}

impl Queued<'_> {
    /// Leaves the queue while its lock is held (taking a slot).
    fn leave(&mut self, s: &mut Stages) {
        if std::mem::replace(&mut self.counted, false) {
            s.waiting -= 1;
        }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.owner.stages.lock().waiting -= 1;
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.owner.stages.lock().holders.retain(|h| h.client != self.client);
        self.owner.freed.notify_waiters();
    }
}

impl Handshakes {
    pub fn new(limits: Limits) -> Handshakes {
        Handshakes {
            limits,
            stages: Mutex::new(Stages::default()),
            freed: Notify::new(),
        }
    }

    /// A connection was accepted and has sent nothing yet; beyond the cap the oldest silent one
    /// is told to give up. The receiver fires when this one is pushed out in turn.
    pub fn silent(&self, client: u64) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut s = self.stages.lock();
        while s.silent.len() >= self.limits.max_silent.max(1) {
            if let Some((_, evict)) = s.silent.pop_front() {
                let _ = evict.send(());
            }
        }
        s.silent.push_back((client, tx));
        rx
    }

    /// It is silent no more (it sent its first bytes, or it is gone).
    pub fn spoke(&self, client: u64) {
        self.stages.lock().silent.retain(|(c, _)| *c != client);
    }

    /// Waits for a handshake slot. None when too many wait already (the newcomer is refused).
    /// Cancelling the wait (a deadline, stopping) releases its place in the queue.
    pub async fn slot(&self, client: u64, activity: Arc<Activity>) -> Option<Slot<'_>> {
        let mut queued: Option<Queued<'_>> = None;
        let got = loop {
            let freed = self.freed.notified();
            {
                let mut s = self.stages.lock();
                if let Some(evicted) = self.take_slot(&mut s, client, &activity) {
                    if let Some(q) = queued.as_mut() {
                        q.leave(&mut s);
                    }
                    break Some(evicted);
                }
                if queued.is_none() {
                    if s.waiting >= self.limits.max_waiting {
                        break None;
                    }
                    s.waiting += 1;
                    queued = Some(Queued { owner: self, counted: true });
                }
            }
            // A holder may turn idle without anyone leaving: look again now and then.
            let _ = tokio::time::timeout(IDLE_GRACE / 2, freed).await;
        };
        got.map(|evicted| Slot {
            owner: self,
            client,
            evicted,
        })
    }

    /// A slot when one is free, or when a holder has been idle past the grace (pushed out).
    fn take_slot(
        &self,
        s: &mut Stages,
        client: u64,
        activity: &Arc<Activity>,
    ) -> Option<oneshot::Receiver<()>> {
        if s.holders.len() >= self.limits.max_handshaking.max(1) {
            let idlest = (0..s.holders.len())
                .filter(|&i| s.holders[i].activity.idle() > IDLE_GRACE)
                .max_by_key(|&i| s.holders[i].activity.idle())?;
            let gone = s.holders.swap_remove(idlest);
            if let Some(evict) = gone.evict {
                let _ = evict.send(());
            }
        }
        let (tx, rx) = oneshot::channel();
        s.holders.push(Holder {
            client,
            activity: activity.clone(),
            evict: Some(tx),
        });
        Some(rx)
    }

    #[cfg(test)]
    /// Connections silent, holding a slot, and waiting for one (for tests and status).
    pub fn counts(&self) -> (usize, usize, usize) {
        let s = self.stages.lock();
        (s.silent.len(), s.holders.len(), s.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_follow_the_open_file_limit() {
        let l = Limits::for_nofile(1024);
        assert_eq!((l.max_silent, l.max_handshaking, l.max_waiting, l.max_clients), (64, 16, 64, 64));
        assert_eq!(Limits::for_nofile(1 << 20), l);
        let l = Limits::for_nofile(256);
        assert_eq!((l.max_silent, l.max_handshaking, l.max_waiting, l.max_clients), (16, 4, 16, 16));
        let l = Limits::for_nofile(16);
        assert_eq!((l.max_silent, l.max_handshaking, l.max_waiting, l.max_clients), (4, 2, 4, 4));
    }

    #[test]
    fn a_new_silent_connection_beyond_the_cap_pushes_out_the_oldest() {
        let h = Handshakes::new(Limits { max_silent: 2, max_handshaking: 2, max_waiting: 4, max_clients: 4 });
        let mut a = h.silent(1);
        let mut b = h.silent(2);
        assert!(a.try_recv().is_err() && b.try_recv().is_err());
        let mut c = h.silent(3);
        assert!(a.try_recv().is_ok(), "the oldest is told to give up");
        assert!(b.try_recv().is_err() && c.try_recv().is_err());
        h.spoke(2);
        h.spoke(3);
        assert_eq!(h.counts(), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_busy_handshake_is_never_pushed_out_and_an_idle_one_is() {
        // Two slots (nofile 128), four waiting at most.
        let h = Handshakes::new(Limits::for_nofile(128));
        let busy = Activity::new();
        let mut a = h.slot(1, busy.clone()).await.unwrap();
        let idle = Activity::new();
        let mut b = h.slot(2, idle.clone()).await.unwrap();
        // Both holders active: a newcomer waits instead of pushing one out.
        let waiter = h.slot(3, Activity::new());
        tokio::pin!(waiter);
        assert!(tokio::time::timeout(IDLE_GRACE / 5, &mut waiter).await.is_err());
        assert_eq!(h.counts().2, 1, "it waits");
        // One holder goes quiet past the grace while the other keeps sending: the quiet one
        // is pushed out, and the newcomer gets its slot.
        let keep_busy = async {
            loop {
                busy.touch();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let c = tokio::select! {
            c = &mut waiter => c.unwrap(),
            _ = keep_busy => unreachable!(),
        };
        assert!(b.evicted.try_recv().is_ok(), "the idle one was pushed out");
        assert!(a.evicted.try_recv().is_err(), "the busy one stays");
        drop(b);
        assert_eq!(h.counts(), (0, 2, 0));
        // A freed slot goes to the next one waiting at once.
        drop(c);
        let d = tokio::time::timeout(Duration::from_secs(5), h.slot(4, Activity::new())).await;
        assert!(d.unwrap().is_some());
    }

    #[tokio::test]
    async fn beyond_the_waiting_cap_a_newcomer_is_refused() {
        let h = Handshakes::new(Limits { max_silent: 2, max_handshaking: 2, max_waiting: 4, max_clients: 4 });
        let keep: Vec<_> = futures_util::future::join_all((0..2).map(|i| h.slot(i, Activity::new()))).await;
        let activity = Activity::new();
        let waiters: Vec<_> = (10..14).map(|i| Box::pin(h.slot(i, activity.clone()))).collect();
        let mut waiters = waiters;
        for w in &mut waiters {
            assert!(tokio::time::timeout(Duration::from_millis(1), w).await.is_err());
        }
        assert_eq!(h.counts().2, 4);
        assert!(h.slot(99, Activity::new()).await.is_none(), "the fifth waiting is refused");
        // Waits cut short (their deadline) release their places.
        drop(waiters);
        for i in 20..30 {
            assert!(tokio::time::timeout(Duration::from_millis(1), h.slot(i, activity.clone())).await.is_err());
        }
        assert_eq!(h.counts().2, 0, "no place is kept by a wait that ended");
        drop(keep);
    }
}
