//! Text read from files, made safe to print on a terminal.
//!
//! What it is for: every string the `dsrt` and `atlas` commands print for people that came from
//! a file or an object rather than from the program (dataset, array, column and attribute
//! names, attribute values, a manifest's `source`, error messages quoting any of them). Such a
//! string may hold an escape sequence (recolour, move the cursor, retitle the terminal), a
//! carriage return that overprints the line, or a bidirectional override that reorders what
//! follows. [`escape`] returns the text unchanged when it holds none of these, and its quoted,
//! backslash-escaped form (Rust's `Debug` of a string: `"evil\u{1b}[2J"`) otherwise, so nothing
//! read from a file acts on the terminal and an escaped name reads back unambiguously.
//!
//! What it is not for: JSON output (serde_json escapes control characters itself), logs, or
//! text the program wrote.
//!
//! Layering: bottom layer, no dependency; both CLIs use it, so neither library stack carries
//! it and the two stacks still meet only in the bottom layer.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt;

/// `text` as it is when it is safe to print, else quoted and escaped (see the crate docs).
pub fn escape(text: &str) -> Cow<'_, str> {
    if text.chars().any(acts_on_a_terminal) {
        Cow::Owned(format!("{text:?}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// [`escape`] as a `Display` wrapper: `format!("{}", Escaped(name))`.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.chars().any(acts_on_a_terminal) {
            write!(f, "{:?}", self.0)
        } else {
            f.write_str(self.0)
        }
    }
}

/// Whether `c` would act on a terminal or hide what is printed, rather than show as itself:
/// C0 and C1 controls and DEL (escape sequences, carriage return, backspace, newline), and the
/// invisible format characters that reorder or hide text (bidirectional embeddings, overrides,
/// isolates and marks, zero-width characters, the byte-order mark, line and paragraph
/// separators).
pub fn acts_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged() {
        for text in [
            "jan_2024",
            "",
            "a/b é",
            "température",
            "名前",
            "a\\b \"q\" 'x'",
        ] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
            assert_eq!(Escaped(text).to_string(), text);
        }
    }

    #[test]
    fn terminal_controls_are_escaped_and_quoted() {
        let cases = [
            ("evil\u{1b}[2J", r#""evil\u{1b}[2J""#),
            ("a\rb", r#""a\rb""#),
            ("tab\there", r#""tab\there""#),
            ("line\nbreak", r#""line\nbreak""#),
            ("\u{7f}", r#""\u{7f}""#),
            ("\u{9b}31m", r#""\u{9b}31m""#),
            ("abc\u{202e}fed", r#""abc\u{202e}fed""#),
            ("zero\u{200b}width", r#""zero\u{200b}width""#),
            ("bom\u{feff}", r#""bom\u{feff}""#),
            // Once quoted, quotes and backslashes are escaped too: the form reads back.
            ("q\"\\\u{1b}", r#""q\"\\\u{1b}""#),
        ];
        for (text, shown) in cases {
            assert_eq!(escape(text), shown, "{text:?}");
            assert_eq!(Escaped(text).to_string(), shown);
            assert!(!escape(text).chars().any(acts_on_a_terminal));
        }
    }

    #[test]
    fn no_character_that_acts_on_a_terminal_gets_through() {
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let text = format!("x{c}y");
            assert!(
                !escape(&text).chars().any(acts_on_a_terminal),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }
}
