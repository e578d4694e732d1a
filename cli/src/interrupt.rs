//! Ctrl-C during a run: the run stops at its next check (every 256 steps)
//! and the command writes what was computed, as Python's `simulate` does.
//! A second Ctrl-C ends the process at once (the default action).

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_interrupt(_: libc::c_int) {
    REQUESTED.store(true, Ordering::Relaxed);
    // SAFETY: `signal` is async-signal-safe; restoring the default action
    // makes a second Ctrl-C end the process.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// From now on, Ctrl-C asks runs to stop instead of ending the process.
pub fn watch() {
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic and calls `signal`, both
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_interrupt as *const () as libc::sighandler_t);
    }
}

/// Whether Ctrl-C was pressed since [`watch`].
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
