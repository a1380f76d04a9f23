//! The README's Rust code is real code: every ```` ```rust ```` block in it is the code of an
//! example program (its lines less the `//` header comments), which `cargo test` builds. A
//! snippet edited in one place and not the other fails here, naming the block.

use std::path::{Path, PathBuf};

fn examples(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("examples")];
    for c in std::fs::read_dir(root.join("crates")).unwrap() {
        dirs.push(c.unwrap().path().join("examples"));
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for f in rd {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// An example's code as the README shows it: without its leading `//` comment lines.
fn code(src: &str) -> String {
    let lines: Vec<&str> = src.lines().skip_while(|l| l.starts_with("//")).collect();
    lines.join("\n").trim().to_string()
}

#[test]
fn every_rust_block_of_the_readme_is_an_example_that_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let bodies: Vec<(PathBuf, String)> = examples(root)
        .into_iter()
        .map(|p| {
            let s = std::fs::read_to_string(&p).unwrap();
            (p, code(&s))
        })
        .collect();
    let mut blocks = 0;
    for (i, part) in readme.split("```rust\n").enumerate().skip(1) {
        let block = part.split("\n```").next().unwrap().trim();
        blocks += 1;
        assert!(
            bodies.iter().any(|(_, b)| b == block),
            "README ```rust block {i} is no example's code (examples/, crates/*/examples/):\n{block}"
        );
    }
    assert!(blocks >= 2, "the README's Rust blocks were not found");
}
