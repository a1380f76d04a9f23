//! The page's vendored chart library is uPlot 1.6.32 as the npm registry ships it: each file's
//! sha256 is pinned here (taken from the registry's tarball, whose sha512 is the registry's
//! `dist.integrity`, also pinned). No network at run time. With `TYPHON_UPLOT_TGZ` naming the
//! tarball (`npm pack uplot@1.6.32`; `.ci/run` fetches it), the tarball's sha512 is checked
//! against the registry's integrity and each vendored file against the tarball's own copy.

use ring::digest::{digest, SHA256, SHA512};
use std::io::Read;
use std::path::Path;

const VENDOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/live/vendor");

/// (vendored file, path in the tarball, sha256).
const FILES: &[(&str, &str, &str)] = &[
    (
        "uPlot.esm.js",
        "package/dist/uPlot.esm.js",
        "5dd9b3281aa64b461b42d9945f6adb2649d346502b12281a9ae0d46599a80eba",
    ),
    (
        "uPlot.min.css",
        "package/dist/uPlot.min.css",
        "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
    ),
    (
        "uPlot.LICENSE",
        "package/LICENSE",
        "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd",
    ),
];

/// `npm view uplot@1.6.32 dist.integrity`.
const INTEGRITY: &str =
    "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn vendored_uplot_is_the_registrys() {
    for (file, _, sha) in FILES {
        let bytes = std::fs::read(Path::new(VENDOR).join(file)).unwrap();
        assert_eq!(&hex(digest(&SHA256, &bytes).as_ref()), sha, "{file}");
    }
    let js = std::fs::read_to_string(Path::new(VENDOR).join("uPlot.esm.js")).unwrap();
    assert!(
        js.contains("export { uPlot as default }"),
        "not uPlot's ES module"
    );
    let license = std::fs::read_to_string(Path::new(VENDOR).join("uPlot.LICENSE")).unwrap();
    assert!(license.contains("MIT License"), "{license}");
}

/// The files of a tar archive: (name, contents).
fn untar(tar: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at] != 0 {
        let h = &tar[at..at + 512];
        let field = |a: usize, b: usize| {
            let f = &h[a..b];
            String::from_utf8_lossy(&f[..f.iter().position(|&c| c == 0).unwrap_or(f.len())])
                .into_owned()
        };
        let size = usize::from_str_radix(field(124, 136).trim(), 8).unwrap();
        let (prefix, name) = (field(345, 500), field(0, 100));
        let name = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        out.push((name, tar[at + 512..at + 512 + size].to_vec()));
        at += 512 + size.div_ceil(512) * 512;
    }
    out
}

#[test]
fn vendored_uplot_matches_the_tarball() {
    let Ok(tgz) = std::env::var("TYPHON_UPLOT_TGZ") else {
        assert!(
            std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "TYPHON_REQUIRE_INTEROP=1 but TYPHON_UPLOT_TGZ is not set"
        );
        eprintln!("SKIPPED: TYPHON_UPLOT_TGZ is not set (npm pack uplot@1.6.32)");
        return;
    };
    let gz = std::fs::read(&tgz).unwrap_or_else(|e| panic!("{tgz}: {e}"));
    let b64 = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(digest(&SHA512, &gz))
    };
    assert_eq!(
        format!("sha512-{b64}"),
        INTEGRITY,
        "{tgz} is not the registry's tarball"
    );
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut tar)
        .unwrap();
    let files = untar(&tar);
    for (file, inside, _) in FILES {
        let (_, want) = files
            .iter()
            .find(|(n, _)| n == inside)
            .unwrap_or_else(|| panic!("{inside} is not in {tgz}"));
        let have = std::fs::read(Path::new(VENDOR).join(file)).unwrap();
        assert!(&have == want, "{file} differs from {inside} in {tgz}");
    }
}
