//! A pseudo-terminal for a Neovim TUI (tui.rs starts it; nvim.rs keeps it with the Neovim, for
//! typing bytes as a terminal would): its master side, read on a thread of its own.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

/// The master side of the terminal Neovim runs in, and what it printed (the last 256 KiB).
pub struct Pty {
    master: File,
    pub output: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    pub(crate) fn open(cols: u16, rows: u16) -> (Pty, OwnedFd) {
        let mut master = -1;
        let mut slave = -1;
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two fds into the given ints; the winsize is read only.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &ws,
            )
        };
        assert_eq!(rc, 0, "openpty failed: {}", std::io::Error::last_os_error());
        // SAFETY: both fds were just opened for us and are owned by nothing else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let out = output.clone();
        // The terminal must be read, or Neovim blocks writing to it.
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut o = out.lock().unwrap();
                o.extend_from_slice(&buf[..n]);
                let len = o.len();
                if len > 256 * 1024 {
                    o.drain(..len - 256 * 1024);
                }
            }
        });
        (Pty { master, output }, slave)
    }

    /// Types bytes as the terminal would send them (e.g. b"\t" for <Tab>).
    pub fn write(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }
}

