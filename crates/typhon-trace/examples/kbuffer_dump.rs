//! A port of the example program of the libtraceevent `kbuffer_read_event(3)` man page to
//! [`typhon_trace::kbuffer`]: same argument, same output, line for line.
//!
//! It loads the first sub-buffer of a raw page file (for example one written by the recorder's
//! page writer, or `dd count=1 bs=4096 if=/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw`),
//! prints the missed-event count and every record's timestamp, sizes, index and offset, and
//! re-reads the 21st record with `read_at_offset`.
//!
//! ```text
//! cargo run --example kbuffer_dump -- page.bin
//! ```
//!
//! Where the C program would read past the end of a corrupt or truncated file, this one reports
//! "Loading sub bufer: <why>" and exits with status 255.

use std::io::{self, Write};

use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

/// `perror()`-style text of an I/O error: the OS message without Rust's " (os error N)".
fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The program; returns the process exit status (C's `exit(-1)` is 255).
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
    if args.len() < 2 {
        writeln!(
            out,
            "usage: {} raw-subbuffer-page",
            args.first().map_or("kbuffer_dump", |s| s)
        )?;
        writeln!(
            out,
            " Try: dd count=1 bs=4096 if=/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw of=/tmp/file"
        )?;
        return Ok(0);
    }
    let path = &args[1];
    let st_size = match std::fs::metadata(path) {
        Ok(m) => m.len() as i64,
        Err(e) => {
            writeln!(err, "stat: {}", os_message(&e))?;
            return Ok(255);
        }
    };
    // At most the size stat gave (the C example reads st_size bytes): /dev/zero is not read
    // without end.
    let buf = match std::fs::File::open(path).and_then(|f| {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(f, st_size.max(0) as u64), &mut b)?;
        Ok(b)
    }) {
        Ok(b) => b,
        Err(e) => {
            writeln!(err, "{}: {}", path, os_message(&e))?;
            return Ok(255);
        }
    };
    let mut kbuf = KBuffer::new(LongSize::same_as_host(), Endian::same_as_host());
    let loaded = kbuf.load_subbuffer(&buf);
    if i64::from(kbuf.subbuffer_size()) > st_size {
        writeln!(
            err,
            "kbuffer is bigger than raw size {} > {}",
            kbuf.subbuffer_size(),
            st_size
        )?;
        return Ok(255);
    }
    if let Err(e) = loaded {
        writeln!(err, "Loading sub bufer: {e}")?;
        return Ok(255);
    }
    let ret = kbuf.missed_events();
    if ret != 0 {
        if ret > 0 {
            writeln!(out, "Missed {ret} events before this buffer")?;
        } else {
            writeln!(out, "Missed unknown number of events before this buffer")?;
        }
    }
    let mut save_offset = -1;
    let mut i = 0;
    while let Some(event) = kbuf.read_event() {
        let record_size = kbuf.curr_size();
        let offset = kbuf.curr_offset();
        let index = kbuf.curr_index();
        let size = kbuf.event_size();
        if i == 20 {
            save_offset = offset;
        }
        writeln!(
            out,
            " event {i:3} ts:{}\trecord_size:{record_size} size:{size}\tindex:{index} offset:{offset}",
            event.timestamp as i64
        )?;
        i += 1;
        if kbuf.next_event().is_none() {
            break;
        }
    }
    if let Some(e) = kbuf.error() {
        writeln!(err, "Loading sub bufer: {e}")?;
        return Ok(255);
    }
    writeln!(out, "Finished sub buffer")?;
    if save_offset > 0 {
        let Some(event) = kbuf.read_at_offset(save_offset) else {
            writeln!(err, "Funny, can't find event 20 at offset {save_offset}")?;
            return Ok(255);
        };
        writeln!(
            out,
            "\n saved event 20 ts:{}\trecord_size:{} size:{}\tindex:{} offset:{}\n",
            event.timestamp as i64,
            kbuf.curr_size(),
            kbuf.event_size(),
            kbuf.curr_index(),
            kbuf.curr_offset()
        )?;
    }
    Ok(0)
}

#[allow(dead_code)] // the interop test includes this file as a module and calls `run`
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = run(&args, &mut io::stdout().lock(), &mut io::stderr().lock()).unwrap_or_else(|e| {
        eprintln!("kbuffer_dump: {e}");
        255
    });
    std::process::exit(code);
}
