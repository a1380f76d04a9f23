//! Writes the hostile trace.dat shapes of `typhon_trace::fuzzing::shapes`:
//! `hostile_shapes seeds DIR` the small fuzz corpus seeds (fuzz/corpus/tracedat_parse),
//! `hostile_shapes big DIR` the files of issue 32's measurements: a 4.6 MB file of compressed
//! options sections that inflate to 4.4 GB, and 200 CPUs of one 16 MiB chunk each.

use typhon_trace::fuzzing::shapes::{many_cpu_chunks, options_bomb, small_zstd, tiny_pages};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(what), Some(dir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: hostile_shapes seeds|big|cpus DIR [CPUS PAGES]");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    std::fs::create_dir_all(dir).unwrap();
    let base = small_zstd(2);
    let files: Vec<(&str, Vec<u8>)> = match what.as_str() {
        "seeds" => vec![
            ("options_bomb.dat", options_bomb(&base, 3, 1 << 20).unwrap()),
            ("tiny_pages.dat", tiny_pages(&base, 12).unwrap()),
            ("many_cpu_chunks.dat", many_cpu_chunks(3, 2, 1)),
        ],
        // `cpus DIR N PAGES`: N CPUs of one chunk of PAGES pages each.
        "cpus" => {
            let n: u32 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(200);
            let pages: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(4096);
            vec![("cpus.dat", many_cpu_chunks(n, pages, 1))]
        }
        "big" => vec![
            (
                "options_bomb_4.6MB.dat",
                options_bomb(&base, 70, (64 << 20) - 20).unwrap(),
            ),
            ("cpus200_16MiB_chunks.dat", many_cpu_chunks(200, 4096, 1)),
        ],
        _ => {
            eprintln!("usage: hostile_shapes seeds|big DIR");
            std::process::exit(2);
        }
    };
    for (name, bytes) in files {
        let p = dir.join(name);
        std::fs::write(&p, &bytes).unwrap();
        println!("{} {}", p.display(), bytes.len());
    }
}
