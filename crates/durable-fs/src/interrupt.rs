//! A process-wide hook that long waits ask, between polls, whether to give up: how a Python
//! binding lets Ctrl-C stop a call that would otherwise wait for minutes (the shard cache's
//! waits for room or for another process's download, a loader waiting for its workers).
//!
//! One hook per process, read by every waiting layer, so an embedding sets it once and every
//! wait of every stack honours it.

use std::sync::OnceLock;

static HOOK: OnceLock<fn() -> bool> = OnceLock::new();

/// Sets the hook waits call between polls (at least every 100 ms); a wait whose hook says
/// `true` fails with its layer's "interrupted" error. Set once per process: `false` when a
/// hook was set already (which stays).
pub fn set_wait_interrupt(hook: fn() -> bool) -> bool {
    HOOK.set(hook).is_ok()
}

/// Whether the process's hook asks the current wait to stop (`false` with no hook).
pub fn wait_interrupted() -> bool {
    HOOK.get().is_some_and(|hook| hook())
}

/// The longest a waiting layer may go between two calls of [`wait_interrupted`].
pub const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(100);
