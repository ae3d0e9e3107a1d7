//! A process-wide hook that the cache's long waits (for room, for another process's download)
//! ask, between polls, whether to give up: how a Python binding lets Ctrl-C stop a call that
//! would otherwise wait up to `wait_for_room`.

use std::sync::OnceLock;

static HOOK: OnceLock<fn() -> bool> = OnceLock::new();

/// Sets the hook the waits call between polls (at least every 100 ms); a wait whose hook says
/// `true` fails with [`crate::ShardCacheError::Interrupted`]. Set once per process: `false`
/// when a hook was set already (which stays).
pub fn set_wait_interrupt(hook: fn() -> bool) -> bool {
    HOOK.set(hook).is_ok()
}

/// Whether the hook asks the current wait to stop.
pub(crate) fn requested() -> bool {
    HOOK.get().is_some_and(|hook| hook())
}
