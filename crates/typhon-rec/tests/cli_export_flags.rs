//! `typhon-rec export`: `-o` is `--out`, and `--help` lists `--format`'s values.

mod common;

use common::rec;

#[test]
fn export_takes_dash_o_and_lists_its_formats() {
    let d = std::env::temp_dir().join(format!("typhon-export-flags-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join("a.dat");
    let r = typhon_recorder::RecorderBuilder::new()
        .output(&file)
        .start()
        .unwrap();
    typhon_recorder::instant(1, 2);
    r.finish().unwrap();
    let out = d.join("x.json");
    let (ok, _, err) = rec(&[
        "export",
        file.to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(v["traceEvents"].is_array());
    let (ok, help, _) = rec(&["export", "--help"]);
    assert!(ok);
    assert!(help.contains("-o, --out"), "{help}");
    assert!(
        help.contains("[possible values: perfetto, chrome, otlp, otlp-json]"),
        "{help}"
    );
    let (ok, _, err) = rec(&["export", file.to_str().unwrap(), "--format", "svg"]);
    assert!(
        !ok && err.contains("perfetto") && err.contains("chrome"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
