//! The `ferry` command.

fn main() -> anyhow::Result<()> {
    Ok(())
}
