//! How much of Neovim a local process can hold through our port. Any process on this machine
//! can connect; one that opens sockets and never completes a handshake would otherwise keep a
//! file descriptor of Neovim's each, until Neovim can open no file at all (no swap file, no
//! buffer read). So: a deadline from accept to a valid upgrade, a small number of connections
//! still in their handshake (a new one pushes out the oldest, so a flood cannot lock the real
//! agent out), and a cap on upgraded clients (HTTP 503 beyond it). Both caps shrink with a low
//! open-file limit, so sockets never take more than a small share of it.

use std::collections::VecDeque;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// From accept to a valid WebSocket upgrade (a real client needs a millisecond).
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections between accept and upgrade.
    pub max_handshaking: usize,
    /// Upgraded clients.
    pub max_clients: usize,
}

impl Limits {
    /// For an open-file limit of `nofile`: at most 1/64 of it in handshakes and 1/16 for
    /// clients (16 and 64 from a limit of 1024 up).
    pub fn for_nofile(nofile: u64) -> Limits {
        let share = |div: u64, max: usize, min: usize| ((nofile / div) as usize).clamp(min, max);
        Limits {
            max_handshaking: share(64, 16, 2),
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

/// The connections in their handshake, oldest first. Each holds a sender whose firing tells
/// that connection to give up.
pub struct Handshakes {
    max: usize,
    queue: Mutex<VecDeque<(u64, oneshot::Sender<()>)>>,
}

impl Handshakes {
    pub fn new(max: usize) -> Handshakes {
        Handshakes {
            max: max.max(1),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// A connection starts its handshake; beyond the cap the oldest ones are told to give up.
    /// The receiver fires when this one is pushed out in turn.
    pub fn begin(&self, client: u64) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut q = self.queue.lock();
        while q.len() >= self.max {
            if let Some((_, evict)) = q.pop_front() {
                let _ = evict.send(());
            }
        }
        q.push_back((client, tx));
        rx
    }

    /// The handshake ended (upgraded, refused, timed out or pushed out).
    pub fn end(&self, client: u64) {
        self.queue.lock().retain(|(c, _)| *c != client);
    }

    pub fn len(&self) -> usize {
        self.queue.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_follow_the_open_file_limit() {
        assert_eq!(
            Limits::for_nofile(1024),
            Limits {
                max_handshaking: 16,
                max_clients: 64
            }
        );
        assert_eq!(Limits::for_nofile(1 << 20), Limits::for_nofile(1024));
        assert_eq!(
            Limits::for_nofile(256),
            Limits {
                max_handshaking: 4,
                max_clients: 16
            }
        );
        assert_eq!(
            Limits::for_nofile(16),
            Limits {
                max_handshaking: 2,
                max_clients: 4
            }
        );
    }

    #[test]
    fn a_new_handshake_beyond_the_cap_pushes_out_the_oldest() {
        let h = Handshakes::new(2);
        let mut a = h.begin(1);
        let mut b = h.begin(2);
        assert!(a.try_recv().is_err() && b.try_recv().is_err());
        let mut c = h.begin(3);
        assert!(a.try_recv().is_ok(), "the oldest is told to give up");
        assert!(b.try_recv().is_err() && c.try_recv().is_err());
        assert_eq!(h.len(), 2);
        h.end(2);
        h.end(3);
        assert!(h.is_empty());
    }
}
