//! Property tests: decode(encode(x)) == x for every kind, encode(decode(b)) == b for every record
//! a decoder accepts (including mutated ones), and no decoder panics on arbitrary bytes.

use proptest::prelude::*;
use typhon_recorder::codec::celog::{self, CelEvent, CELID_FLAGGED, CELID_MAX};
use typhon_recorder::codec::correlation::{
    self, CorrelationInstant, CorrelationInstantData, IngressDropReason,
};
use typhon_recorder::codec::records::{
    self, decode_fields, write_fields, Record, SpanExt, ThreadKind, TraceContext,
};
use typhon_recorder::codec::CommonHeader;

/// Raw material for one record of any kind; `record()` borrows the strings from it.
#[derive(Debug, Clone)]
struct Gen {
    which: u8,
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    name: String,
    data: Vec<u8>,
    ts: Option<u32>,
    flag: Option<u16>,
    cpu: u32,
}

fn gen() -> impl Strategy<Value = Gen> {
    (
        0u8..14,
        any::<[u64; 4]>(),
        "[^\u{0}]{0,24}",
        prop::collection::vec(any::<u8>(), 0..64),
        any::<Option<u32>>(),
        any::<Option<u16>>(),
        prop_oneof![0u32..16, any::<u32>()],
    )
        .prop_map(|(which, [a, b, c, d], name, data, ts, flag, cpu)| Gen {
            which,
            a,
            b,
            c,
            d,
            name,
            data,
            ts,
            flag,
            cpu,
        })
}

fn celog_id(x: u64) -> u16 {
    let id = (x % (CELID_MAX as u64 + 1)) as u16;
    if id == CELID_FLAGGED {
        id + 1
    } else {
        id
    }
}

impl Gen {
    fn record(&self) -> Record<'_> {
        let (a, b, c, d) = (self.a, self.b, self.c, self.d);
        let span = SpanExt {
            duration_ns: a as i64,
            span_id: b,
            parent_span_id: c,
        };
        let corr = |k: u8| match k {
            0 => CorrelationInstant::IngressReceived {
                session: a as u32,
                seq: b as u16,
                wire_idx: c as u16,
                bytes: d as u16,
            },
            1 => CorrelationInstant::IngressAdmitted {
                session: a as u32,
                seq: b as u16,
                wire_idx: c as u16,
                drain_tick: d as u32,
            },
            2 => CorrelationInstant::IngressDropped {
                session: a as u32,
                seq: b as u16,
                reason: IngressDropReason::from_u8(c as u8),
            },
            3 => CorrelationInstant::CommandConsumed {
                session: a as u32,
                seq: b as u16,
                sys_idx: c as u16,
            },
            _ => CorrelationInstant::EgressSent {
                session: a as u32,
                tick: b as u32,
                bytes: c as u32,
                acks: d as u16,
            },
        };
        match self.which {
            0 => Record::TickStart,
            1 => Record::TickEnd {
                overload_level: a as u8,
                tick_multiplier: b as u8,
            },
            2 => Record::PhaseStart { phase: a as u8 },
            3 => Record::PhaseEnd { phase: a as u8 },
            4 => Record::Instant {
                name_id: a as i32,
                payload: b as i32,
            },
            5 => Record::TracedSpan {
                span,
                context: TraceContext { hi: d, lo: a ^ d },
                name: &self.name,
            },
            6 => Record::ThreadInfo {
                thread_id: a as i32,
                // LenStr names may hold any UTF-8, NUL included.
                name: &self.name,
                kind: ThreadKind::from_u8(b as u8),
            },
            7 => Record::NamedSpan {
                span,
                name: &self.name,
            },
            8 => Record::CeLog(CelEvent {
                id: celog_id(a),
                timestamp: self.ts,
                flag: self.flag,
                cpu: self.cpu,
                data: &self.data,
            }),
            k => Record::Correlation(corr(k - 9)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// The word-at-a-time NUL check agrees with a byte scan at every length and position.
    #[test]
    fn has_nul_matches_a_byte_scan(mut b in prop::collection::vec(1u8..=255, 0..40), at in any::<prop::sample::Index>(), put in any::<bool>()) {
        if put && !b.is_empty() {
            let i = at.index(b.len());
            b[i] = 0;
        }
        prop_assert_eq!(records::has_nul(&b), b.contains(&0));
    }

    /// decode(encode(x)) == x for every kind, through the typed and the generic decoder.
    #[test]
    fn record_round_trip(g in gen(), slot in any::<u8>(), ts in any::<i64>()) {
        let r = g.record();
        let mut buf = vec![0xA5u8; r.encoded_len() + 8];
        let n = r.write(&mut buf, slot, ts).unwrap();
        prop_assert_eq!(n, r.encoded_len());
        let (h, back) = records::decode(&buf).unwrap();
        prop_assert_eq!(h, CommonHeader { size: n as u16, kind: r.kind(), slot, timestamp: ts });
        prop_assert_eq!(back, r);
        prop_assert!(buf[n..].iter().all(|&x| x == 0xA5), "wrote past the record");
        let fields = decode_fields(&buf).unwrap();
        prop_assert_eq!(fields.header, h);
        let mut s = String::new();
        write_fields(&fields, &mut s).unwrap();
        // A too-small destination is an error, never a panic or a partial record.
        let mut small = vec![0u8; n - 1];
        prop_assert!(r.write(&mut small, slot, ts).is_err());
    }

    /// The SPEC §3 codec on its own: decode(write(x)) == x.
    #[test]
    fn correlation_round_trip(g in gen(), slot in any::<u8>(), ts in any::<i64>()) {
        let Record::Correlation(instant) = (Gen { which: 9 + g.which % 5, ..g.clone() }).record()
        else { unreachable!() };
        let x = CorrelationInstantData { slot, timestamp: ts, instant };
        let mut buf = [0u8; 32];
        let n = x.write(&mut buf);
        prop_assert_eq!(n, correlation::size_of(instant.kind()));
        prop_assert_eq!(correlation::decode(&buf), Ok(x));
        prop_assert_eq!(correlation::decode(&buf[..n]), Ok(x));
    }

    /// CeLog events: decode_event(encode_event(x)) == x, for all sizes up to 4095.
    #[test]
    fn celog_round_trip(
        id in any::<u64>(),
        ts in any::<Option<u32>>(),
        flag in any::<Option<u16>>(),
        cpu in prop_oneof![0u32..20, any::<u32>()],
        data in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..16),
            prop::collection::vec(any::<u8>(), 4000..=4095),
        ],
    ) {
        let ev = CelEvent { id: celog_id(id), timestamp: ts, flag, cpu, data: &data };
        let mut buf = vec![0xFFu8; 4200];
        let n = ev.encode(&mut buf).unwrap();
        prop_assert_eq!(n, ev.encoded_len());
        prop_assert_eq!(n % 4, 0);
        prop_assert_eq!(celog::decode_event(&buf), Ok((ev, n)));
        prop_assert!(ev.encode(&mut buf[..n - 1]).is_err());
    }

    /// encode(decode(b)) == b: take a valid record, flip bytes; whenever a decoder still accepts
    /// it, re-encoding gives back exactly the record's bytes. A record whose kind byte became a
    /// compact kind's decodes as the record of its full kind (the form every reader sees): that
    /// record, written, reads back the same, with the same slot and time. (Not its bytes: the
    /// packed ids are varints, read as the values' are, an overlong one accepted; the compact
    /// kinds' own bytes are pinned by tests/codec_golden_compact.rs.)
    #[test]
    fn accepted_records_reencode_exactly(
        g in gen(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let r = g.record();
        let mut buf = vec![0u8; r.encoded_len()];
        r.write(&mut buf, 1, 2).unwrap();
        for (i, v) in flips {
            let i = i.index(buf.len());
            buf[i] = v;
        }
        if let Ok((h, back)) = records::decode(&buf) {
            let n = h.size as usize;
            let mut again = vec![0u8; back.encoded_len()];
            if records::is_compact(typhon_recorder::codec::TraceEventKind(buf[2])) {
                let m = back.write(&mut again, h.slot, h.timestamp);
                prop_assert_eq!(m, Ok(again.len()));
                let (h2, full) = records::decode(&again).unwrap();
                prop_assert_eq!((h2.slot, h2.timestamp, full), (h.slot, h.timestamp, back));
            } else {
                prop_assert_eq!(back.write(&mut again, h.slot, h.timestamp), Ok(n));
                prop_assert_eq!(&again[..], &buf[..n]);
            }
        }
        if let Ok(x) = correlation::decode(&buf) {
            let mut again = [0u8; 32];
            let n = x.write(&mut again);
            prop_assert_eq!(&again[..n], &buf[..n]);
        }
        // The generic decoder accepts exactly what the typed one does (for known kinds). The
        // packed kinds' ids are one `packed` run of bytes to the generic decoder (and to
        // trace-cmd's format), whatever they hold; the typed one also reads them as varints,
        // so there it accepts what the generic does, or less.
        let kind = typhon_recorder::codec::TraceEventKind(buf[2]);
        if typhon_recorder::codec::kind_def(kind).is_some() {
            let (generic, typed) = (decode_fields(&buf).is_ok(), records::decode(&buf).is_ok());
            use typhon_recorder::codec::TraceEventKind as K;
            if matches!(kind, K::TRACING_SPAN_PACKED | K::TRACING_EVENT_PACKED) {
                prop_assert!(generic || !typed, "typed accepts what generic refuses");
            } else {
                prop_assert_eq!(generic, typed);
            }
        }
    }

    /// Same for CeLog events: an accepted event with zero padding re-encodes exactly.
    #[test]
    fn accepted_celog_reencodes_exactly(bytes in prop::collection::vec(any::<u8>(), 4..64)) {
        if let Ok((ev, n)) = celog::decode_event(&bytes) {
            let mut again = vec![0u8; n];
            prop_assert_eq!(ev.encode(&mut again), Ok(n));
            let data_end = n - ((ev.data.len() + 3) & !3) + ev.data.len();
            prop_assert_eq!(&again[..data_end], &bytes[..data_end]);
            prop_assert!(again[data_end..].iter().all(|&b| b == 0));
        }
    }

    /// Arbitrary bytes never panic any decoder or the printer.
    #[test]
    fn arbitrary_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..96), kind in any::<u8>(), size in any::<u16>()) {
        let _ = celog::decode_event(&bytes);
        let _ = correlation::decode(&bytes);
        let _ = records::decode(&bytes);
        if let Ok(r) = decode_fields(&bytes) {
            let _ = r.to_string();
        }
        // Again with a plausible header, so the payload checks are reached.
        if bytes.len() >= 12 {
            bytes[..2].copy_from_slice(&size.to_le_bytes());
            bytes[2] = kind;
            let _ = correlation::decode(&bytes);
            let _ = records::decode(&bytes);
            if let Ok(r) = decode_fields(&bytes) {
                let _ = r.to_string();
            }
            let n = bytes.len() as u16;
            bytes[..2].copy_from_slice(&n.to_le_bytes());
            let _ = correlation::decode(&bytes);
            let _ = records::decode(&bytes);
            if let Ok(r) = decode_fields(&bytes) {
                let _ = r.to_string();
            }
        }
    }
}
