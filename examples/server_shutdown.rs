// A server that records until it is stopped: SIGTERM (systemd, `docker stop`, Kubernetes),
// Ctrl-C or an `exit` leave a complete trace.dat, not `OUT.parts/`.
//
//   cargo run --example server_shutdown -- server.dat   # then Ctrl-C
//
// The README's server recipe is this file's code (tests/readme.rs keeps the two equal).
use typhon_recorder::{span, RecorderBuilder, RecorderError};

fn main() -> Result<(), RecorderError> {
    let out = std::env::args().nth(1).unwrap_or("server.dat".into());
    let _rec = RecorderBuilder::new()
        .output(&out)
        // Finish on SIGINT, SIGTERM or exit, then end as the signal would have.
        .on_termination(|why, outcome| match outcome {
            Ok(stats) => eprintln!("{why}: {} records written", stats.user_written()),
            Err(e) => eprintln!("{why}: {e}"),
        })
        .start()?;
    serve()
}

fn serve() -> ! {
    for request in 0u64.. {
        let _s = span!("request {request}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    unreachable!("a server runs until it is stopped")
}
