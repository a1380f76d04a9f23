//! The checked-in C header `include/typhon_recorder.h` must be what cbindgen generates from
//! the crate's sources with `cbindgen.toml`, with the Rust-only parts of the doc comments
//! (doctest code blocks, intra-doc link brackets) removed. `TYPHON_BLESS=1 cargo test -p
//! typhon-ffi --test header` rewrites it.
//!
//! cbindgen starts at `src/lib.rs` and follows its `mod` declarations into the module files
//! (no `cargo metadata`, no macro expansion): the header lists lib.rs's items, then each
//! module's, in the order lib.rs declares them.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = c_comments(&String::from_utf8(generated).expect("UTF-8 header"));
    let path = root.join("include/typhon_recorder.h");
    if std::env::var_os("TYPHON_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/typhon_recorder.h is out of date with src/: run \
         `TYPHON_BLESS=1 cargo test -p typhon-ffi --test header` and commit the result"
    );
}

/// Drops the Rust doctest blocks (and the empty comment line before each) from the header's
/// comments and turns intra-doc links `[`x`]` into plain `x`.
fn c_comments(header: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    for line in header.lines() {
        let t = line.trim_start();
        if t.starts_with("// ```") {
            if !in_code && out.last().is_some_and(|l| l.trim() == "//") {
                out.pop();
            }
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        out.push(line.replace("[`", "`").replace("`]", "`"));
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}
