//! `bakeoff check` (docs/bisect.md): its flags to `drive::check`, and the step it reads as
//! the exit code `git bisect run` reads.

use super::*;

/// The exit code of a mistake in the flags of the command `args` names: `check` 128 (`git
/// bisect run` reads 1–127 but 125 as "bad" and stops only above 127), `bisect` 1 (its 2
/// means "a range"), any other clap's usual 2.
pub fn mistake_code(args: &[String]) -> u8 {
    match args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        Some("check") => 128,
        Some("bisect") => 1,
        _ => 2,
    }
}

/// A mistake (the plan, the flags, a ref that does not build) exits 128: `git bisect run`
/// reads 1–127 but 125 as "bad", and stops at anything above.
pub(crate) fn run_check(args: &CheckArgs) -> anyhow::Result<u8> {
    match check(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("bakeoff: error: {e:#}");
            Ok(128)
        }
    }
}

fn check(args: &CheckArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    crate::sys::raise_open_files_limit();
    crate::sys::children::adopt();
    let req = crate::drive::check::Request {
        plan: &args.plan,
        contender: &args.contender,
        against: &args.against,
        figure: args.figure.map(CheckFigure::figure),
        budget: args.budget.map(|b| b.0),
        out: args.out.clone(),
    };
    let Some((step, why)) = crate::drive::check::check(&req, &cancel)? else {
        return Ok(130);
    };
    eprintln!(
        "check: {} (exit {}) — the working tree against {}: {why}",
        step.word(),
        step.code(),
        args.against
    );
    Ok(step.code())
}
