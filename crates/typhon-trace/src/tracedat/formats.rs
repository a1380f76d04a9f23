//! Event formats: [`EventFormat`] and its [`FieldFormat`]s, parsed from the tracefs `format`
//! text the file carries for each event, and the field reads that decode a record with them.
//!
//! The parser is lenient on purpose: a field line it cannot make sense of is skipped and a
//! format without a name or ID is dropped, so one odd kernel event does not cost the file.

use super::cursor::read_uint;

/// One field of an event format, as parsed from the `format` text.
///
/// ```
/// use typhon_trace::tracedat::FieldFormat;
/// let f = FieldFormat { ty: "u16".into(), name: "seq".into(), array: None, offset: 16,
///                       size: 2, signed: false, common: false };
/// assert_eq!(f.read(&[0u8; 16].iter().chain(&[0x34, 0x12]).copied().collect::<Vec<_>>()),
///            Some(0x1234));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldFormat {
    /// C type as written (`unsigned char`, `u64`, `__data_loc char[]`, ...).
    pub ty: String,
    /// Field name without array brackets.
    pub name: String,
    /// `Some(n)` for `name[n]`, `Some(0)` for `name[]`, `None` for a scalar.
    pub array: Option<usize>,
    /// Offset inside the record payload.
    pub offset: usize,
    /// Size in bytes (0 for a trailing `[]` array: to the end of the record).
    pub size: usize,
    /// Whether the format says `signed:1`.
    pub signed: bool,
    /// Whether the field is in the common block.
    pub common: bool,
}

impl FieldFormat {
    /// The field's value in little-endian record `data` as an integer (sign-extended when
    /// signed), for scalar fields of 1, 2, 4 or 8 bytes; `None` otherwise or if out of bounds.
    ///
    /// ```
    /// use typhon_trace::tracedat::FieldFormat;
    /// let f = FieldFormat { ty: "int".into(), name: "x".into(), array: None, offset: 0,
    ///                       size: 4, signed: true, common: false };
    /// assert_eq!(f.read(&(-5i32).to_le_bytes()), Some(-5i64 as u64));
    /// ```
    pub fn read(&self, data: &[u8]) -> Option<u64> {
        self.read_endian(data, false)
    }

    /// [`read`](Self::read) for a record of a file with either byte order
    /// ([`TraceFile::big_endian`](super::TraceFile::big_endian)).
    ///
    /// ```
    /// use typhon_trace::tracedat::FieldFormat;
    /// let f = FieldFormat { ty: "u16".into(), name: "x".into(), array: None, offset: 0,
    ///                       size: 2, signed: false, common: false };
    /// assert_eq!(f.read_endian(&[0x01, 0x02], true), Some(0x0102));
    /// assert_eq!(f.read_endian(&[0x01, 0x02], false), Some(0x0201));
    /// ```
    pub fn read_endian(&self, data: &[u8], big_endian: bool) -> Option<u64> {
        if self.array.is_some() || !matches!(self.size, 1 | 2 | 4 | 8) {
            return None;
        }
        let b = data.get(self.offset..self.offset.checked_add(self.size)?)?;
        let v = read_uint(b, big_endian);
        if self.signed && self.size < 8 {
            let shift = 64 - 8 * self.size as u32;
            Some((((v << shift) as i64) >> shift) as u64)
        } else {
            Some(v)
        }
    }
}

/// One event format: system, name, id, fields and print format.
///
/// ```
/// use typhon_trace::tracedat::EventFormat;
/// let text = "name: x\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:u64 v;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"v=%llu\", REC->v\n";
/// let e = EventFormat::parse("sys", text).unwrap();
/// assert_eq!((e.id, e.name.as_str(), e.fields.len()), (7, "x", 2));
/// assert_eq!(e.print_fmt, "\"v=%llu\", REC->v");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Event system (`typhon`, `sched`, ... or `ftrace`).
    pub system: String,
    /// Event name.
    pub name: String,
    /// Event id (`common_type` value).
    pub id: u32,
    /// Common fields first, then the event's own fields, in text order.
    pub fields: Vec<FieldFormat>,
    /// The `print fmt:` text after the colon, trimmed.
    pub print_fmt: String,
}

impl EventFormat {
    /// Parses a tracefs `format` text. Returns `None` if it has no name or ID.
    ///
    /// ```
    /// use typhon_trace::tracedat::EventFormat;
    /// assert!(EventFormat::parse("s", "garbage").is_none());
    /// ```
    pub fn parse(system: &str, text: &str) -> Option<Self> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        let mut common = true;
        let mut in_format = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = v.trim().parse::<u32>().ok();
            } else if t == "format:" {
                in_format = true;
            } else if let Some(v) = t.strip_prefix("print fmt:") {
                print_fmt = v.trim().to_owned();
                in_format = false;
            } else if in_format && t.is_empty() {
                common = false;
            } else if let Some(rest) = t.strip_prefix("field:") {
                if let Some(f) = parse_field(rest, common) {
                    fields.push(f);
                }
            }
        }
        Some(Self {
            system: system.to_owned(),
            name: name?,
            id: id?,
            fields,
            print_fmt,
        })
    }

    /// The field with this name.
    ///
    /// ```
    /// use typhon_trace::tracedat::EventFormat;
    /// let t = "name: e\nID: 1\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n";
    /// assert_eq!(EventFormat::parse("s", t).unwrap().field("a").unwrap().size, 4);
    /// ```
    pub fn field(&self, name: &str) -> Option<&FieldFormat> {
        self.fields.iter().find(|f| f.name == name)
    }
}

fn parse_field(rest: &str, common: bool) -> Option<FieldFormat> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let split = decl.rfind([' ', '\t'])?;
    let (ty, mut nm) = (decl[..split].trim(), decl[split..].trim());
    let mut array = None;
    if let Some(b) = nm.find('[') {
        let inner = nm[b + 1..].trim_end_matches(']');
        array = Some(inner.parse().unwrap_or(0));
        nm = &nm[..b];
    }
    Some(FieldFormat {
        ty: ty.to_owned(),
        name: nm.to_owned(),
        array,
        offset: offset?,
        size: size?,
        signed,
        common,
    })
}
