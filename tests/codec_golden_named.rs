//! Golden bytes of the instants and phases that carry their names (kinds 241-243), written
//! out by hand from the kind table's layout.

use typhon_recorder::codec::records::*;
use typhon_recorder::codec::EncodeError;

#[test]
fn golden_named_instant_and_phases() {
    let mut d = [0u8; 24];
    let n = write_named_instant(&mut d, 1, 2, -1, "hit").unwrap();
    assert_eq!(
        &d[..n],
        [20, 0, 241, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, b'h', b'i', b't', 0]
    );
    let n = write_named_phase(&mut d, 3, 0x0102, true, 7, "ai").unwrap();
    assert_eq!(
        &d[..n],
        [16, 0, 242, 3, 2, 1, 0, 0, 0, 0, 0, 0, 7, b'a', b'i', 0]
    );
    let n = write_named_phase(&mut d, 3, 0x0102, false, 7, "").unwrap();
    assert_eq!(&d[..n], [14, 0, 243, 3, 2, 1, 0, 0, 0, 0, 0, 0, 7, 0]);
    assert_eq!(
        write_named_instant(&mut d, 1, 2, 0, "a\0b"),
        Err(EncodeError::NameHasNul)
    );
}
