//! The kind table checked against itself.

use super::*;

/// Offsets in the table are the packed running sums of the field sizes, and `min_size`
/// matches: the table cannot drift from itself.
#[test]
fn table_is_self_consistent() {
    let mut last = 0u8;
    for (i, d) in KINDS.iter().enumerate() {
        assert!(i == 0 || d.kind.0 > last, "table must be in kind order");
        last = d.kind.0;
        let mut off = Some(12usize);
        let mut min = 12usize;
        for fd in d.fields {
            assert_eq!(fd.offset, off, "{}.{}", d.name, fd.name);
            match fd.ty.fixed_size() {
                Some(n) => {
                    off = off.map(|o| o + n);
                    min += n;
                }
                None => {
                    off = None;
                    if fd.ty == CStr {
                        min += 1;
                    }
                    if fd.ty == Rest && d.kind == K::CELOG {
                        min += 4; // a CeLog event is at least its header word
                    }
                    if fd.ty == Rest && d.kind == K::TRACING_SPAN_PACKED {
                        min += 3; // its three varints
                    }
                    if fd.ty == Rest && d.kind == K::TRACING_EVENT_PACKED {
                        min += 2; // its two varints
                    }
                }
            }
            if fd.ty == DataLoc {
                min += 1; // an empty string is its NUL
            }
        }
        assert_eq!(d.min_size, min, "{}", d.name);
        assert_eq!(d.fixed, d.fields.iter().all(|f| !f.ty.is_variable()));
        assert_eq!(kind_def(d.kind), Some(d));
        assert!(d.fields.len() <= MAX_FIELDS);
        for fd in d.fields {
            assert_eq!(field_offset(d.kind, fd.name), fd.offset);
        }
        if d.shape == Shape::Span {
            assert_eq!(d.fields[0].offset, Some(SPAN_DURATION_OFFSET));
            // A span with ids has the whole extension; a TracingEntry only the duration.
            if d.kind != K::TRACING_ENTRY && d.kind != K::TRACING_ENTRY_SHORT {
                assert_eq!(d.field("flags").unwrap().offset, Some(SPAN_FLAGS_OFFSET));
            }
        }
    }
}
