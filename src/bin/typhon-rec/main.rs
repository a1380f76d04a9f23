fn main() {
    eprintln!("typhon-rec: not built yet");
    std::process::exit(2);
}
