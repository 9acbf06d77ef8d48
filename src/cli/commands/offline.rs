//! Commands that read what was measured or ask once: `compare` (benchmark files), `diff` and `call`.

use super::*;

/// Exit codes of `bakeoff diff`: 0, or 3 with `--fail-on-diff` when a case differs.
pub(crate) fn run_diff(args: &DiffArgs) -> anyhow::Result<u8> {
    let file = crate::plan::Plan::load_cases(&args.cases)?;
    let d = crate::compat::diff_endpoints(&file, &args.endpoints, &args.noise, args.timeout)?;
    if args.json {
        let answers: Vec<_> = d
            .answers
            .iter()
            .map(|(e, a)| serde_json::json!({"endpoint": e, "answers": a}))
            .collect();
        let out = serde_json::json!({ "report": d.report, "sets": d.sets, "answers": answers });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        emit(&report::compat::markdown(std::slice::from_ref(&d.report)))?;
    }
    Ok(if args.fail_on_diff && d.report.differences > 0 {
        3
    } else {
        0
    })
}

/// Exit codes of `bakeoff compare`: 0, or 3 when `--threshold` tripped.
pub(crate) fn run_compare(args: &CompareArgs) -> anyhow::Result<u8> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1");
    }
    if args.noise >= 100.0 {
        bail!("--noise {}%: a noise band is below 100%", args.noise);
    }
    let mut sets = args
        .inputs
        .iter()
        .map(|p| crate::import::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    // Errors above named the files in full; the table's columns need only tell them apart.
    let names = if args.names.is_empty() {
        short_names(&args.inputs)
    } else if args.names.len() == args.inputs.len() {
        args.names.clone()
    } else {
        bail!(
            "--names gives {} names for {} inputs",
            args.names.len(),
            args.inputs.len()
        );
    };
    for (s, n) in sets.iter_mut().zip(names) {
        s.label = n;
    }
    // Benchmarks of one kind compare with each other; Go's ns/op against a bake-off's
    // requests/s would pair rows that only share a name.
    if let Some(other) = sets.iter().find(|s| s.format != sets[0].format) {
        bail!(
            "`{}` is {:?} output and `{}` is {:?}: compare inputs of one kind",
            sets[0].label,
            sets[0].format,
            other.label,
            other.format
        );
    }
    let how = crate::compare::Pairing {
        baseline: args.baseline.clone(),
        rename: args.rename.clone(),
        by_position: args.by_position,
    };
    let (sets, pairing) = crate::compare::pair(sets, &how).map_err(anyhow::Error::msg)?;
    let opts = crate::compare::Options {
        thresholds: crate::stats::Thresholds {
            alpha: args.alpha,
            noise: args.noise / 100.0,
        },
        fail_above_pct: args.threshold,
    };
    let mut r = crate::compare::compare(&sets, opts);
    r.pairing = pairing;
    emit(&report::compare_table::render(&r, args.format))?;
    Ok(if r.tripped > 0 { 3 } else { 0 })
}

pub(crate) fn run_call(args: &CallArgs) -> anyhow::Result<u8> {
    if args.list || args.describe.is_some() {
        let (endpoint, protos) = args.target.grpc_target()?;
        let tls = args.target.tls.options();
        if let Some(m) = &args.describe {
            let (head, request) = crate::client::describe_method(m, &endpoint, &protos, &tls)?;
            eprintln!("{head}");
            emit(&format!("{}\n", serde_json::to_string_pretty(&request)?))?;
        } else {
            for (service, methods) in crate::client::list_services(&endpoint, &protos, &tls)? {
                let mut text = format!("{service}\n");
                for m in methods {
                    text.push_str(&format!("  {m}\n"));
                }
                emit(&text)?;
            }
        }
        return Ok(0);
    }
    let client = args.target.build(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let reply = match rt.block_on(client.once(args.target.timeout)) {
        Ok(r) => r,
        Err(e) => {
            // A stream cut short by the timeout: show what did arrive before saying so.
            let arrived = client.arrived();
            for m in &arrived {
                emit(&format!("{}\n", serde_json::to_string_pretty(m)?))?;
            }
            if !arrived.is_empty() {
                eprintln!("{} messages arrived before:", arrived.len());
            }
            return Err(e.into());
        }
    };
    let messages = client.printable(&reply);
    if args.json {
        let out = serde_json::json!({
            "outcome": reply.class.to_string(),
            "kind": reply.class.kind(),
            "code": reply.class.code(),
            "success": reply.class.is_success(),
            "detail": reply.detail,
            "messages": messages,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        eprintln!("{}", reply.class);
        if let Some(d) = &reply.detail {
            eprintln!("{d}");
        }
        for m in &messages {
            match m {
                serde_json::Value::String(s) => emit(&format!("{s}\n"))?,
                v => emit(&format!("{}\n", serde_json::to_string_pretty(v)?))?,
            }
        }
    }
    Ok(if reply.class.is_success() { 0 } else { 1 })
}

/// The shortest names that tell paths apart: what is left when the path components they all
/// share at the start and at the end are dropped (`run0`, `run1` for `…/run0/out/results.json`
/// and `…/run1/out/results.json`); the paths as given when that leaves nothing.
pub(crate) fn short_names(paths: &[std::path::PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .collect();
    let full = || paths.iter().map(|p| p.display().to_string()).collect();
    if parts.len() < 2 {
        return full();
    }
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    let same = |f: &dyn Fn(&Vec<String>) -> &String| parts.iter().all(|p| f(p) == f(&parts[0]));
    let mut head = 0;
    while head < shortest && same(&|p| &p[head]) {
        head += 1;
    }
    let mut tail = 0;
    while tail < shortest - head && same(&|p| &p[p.len() - 1 - tail]) {
        tail += 1;
    }
    let names: Vec<String> = parts
        .iter()
        .map(|p| p[head..p.len() - tail].join("/"))
        .collect();
    let distinct = names.iter().all(|n| !n.is_empty())
        && names
            .iter()
            .enumerate()
            .all(|(i, n)| !names[..i].contains(n));
    if distinct {
        names
    } else {
        full()
    }
}
