//! Pi's process: starting it in a process group of its own, reaping it, and signalling that
//! group. Reaping waits without reaping first (`waitid` with `WNOWAIT`) and reaps under the
//! lock that signalling takes, and nothing is signalled once Pi is reaped: so a signal never
//! reaches a group whose number the kernel has handed to someone else.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::ChatOptions;

/// Starts `opts.cmd` with its three streams piped. The error is the sentence Lua shows.
pub fn spawn(opts: &ChatOptions) -> Result<Child, String> {
    let Some((argv0, args)) = opts.cmd.split_first() else {
        return Err("cannot start pi: the command is empty".into());
    };
    let mut cmd = Command::new(argv0);
    cmd.args(args)
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own, so that stop reaches the tools Pi runs (bash and its children).
        .process_group(0);
    if let Some(dir) = &opts.cwd {
        // Else a missing folder reads "No such file or directory" as if pi were missing.
        if !dir.is_dir() {
            return Err(format!("cannot start pi: the folder {} does not exist", dir.display()));
        }
        cmd.current_dir(dir);
    }
    die_with_parent(&mut cmd);
    cmd.spawn().map_err(|e| format!("cannot start pi (`{argv0}`): {}", sentence(&e)))
}

/// "No such file or directory", without std's " (os error 2)".
fn sentence(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rsplit_once(" (os error ") {
        Some((words, _)) => words.to_owned(),
        None => text,
    }
}

/// Pi gets SIGTERM when Neovim dies, even by SIGKILL. The kernel sends it when the *thread*
/// that forked exits: that is Neovim's main thread, which Lua calls from.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid, prctl and getppid are async-signal-safe, and nothing is allocated
    // between fork and exec.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before prctl: the signal will never come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}

/// How Pi ended: its exit code, or the signal that killed it (neither if reaping failed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<ExitStatus> for Exit {
    fn from(s: ExitStatus) -> Exit {
        Exit { code: s.code(), signal: s.signal() }
    }
}

/// Pi's exit, once it has been reaped.
#[derive(Default)]
pub struct Reaped {
    status: Mutex<Option<Exit>>,
    changed: Condvar,
}

impl Reaped {
    /// The waiter thread's work: blocks until `child` exits and reaps it.
    pub fn wait_for(&self, mut child: Child) {
        let pid = child.id() as libc::id_t;
        let zombie = loop {
            // SAFETY: a zeroed siginfo_t is a valid out-parameter.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if r == 0 {
                break true;
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break false;
            }
        };
        let mut status = self.status.lock();
        if zombie {
            // Pi has exited but, unreaped, still holds its pid and so its group's number: what
            // it left running in its group is told to end, and no one else can be hit.
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGTERM) };
        }
        *status = Some(child.wait().map(Exit::from).unwrap_or_default());
        self.changed.notify_all();
    }

    pub fn status(&self) -> Option<Exit> {
        *self.status.lock()
    }

    /// Waits up to `timeout` for Pi to be reaped; true if it was.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut status = self.status.lock();
        while status.is_none() {
            if self.changed.wait_until(&mut status, deadline).timed_out() {
                break;
            }
        }
        status.is_some()
    }

    /// Sends `signal` to Pi's process group (`pgid`: Pi's pid) while Pi is not reaped; after
    /// that the number may be anyone's (pids wrap around quickly), and the waiter has already
    /// told the rest of the group to end.
    pub fn signal_group(&self, pgid: u32, signal: i32) {
        let status = self.status.lock();
        if status.is_none() {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(-(pgid as libc::pid_t), signal) };
        }
    }
}
