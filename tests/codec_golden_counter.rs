//! Golden bytes of the counters (kinds 234 and 235), written out by hand from the kind table's
//! layout: i64 value at 12, u8 flags at 20 (bit 0: an f64's bits), then the name (234) or the
//! slot's u32 name id (235).

use typhon_recorder::codec::records::*;
use typhon_recorder::codec::EncodeError;

#[test]
fn golden_counter_inline() {
    let mut d = [0u8; 32];
    let n = write_counter(&mut d, 1, 2, CounterValue::from_i64(-2), "qd").unwrap();
    assert_eq!(
        &d[..n],
        [
            24, 0, 234, 1, 2, 0, 0, 0, 0, 0, 0, 0, // header
            0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // -2
            0,    // flags: i64
            b'q', b'd', 0
        ]
    );
    // 1.5 = 0x3FF8_0000_0000_0000
    let n = write_counter(&mut d, 3, 0x0102, CounterValue::from_f64(1.5), "").unwrap();
    assert_eq!(
        &d[..n],
        [22, 0, 234, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 1, 0]
    );
    assert_eq!(
        write_counter(&mut d, 1, 2, CounterValue::from_i64(0), "a\0b"),
        Err(EncodeError::NameHasNul)
    );
}

#[test]
fn golden_counter_id() {
    let mut d = [0u8; 25];
    let n = write_counter_id(&mut d, 4, 3, CounterValue::from_i64(0x0102_0304), 0x0506).unwrap();
    assert_eq!(
        &d[..n],
        [
            25, 0, 235, 4, 3, 0, 0, 0, 0, 0, 0, 0, // header
            4, 3, 2, 1, 0, 0, 0, 0, // value
            0, // flags
            6, 5, 0, 0 // name_id
        ]
    );
    let n = write_counter_id(&mut d, 4, 3, CounterValue::from_f64(-2.0), 1).unwrap();
    // -2.0 = 0xC000_0000_0000_0000
    assert_eq!(&d[12..n], [0, 0, 0, 0, 0, 0, 0, 0xC0, 1, 1, 0, 0, 0]);
    assert_eq!(
        write_counter_id(&mut d[..24], 4, 3, CounterValue::from_i64(0), 1),
        Err(EncodeError::DstTooSmall { need: 25, have: 24 })
    );
}
