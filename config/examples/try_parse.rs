fn main() {
    for path in std::env::args().skip(1) {
        match ferry_config::load(std::path::Path::new(&path)) {
            Ok(c) => println!(
                "{}: ok {}\n{}",
                path,
                c.version,
                serde_json::to_string_pretty(&*c.effective_json).unwrap_or_default()
            ),
            Err(e) => println!("{e}"),
        }
    }
}
