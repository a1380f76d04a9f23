//! Runs the in-process benchmark (what `typhon-rec bench` prints) until the CLI wires it:
//! `cargo run --release --example bench_report -- [--quick] [--json]`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
    let r = typhon_bench::run(&typhon_bench::BenchOptions { quick });
    if json {
        println!("{}", serde_json::to_string_pretty(&r.to_json()).unwrap());
    } else {
        println!("{r}");
    }
}
