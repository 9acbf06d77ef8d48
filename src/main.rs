use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    // A member's guard (see contender::guard): before anything else, no flags of its own.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(bakeoff::contender::guard::ARG) {
        let command = match args.get(2).map(String::as_str) {
            Some("--") => &args[3..],
            _ => &args[2..],
        };
        bakeoff::contender::guard::run(command);
    }
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
