//! What the subcommands print: stdout writes that report a closed pipe instead of panicking
//! (`println!` panics), JSON in schema order, and human-readable sizes and rates.

use crate::error::CliError;
use datasetrt::{RowView, Schema, ValueRef};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::io::{self, Write};
use std::time::Duration;
use terminal_text::Escaped;

/// Writes `text` to stdout.
pub(crate) fn print(text: impl fmt::Display) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    write!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
}

/// Writes `value` to stdout as one line of compact JSON.
pub(crate) fn print_json(value: &impl Serialize) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    serde_json::to_writer(&mut stdout, value).map_err(|e| CliError::Stdout(e.into()))?;
    writeln!(stdout)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
}

/// Writes `dsrt: <message>` to stderr. A failing stderr is ignored: there is nowhere left to
/// say so, and `eprintln!` would panic.
pub(crate) fn warn(message: fmt::Arguments<'_>) {
    // Messages quote names read from files (columns, shards, keys): nothing in them may act
    // on the terminal.
    let message = message.to_string();
    let _ = writeln!(io::stderr().lock(), "dsrt: {}", Escaped(&message));
}

/// One metadata row as a JSON object whose keys follow the schema's column order.
pub(crate) struct RowJson<'a> {
    /// The cache's schema: the keys.
    pub(crate) schema: &'a Schema,
    /// The values.
    pub(crate) row: RowView<'a>,
}

impl Serialize for RowJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.schema.len()))?;
        for (column, value) in self.schema.columns().iter().zip(self.row.values()) {
            map.serialize_entry(&column.name, &ValueJson(value))?;
        }
        map.end()
    }
}

/// One metadata value as JSON, the way the shard envelope stores it.
pub(crate) struct ValueJson<'a>(pub(crate) ValueRef<'a>);

impl Serialize for ValueJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ValueRef::Null => serializer.serialize_unit(),
            ValueRef::Bool(v) => serializer.serialize_bool(v),
            ValueRef::Int64(v) => serializer.serialize_i64(v),
            ValueRef::Float64(v) => serializer.serialize_f64(v),
            ValueRef::Utf8(v) => serializer.serialize_str(v),
        }
    }
}

/// `bytes` in binary units with one decimal, e.g. `1.5 MiB`; plain bytes below 1 KiB.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)] // one decimal is shown; the loss is far below it
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Elapsed wall time as seconds, never zero, so rates over it stay finite (JSON has no
/// infinity).
pub(crate) fn seconds(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64().max(1e-6)
}

/// `amount` per second over `elapsed`.
pub(crate) fn per_second(amount: u64, elapsed: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)] // a rate shown with a few digits
    let amount = amount as f64;
    amount / seconds(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn rates_stay_finite() {
        assert!(per_second(10, Duration::ZERO).is_finite());
        assert!((per_second(10, Duration::from_secs(2)) - 5.0).abs() < 1e-9);
    }
}
