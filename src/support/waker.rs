//! Waking Neovim's main loop from the server thread.
//!
//! Lua creates a libuv async handle (`vim.uv.new_async`) and hands its userdata to `start`; we
//! keep the `uv_async_t*` and call `uv_async_send` on it, which is safe from any thread and
//! coalesces. `uv_async_send` is looked up at run time in the running `nvim` binary (it exports
//! libuv), so nothing links against libuv and unit tests build without it.
//!
//! Wakes are coalesced a second time here: `pending` stays set from the first event until Lua
//! starts draining, so a burst of events costs one wake-up.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

type AsyncSend = unsafe extern "C" fn(*mut c_void) -> c_int;

fn uv_async_send() -> Option<AsyncSend> {
    static SEND: OnceLock<Option<AsyncSend>> = OnceLock::new();
    *SEND.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the symbol, when present,
        // is libuv's `int uv_async_send(uv_async_t*)`.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"uv_async_send".as_ptr()) };
        (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, AsyncSend>(sym) })
    })
}

/// Whether this process can wake Neovim (false outside nvim, e.g. in unit tests).
pub fn available() -> bool {
    uv_async_send().is_some()
}

/// A raw `uv_async_t*` owned by Lua. Lua keeps the handle open until `detach` has returned.
struct Handle(*mut c_void);
// SAFETY: uv_async_send is documented thread-safe; the pointer is only used through it, and only
// while the handle is attached (the mutex orders detach before Lua closes it).
unsafe impl Send for Handle {}

#[derive(Default)]
pub struct Waker {
    handle: Mutex<Option<Handle>>,
    pending: AtomicBool,
    sent: AtomicU64,
}

impl Waker {
    /// # Safety
    /// `handle` must be a live `uv_async_t*` that stays open until [`Waker::detach`] returns.
    pub unsafe fn attach(&self, handle: *mut c_void) {
        *self.handle.lock() = Some(Handle(handle));
    }

    /// Stops all further wakes; after this returns Lua may close the handle.
    pub fn detach(&self) {
        self.handle.lock().take();
    }

    /// Asks for a drain, unless one is already pending.
    pub fn wake(&self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let guard = self.handle.lock();
        if let (Some(h), Some(send)) = (guard.as_ref(), uv_async_send()) {
            // SAFETY: see `attach`; the lock keeps `detach` from racing this call.
            unsafe { send(h.0) };
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Called by the drain before it reads the queue: events pushed from now on wake again.
    pub fn clear_pending(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// How many times the main loop was woken (the idle benchmark reads this).
    pub fn wakes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}
