//! The tracefs-style text that a trace.dat file carries: `header_page`, `header_event` and one
//! event `format` per record kind, all generated from the kind table ([`crate::codec::KINDS`]).
//!
//! A Typhon record *is* the ftrace event payload: kbuffer hands libtraceevent the record bytes,
//! so the common block describes the 12-byte common header (SPEC §7):
//!
//! ```text
//!  field:unsigned short common_size;  offset:0;  size:2;  (record size)
//!  field:unsigned char common_type;   offset:2;  size:1;  (kind byte = event ID)
//!  field:unsigned char common_pid;    offset:3;  size:1;  (thread slot = "pid", = CPU)
//!  field:s64 common_ts;               offset:4;  size:8;  (span start / instant time, ns)
//! ```
//!
//! Each field of the kind table becomes a format field at its real offset. Variable-length fields
//! are declared the way the kernel declares the `print` event's `char buf[]` (size 0 = "to the end
//! of the record"): a NUL-terminated name is `char name[]` printed with `%s`, a length-prefixed
//! name is `char name[]` printed with `%.*s` and its length field, raw bytes (`Rest`) are
//! `unsigned char event[]` printed with `__print_hex`. A fixed-size field that follows a
//! length-prefixed string has no fixed offset, so it is not declared; the print format reads it
//! byte by byte with libtraceevent's array index operator (`REC->name[REC->name_len]`).

use crate::codec::{FieldDef, FieldType, KindDef, TraceEventKind, KINDS};
use core::fmt;
use std::fmt::Write as _;

/// The event system every Typhon kind belongs to in a trace.dat file.
///
/// ```
/// assert_eq!(typhon_recorder::tracedat::format::SYSTEM, "typhon");
/// ```
pub const SYSTEM: &str = "typhon";

/// Bytes of a sub-buffer page header on a 64-bit host (u64 timestamp, u64 commit).
///
/// ```
/// assert_eq!(typhon_recorder::tracedat::format::PAGE_HEADER_SIZE, 16);
/// ```
pub const PAGE_HEADER_SIZE: u32 = 16;

/// The fixed `header_event` text the kernel publishes in `events/header_event`
/// (`ring_buffer_print_entry_header`), byte for byte: 205 bytes, and note the single space
/// after `time_stamp`, where the lines above it align their colons.
///
/// trace-cmd reads it and throws it away; it is written for fidelity with kernel-made files.
///
/// ```
/// use typhon_recorder::tracedat::format::HEADER_EVENT;
/// assert!(HEADER_EVENT.starts_with("# compressed entry header\n"));
/// assert!(HEADER_EVENT.contains("\ttime_stamp : type == 31\n"));
/// assert_eq!(HEADER_EVENT.len(), 205);
/// ```
pub const HEADER_EVENT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";

/// A kind-table layout that cannot be described as an ftrace event format.
///
/// ```
/// use typhon_recorder::tracedat::format::FormatError;
/// let e = FormatError::Unsupported { kind: "X", field: "y", why: "no offset" };
/// assert_eq!(e.to_string(), "kind X field y cannot be described in a trace.dat format: no offset");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// The field's layout has no ftrace equivalent.
    Unsupported {
        /// Kind name.
        kind: &'static str,
        /// Field name.
        field: &'static str,
        /// What is missing.
        why: &'static str,
    },
    /// The page size is not a power of two in 4096..=1 MiB (the kernel's sub-buffer range).
    BadPageSize(u32),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Unsupported { kind, field, why } => write!(
                f,
                "kind {kind} field {field} cannot be described in a trace.dat format: {why}"
            ),
            FormatError::BadPageSize(p) => write!(
                f,
                "page size {p} is not a power of two between 4096 and 1048576"
            ),
        }
    }
}

impl std::error::Error for FormatError {}

/// Checks that `page_size` is a page size a trace.dat file can carry: a power of two, at least
/// 4096 (the kernel's smallest sub-buffer) and at most 1 MiB (the kernel refuses larger sub-buffers).
///
/// ```
/// use typhon_recorder::tracedat::format::check_page_size;
/// assert!(check_page_size(4096).is_ok());
/// assert!(check_page_size(65536).is_ok());
/// assert!(check_page_size(5000).is_err());
/// assert!(check_page_size(2048).is_err());
/// ```
pub fn check_page_size(page_size: u32) -> Result<(), FormatError> {
    if page_size.is_power_of_two() && (4096..=1 << 20).contains(&page_size) {
        Ok(())
    } else {
        Err(FormatError::BadPageSize(page_size))
    }
}

/// The `header_page` text for sub-buffers of `page_size` bytes on a 64-bit little-endian host:
/// the data area is `page_size - 16` bytes. libtraceevent takes kbuffer's long size from the
/// commit field's `size:` and the sub-buffer size from the data field.
///
/// ```
/// use typhon_recorder::tracedat::format::header_page;
/// let t = header_page(4096);
/// assert!(t.ends_with("\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n"));
/// assert!(header_page(8192).contains("size:8176;"));
/// ```
pub fn header_page(page_size: u32) -> String {
    let data = page_size.saturating_sub(PAGE_HEADER_SIZE);
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:{PAGE_HEADER_SIZE};\tsize:{data};\tsigned:1;\n"
    )
}

/// The common block of every Typhon event format (SPEC §7): type name, field name, offset, size,
/// signedness. It is the record header's own description,
/// [`CommonHeader::FIELDS`](crate::codec::CommonHeader::FIELDS).
///
/// ```
/// use typhon_recorder::tracedat::format::COMMON_FIELDS;
/// assert_eq!(COMMON_FIELDS[1], ("unsigned char", "common_type", 2, 1, false));
/// ```
pub const COMMON_FIELDS: [(&str, &str, usize, usize, bool); 4] = crate::codec::CommonHeader::FIELDS;

fn c_type(ty: FieldType) -> &'static str {
    match ty {
        FieldType::U8 => "u8",
        FieldType::U16 => "u16",
        FieldType::U32 => "u32",
        FieldType::U64 => "u64",
        FieldType::I32 => "int",
        FieldType::I64 => "s64",
        FieldType::CStr | FieldType::LenStr(_) => "char",
        FieldType::Rest => "unsigned char",
        FieldType::DataLoc => "__data_loc char[]",
    }
}

fn conversion(ty: FieldType) -> &'static str {
    match ty {
        FieldType::U8 | FieldType::U16 | FieldType::U32 => "%u",
        FieldType::U64 => "%llu",
        FieldType::I32 => "%d",
        FieldType::I64 => "%lld",
        FieldType::CStr => "%s",
        FieldType::LenStr(_) => "%.*s",
        FieldType::Rest | FieldType::DataLoc => "%s",
    }
}

fn unsupported(def: &KindDef, fd: &FieldDef, why: &'static str) -> FormatError {
    FormatError::Unsupported {
        kind: def.name,
        field: fd.name,
        why,
    }
}

/// One piece of the print format: the conversion text and its argument expressions.
struct Piece {
    text: String,
    args: Vec<String>,
}

/// Builds the declared fields and the print pieces of one kind.
fn describe(def: &KindDef) -> Result<(String, Vec<Piece>), FormatError> {
    let mut fields = String::new();
    let mut pieces = Vec::new();
    // The last length-prefixed string with a fixed offset, as (string field, length field): a
    // fixed-size field right after it is read through it.
    let mut after_lenstr: Option<(&str, &str)> = None;
    // Bytes consumed since that string ended (for several fields after it).
    let mut extra = 0usize;
    for fd in def.fields {
        let ty = fd.ty;
        match (fd.offset, ty.fixed_size()) {
            (Some(off), Some(size)) => {
                let _ = writeln!(
                    fields,
                    "\tfield:{} {};\toffset:{off};\tsize:{size};\tsigned:{};",
                    c_type(ty),
                    fd.name,
                    // As the kernel declares its `__data_loc char[]` strings: signed.
                    u8::from(ty.is_signed() || ty == FieldType::DataLoc)
                );
                let arg = if ty == FieldType::DataLoc {
                    format!("__get_str({})", fd.name)
                } else {
                    format!("REC->{}", fd.name)
                };
                pieces.push(Piece {
                    text: format!("{}={}", fd.name, conversion(ty)),
                    args: vec![arg],
                });
                after_lenstr = None;
            }
            (Some(off), None) => {
                let _ = writeln!(
                    fields,
                    "\tfield:{} {}[];\toffset:{off};\tsize:0;\tsigned:{};",
                    c_type(ty),
                    fd.name,
                    u8::from(ty != FieldType::Rest)
                );
                match ty {
                    FieldType::CStr => {
                        pieces.push(Piece {
                            text: format!("{}=%s", fd.name),
                            args: vec![format!("REC->{}", fd.name)],
                        });
                        after_lenstr = None;
                    }
                    FieldType::LenStr(len) => {
                        let lf = def
                            .field(len)
                            .ok_or_else(|| unsupported(def, fd, "length field not found"))?;
                        if lf.offset.is_none() || lf.ty.fixed_size().is_none() {
                            return Err(unsupported(def, fd, "length field has no fixed offset"));
                        }
                        pieces.push(Piece {
                            text: format!("{}=%.*s", fd.name),
                            args: vec![format!("REC->{len}"), format!("REC->{}", fd.name)],
                        });
                        after_lenstr = Some((fd.name, len));
                        extra = 0;
                    }
                    FieldType::Rest => {
                        // The length, the CEL_HEADER_V3 word decoded (for a CeLog event), then
                        // every byte.
                        pieces.push(Piece {
                            text: format!("{}_len=%u", fd.name),
                            args: vec![format!("REC->common_size - {off}")],
                        });
                        // Other raw bytes (typed `tracing` values) may be none: only their
                        // length and hex, never a word read past them.
                        if def.kind == TraceEventKind::CELOG {
                            pieces.extend(celog_header_pieces(fd.name));
                        }
                        pieces.push(Piece {
                            text: format!("{}=%s", fd.name),
                            args: vec![format!(
                                "__print_hex(REC->{}, REC->common_size - {off})",
                                fd.name
                            )],
                        });
                        after_lenstr = None;
                    }
                    _ => unreachable!("fixed-size types are handled above"),
                }
            }
            (None, Some(size)) => {
                let Some((s, len)) = after_lenstr else {
                    return Err(unsupported(
                        def,
                        fd,
                        "a field without offset must follow a length-prefixed string",
                    ));
                };
                if ty.is_signed() && size > 1 {
                    return Err(unsupported(
                        def,
                        fd,
                        "signed multi-byte field after a string",
                    ));
                }
                // Little-endian: byte i is shifted by 8*i. Element size of `char s[]` is 1.
                let mut expr = String::new();
                for i in 0..size {
                    let at = extra + i;
                    let idx = if at == 0 {
                        format!("REC->{len}")
                    } else {
                        // Parenthesized: libtraceevent fails an index with a bare operator.
                        format!("(REC->{len} + {at})")
                    };
                    if i > 0 {
                        expr.push_str(" | ");
                    }
                    if i == 0 {
                        let _ = write!(expr, "REC->{s}[{idx}]");
                    } else {
                        let _ = write!(expr, "REC->{s}[{idx}] << {}", 8 * i);
                    }
                }
                let conv = if ty.is_signed() { "%d" } else { conversion(ty) };
                pieces.push(Piece {
                    text: format!("{}={conv}", fd.name),
                    args: vec![expr],
                });
                extra += size;
            }
            (None, None) => {
                return Err(unsupported(
                    def,
                    fd,
                    "a variable-length field needs a fixed offset",
                ))
            }
        }
    }
    Ok((fields, pieces))
}

/// The well-known CeLog ids `trace-cmd report` shows by name (SPEC §7, `celog.h`); any other id
/// prints as its number (`__print_symbolic` falls back to hex).
const CELOG_IDS: &[(u16, &str)] = &[
    (69, "DEBUG_MSG"),
    (70, "RAW_LONG"),
    (71, "RAW_ULONG"),
    (72, "RAW_SHORT"),
    (73, "RAW_USHORT"),
    (74, "RAW_WCHAR"),
    (75, "RAW_CHAR"),
    (76, "RAW_UCHAR"),
    (77, "RAW_FLOAT"),
    (78, "RAW_DOUBLE"),
    (150, "DATA_LOSS"),
    (0x1ffe, "SYNC_END"),
    (0x1fff, "LOG_MARKER"),
];

/// The CEL_HEADER_V3 word of the CeLog event in byte field `ev`, decoded in the print format's
/// own arithmetic (libtraceevent evaluates `&`, `|`, shifts, `==` and `?:` over record bytes):
///
/// ```text
///  byte 3          byte 2     byte 1          byte 0
///  T . ID[13:8]    ID[7:0]    CPU:4 LEN[11:8] LEN[7:0]     then: u32 timestamp  if T,
///                                                                u32 flag|id<<16 if ID = 90,
///                                                                u32 cpu         if CPU = 15
/// ```
///
/// A flagged event (header id 90, CELID_FLAGGED) shows its real id and its flag. What a print
/// format cannot do is interpret the payload by id (a RAW_WCHAR string, a RAW_DOUBLE array):
/// the whole event stays in the hex dump that follows, and `typhon-rec report` decodes it.
fn celog_header_pieces(ev: &str) -> Vec<Piece> {
    // libtraceevent parses an index with an operator in it only inside parentheses.
    let b = |i: &str| format!("REC->{ev}[({i})]");
    let t = format!("({} >> 7)", b("3"));
    let hid = format!("((({} & 0x3f) << 8) | {})", b("3"), b("2"));
    let flagged = format!("({hid} == 90)");
    // The flag word follows the header and, when there is one, the timestamp.
    let fo = format!("(4 + 4 * {t})");
    let real_id = format!(
        "(({} << 8) | {})",
        b(&format!("{fo} + 3")),
        b(&format!("{fo} + 2"))
    );
    let flag = format!("(({} << 8) | {})", b(&format!("{fo} + 1")), b(&fo));
    let id = format!("({flagged} ? {real_id} : {hid})");
    let symbols: Vec<String> = CELOG_IDS
        .iter()
        .map(|(v, n)| format!("{{ {v}, \"{n}\" }}"))
        .collect();
    let word = |at: &str| {
        format!(
            "({} | ({} << 8) | ({} << 16) | ({} << 24))",
            b(at),
            b(&format!("{at} + 1")),
            b(&format!("{at} + 2")),
            b(&format!("{at} + 3"))
        )
    };
    let cpu4 = format!("({} >> 4)", b("1"));
    let cpu_at = format!("(4 + 4 * {t} + 4 * {flagged})");
    vec![
        Piece {
            text: "id=%s".into(),
            args: vec![format!("__print_symbolic({id}, {})", symbols.join(", "))],
        },
        Piece {
            text: "flag=%u".into(),
            args: vec![format!("({flagged} ? {flag} : 0)")],
        },
        Piece {
            text: "cpu=%u".into(),
            args: vec![format!("({cpu4} == 15 ? {} : {cpu4})", word(&cpu_at))],
        },
        Piece {
            text: "ts=%u".into(),
            args: vec![format!("({t} ? {} : 0)", word("4"))],
        },
        Piece {
            text: "len=%u".into(),
            args: vec![format!("((({} & 0xf) << 8) | {})", b("1"), b("0"))],
        },
    ]
}

/// The `print fmt` line (without the `print fmt: ` prefix) of a kind, generated from its fields:
/// `name=<conversion>` for every field, separated by spaces.
///
/// ```
/// use typhon_recorder::codec::{kind_def, TraceEventKind};
/// use typhon_recorder::tracedat::format::print_fmt;
/// let d = kind_def(TraceEventKind::PHASE_START).unwrap();
/// assert_eq!(print_fmt(d).unwrap(), r#""phase=%u", REC->phase"#);
/// ```
pub fn print_fmt(def: &KindDef) -> Result<String, FormatError> {
    let (_, pieces) = describe(def)?;
    let text: Vec<&str> = pieces.iter().map(|p| p.text.as_str()).collect();
    let mut out = format!("\"{}\"", text.join(" "));
    for p in &pieces {
        for a in &p.args {
            out.push_str(", ");
            out.push_str(a);
        }
    }
    Ok(out)
}

/// The whole tracefs `format` text of one kind: name, `ID` (= kind byte), the common block, the
/// kind's own fields and the print format.
///
/// ```
/// use typhon_recorder::codec::{kind_def, TraceEventKind};
/// use typhon_recorder::tracedat::format::event_format;
/// let t = event_format(kind_def(TraceEventKind::TICK_END).unwrap()).unwrap();
/// assert!(t.starts_with("name: TickEnd\nID: 1\nformat:\n"));
/// assert!(t.contains("\tfield:u8 tick_multiplier;\toffset:13;\tsize:1;\tsigned:0;\n"));
/// ```
pub fn event_format(def: &KindDef) -> Result<String, FormatError> {
    let (fields, _) = describe(def)?;
    let mut t = format!("name: {}\nID: {}\nformat:\n", def.name, def.kind.0);
    for (ty, name, off, size, signed) in COMMON_FIELDS {
        let _ = writeln!(
            t,
            "\tfield:{ty} {name};\toffset:{off};\tsize:{size};\tsigned:{};",
            u8::from(signed)
        );
    }
    t.push('\n');
    t.push_str(&fields);
    t.push('\n');
    let _ = writeln!(t, "print fmt: {}", print_fmt(def)?);
    Ok(t)
}

/// The formats of every kind in the table, in kind order, as `(kind, format text)`.
///
/// ```
/// use typhon_recorder::codec::KINDS;
/// use typhon_recorder::tracedat::format::all_event_formats;
/// assert_eq!(all_event_formats().unwrap().len(), KINDS.len());
/// ```
pub fn all_event_formats() -> Result<Vec<(TraceEventKind, String)>, FormatError> {
    KINDS
        .iter()
        .map(|d| event_format(d).map(|t| (d.kind, t)))
        .collect()
}
