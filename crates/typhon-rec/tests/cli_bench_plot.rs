//! `typhon-rec bench --plot DIR`: a directory that cannot be made is refused before the
//! benchmark runs, with an error naming it (the run itself is covered by typhon-bench's tests
//! of the plots and by BENCHMARKS.md's series).

use std::process::Command;

#[test]
fn bench_plot_into_an_unmakeable_directory_names_it_and_runs_nothing() {
    // Under /proc nothing can be created, whoever runs the test (root included).
    let dir = "/proc/typhon-no-such-dir/plots";
    let out = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(["bench", "--quick", "--json", "--plot", dir])
        .output()
        .expect("run typhon-rec");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(dir), "stderr does not name {dir}: {err}");
    // Refused before the run: no report was printed.
    assert!(
        out.stdout.is_empty(),
        "printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}
