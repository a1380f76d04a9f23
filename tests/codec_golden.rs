//! Golden bytes, computed by hand from SPEC §2–4 and research/celog-format.md, written out as
//! literals; plus checks of every typed writer against the kind table's offsets and sizes, and of
//! every malformed input SPEC §3 lists.

use typhon_recorder::codec::celog::*;
use typhon_recorder::codec::correlation::{
    self, command_causal_id, covers, is_command_causal_id, size_of, write_admitted, write_consumed,
    write_dropped, write_received, write_sent, CorrelationInstant, IngressDropReason,
    COMMAND_MARKER,
};
use typhon_recorder::codec::kinds::{kind_def, FieldType};
use typhon_recorder::codec::records::*;
use typhon_recorder::codec::{DecodeError, EncodeError, TraceEventKind as K};

/// ts = 0x0102030405060708 as it appears on the wire.
const TS: i64 = 0x0102_0304_0506_0708;
const TSB: [u8; 8] = [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01];

fn hdr(size: u8, kind: u8, slot: u8) -> Vec<u8> {
    let mut v = vec![size, 0, kind, slot];
    v.extend_from_slice(&TSB);
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// ---- correlation (SPEC §3) ---------------------------------------------------------------

#[test]
fn command_marker_and_causal_id() {
    assert_eq!(COMMAND_MARKER, 6077962839392256000);
    assert_eq!(
        command_causal_id(0xDEAD_BEEF, 0x0102_0304, 0xABCD),
        (0x5459_4300_DEAD_BEEF, 0x0000_0102_0304_ABCD)
    );
    assert!(is_command_causal_id(0x5459_4300_0000_0000));
    assert!(is_command_causal_id(0x5459_4300_FFFF_FFFF));
    assert!(!is_command_causal_id(0x5459_4301_0000_0000));
    assert!(!is_command_causal_id(0));
    for k in 0..=255u8 {
        let covered = (236..=240).contains(&k);
        assert_eq!(covers(K(k)), covered, "{k}");
        assert_eq!(size_of(K(k)) != 0, covered, "{k}");
    }
    let sizes: Vec<usize> = (236..=240).map(|k| size_of(K(k))).collect();
    assert_eq!(sizes, [22, 24, 19, 20, 26]);
}

#[test]
fn golden_ingress_received() {
    let mut d = [0xEEu8; 22];
    write_received(&mut d, 3, TS, 0xA1B2_C3D4, 0x1122, 0x3344, 0x5566);
    let want = cat(&[
        &hdr(22, 236, 3),
        &[0xD4, 0xC3, 0xB2, 0xA1, 0x22, 0x11, 0x44, 0x33, 0x66, 0x55],
    ]);
    assert_eq!(&d[..], &want[..]);
}

#[test]
fn golden_ingress_admitted() {
    let mut d = [0xEEu8; 30];
    write_admitted(&mut d, 3, TS, 0xA1B2_C3D4, 0x1122, 0x3344, 0x9988_7766);
    let want = cat(&[
        &hdr(24, 237, 3),
        &[
            0xD4, 0xC3, 0xB2, 0xA1, 0x22, 0x11, 0x44, 0x33, 0x66, 0x77, 0x88, 0x99,
        ],
    ]);
    assert_eq!(&d[..24], &want[..]);
    assert_eq!(&d[24..], &[0xEE; 6], "writes nothing past the record");
}

#[test]
fn golden_ingress_dropped() {
    let mut d = [0u8; 19];
    write_dropped(&mut d, 3, TS, 1, 2, IngressDropReason::RateLimited);
    assert_eq!(
        &d[..],
        &cat(&[&hdr(19, 238, 3), &[1, 0, 0, 0, 2, 0, 2]])[..]
    );
    write_dropped(&mut d, 3, TS, 1, 2, IngressDropReason::Other(0xEE));
    assert_eq!(d[18], 0xEE);
    assert_eq!(
        correlation::decode(&d).unwrap().instant,
        CorrelationInstant::IngressDropped {
            session: 1,
            seq: 2,
            reason: IngressDropReason::Other(0xEE)
        }
    );
}

#[test]
fn golden_command_consumed() {
    let mut d = [0u8; 20];
    write_consumed(&mut d, 3, TS, 0xDEAD_BEEF, 0xFFFF, 7);
    assert_eq!(
        &d[..],
        &cat(&[
            &hdr(20, 239, 3),
            &[0xEF, 0xBE, 0xAD, 0xDE, 0xFF, 0xFF, 7, 0]
        ])[..]
    );
}

#[test]
fn golden_egress_sent() {
    let mut d = [0u8; 26];
    write_sent(&mut d, 3, TS, 5, 0x0102_0304, 1500, 0x0102);
    assert_eq!(
        &d[..],
        &cat(&[
            &hdr(26, 240, 3),
            &[5, 0, 0, 0, 4, 3, 2, 1, 0xDC, 0x05, 0, 0, 2, 1]
        ])[..]
    );
    // Negative timestamps are two's complement.
    write_sent(&mut d, 0, -2, 0, 0, 0, 0);
    assert_eq!(&d[4..12], &[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
}

#[test]
#[should_panic]
fn correlation_writer_panics_on_short_destination() {
    let mut d = [0u8; 25];
    write_sent(&mut d, 0, 0, 0, 0, 0, 0);
}

/// Reads field `fd` of `rec` at the table's offset, as u64 (signed values sign-extended).
fn field_at(rec: &[u8], off: usize, ty: FieldType) -> u64 {
    let n = ty.fixed_size().unwrap();
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&rec[off..off + n]);
    match ty {
        FieldType::I32 => i32::from_le_bytes(b[..4].try_into().unwrap()) as i64 as u64,
        _ => u64::from_le_bytes(b),
    }
}

/// Checks that the record in `rec` has the table's size for its kind and that each named fixed
/// field holds `want` at the table's offset.
fn check_against_table(rec: &[u8], kind: K, want: &[(&str, u64)]) {
    let def = kind_def(kind).unwrap();
    assert_eq!(rec[2], kind.0);
    let size = u16::from_le_bytes([rec[0], rec[1]]) as usize;
    assert_eq!(size, rec.len());
    if def.fixed {
        assert_eq!(size, def.min_size, "{}", def.name);
    }
    assert_eq!(
        def.fields
            .iter()
            .filter(|f| f.offset.is_some() && f.ty.fixed_size().is_some())
            .count(),
        want.len(),
        "{}: every fixed field checked",
        def.name
    );
    for (name, v) in want {
        let fd = def
            .field(name)
            .unwrap_or_else(|| panic!("{}.{name}", def.name));
        assert_eq!(
            field_at(rec, fd.offset.unwrap(), fd.ty),
            *v,
            "{}.{name}",
            def.name
        );
    }
}

#[test]
fn correlation_writers_match_the_kind_table() {
    let mut d = [0u8; 64];
    write_received(&mut d, 9, 1, 0x1111_1111, 0x2222, 0x3333, 0x4444);
    check_against_table(
        &d[..22],
        K::INGRESS_RECEIVED,
        &[
            ("session", 0x1111_1111),
            ("seq", 0x2222),
            ("wire_idx", 0x3333),
            ("bytes", 0x4444),
        ],
    );
    write_admitted(&mut d, 9, 1, 0x1111_1111, 0x2222, 0x3333, 0x4444_5555);
    check_against_table(
        &d[..24],
        K::INGRESS_ADMITTED,
        &[
            ("session", 0x1111_1111),
            ("seq", 0x2222),
            ("wire_idx", 0x3333),
            ("drain_tick", 0x4444_5555),
        ],
    );
    write_dropped(
        &mut d,
        9,
        1,
        0x1111_1111,
        0x2222,
        IngressDropReason::SessionClosed,
    );
    check_against_table(
        &d[..19],
        K::INGRESS_DROPPED,
        &[("session", 0x1111_1111), ("seq", 0x2222), ("reason", 4)],
    );
    write_consumed(&mut d, 9, 1, 0x1111_1111, 0x2222, 0x3333);
    check_against_table(
        &d[..20],
        K::COMMAND_CONSUMED,
        &[
            ("session", 0x1111_1111),
            ("seq", 0x2222),
            ("sys_idx", 0x3333),
        ],
    );
    write_sent(&mut d, 9, 1, 0x1111_1111, 0x2222_2222, 0x3333_3333, 0x4444);
    check_against_table(
        &d[..26],
        K::EGRESS_SENT,
        &[
            ("session", 0x1111_1111),
            ("tick", 0x2222_2222),
            ("bytes", 0x3333_3333),
            ("acks", 0x4444),
        ],
    );
}

#[test]
fn record_writers_match_the_kind_table() {
    let mut d = [0u8; 128];
    let n = write_tick_start(&mut d, 1, 2).unwrap();
    check_against_table(&d[..n], K::TICK_START, &[]);
    let n = write_tick_end(&mut d, 1, 2, 0x11, 0x22).unwrap();
    check_against_table(
        &d[..n],
        K::TICK_END,
        &[("overload_level", 0x11), ("tick_multiplier", 0x22)],
    );
    let n = write_phase_start(&mut d, 1, 2, 0x33).unwrap();
    check_against_table(&d[..n], K::PHASE_START, &[("phase", 0x33)]);
    let n = write_phase_end(&mut d, 1, 2, 0x44).unwrap();
    check_against_table(&d[..n], K::PHASE_END, &[("phase", 0x44)]);
    let n = write_instant(&mut d, 1, 2, -7, 0x1234_5678).unwrap();
    check_against_table(
        &d[..n],
        K::INSTANT,
        &[("name_id", (-7i64) as u64), ("payload", 0x1234_5678)],
    );
    let span = SpanExt {
        duration_ns: 0x0A0B,
        span_id: 0x0C0D,
        parent_span_id: 0x0E0F,
    };
    let n = write_named_span(&mut d, 1, 2, &span, "abc").unwrap();
    check_against_table(
        &d[..n],
        K::NAMED_SPAN,
        &[
            ("duration_ns", 0x0A0B),
            ("span_id", 0x0C0D),
            ("parent_span_id", 0x0E0F),
            ("flags", 0),
        ],
    );
    let ctx = TraceContext {
        hi: 0x1234,
        lo: 0x5678,
    };
    let n = write_traced_span(&mut d, 1, 2, &span, ctx, "abc").unwrap();
    check_against_table(
        &d[..n],
        K::TRACED_SPAN,
        &[
            ("duration_ns", 0x0A0B),
            ("span_id", 0x0C0D),
            ("parent_span_id", 0x0E0F),
            ("flags", 1),
            ("trace_id_hi", 0x1234),
            ("trace_id_lo", 0x5678),
        ],
    );
    let n = write_thread_info(&mut d, 1, 2, -9, "worker-1", ThreadKind::Worker).unwrap();
    check_against_table(
        &d[..n],
        K::THREAD_INFO,
        &[("thread_id", (-9i64) as u64), ("name_len", 8)],
    );
    // Variable fields: where the table's walk puts them.
    let name_off = kind_def(K::THREAD_INFO)
        .unwrap()
        .field("name")
        .unwrap()
        .offset
        .unwrap();
    assert_eq!(&d[name_off..name_off + 8], b"worker-1");
    assert_eq!(d[name_off + 8], 1);
    assert_eq!(n, kind_def(K::THREAD_INFO).unwrap().min_size + 8);
}

// ---- spans and thread info -------------------------------------------------------------------

#[test]
fn golden_named_span() {
    let mut d = [0u8; 42];
    let span = SpanExt {
        duration_ns: 250,
        span_id: (1 << 56) | 5,
        parent_span_id: (1 << 56) | 2,
    };
    assert_eq!(write_named_span(&mut d, 1, 1000, &span, "tick"), Ok(42));
    #[rustfmt::skip]
    let want: [u8; 42] = [
        42, 0, 246, 1, 0xE8, 0x03, 0, 0, 0, 0, 0, 0,
        0xFA, 0, 0, 0, 0, 0, 0, 0,
        5, 0, 0, 0, 0, 0, 0, 1,
        2, 0, 0, 0, 0, 0, 0, 1,
        0,
        b't', b'i', b'c', b'k', 0,
    ];
    assert_eq!(d, want);
    assert_eq!(named_span_len("tick"), 42);
}

#[test]
fn golden_traced_span_with_command_context() {
    let mut d = [0u8; 56];
    let span = SpanExt {
        duration_ns: 1,
        span_id: 2,
        parent_span_id: 0,
    };
    let ctx = TraceContext::from_command(7, 0x10, 0x20);
    assert!(ctx.is_command());
    assert_eq!(write_traced_span(&mut d, 2, -1, &span, ctx, "go"), Ok(56));
    #[rustfmt::skip]
    let want: [u8; 56] = [
        56, 0, 11, 2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        1, 0, 0, 0, 0, 0, 0, 0,
        2, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
        1,
        7, 0, 0, 0, 0x00, 0x43, 0x59, 0x54,
        0x20, 0, 0x10, 0, 0, 0, 0, 0,
        b'g', b'o', 0,
    ];
    assert_eq!(d, want);
}

#[test]
fn golden_traced_span_with_w3c_context() {
    // W3C trace id 4bf92f3577b34da6a3ce929d0e0e4736: hi = first 8 bytes read LE.
    let id = [
        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47,
        0x36,
    ];
    let ctx = TraceContext::from_w3c_bytes(id);
    assert_eq!(
        ctx,
        TraceContext {
            hi: 0xa64d_b377_352f_f94b,
            lo: 0x3647_0e0e_9d92_cea3
        }
    );
    assert!(!ctx.is_command());
    let mut d = [0u8; 55];
    write_traced_span(&mut d, 1, 0, &SpanExt::default(), ctx, "x").unwrap();
    // On the wire the 16 bytes are the canonical id, in order.
    assert_eq!(&d[37..53], &id);
}

#[test]
fn golden_thread_info() {
    let mut d = [0u8; 25];
    assert_eq!(
        write_thread_info(&mut d, 4, 0, -2, "render", ThreadKind::Pool),
        Ok(25)
    );
    #[rustfmt::skip]
    let want: [u8; 25] = [
        25, 0, 77, 4, 0, 0, 0, 0, 0, 0, 0, 0,
        0xFE, 0xFF, 0xFF, 0xFF,
        6, 0,
        b'r', b'e', b'n', b'd', b'e', b'r',
        2,
    ];
    assert_eq!(d, want);
    write_thread_info(&mut d, 4, 0, -2, "render", ThreadKind::Unknown(0x7F)).unwrap();
    assert_eq!(d[24], 0x7F);
    assert_eq!(
        decode(&d).unwrap().1,
        Record::ThreadInfo {
            thread_id: -2,
            name: "render",
            kind: ThreadKind::Unknown(0x7F)
        }
    );
}

#[test]
fn golden_ticks_and_instant() {
    let mut d = [0u8; 20];
    write_tick_end(&mut d, 1, 2, 3, 4).unwrap();
    assert_eq!(&d[..14], &[14, 0, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 3, 4]);
    write_instant(&mut d, 1, 2, 0x0102_0304, -1).unwrap();
    assert_eq!(
        d,
        [20, 0, 6, 1, 2, 0, 0, 0, 0, 0, 0, 0, 4, 3, 2, 1, 0xFF, 0xFF, 0xFF, 0xFF]
    );
}

#[test]
fn span_names_are_never_truncated() {
    let span = SpanExt::default();
    let mut d = vec![0u8; 70_000];
    assert_eq!(
        write_named_span(&mut d, 1, 0, &span, "a\0b"),
        Err(EncodeError::NameHasNul)
    );
    let ctx = TraceContext::default();
    assert_eq!(
        write_traced_span(&mut d, 1, 0, &span, ctx, "\0"),
        Err(EncodeError::NameHasNul)
    );
    // Largest name that fits: 65534 - 38 = 65496 bytes.
    let max = "n".repeat(65_534 - 38);
    assert_eq!(write_named_span(&mut d, 1, 0, &span, &max), Ok(65_534));
    let over = "n".repeat(65_534 - 37);
    assert_eq!(
        write_named_span(&mut d, 1, 0, &span, &over),
        Err(EncodeError::RecordTooLarge(65_535))
    );
    let over = "n".repeat(65_534 - 53);
    assert_eq!(
        write_traced_span(&mut d, 1, 0, &span, ctx, &over),
        Err(EncodeError::RecordTooLarge(65_535))
    );
    let over = "n".repeat(65_534 - 18);
    assert_eq!(
        write_thread_info(&mut d, 1, 0, 0, &over, ThreadKind::Main),
        Err(EncodeError::RecordTooLarge(65_535))
    );
    // Too-small destinations are errors, and nothing is written.
    let mut small = [0xAAu8; 41];
    assert_eq!(
        write_named_span(&mut small, 1, 0, &span, "tick"),
        Err(EncodeError::DstTooSmall { need: 42, have: 41 })
    );
    assert_eq!(small, [0xAA; 41]);
    assert_eq!(
        write_tick_start(&mut [0u8; 11], 0, 0),
        Err(EncodeError::DstTooSmall { need: 12, have: 11 })
    );
}

// ---- CeLog (SPEC §4, research §6) ------------------------------------------------------------

fn enc(id: u16, ts: Option<u32>, flag: Option<u16>, cpu: u32, data: &[u8]) -> Vec<u8> {
    let mut buf = vec![0xAAu8; 8192];
    let n = encode_event(&mut buf, id, ts, flag, cpu, data).unwrap();
    assert_eq!(
        n,
        encoded_len(data.len(), ts.is_some(), flag.is_some(), cpu)
    );
    buf.truncate(n);
    // Every golden event decodes back to what was encoded.
    let (ev, used) = decode_event(&buf).unwrap();
    assert_eq!(used, n);
    assert_eq!(
        ev,
        CelEvent {
            id,
            timestamp: ts,
            flag,
            cpu,
            data
        }
    );
    buf
}

#[test]
fn research_worked_example_flagged_raw_ulong() {
    let b = enc(
        CELID_RAW_ULONG,
        Some(0x0001_2345),
        Some(3),
        1,
        &[0x2F, 0, 0, 0],
    );
    assert_eq!(
        b,
        [
            0x04, 0x10, 0x5A, 0x80, 0x45, 0x23, 0x01, 0x00, 0x03, 0x00, 0x47, 0x00, 0x2F, 0x00,
            0x00, 0x00
        ]
    );
}

#[test]
fn research_worked_example_plain_user_event() {
    let b = enc(0x2005, None, None, 0, &[0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5]);
    assert_eq!(
        b,
        [0x06, 0x00, 0x05, 0x20, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0x00, 0x00]
    );
}

#[test]
fn research_worked_example_cpu_17() {
    let b = enc(
        0x2000,
        Some(0x0A0B_0C0D),
        None,
        17,
        &[1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert_eq!(CelHeaderV3::new(8, 15, 0x2000, true).bits(), 0xA000_F008);
    assert_eq!(
        b,
        [
            0x08, 0xF0, 0x00, 0xA0, 0x0D, 0x0C, 0x0B, 0x0A, 0x11, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5,
            6, 7, 8
        ]
    );
}

#[test]
fn golden_celog_timestamped() {
    let b = enc(0x2000, Some(0x1122_3344), None, 2, &[0xAA]);
    assert_eq!(
        b,
        [0x01, 0x20, 0x00, 0xA0, 0x44, 0x33, 0x22, 0x11, 0xAA, 0x00, 0x00, 0x00]
    );
}

#[test]
fn golden_celog_flagged_without_timestamp() {
    let b = enc(0x2001, None, Some(0xBEEF), 0, &[]);
    assert_eq!(b, [0x00, 0x00, 0x5A, 0x00, 0xEF, 0xBE, 0x01, 0x20]);
}

#[test]
fn golden_celog_cpu_15_is_escaped() {
    let b = enc(0x2000, None, None, 15, &[]);
    assert_eq!(b, [0x00, 0xF0, 0x00, 0x20, 0x0F, 0x00, 0x00, 0x00]);
    let b = enc(0x2000, None, None, 14, &[]);
    assert_eq!(b, [0x00, 0xE0, 0x00, 0x20]);
}

#[test]
fn golden_celog_all_three_together() {
    let b = enc(
        0x2ABC,
        Some(0xFFFF_FFFF),
        Some(0x8001),
        300,
        &[0x10, 0x20, 0x30, 0x40, 0x50],
    );
    #[rustfmt::skip]
    let want = [
        0x05, 0xF0, 0x5A, 0x80,
        0xFF, 0xFF, 0xFF, 0xFF,
        0x01, 0x80, 0xBC, 0x2A,
        0x2C, 0x01, 0x00, 0x00,
        0x10, 0x20, 0x30, 0x40, 0x50, 0x00, 0x00, 0x00,
    ];
    assert_eq!(b, want);
}

#[test]
fn golden_celog_empty_data_and_session_events() {
    assert_eq!(
        enc(CELID_SYNC_END, None, None, 0, &[]),
        [0x00, 0x00, 0xFE, 0x1F]
    );
    assert_eq!(
        enc(CELID_DATA_LOSS, None, None, 0, &0u32.to_le_bytes()),
        [0x04, 0x00, 0x96, 0x00, 0, 0, 0, 0]
    );
    let marker = log_marker_data(1_000_000, 100, 4);
    assert_eq!(
        enc(CELID_LOG_MARKER, None, None, 0, &marker),
        [0x10, 0x00, 0xFF, 0x1F, 0x40, 0x42, 0x0F, 0x00, 0x64, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]
    );
}

#[test]
fn golden_celog_max_data() {
    let data: Vec<u8> = (0..4095u32).map(|i| (i % 251) as u8 + 1).collect();
    let b = enc(0x2000, None, None, 0, &data);
    assert_eq!(b.len(), 4100);
    assert_eq!(&b[..4], &[0xFF, 0x0F, 0x00, 0x20]);
    assert_eq!(&b[4..4099], &data[..]);
    assert_eq!(b[4099], 0, "padding is zero");
}

#[test]
fn celog_rejections() {
    let mut buf = [0xAAu8; 8192];
    assert_eq!(
        encode_event(&mut buf, 0x2000, None, None, 0, &[0; 4096]),
        Err(CelogError::DataTooLarge(4096))
    );
    assert_eq!(
        encode_event(&mut buf, 0x4000, None, None, 0, &[]),
        Err(CelogError::InvalidId(0x4000))
    );
    assert_eq!(
        encode_event(&mut buf, CELID_FLAGGED, None, None, 0, &[]),
        Err(CelogError::InvalidId(90))
    );
    let mut small = [0xAAu8; 15];
    assert_eq!(
        encode_event(
            &mut small,
            CELID_RAW_ULONG,
            Some(1),
            Some(3),
            1,
            &[1, 2, 3, 4]
        ),
        Err(CelogError::DstTooSmall { need: 16, have: 15 })
    );
    assert_eq!(small, [0xAA; 15], "nothing written, nothing truncated");
    assert_eq!(
        encode_event(&mut [], 0x2000, None, None, 0, &[]),
        Err(CelogError::DstTooSmall { need: 4, have: 0 })
    );
    // Decoder.
    assert_eq!(
        decode_event(&[0, 0, 0]),
        Err(CelogError::Truncated { need: 4, have: 3 })
    );
    assert_eq!(decode_event(&[0, 0, 0, 0x40]), Err(CelogError::ReservedBit));
    assert_eq!(
        decode_event(&[0x01, 0x00, 0x00, 0x20, 0xAA]),
        Err(CelogError::Truncated { need: 8, have: 5 })
    );
    assert_eq!(
        decode_event(&[0x00, 0xF0, 0x00, 0x20, 0x03, 0, 0, 0]),
        Err(CelogError::NonCanonicalCpu(3))
    );
    assert_eq!(
        decode_event(&[0x00, 0x00, 0x5A, 0x00, 0x00, 0x00, 0x00, 0x40]),
        Err(CelogError::InvalidId(0x4000))
    );
    assert_eq!(
        decode_event(&[0x00, 0x00, 0x5A, 0x00, 0x00, 0x00, 0x5A, 0x00]),
        Err(CelogError::InvalidId(90))
    );
}

#[test]
fn zones() {
    assert_eq!(validate_zones(0xFFFF_FFFF), 0xCFFF_FFFF);
    assert_eq!(
        validate_zones(CELZONE_RESERVED1 | CELZONE_MISC),
        CELZONE_MISC | CELZONE_ALWAYSON
    );
    let ce = validate_zones(CELZONE_DEFAULT);
    assert!(zones_enabled(0, CELZONE_MISC, 0, ce));
    assert!(!zones_enabled(0, CELZONE_KCALL, 0, ce));
    assert!(zones_enabled(0, CELZONE_ALWAYSON, 0, validate_zones(0)));
    assert!(zones_enabled(0x10, 0, 0x30, 0));
    assert!(!zones_enabled(0x10, 0x1, 0x20, 0x2));
}

#[test]
fn golden_celog_record() {
    let ev = CelEvent {
        id: 0x2005,
        timestamp: None,
        flag: None,
        cpu: 0,
        data: &[0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5],
    };
    let mut d = [0xAAu8; 24];
    assert_eq!(celog_record_len(6, false, false, 0), 24);
    assert_eq!(write_celog_record(&mut d, 0, TS, &ev), Ok(24));
    let want = cat(&[
        &hdr(24, 255, 0),
        &[
            0x06, 0x00, 0x05, 0x20, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0x00, 0x00,
        ],
    ]);
    assert_eq!(&d[..], &want[..]);
    assert_eq!(decode(&d).unwrap().1, Record::CeLog(ev));
    // Errors: short destination (record-level sizes), oversize data.
    assert_eq!(
        write_celog_record(&mut [0u8; 23], 0, 0, &ev),
        Err(EncodeError::DstTooSmall { need: 24, have: 23 })
    );
    assert_eq!(
        write_celog_record(&mut [0u8; 5], 0, 0, &ev),
        Err(EncodeError::DstTooSmall { need: 24, have: 5 })
    );
    let big = [0u8; 4096];
    let ev = CelEvent { data: &big, ..ev };
    assert_eq!(
        write_celog_record(&mut [0u8; 8192], 0, 0, &ev),
        Err(EncodeError::CeLog(CelogError::DataTooLarge(4096)))
    );
}

// ---- malformed input (SPEC §3 and the table checks) -------------------------------------------

#[test]
fn correlation_decode_rejects_malformed() {
    let mut good = [0u8; 22];
    write_received(&mut good, 1, 2, 3, 4, 5, 6);
    assert!(correlation::decode(&good).is_ok());
    // Shorter than the header.
    for n in 0..12 {
        assert_eq!(
            correlation::decode(&good[..n]),
            Err(DecodeError::Truncated { need: 12, have: n })
        );
    }
    // Shorter than the header's size.
    for n in 12..22 {
        assert_eq!(
            correlation::decode(&good[..n]),
            Err(DecodeError::Truncated { need: 22, have: n })
        );
    }
    // A kind it does not cover.
    for k in [0u8, 11, 77, 235, 241, 246, 255] {
        let mut b = good;
        b[2] = k;
        assert_eq!(
            correlation::decode(&b),
            Err(DecodeError::UnexpectedKind(K(k)))
        );
    }
    // A size field disagreeing with size_of(kind).
    for s in [13u16, 21, 23, 24, 100] {
        let mut b = [0u8; 128];
        b[..22].copy_from_slice(&good);
        b[..2].copy_from_slice(&s.to_le_bytes());
        assert_eq!(
            correlation::decode(&b),
            Err(DecodeError::SizeMismatch {
                kind: K::INGRESS_RECEIVED,
                expected: 22,
                found: s as usize
            })
        );
    }
    // Reserved sizes.
    for s in [0u16, 11, 0xFFFF] {
        let mut b = good;
        b[..2].copy_from_slice(&s.to_le_bytes());
        assert_eq!(correlation::decode(&b), Err(DecodeError::BadSize(s)));
    }
    // Bytes after the record are ignored.
    let mut padded = [0xEEu8; 24];
    padded[..22].copy_from_slice(&good);
    assert_eq!(correlation::decode(&padded), correlation::decode(&good));
}

#[test]
fn decode_fields_rejects_malformed() {
    let span = SpanExt {
        duration_ns: 1,
        span_id: 2,
        parent_span_id: 3,
    };
    let mut named = [0u8; 42];
    write_named_span(&mut named, 1, 0, &span, "tick").unwrap();
    assert!(decode_fields(&named).is_ok());

    // Fixed kind with the wrong size.
    let mut b = [0u8; 16];
    write_tick_end(&mut b, 1, 0, 1, 2).unwrap();
    b[0] = 15;
    assert_eq!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch {
            kind: K::TICK_END,
            expected: 14,
            found: 15
        })
    );
    // Variable kind below min_size.
    let mut b = named;
    b[0] = 37;
    assert_eq!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch {
            kind: K::NAMED_SPAN,
            expected: 38,
            found: 37
        })
    );
    // Missing NUL.
    let mut b = named;
    b[41] = b'x';
    assert_eq!(decode_fields(&b), Err(DecodeError::MissingNul));
    // Interior NUL: the string ends early and bytes are left over.
    let mut b = named;
    b[38] = 0;
    assert!(matches!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch { .. })
    ));
    // Invalid UTF-8.
    let mut b = named;
    b[38] = 0xFF;
    assert_eq!(decode_fields(&b), Err(DecodeError::BadUtf8));
    // Flags inconsistent with the kind.
    let mut b = named;
    b[36] = 1;
    assert_eq!(decode_fields(&b), Err(DecodeError::BadField("flags")));
    b[36] = 2;
    assert_eq!(decode_fields(&b), Err(DecodeError::BadField("flags")));
    let mut t = [0u8; 58];
    write_traced_span(&mut t, 1, 0, &span, TraceContext::default(), "tick").unwrap();
    assert!(decode_fields(&t).is_ok());
    t[36] = 0;
    assert_eq!(decode_fields(&t), Err(DecodeError::BadField("flags")));
    // A NamedSpan relabelled as a TracedSpan is caught (too short, or flags).
    let mut b = named;
    b[2] = 11;
    assert!(decode_fields(&b).is_err());

    // ThreadInfo: name_len out of bounds, missing thread_kind, trailing bytes.
    let mut ti = [0u8; 23];
    write_thread_info(&mut ti, 1, 0, 1, "main", ThreadKind::Main).unwrap();
    assert!(decode_fields(&ti).is_ok());
    let mut b = ti;
    b[16] = 5;
    assert!(matches!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch { .. })
    ));
    b[16] = 6;
    assert_eq!(decode_fields(&b), Err(DecodeError::BadField("name_len")));
    let mut b = ti;
    b[16] = 3;
    assert!(matches!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch { .. })
    ));
    let mut b = ti;
    b[18] = 0xC3; // truncated UTF-8 sequence
    assert_eq!(decode_fields(&b), Err(DecodeError::BadUtf8));

    // CeLog record: event longer or shorter than the record, bad event, nonzero padding.
    let ev = CelEvent {
        id: 0x2005,
        timestamp: None,
        flag: None,
        cpu: 0,
        data: &[1, 2, 3, 4, 5, 6],
    };
    let mut c = [0u8; 28];
    write_celog_record(&mut c, 0, 0, &ev).unwrap();
    assert!(decode_fields(&c[..24]).is_ok());
    let mut b = c;
    b[0] = 28;
    assert!(matches!(
        decode_fields(&b),
        Err(DecodeError::SizeMismatch { .. })
    ));
    let mut b = c;
    b[0] = 20;
    assert!(matches!(
        decode_fields(&b),
        Err(DecodeError::CeLog(CelogError::Truncated { .. }))
    ));
    let mut b = c;
    b[15] |= 0x40;
    assert_eq!(
        decode_fields(&b),
        Err(DecodeError::CeLog(CelogError::ReservedBit))
    );
    let mut b = c;
    b[23] = 1;
    assert_eq!(decode_fields(&b), Err(DecodeError::BadField("event")));

    // An unknown kind decodes to header + raw payload.
    let mut u = [0u8; 15];
    u[0] = 15;
    u[2] = 200;
    u[12..].copy_from_slice(&[7, 8, 9]);
    let r = decode_fields(&u).unwrap();
    assert!(r.def.is_none());
    assert_eq!(r.payload, &[7, 8, 9]);
    assert!(r.values().is_empty());
    assert_eq!(r.to_string(), "payload_len=3");
    assert_eq!(decode(&u), Err(DecodeError::UnexpectedKind(K(200))));
}

#[test]
fn write_fields_output() {
    let show = |b: &[u8]| decode_fields(b).unwrap().to_string();
    let mut d = [0u8; 64];
    let n = write_tick_start(&mut d, 1, 0).unwrap();
    assert_eq!(show(&d[..n]), "");
    let n = write_tick_end(&mut d, 1, 0, 2, 3).unwrap();
    assert_eq!(show(&d[..n]), "overload_level=2 tick_multiplier=3");
    let n = write_instant(&mut d, 1, 0, -4, 5).unwrap();
    assert_eq!(show(&d[..n]), "name_id=-4 payload=5");
    let n = write_thread_info(&mut d, 1, 0, 77, "render main", ThreadKind::Main).unwrap();
    assert_eq!(
        show(&d[..n]),
        "thread_id=77 name_len=11 name=render main thread_kind=0"
    );
    let span = SpanExt {
        duration_ns: 9,
        span_id: 0xAB,
        parent_span_id: 0,
    };
    let ctx = TraceContext {
        hi: 0x5459_4300_0000_0007,
        lo: 0x0010_0020,
    };
    let n = write_traced_span(&mut d, 1, 0, &span, ctx, "cmd").unwrap();
    assert_eq!(
        show(&d[..n]),
        "duration_ns=9 span_id=0x00000000000000ab parent_span_id=0x0000000000000000 flags=1 \
         trace_id_hi=0x5459430000000007 trace_id_lo=0x0000000000100020 name=cmd"
    );
    write_dropped(&mut d, 1, 0, 3, 4, IngressDropReason::Malformed);
    assert_eq!(show(&d[..19]), "session=3 seq=4 reason=3");
    let ev = CelEvent {
        id: 0x2ABC,
        timestamp: Some(5),
        flag: Some(6),
        cpu: 300,
        data: &[1, 2],
    };
    let n = write_celog_record(&mut d, 1, 0, &ev).unwrap();
    assert_eq!(show(&d[..n]), "id=0x2abc flag=6 cpu=300 ts=5 len=2");
}

/// The header's one description (`CommonHeader::FIELDS`, which the trace.dat formats print)
/// says where `CommonHeader::write` puts each field: every field's bytes, read at its declared
/// offset and size with its declared signedness, give the value written.
#[test]
fn common_header_fields_describe_what_write_stores() {
    use typhon_recorder::codec::{CommonHeader, TraceEventKind};
    let h = CommonHeader {
        size: 0x1234,
        kind: TraceEventKind(0x56),
        slot: 0x78,
        timestamp: -0x0102_0304_0506_0708,
    };
    let mut b = [0u8; 12];
    h.write(&mut b);
    let want: [i128; 4] = [0x1234, 0x56, 0x78, -0x0102_0304_0506_0708];
    let mut covered = 0;
    for (i, &(_, name, off, size, signed)) in CommonHeader::FIELDS.iter().enumerate() {
        let mut raw = [0u8; 16];
        raw[..size].copy_from_slice(&b[off..off + size]);
        let u = u128::from_le_bytes(raw);
        let v = if signed && size < 16 && u >> (size * 8 - 1) & 1 == 1 {
            (u | !0u128 << (size * 8)) as i128
        } else {
            u as i128
        };
        assert_eq!(v, want[i], "{name}");
        covered += size;
    }
    assert_eq!(covered, CommonHeader::SIZE, "the fields cover the header");
    assert_eq!(CommonHeader::read(&b).unwrap(), h);
}

/// TickStart, PhaseStart and PhaseEnd, byte for byte from SPEC §2's table (kinds 0, 2 and 3;
/// no payload, then one u8 phase), written and decoded.
#[test]
fn golden_tick_start_and_phases() {
    let ts: i64 = 0x0807_0605_0403_0201;
    let mut d = [0xEEu8; 13];
    assert_eq!(write_tick_start(&mut d, 5, ts), Ok(12));
    assert_eq!(d[..12], [12, 0, 0, 5, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(decode(&d[..12]).unwrap().1, Record::TickStart);
    assert_eq!(write_phase_start(&mut d, 5, ts, 9), Ok(13));
    assert_eq!(d, [13, 0, 2, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(decode(&d).unwrap().1, Record::PhaseStart { phase: 9 });
    assert_eq!(write_phase_end(&mut d, 255, -1, 0xAB), Ok(13));
    assert_eq!(
        d,
        [13, 0, 3, 255, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xAB]
    );
    assert_eq!(decode(&d).unwrap().1, Record::PhaseEnd { phase: 0xAB });
}
