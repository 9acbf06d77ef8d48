//! `bakeoff bisect` (docs/bisect.md): its flags to `drive::bisect`, and its answer said.

use super::*;

pub(crate) fn run_bisect(args: &BisectArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    crate::sys::raise_open_files_limit();
    crate::sys::children::adopt();
    let req = crate::drive::bisect::Request {
        plan: args.plan.clone(),
        contender: args.contender.clone(),
        good: args.good.clone(),
        bad: args.bad.clone(),
        figure: args.figure.map(CheckFigure::figure),
        scenarios: args.scenarios.clone(),
        effect: args.effect,
        ways: args.ways,
        budget: args.budget.map(|b| b.0),
        out: args.out.clone(),
        resume: args.resume.clone(),
    };
    let done = crate::drive::bisect::bisect(&req, &cancel)?;
    for line in crate::bisect::report::answer_lines(&done.record, &done.dir) {
        eprintln!("bisect: {}", line.replace("**", ""));
    }
    eprintln!("report: {}", done.dir.join("report.md").display());
    Ok(done.code)
}
