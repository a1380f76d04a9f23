//! Writes a version 7 (uncompressed) copy of a version 6 recording, as the fuzz corpus needs
//! (`.ci/verify` seeds the cargo-fuzz corpus with both versions):
//!
//! ```text
//! cargo run --example tracedat_v7 -- IN.dat OUT.dat
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: tracedat_v7 IN.dat OUT.dat");
        return ExitCode::from(2);
    };
    let v6 = match typhon_trace::tracedat::read_file(input.as_ref()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(v7) = typhon_trace::fuzzing::v6_to_v7(&v6) else {
        eprintln!("{input}: not a little-endian trace.dat version 6 file");
        return ExitCode::FAILURE;
    };
    if let Err(e) = std::fs::write(output, v7) {
        eprintln!("{output}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
