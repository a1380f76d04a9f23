//! A compressed chunk carries zstd's content checksum: a flipped bit anywhere in its frame is
//! an error on decompression (a damaged chunk, counted), never pages silently changed.

use typhon_recorder::tracedat::{decompress_chunk, ChunkCompressor};

#[test]
fn every_single_bit_flip_in_a_chunk_is_detected_or_harmless() {
    // Pages of record-like bytes: repetitive enough to compress, varied enough to have literals.
    let pages: Vec<u8> = (0..4 * 4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 27) as u8 ^ (i % 12) as u8)
        .collect();
    let mut c = ChunkCompressor::new(1).unwrap();
    let mut chunk = Vec::new();
    c.chunk(&pages, &mut chunk).unwrap();
    let frame = &chunk[8..];
    let mut out = Vec::new();
    decompress_chunk(frame, pages.len() as u32, &mut out).unwrap();
    assert_eq!(out, pages);
    let (mut detected, mut harmless) = (0, 0);
    for bit in 0..frame.len() * 8 {
        let mut f = frame.to_vec();
        f[bit / 8] ^= 1 << (bit % 8);
        match decompress_chunk(&f, pages.len() as u32, &mut out) {
            Err(_) => detected += 1,
            Ok(()) if out == pages => harmless += 1,
            Ok(()) => panic!("bit {bit} of the frame changed the pages and went unnoticed"),
        }
    }
    assert!(detected > 0, "{detected} detected, {harmless} harmless");
}
