//! Test data for the trace.dat tests: records of every kind of the kind table, built by hand
//! from the table (common header + field bytes at the table's offsets), packed into pages by
//! `PageWriter`, with the values each field should print as.
#![allow(dead_code)]

use typhon_recorder::codec::{CommonHeader, FieldType, KindDef, Shape, TraceEventKind, KINDS};
use typhon_recorder::page::{PageWriter, PushError};

/// One record as the test wrote it.
#[derive(Clone, Debug)]
pub struct Built {
    pub slot: u8,
    pub kind: TraceEventKind,
    /// The page (ftrace) time of the record: start + duration for spans.
    pub page_ts: u64,
    pub bytes: Vec<u8>,
    /// `name=value` texts trace-cmd should print, one per field of the table.
    pub expect: Vec<String>,
}

fn put(buf: &mut Vec<u8>, at: usize, b: &[u8]) {
    if buf.len() < at + b.len() {
        buf.resize(at + b.len(), 0);
    }
    buf[at..at + b.len()].copy_from_slice(b);
}

/// A CeLog event by hand (CEL_HEADER_V3): T=1, id, CPU field 1, timestamp, data, zero padding.
pub fn celog_event(id: u16, ts: u32, data: &[u8]) -> Vec<u8> {
    let header: u32 = 1 << 31 | u32::from(id) << 16 | 1 << 12 | data.len() as u32;
    let mut v = header.to_le_bytes().to_vec();
    v.extend_from_slice(&ts.to_le_bytes());
    v.extend_from_slice(data);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

/// Builds one record of `def` at `ts`, with field values derived from `seed`; `long` makes the
/// variable parts long enough for a long-form (> 112 B) record.
pub fn build(def: &KindDef, slot: u8, ts: i64, seed: u32, long: bool) -> Built {
    let mut b = vec![0u8; 12];
    let mut expect = Vec::new();
    // Strings for variable fields, and the length fields that count them.
    let text = |name: &str| {
        let base = format!("{}-{}-{seed}", def.name, name);
        if long {
            format!("{base}-{}", "x".repeat(130))
        } else {
            base
        }
    };
    let mut lens: Vec<(&str, usize)> = Vec::new();
    for fd in def.fields {
        if let FieldType::LenStr(len) = fd.ty {
            lens.push((len, text(fd.name).len()));
        }
    }
    let mut off = 12usize;
    let mut duration = 0i64;
    // `__data_loc` strings: (word offset, text), stored after the fixed part in field order.
    let mut locs: Vec<(usize, String)> = Vec::new();
    for (i, fd) in def.fields.iter().enumerate() {
        if let Some(o) = fd.offset {
            assert_eq!(o, off, "{}.{} offset", def.name, fd.name);
        }
        let i = i as u64 + u64::from(seed) * 100;
        let forced = lens
            .iter()
            .find(|(n, _)| *n == fd.name)
            .map(|&(_, l)| l as u64);
        match fd.ty {
            FieldType::U8 => {
                // Span flags bit 0 says whether a trace context follows (SPEC §2).
                // (a kind whose field after the flags is a u64: TracedSpan, TracingSpan).
                let flags = u64::from(def.fields.get(4).is_some_and(|f| f.ty == FieldType::U64));
                let v = forced.unwrap_or(if fd.name == "flags" {
                    flags
                } else {
                    0x10 + i % 200
                }) as u8;
                put(&mut b, off, &[v]);
                expect.push(format!("{}={v}", fd.name));
                off += 1;
            }
            FieldType::U16 => {
                let v = forced.unwrap_or(0x1000 + i) as u16;
                put(&mut b, off, &v.to_le_bytes());
                expect.push(format!("{}={v}", fd.name));
                off += 2;
            }
            FieldType::U32 => {
                let v = forced.unwrap_or(0x8000_0000 + i) as u32;
                put(&mut b, off, &v.to_le_bytes());
                expect.push(format!("{}={v}", fd.name));
                off += 4;
            }
            FieldType::U64 => {
                let v = forced.unwrap_or(0xF122_3344_5566_7700 + i);
                put(&mut b, off, &v.to_le_bytes());
                expect.push(format!("{}={v}", fd.name));
                off += 8;
            }
            FieldType::I32 => {
                let v = -1_000_000 - i as i32;
                put(&mut b, off, &v.to_le_bytes());
                expect.push(format!("{}={v}", fd.name));
                off += 4;
            }
            FieldType::I64 => {
                let v = if fd.name == "duration_ns" {
                    duration = 1_000 + i as i64;
                    duration
                } else {
                    -5_000_000_000 - i as i64
                };
                put(&mut b, off, &v.to_le_bytes());
                expect.push(format!("{}={v}", fd.name));
                off += 8;
            }
            FieldType::CStr | FieldType::LenStr(_) => {
                let t = text(fd.name);
                put(&mut b, off, t.as_bytes());
                off += t.len();
                if fd.ty == FieldType::CStr {
                    put(&mut b, off, &[0]);
                    off += 1;
                }
                expect.push(format!("{}={t}", fd.name));
            }
            FieldType::DataLoc => {
                let t = text(fd.name);
                expect.push(format!("{}={t}", fd.name));
                locs.push((off, t));
                put(&mut b, off, &[0; 4]);
                off += 4;
            }
            FieldType::Rest => {
                let data: Vec<u8> = (0..if long { 150u32 } else { 6 })
                    .map(|k| (k * 7 + seed) as u8)
                    .collect();
                let ev = celog_event(0x2001, 0xABCD_0000 + seed, &data);
                put(&mut b, off, &ev);
                expect.push(format!("{}_len={}", fd.name, ev.len()));
                // The CEL_HEADER_V3 word decoded by the print format: no flag, CPU field 1
                // (other raw bytes, typed `tracing` values, print as hex only).
                if def.kind == typhon_recorder::codec::TraceEventKind::CELOG {
                    expect.push(format!("id=0x2001 flag=0 cpu=1 ts={}", 0xABCD_0000 + seed));
                    expect.push(format!("len={}", data.len()));
                }
                let hex: Vec<String> = ev.iter().map(|x| format!("{x:02x}")).collect();
                expect.push(format!("{}={}", fd.name, hex.join(" ")));
                off += ev.len();
            }
        }
    }
    for (word, t) in locs {
        let loc = (t.len() as u32 + 1) << 16 | off as u32;
        put(&mut b, word, &loc.to_le_bytes());
        put(&mut b, off, t.as_bytes());
        put(&mut b, off + t.len(), &[0]);
        off += t.len() + 1;
    }
    let size = b.len();
    assert!(size >= def.min_size, "{}", def.name);
    CommonHeader {
        size: size as u16,
        kind: def.kind,
        slot,
        timestamp: ts,
    }
    .write(&mut b);
    let page_ts = if def.shape == Shape::Span {
        (ts + duration) as u64
    } else {
        ts as u64
    };
    Built {
        slot,
        kind: def.kind,
        page_ts,
        bytes: b,
        expect,
    }
}

/// One slot's stream: `rounds` rounds of every kind (odd rounds long), a gap of `gap` ns before
/// round 2, and the missed counts to put on pages (page index → count).
pub struct SlotPlan {
    pub slot: u8,
    pub start: i64,
    pub rounds: u32,
    pub gap: i64,
    pub missed: Vec<(usize, u64)>,
}

/// Builds the records of a plan and packs them into pages. Returns (records, page bytes,
/// per-page missed counts actually set).
pub fn pack(plan: &SlotPlan, page_size: usize) -> (Vec<Built>, Vec<u8>, Vec<u64>) {
    let mut recs = Vec::new();
    let mut ts = plan.start;
    for round in 0..plan.rounds {
        if round == 2 {
            ts += plan.gap;
        }
        for def in KINDS {
            recs.push(build(def, plan.slot, ts, round, round % 2 == 1));
            ts += 1_000 + i64::from(round) * 10;
        }
    }
    // Page time never goes backwards: spans end later than they start, so keep the stream in
    // page-time order as the flusher does.
    recs.sort_by_key(|r| r.page_ts);
    let mut w = PageWriter::new(page_size).unwrap();
    let mut pages = Vec::new();
    let mut missed = Vec::new();
    let mut page_idx = 0usize;
    let set = |w: &mut PageWriter, idx: usize| {
        if let Some(&(_, c)) = plan.missed.iter().find(|(i, _)| *i == idx) {
            assert_eq!(w.set_missed(c).unwrap(), 0);
        }
    };
    set(&mut w, 0);
    for r in &recs {
        match w.try_push(r.page_ts, &r.bytes) {
            Ok(_) => {}
            Err(PushError::Full) => {
                missed.push(w.missed());
                pages.extend_from_slice(w.finish());
                page_idx += 1;
                set(&mut w, page_idx);
                w.try_push(r.page_ts, &r.bytes).unwrap();
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    missed.push(w.missed());
    pages.extend_from_slice(w.finish());
    (recs, pages, missed)
}
