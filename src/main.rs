use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = bakeoff::cli::Cli::parse();
    match bakeoff::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // A closed pipe (`bakeoff load ... | head`) is not a failure.
            let broken_pipe = err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("bakeoff: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
