//! With the `compile-out` feature every write is compiled out: a session records only the
//! recorder's own slot-0 records. Run by `.ci/run` as
//! `cargo test --features compile-out --test compile_out`; without the feature it checks the
//! opposite, so the test is meaningful in both builds.

use typhon_recorder::sink::MemorySink;
use typhon_recorder::{doc_lock, RecorderBuilder};

#[test]
fn writes_are_compiled_out_only_with_the_feature() {
    let _g = doc_lock();
    let rec = RecorderBuilder::new()
        .sink(MemorySink::new())
        .start()
        .unwrap();
    std::thread::spawn(|| {
        assert_eq!(
            typhon_recorder::register_thread(),
            !cfg!(feature = "compile-out")
        );
        typhon_recorder::tick_start();
        typhon_recorder::ingress_received(1, 2, 3, 4);
        let _s = typhon_recorder::span("x");
        let _f = typhon_recorder::span!("y {}", 1);
        let _p = typhon_recorder::phase(1, "physics");
        typhon_recorder::instant!("hit", 2);
        let _ =
            typhon_recorder::CeLog::new(typhon_recorder::codec::celog::CELID_USER, b"c").write();
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    if cfg!(feature = "compile-out") {
        assert_eq!(stats.user_attempted(), 0);
        assert_eq!(
            stats.total_filtered(),
            0,
            "compiled out is not even counted"
        );
    } else {
        // ThreadInfo, tick, ingress, 2 spans, phase start and end, instant, CeLog, and the
        // definitions of the static names "y 1", "physics" and "hit".
        assert_eq!(stats.user_written(), 12);
    }
    // ThreadInfo, CEL_LOG_MARKER, SYNC_END, ClockSync
    assert_eq!(stats.slot(0).unwrap().written, 4);
}
