//! Text from a recording, made safe to print (SPEC §10): a thread name, span name, cmdline or
//! any other string a file holds may carry terminal escapes (ESC, CSI), carriage returns,
//! bells or bidi overrides that would retitle, clear or garble the reader's terminal, or make
//! a line read as something else. Every such character is written as an escape instead, in
//! Rust's style, and a backslash is doubled so an escape cannot be forged:
//!
//! | character | written as |
//! |---|---|
//! | C0 controls, DEL (U+0000–U+001F, U+007F) | `\x1b`, `\x07`, … (`\t`, `\n`, `\r` as such) |
//! | C1 controls (U+0080–U+009F) | `\u{9b}`, … |
//! | bidi controls (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069), U+2028, U+2029 | `\u{202e}`, … |
//! | `\` | `\\` |
//!
//! `typhon-rec` passes every string that comes from a file through [`printable`] before it
//! reaches the terminal.
//!
//! ```
//! use typhon_recorder::printable::printable;
//! assert_eq!(printable("render\x1b]0;pwned\x07").to_string(), "render\\x1b]0;pwned\\x07");
//! assert_eq!(printable("plain name é").to_string(), "plain name é");
//! ```

use std::fmt;

/// `s` for display with every non-printable character escaped; see the [module](self) docs.
/// Formats without allocating (use it in `write!`), or `.to_string()` it.
///
/// ```
/// use typhon_recorder::printable::printable;
/// assert_eq!(format!("[{}]", printable("a\rb\u{202e}c\\")), "[a\\rb\\u{202e}c\\\\]");
/// assert_eq!(format!("{:<6}|", printable("ab")), "ab    |");
/// ```
pub fn printable(s: &str) -> Printable<'_> {
    Printable(s)
}

/// What [`printable`] returns: the string, displayed escaped. Width and alignment
/// (`{:<20}`) apply to the escaped text.
///
/// ```
/// use typhon_recorder::printable::Printable;
/// assert_eq!(Printable("\u{9b}2J").to_string(), "\\u{9b}2J");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Printable<'a>(pub &'a str);

/// Whether `c` is written as an escape.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || c == '\\'
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2066}'..='\u{2069}'
        )
}

fn write_escaped(s: &str, f: &mut impl fmt::Write) -> fmt::Result {
    write_escaped_but(s, f, needs_escape)
}

fn write_escaped_but(s: &str, f: &mut impl fmt::Write, escape: fn(char) -> bool) -> fmt::Result {
    let mut rest = s;
    while let Some(i) = rest.find(escape) {
        f.write_str(&rest[..i])?;
        let c = rest[i..].chars().next().unwrap_or('\0');
        match c {
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x80 => write!(f, "\\x{:02x}", c as u32)?,
            c => write!(f, "\\u{{{:x}}}", c as u32)?,
        }
        rest = &rest[i + c.len_utf8()..];
    }
    f.write_str(rest)
}

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_none() && !self.0.contains(needs_escape) {
            return f.write_str(self.0);
        }
        if f.width().is_none() {
            return write_escaped(self.0, f);
        }
        let mut s = String::with_capacity(self.0.len() + 8);
        write_escaped(self.0, &mut s)?;
        f.pad(&s)
    }
}

/// Text that is escaped already, as Rust's `Debug` writes strings (`"a\nb"` for a newline),
/// for display: every character [`printable`] escapes is escaped but the backslash, so the
/// text is not escaped twice (`"a\\nb"`), and still nothing in it can drive the terminal.
///
/// ```
/// use typhon_recorder::printable::{printable, printable_escaped};
/// let debug = format!("{:?}", "a\nb");
/// assert_eq!(printable_escaped(&debug).to_string(), r#""a\nb""#);
/// assert_eq!(printable(&debug).to_string(), r#""a\\nb""#);
/// assert_eq!(printable_escaped("x\x1b[2J").to_string(), "x\\x1b[2J");
/// ```
pub fn printable_escaped(s: &str) -> Escaped<'_> {
    Escaped(s)
}

/// What [`printable_escaped`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped_but(self.0, f, |c| c != '\\' && needs_escape(c))
    }
}

/// Serialized JSON made safe for a terminal without changing what it says: every character
/// [`printable`] would escape that JSON leaves raw (DEL, C1 controls, bidi controls, line and
/// paragraph separators; they can only stand inside strings) becomes a `\uXXXX` escape, which
/// a JSON reader decodes back to the same character.
///
/// ```
/// use typhon_recorder::printable::json_printable;
/// let j = serde_json::json!({ "name": "a\u{202e}b\u{9b}" }).to_string();
/// let safe = json_printable(&j);
/// assert_eq!(safe, r#"{"name":"a\u202eb\u009b"}"#);
/// let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
/// assert_eq!(back["name"], "a\u{202e}b\u{9b}");
/// ```
pub fn json_printable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        // C0 controls are escaped by any JSON writer (a raw newline can only be layout).
        if (c == '\x7f' || !c.is_ascii()) && needs_escape(c) {
            // Every character escaped here is in the Basic Multilingual Plane: one \u each.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn every_control_and_bidi_character_is_escaped() {
        for c in (0u32..0x20).chain(0x7f..0xa0).chain([
            0x61c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2028, 0x2029, 0x2066,
            0x2067, 0x2068, 0x2069,
        ]) {
            let c = char::from_u32(c).unwrap();
            let s = printable(&format!("a{c}b")).to_string();
            assert!(s.starts_with("a\\") && s.ends_with('b'), "{c:?} -> {s:?}");
            assert!(
                !s.chars().any(|x| x.is_control() || x == c),
                "{c:?} -> {s:?}"
            );
        }
        assert_eq!(printable("\u{1b}[2J\u{7}").to_string(), "\\x1b[2J\\x07");
        assert_eq!(printable("x\\x1b").to_string(), "x\\\\x1b");
        assert_eq!(printable("日本語 ok").to_string(), "日本語 ok");
    }
}
