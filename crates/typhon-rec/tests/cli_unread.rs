//! `stats` and `report` on a compressed recording whose BUFFER option is damaged (a byte of
//! its id, a byte of its name): the reader finds no CPU data, and the records the metadata
//! says were written are a loss (`unread_records`), named with the file on stderr, and the
//! exit status is non-zero, as for damaged pages; the intact recording has none.

mod common;

use common::*;
use std::path::Path;

/// Offset of the top buffer's name (its NUL) in the last BUFFER option (the id 14 bytes
/// before it).
fn buffer_name(d: &[u8]) -> usize {
    let at = d.windows(6).rposition(|w| w == b"\0mono\0").unwrap();
    assert_eq!(&d[at - 14..at - 12], &[3, 0], "the BUFFER option's id");
    at
}

fn stats(f: &Path) -> (bool, serde_json::Value, String) {
    let (ok, out, err) = rec(&["stats", "--json", f.to_str().unwrap()]);
    (ok, serde_json::from_str(&out).unwrap(), err)
}

#[test]
fn a_damaged_buffer_option_is_a_loss_not_an_empty_recording() {
    let dir = tmp("unread");
    let good = dir.join("good.dat");
    let (ok, _, e) = rec(&[
        "demo",
        "--json",
        "--duration",
        "0.3",
        "--compress",
        "zstd",
        "--out",
        good.to_str().unwrap(),
    ]);
    assert!(ok, "{e}");
    let (ok, v, e) = stats(&good);
    assert!(ok, "{e}");
    let written = v["written"].as_u64().unwrap();
    assert!(written > 0 && v["records"] == written, "{v}");
    assert_eq!(v["losses"], serde_json::json!({}));
    let d = std::fs::read(&good).unwrap();
    let name = buffer_name(&d);
    for (what, at) in [("id", name - 14), ("name", name)] {
        let bad = dir.join(format!("bad-{what}.dat"));
        let mut b = d.clone();
        b[at] ^= 0xff;
        std::fs::write(&bad, &b).unwrap();
        let (ok, v, e) = stats(&bad);
        assert!(!ok, "{what}: stats exits 0 on {v}");
        assert_eq!(v["records"], 0, "{what}");
        assert_eq!(v["losses"]["unread_records"], written, "{what}: {v}");
        assert!(
            e.contains(bad.to_str().unwrap()) && e.contains("not in its data"),
            "{what}: {e}"
        );
        let (ok, out, e) = rec(&["report", bad.to_str().unwrap()]);
        assert!(!ok, "{what}: report exits 0");
        let last = out.lines().last().unwrap();
        assert!(
            last.contains(&format!("unread_records={written}")),
            "{what}: {last}"
        );
        assert!(out.contains("[WARNING: "), "{what}: {out}");
        assert!(e.contains(bad.to_str().unwrap()), "{what}: {e}");
        // `convert` would copy none of them: it refuses, naming the file, and writes nothing.
        let conv = dir.join(format!("conv-{what}.dat"));
        let (ok, _, e) = rec(&["convert", bad.to_str().unwrap(), conv.to_str().unwrap()]);
        assert!(
            !ok && e.contains(bad.to_str().unwrap()) && e.contains("not converted"),
            "{what}: {e}"
        );
        assert!(!conv.exists(), "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
