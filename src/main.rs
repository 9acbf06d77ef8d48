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
    let cli = match bakeoff::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and the version go to stdout and exit 0; a mistake exits with the code the
        // command's docs give one (`check`: 128, which `git bisect run` stops at).
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(bakeoff::cli::mistake_code(&args));
        }
    };
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
