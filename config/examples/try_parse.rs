fn main() {
    println!(
        "{}",
        serde_json::to_string_pretty(&ferry_config::json_schema()).unwrap_or_default()
    );
}
