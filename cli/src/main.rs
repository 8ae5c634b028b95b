//! The `callstream` binary: every role of the system is a subcommand.
use clap::Parser;

#[derive(Parser)]
#[command(name = "callstream", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
