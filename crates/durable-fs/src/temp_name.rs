use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file name `{prefix}{pid}-{nanos}-{counter}`, unique per call on this host.
///
/// The process id and clock separate processes; the counter separates calls within one.
pub fn unique_temp_name(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{}-{nanos}-{count}", std::process::id())
}

/// Whether `name` is one that [`unique_temp_name`] made with `prefix`.
pub fn is_temp_name(name: &str, prefix: &str) -> bool {
    name.starts_with(prefix)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_recognised() {
        let a = unique_temp_name(".manifest.json.tmp-");
        let b = unique_temp_name(".manifest.json.tmp-");
        assert_ne!(a, b);
        assert!(is_temp_name(&a, ".manifest.json.tmp-"));
        assert!(!is_temp_name("manifest.json", ".manifest.json.tmp-"));
    }
}
