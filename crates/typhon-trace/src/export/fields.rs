//! A `tracing` span's or event's fields read back from the text the records carry
//! (`records::write_text`: `k=v` pairs separated by spaces, strings quoted and escaped as
//! Rust's `Debug` does, numbers and booleans as `Display` writes them, `Debug` values as
//! formatted), so that the exports show each field as an argument or attribute of its own type.
//!
//! What the text does not tell apart stays as the text says: a float with no fraction (`1.0`
//! is written `1`) reads as an integer, and a `Debug` value that reads as a number or a boolean
//! (`?5`) as that number or boolean; every other `Debug` value is a string. A value that is
//! not `k=v` (`typhon.bad_values`, the mark of malformed values) is the boolean `true`.

use std::borrow::Cow;

/// One field's value.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum FieldVal<'a> {
    I(i64),
    U(u64),
    F(f64),
    B(bool),
    S(Cow<'a, str>),
}

/// The fields of `text`, in order.
pub(super) fn parse(text: &str) -> Vec<(&str, FieldVal<'_>)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start_matches(' ');
    while !rest.is_empty() {
        let name_end = rest.find([' ', '=']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        if !rest[name_end..].starts_with('=') {
            out.push((name, FieldVal::B(true)));
            rest = rest[name_end..].trim_start_matches(' ');
            continue;
        }
        let v = &rest[name_end + 1..];
        let (value, len) = if v.starts_with('"') {
            match quoted(v) {
                Some((s, len)) => (FieldVal::S(s), len),
                None => (FieldVal::S(Cow::Borrowed(v)), v.len()),
            }
        } else {
            let len = bare_len(v);
            (bare(&v[..len]), len)
        };
        out.push((name, value));
        rest = v[len..].trim_start_matches(' ');
    }
    out
}

/// A quoted, `Debug`-escaped string at the start of `v` (which starts with `"`): its value and
/// the bytes it takes; `None` if it never closes.
fn quoted(v: &str) -> Option<(Cow<'_, str>, usize)> {
    let body = &v[1..];
    let mut owned: Option<String> = None;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let s = owned.map_or(Cow::Borrowed(&body[..i]), Cow::Owned);
                return Some((s, i + 2));
            }
            '\\' => {
                let o = owned.get_or_insert_with(|| body[..i].to_string());
                let (_, e) = chars.next()?;
                match e {
                    'n' => o.push('\n'),
                    'r' => o.push('\r'),
                    't' => o.push('\t'),
                    '0' => o.push('\0'),
                    'u' => {
                        // \u{XXXX}
                        let after = &body[i + 2..];
                        let close = after.find('}')?;
                        let code = u32::from_str_radix(after.get(1..close)?, 16).ok()?;
                        o.push(char::from_u32(code)?);
                        for _ in 0..close + 1 {
                            chars.next();
                        }
                    }
                    other => o.push(other),
                }
            }
            c => {
                if let Some(o) = owned.as_mut() {
                    o.push(c);
                }
            }
        }
    }
    None
}

/// The length of an unquoted value at the start of `v`: up to the space (outside brackets and
/// quotes) that starts the next `name=`, else the whole rest.
fn bare_len(v: &str) -> usize {
    let b = v.as_bytes();
    let (mut depth, mut quote, mut esc) = (0i32, false, false);
    for (i, &c) in b.iter().enumerate() {
        if quote {
            match c {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => quote = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => quote = true,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b' ' if depth <= 0 && starts_field(&v[i + 1..]) => return i,
            _ => {}
        }
    }
    v.len()
}

/// Whether `s` starts with `name=` (a name has no space, `=` or quote) or is a lone word.
fn starts_field(s: &str) -> bool {
    let end = s.find([' ', '=', '"']).unwrap_or(s.len());
    end > 0 && (s[end..].starts_with('=') || end == s.len())
}

/// An unquoted value: a number or boolean when it reads as one, else its text.
fn bare(s: &str) -> FieldVal<'_> {
    match s {
        "true" => return FieldVal::B(true),
        "false" => return FieldVal::B(false),
        _ => {}
    }
    if let Ok(u) = s.parse::<u64>() {
        return match i64::try_from(u) {
            Ok(i) => FieldVal::I(i),
            Err(_) => FieldVal::U(u),
        };
    }
    if let Ok(i) = s.parse::<i64>() {
        return FieldVal::I(i);
    }
    let numeric = s
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
    if numeric || matches!(s, "NaN" | "inf" | "-inf") {
        if let Ok(f) = s.parse::<f64>() {
            return FieldVal::F(f);
        }
    }
    FieldVal::S(Cow::Borrowed(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use typhon_recorder::codec::records::{put_entry, write_text, Value};
    use FieldVal::*;

    fn s(x: &str) -> FieldVal<'_> {
        S(Cow::Borrowed(x))
    }

    /// What the layer writes reads back as the values it came from.
    #[test]
    fn the_records_text_reads_back_typed() {
        let mut v = Vec::new();
        put_entry(&mut v, 0, Value::Str("a \"b\" c=d\n\u{1F600}"));
        put_entry(&mut v, 1, Value::I64(-3));
        put_entry(&mut v, 2, Value::U64(u64::MAX));
        put_entry(&mut v, 3, Value::F64(0.25));
        put_entry(&mut v, 4, Value::Bool(true));
        put_entry(&mut v, 5, Value::Debug("Foo { a: 1, b: \"x y=z\" }"));
        put_entry(&mut v, 6, Value::Debug("Some(GET)"));
        put_entry(&mut v, 7, Value::Str(""));
        put_entry(&mut v, 0, Value::Cut(9));
        let mut t = String::new();
        write_text(
            &v,
            &["s", "i", "u", "f", "b", "d", "e", "http.empty"],
            &mut t,
        );
        let got = parse(&t);
        assert_eq!(
            got,
            vec![
                ("s", S(Cow::Owned("a \"b\" c=d\n\u{1F600}".into()))),
                ("i", I(-3)),
                ("u", U(u64::MAX)),
                ("f", F(0.25)),
                ("b", B(true)),
                ("d", s("Foo { a: 1, b: \"x y=z\" }")),
                ("e", s("Some(GET)")),
                ("http.empty", s("")),
                ("typhon.cut", I(9)),
            ]
        );
    }

    proptest! {
        /// Any strings, integers and booleans the layer writes read back as written, and any
        /// text at all reads without a panic.
        #[test]
        fn typed_values_round_trip(
            vals in prop::collection::vec(
                ("[a-z_][a-z0-9_.]{0,6}", prop_oneof![
                    any::<String>().prop_map(Val::S),
                    any::<i64>().prop_map(Val::I),
                    any::<bool>().prop_map(Val::B),
                ]),
                0..6,
            ),
            junk in any::<String>(),
        ) {
            let mut v = Vec::new();
            let names: Vec<&str> = vals.iter().map(|(n, _)| n.as_str()).collect();
            for (i, (_, x)) in vals.iter().enumerate() {
                let x = match x {
                    Val::S(s) => Value::Str(s.as_str()),
                    Val::I(n) => Value::I64(*n),
                    Val::B(b) => Value::Bool(*b),
                };
                put_entry(&mut v, i as u8, x);
            }
            let mut t = String::new();
            write_text(&v, &names, &mut t);
            let got = parse(&t);
            let want: Vec<(&str, FieldVal<'_>)> = vals
                .iter()
                .map(|(n, x)| (n.as_str(), match x {
                    Val::S(s) => S(Cow::Borrowed(s.as_str())),
                    Val::I(n) => I(*n),
                    Val::B(b) => B(*b),
                }))
                .collect();
            prop_assert_eq!(got, want, "{}", t);
            let _ = parse(&junk);
        }
    }

    #[derive(Clone, Debug)]
    enum Val {
        S(String),
        I(i64),
        B(bool),
    }

    /// Malformed text is read as far as it goes, never a panic.
    #[test]
    fn odd_text_reads_without_panicking() {
        assert_eq!(parse(""), vec![]);
        assert_eq!(
            parse("a=1 typhon.bad_values"),
            vec![("a", I(1)), ("typhon.bad_values", B(true))]
        );
        assert_eq!(parse("a=\"open"), vec![("a", s("\"open"))]);
        assert_eq!(parse("a=\"\\u{zz}\""), vec![("a", s("\"\\u{zz}\""))]);
        assert_eq!(parse("x= y=2"), vec![("x", s("")), ("y", I(2))]);
        assert_eq!(
            parse("f=1e3 g=-0.5")[..],
            [("f", F(1000.0)), ("g", F(-0.5))]
        );
        assert!(matches!(parse("n=NaN")[0].1, F(x) if x.is_nan()));
    }
}
