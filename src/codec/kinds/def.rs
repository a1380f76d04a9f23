//! What one entry of the kind table says: a kind's shape, its fields and their types (the
//! table itself, and the lookups into it, are the module above).

use crate::codec::TraceEventKind as K;

/// Instant or span. A span record is written when the span ends and carries the span extension
/// (duration, span id, parent id, flags) right after the common header.
///
/// ```
/// use typhon_recorder::codec::{kind_def, Shape, TraceEventKind};
/// assert_eq!(kind_def(TraceEventKind::NAMED_SPAN).unwrap().shape, Shape::Span);
/// assert_eq!(kind_def(TraceEventKind::TICK_END).unwrap().shape, Shape::Instant);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A point in time.
    Instant,
    /// An interval: header timestamp = start, `duration_ns` field = length.
    Span,
}

/// The wire type of one field. Integers are little-endian.
///
/// ```
/// use typhon_recorder::codec::FieldType;
/// assert_eq!(FieldType::U32.fixed_size(), Some(4));
/// assert_eq!(FieldType::CStr.fixed_size(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// Unsigned 8-bit.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// NUL-terminated UTF-8 string; the NUL is inside the record.
    CStr,
    /// UTF-8 bytes whose count is the value of the field named here, which comes earlier.
    LenStr(&'static str),
    /// Raw bytes to the end of the record (e.g. a whole CeLog event).
    Rest,
    /// A string stored after the fixed part, found through a u32 at the field's offset, as the
    /// kernel's `__data_loc char[]` fields: low 16 bits = the string's offset from the record's
    /// start, high 16 bits = its length including its NUL. A kind's strings follow its fixed
    /// part back to back, in field order, each NUL-terminated, and end the record.
    DataLoc,
}

impl FieldType {
    /// Size in bytes for fixed-size types, `None` for variable ones.
    ///
    /// ```
    /// # use typhon_recorder::codec::FieldType;
    /// assert_eq!(FieldType::I64.fixed_size(), Some(8));
    /// ```
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            FieldType::U8 => Some(1),
            FieldType::U16 => Some(2),
            FieldType::U32 | FieldType::I32 | FieldType::DataLoc => Some(4),
            FieldType::U64 | FieldType::I64 => Some(8),
            FieldType::CStr | FieldType::LenStr(_) | FieldType::Rest => None,
        }
    }

    /// Whether the type is a signed integer.
    ///
    /// ```
    /// # use typhon_recorder::codec::FieldType;
    /// assert!(FieldType::I32.is_signed() && !FieldType::U32.is_signed());
    /// ```
    pub const fn is_signed(self) -> bool {
        matches!(self, FieldType::I32 | FieldType::I64)
    }

    /// Whether the field's value has a variable size (a string or bytes; a [`FieldType::DataLoc`]
    /// has a fixed 4-byte slot but a variable string).
    ///
    /// ```
    /// # use typhon_recorder::codec::FieldType;
    /// assert!(FieldType::DataLoc.is_variable() && !FieldType::U8.is_variable());
    /// ```
    pub const fn is_variable(self) -> bool {
        matches!(
            self,
            FieldType::CStr | FieldType::LenStr(_) | FieldType::Rest | FieldType::DataLoc
        )
    }
}

/// One field of a kind's payload.
///
/// ```
/// use typhon_recorder::codec::{kind_def, FieldType, TraceEventKind};
/// let f = &kind_def(TraceEventKind::INGRESS_RECEIVED).unwrap().fields[0];
/// assert_eq!((f.name, f.ty, f.offset), ("session", FieldType::U32, Some(12)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// Field name (also its name in trace.dat formats and `report` output).
    pub name: &'static str,
    /// Wire type.
    pub ty: FieldType,
    /// Absolute offset inside the record, or `None` when it follows a variable-length field.
    pub offset: Option<usize>,
}

/// One entry of the kind table.
///
/// ```
/// use typhon_recorder::codec::{kind_def, TraceEventKind};
/// let d = kind_def(TraceEventKind::EGRESS_SENT).unwrap();
/// assert_eq!((d.name, d.min_size, d.fixed_size()), ("EgressSent", 26, Some(26)));
/// let t = kind_def(TraceEventKind::THREAD_INFO).unwrap();
/// assert_eq!((t.min_size, t.fixed_size()), (19, None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindDef {
    /// The kind byte.
    pub kind: K,
    /// Name, used as the trace.dat event name.
    pub name: &'static str,
    /// Instant or span.
    pub shape: Shape,
    /// Fields after the common header, in wire order.
    pub fields: &'static [FieldDef],
    /// Smallest valid record size (header included): the whole size for fixed-size kinds; for
    /// variable ones, the size with empty strings (a `CStr` counts its NUL).
    pub min_size: usize,
    /// Whether every record of the kind has exactly `min_size` bytes.
    pub fixed: bool,
}

impl KindDef {
    /// The record size if the kind is fixed-size.
    ///
    /// ```
    /// # use typhon_recorder::codec::{kind_def, TraceEventKind};
    /// assert_eq!(kind_def(TraceEventKind::TICK_START).unwrap().fixed_size(), Some(12));
    /// ```
    pub const fn fixed_size(&self) -> Option<usize> {
        if self.fixed {
            Some(self.min_size)
        } else {
            None
        }
    }

    /// The field with this name.
    ///
    /// ```
    /// # use typhon_recorder::codec::{kind_def, TraceEventKind};
    /// let d = kind_def(TraceEventKind::NAMED_SPAN).unwrap();
    /// assert_eq!(d.field("span_id").unwrap().offset, Some(20));
    /// ```
    pub fn field(&self, name: &str) -> Option<&'static FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }
}
