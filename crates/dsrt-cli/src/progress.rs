//! Progress bars on stderr, shown only to a person: when stderr is not a terminal (a pipe, a
//! log file, a test) the bar is hidden, so scripts never see escape codes.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Shown when the total is known: samples done out of all of them.
const BAR_TEMPLATE: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} samples (eta {eta})";
/// Shown while the total is still unknown.
const SPINNER_TEMPLATE: &str =
    "{spinner} {msg} [{elapsed_precise}] {human_pos} samples ({per_sec})";

/// A progress display that is a no-op unless stderr is a terminal.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `total` samples, or a spinner when the total is unknown.
    pub(crate) fn samples(message: &'static str, total: Option<u64>) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self {
                bar: ProgressBar::hidden(),
            };
        }
        let (bar, template) = match total {
            Some(total) => (ProgressBar::new(total), BAR_TEMPLATE),
            None => (ProgressBar::new_spinner(), SPINNER_TEMPLATE),
        };
        // A template error is a bug in the constants above; fall back to the plain default
        // rather than fail the user's work over a progress bar.
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(style);
        bar.set_message(message);
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar }
    }

    /// Counts one more sample done.
    pub(crate) fn inc(&self) {
        self.bar.inc(1);
    }

    /// Sets the samples done so far.
    pub(crate) fn set(&self, samples: u64) {
        self.bar.set_position(samples);
    }

    /// Removes the bar from the terminal, leaving the summary that follows uncluttered.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // On an error path the bar must not stay on screen above the error message.
        self.bar.finish_and_clear();
    }
}

/// Shown while a cache is uploaded.
const BYTES_TEMPLATE: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec})";

/// A bar over bytes uploaded (its length set once known), hidden unless stderr is a terminal.
/// It is a plain `ProgressBar` so a publish callback running on other threads can own a clone.
pub(crate) fn upload_bar(message: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(BYTES_TEMPLATE)
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.set_style(style);
    bar.set_message(message);
    bar
}
