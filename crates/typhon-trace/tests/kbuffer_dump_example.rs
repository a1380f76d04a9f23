//! The man page's C example (tests/c/kbuffer_man_example.c, linked against libtraceevent) and its
//! Rust port (examples/kbuffer_dump.rs) print the same stdout, stderr and exit status on page files
//! made by `PageWriter` and on the hand-built pages of research §8. Same skip/fail rule as the
//! other interop test (`TYPHON_REQUIRE_INTEROP=1` makes a missing toolchain a failure).

mod common;

#[path = "../examples/kbuffer_dump.rs"]
mod kbuffer_dump;

use std::process::Command;

use common::*;
use typhon_trace::kbuffer::{Endian, LongSize};

fn rust_run(args: &[String]) -> (String, String, i32) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = kbuffer_dump::run(args, &mut out, &mut err).unwrap();
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
        code,
    )
}

#[test]
fn rust_port_matches_the_man_page_example() {
    let dir = scratch_dir("kbuffer-example");
    let Some(exe) = build_c("kbuffer_man_example.c", &dir) else {
        return;
    };

    // Files: single writer pages (the example reads the first sub-buffer of a file), a multi-page
    // file, the host-layout §8 pages, a truncated page and a missing file.
    let mut files = Vec::new();
    for (seed, page_size, nrec) in [
        (11u64, 4096usize, 300usize),
        (12, 4096, 3000),
        (13, 8192, 2000),
    ] {
        let (pages, _) = generate_pages(seed, page_size, nrec);
        for (k, p) in pages.iter().enumerate().take(40) {
            files.push((format!("w{seed}_{k}.page"), p.clone()));
            files.push((format!("t{seed}_{k}.page"), mutate(p, k as u64)));
        }
        files.push((format!("all{seed}.pages"), pages.concat()));
    }
    for (k, (_, ls, en, page)) in section8_pages().into_iter().enumerate() {
        if ls == LongSize::same_as_host() && en == Endian::same_as_host() {
            files.push((format!("s8_{k}.page"), page));
        }
    }
    let (pages, _) = generate_pages(99, 4096, 200);
    files.push(("short.page".into(), pages[0][..200].to_vec())); // commit runs past the file

    let mut compared = 0;
    let mut events = 0;
    let mut saved = 0;
    for (name, bytes) in &files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let path = path.to_str().unwrap().to_string();
        let c = Command::new(&exe).arg(&path).output().unwrap();
        let c = (
            String::from_utf8(c.stdout).unwrap(),
            String::from_utf8(c.stderr).unwrap(),
            c.status.code().unwrap(),
        );
        let r = rust_run(&["kbuffer_dump".to_string(), path]);
        assert_eq!(
            c, r,
            "{name}: (stdout, stderr, status) differ, C left, Rust right"
        );
        events += c.0.lines().filter(|l| l.starts_with(" event ")).count();
        saved +=
            c.0.lines()
                .filter(|l| l.starts_with(" saved event 20 "))
                .count();
        compared += 1;
    }
    let missing = dir.join("does-not-exist").to_str().unwrap().to_string();
    let c = Command::new(&exe).arg(&missing).output().unwrap();
    let r = rust_run(&["x".to_string(), missing]);
    assert_eq!(
        (
            String::from_utf8(c.stderr).unwrap(),
            c.status.code().unwrap()
        ),
        (r.1, r.2)
    );
    // The usage text names the program: compare it with the same argv[0].
    let c = Command::new(&exe).output().unwrap();
    let r = rust_run(&[exe.to_str().unwrap().to_string()]);
    assert_eq!(String::from_utf8(c.stdout).unwrap(), r.0);

    eprintln!("kbuffer_dump: {compared} files, {events} event lines identical to the C example");
    assert!(
        events > 1000 && saved > 10,
        "{events} events, {saved} read_at_offset re-reads"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
