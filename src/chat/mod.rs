//! A chat: Pi in RPC mode (`pi --mode rpc`, JSON lines on its stdin and stdout; see the RPC
//! mode's page of Pi's documentation) as a child process of Neovim, driven from here so that
//! Neovim's main thread never reads, parses or waits on it. Lua sends commands (`send`), and on
//! each wake takes what to draw (`drain`): a few ops per frame, however many records Pi wrote.
//!
//! Design notes:
//! - Plain threads, not the server's tokio runtime: the chat must live on while the server is
//!   stopped and restarted (`:PiIde restart`, a setup() that changes its options), and a
//!   child process with three blocking pipes is what threads do simply. Five small threads per
//!   chat: stdout reader, stderr reader, stdin writer, a waiter that reaps Pi (no zombie), and
//!   the pump that wakes Lua.
//! - Rate-limited wakes (pump.rs): a wake costs the main loop a drain and a redraw. Pi streams
//!   a token at a time; the queue coalesces deltas into one op and the pump wakes at most once
//!   per `frame` (16 ms), so 2,000 deltas a second cost ~60 draws a second. Responses, dialogs
//!   and the exit skip the wait: someone is waiting on those.
//! - Back-pressure instead of memory: when Lua does not drain, the stdout reader stops reading
//!   (queue.rs) and Pi, which honours back-pressure on stdout, waits.
//! - Stopping closes stdin (Pi's orderly exit), then signals Pi's process group (it runs in a
//!   group of its own); and whenever Pi exits, what it left in that group gets SIGTERM. Pi's
//!   bash tool
//!   runs commands detached (a session of their own) and kills them itself on SIGTERM or
//!   SIGHUP: so SIGTERM comes before SIGKILL, and is what Pi gets when Neovim dies without
//!   stopping it (Linux, process.rs).

pub mod acp;
mod io;
mod lines;
pub mod op;
mod process;
mod pump;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

pub use op::Op;
use process::Reaped;
use queue::Queue;

/// How long stop waits for Pi after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(300);
/// How long stop waits after SIGKILL (a process stuck in the kernel may take longer; the
/// waiter thread still reaps it then).
const KILL_WAIT: Duration = Duration::from_secs(1);
/// After Pi is reaped, how long the exit op waits for stdout and stderr to end: a tool Pi left
/// running may hold them open.
const STREAMS_LINGER: Duration = Duration::from_secs(1);

pub struct ChatOptions {
    /// The command and its arguments (`{"pi", "--mode", "rpc"}`).
    pub cmd: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Added to the environment Neovim's process has.
    pub env: Vec<(String, String)>,
    /// The shortest time between two wakes of the main loop.
    pub frame: Duration,
    /// How many lines of a tool's output are kept.
    pub cap_lines: usize,
    /// An ACP agent (else Pi's RPC), and where its changes are reviewed.
    pub acp: Option<Arc<dyn acp::Reviewer>>,
    /// The ACP agent writes files itself after an allow, and mirrors that write as
    /// fs/write_text_file (acp/mirror.rs); else such a write is ours to make.
    pub acp_writes_itself: bool,
}

impl ChatOptions {
    pub fn new(cmd: Vec<String>) -> ChatOptions {
        ChatOptions {
            cmd,
            cwd: None,
            env: Vec::new(),
            frame: Duration::from_millis(16),
            cap_lines: 12,
            acp: None,
            acp_writes_itself: false,
        }
    }
}

/// Counters for tests, benchmarks and :checkhealth.
#[derive(Debug, Default)]
pub struct Stats {
    /// Lines read from stdout, malformed or not.
    pub lines: AtomicU64,
    pub malformed: AtomicU64,
    /// text_delta and thinking_delta records.
    pub text_deltas: AtomicU64,
    pub ops_drained: AtomicU64,
    pub drains: AtomicU64,
    /// Times the pump woke Lua.
    pub wakes: AtomicU64,
    pub bytes_in: AtomicU64,
}

/// What the threads share.
struct Shared {
    queue: Queue,
    stats: Stats,
    reaped: Reaped,
    stderr: Mutex<VecDeque<String>>,
    /// How many of stdout and stderr are still open.
    streams_open: Mutex<u8>,
    streams_changed: Condvar,
    stdin_open: AtomicBool,
    stopping: AtomicBool,
    frame: Duration,
    cap_lines: usize,
    wake: Box<dyn Fn() + Send + Sync>,
    /// The ACP backend, for an ACP agent.
    acp: Option<Arc<acp::Acp>>,
}

impl Shared {
    fn stream_closed(&self) {
        *self.streams_open.lock() -= 1;
        self.streams_changed.notify_all();
    }

    /// The waiter thread: reaps Pi, gives stdout a moment to finish, then queues the exit op.
    fn reap(&self, child: std::process::Child) {
        self.reaped.wait_for(child);
        let mut open = self.streams_open.lock();
        let deadline = std::time::Instant::now() + STREAMS_LINGER;
        while *open > 0 && !self.streams_changed.wait_until(&mut open, deadline).timed_out() {}
        drop(open);
        if let Some(acp) = &self.acp {
            acp.ended(); // its questions die with it; its reviews go
        }
        let exit = self.reaped.status().unwrap_or_default();
        let stderr = self.stderr.lock().iter().cloned().collect();
        self.queue.push(Op::Exit { code: exit.code, signal: exit.signal, stderr }, 0);
    }
}

pub struct Chat {
    shared: Arc<Shared>,
    pid: u32,
    input: Mutex<Option<Sender<Vec<u8>>>>,
    pump: Mutex<Option<JoinHandle<()>>>,
    /// Set by the first stop: whether Pi exited within its grace period.
    stopped: Mutex<Option<bool>>,
}

impl Chat {
    /// Starts Pi and its threads. `wake` is called (from the pump thread) when there is
    /// something to drain. The error is a sentence for the user.
    pub fn start(opts: ChatOptions, wake: Box<dyn Fn() + Send + Sync>) -> Result<Chat, String> {
        let mut child = process::spawn(&opts)?;
        let pid = child.id();
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            unreachable!("all three streams are piped");
        };
        let (tx, rx) = mpsc::channel();
        let acp = |weak: &std::sync::Weak<Shared>| {
            let weak = weak.clone();
            let events: acp::Events = Box::new(move |op| {
                if let Some(s) = weak.upgrade() {
                    s.queue.push(op, 0);
                }
            });
            opts.acp.clone().map(|reviewer| {
                let acp = acp::Acp::new(reviewer, tx.clone(), events).in_folder(opts.cwd.clone());
                Arc::new(acp.writing_itself(opts.acp_writes_itself))
            })
        };
        let shared = Arc::new_cyclic(|weak| Shared {
            queue: Queue::default(),
            stats: Stats::default(),
            reaped: Reaped::default(),
            stderr: Mutex::new(VecDeque::new()),
            streams_open: Mutex::new(2),
            streams_changed: Condvar::new(),
            stdin_open: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            frame: opts.frame,
            cap_lines: opts.cap_lines,
            wake,
            acp: acp(weak),
        });
        // The waiter first: it owns the child, so Pi is reaped whatever fails next.
        if let Err(e) = spawn_thread("pi-chat-wait", &shared, move |s| s.reap(child)) {
            shared.reaped.signal_group(pid, libc::SIGKILL);
            // SAFETY: waitpid on our own child (the thread that would have reaped it never ran).
            unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0) };
            return Err(e);
        }
        let chat = Chat {
            shared: shared.clone(),
            pid,
            input: Mutex::new(Some(tx)),
            pump: Mutex::new(None),
            stopped: Mutex::new(None),
        };
        // From here a failure stops the chat (Drop) and so ends Pi.
        spawn_thread("pi-chat-out", &shared, move |s| io::read_stdout(s, stdout))?;
        spawn_thread("pi-chat-err", &shared, move |s| io::read_stderr(s, stderr))?;
        spawn_thread("pi-chat-in", &shared, move |s| io::write_stdin(s, stdin, rx))?;
        *chat.pump.lock() = Some(spawn_thread("pi-chat-pump", &shared, pump::run)?);
        Ok(chat)
    }

    /// Queues one line for Pi's stdin (the LF is added). False once stdin is closed or Pi has
    /// exited. Never blocks.
    pub fn send(&self, mut line: Vec<u8>) -> bool {
        let s = &self.shared;
        if !s.stdin_open.load(Relaxed) || s.reaped.status().is_some() {
            return false;
        }
        line.push(b'\n');
        self.input.lock().as_ref().is_some_and(|tx| tx.send(line).is_ok())
    }

    #[cfg(test)]
    /// [`Chat::send`] of a command, as one line of JSON.
    pub fn send_json(&self, command: &serde_json::Value) -> bool {
        // Compact JSON has no raw LF (serde_json escapes it inside strings).
        serde_json::to_vec(command).is_ok_and(|line| self.send(line))
    }

    /// Every op queued, in order; lets a reader blocked on a full queue go on.
    pub fn drain(&self) -> Vec<Op> {
        let ops = self.shared.queue.drain();
        let stats = &self.shared.stats;
        stats.drains.fetch_add(1, Relaxed);
        stats.ops_drained.fetch_add(ops.len() as u64, Relaxed);
        ops
    }

    #[cfg(test)]
    /// How many ops wait for a drain.
    pub fn queued(&self) -> usize {
        self.shared.queue.len()
    }

    /// Pi's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.shared.reaped.status().is_none().then_some(self.pid)
    }

    /// The ACP backend, for an ACP agent.
    pub fn acp(&self) -> Option<&acp::Acp> {
        self.shared.acp.as_deref()
    }

    pub fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    /// Ends Pi: closes its stdin and waits `grace` for it to exit, then SIGTERM to its process
    /// group, 300 ms more, then SIGKILL. Blocks (a quit or a restart calls it). Returns whether
    /// Pi exited within `grace`; a second call returns the first's answer.
    pub fn stop(&self, grace: Duration) -> bool {
        let mut stopped = self.stopped.lock();
        if let Some(exited) = *stopped {
            return exited;
        }
        let s = &self.shared;
        // Nothing will be drawn any more: no back-pressure, so Pi can write its way out.
        s.queue.close();
        s.stopping.store(true, Relaxed);
        self.input.lock().take();
        if let Some(acp) = &s.acp {
            acp.ended();
        }
        // Once Pi has exited, the waiter tells the rest of its group to end (process.rs).
        let exited = s.reaped.wait(grace);
        if !exited {
            s.reaped.signal_group(self.pid, libc::SIGTERM);
            if !s.reaped.wait(TERM_GRACE) {
                s.reaped.signal_group(self.pid, libc::SIGKILL);
                s.reaped.wait(KILL_WAIT);
            }
        }
        if let Some(pump) = self.pump.lock().take() {
            // After this, `wake` is never called again.
            let _ = pump.join();
        }
        *stopped = Some(exited);
        exited
    }
}

impl Drop for Chat {
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
    }
}

fn spawn_thread<R: Send + 'static>(
    name: &str,
    shared: &Arc<Shared>,
    body: impl FnOnce(&Shared) -> R + Send + 'static,
) -> Result<JoinHandle<R>, String> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || body(&shared))
        .map_err(|e| format!("cannot start pi: no thread for it ({e})"))
}
