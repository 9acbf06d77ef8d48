//! Launchers for engines people already run, generated from the plan (never maintained by
//! hand): a GitHub Actions workflow with a matrix job per shard, or a Kubernetes Indexed Job
//! — each followed by the merge (docs/scale-out.md). bakeoff does not manage machines; it
//! writes what those engines need to run `bakeoff run --shard K/N` and `bakeoff merge`.

mod yaml;

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::plan::Plan;
use yaml::Y;

/// What every launcher needs (the `bakeoff ci` flags).
pub struct CiCommon {
    /// The plan file, as the repository has it (its path is used as written).
    pub plan: PathBuf,
    pub shards: u32,
    /// Passed to the merge.
    pub fail_on_diff: bool,
    /// Passed to the merge, in percent.
    pub fail_on_regression: Option<f64>,
    pub fail_unless_equivalent: Option<f64>,
}

/// `bakeoff ci github`.
pub struct CiGithubArgs {
    pub common: CiCommon,
    pub runs_on: String,
    /// How each job installs bakeoff.
    pub install: String,
    /// Commands that install what the contenders need, before a shard runs.
    pub setup: Vec<String>,
    /// `--pull-request BASE,NEW`: on a pull request, these contenders are built at its base
    /// and head commits.
    pub pull_request: Option<(String, String)>,
}

/// The `{env:NAME}` a plan reads that its `[ci] env` does not set: a workflow would fail at
/// the plan check without them.
pub fn unset_env(plan_path: &Path) -> anyhow::Result<Vec<String>> {
    let plan = Plan::load(plan_path)?;
    Ok(plan
        .env_needed()
        .into_iter()
        .filter(|v| !plan.ci.env.iter().any(|(k, _)| k == v))
        // A setup command may set it for the later steps (`echo "NAME=…" >> "$GITHUB_ENV"`).
        .filter(|v| !plan.ci.setup.iter().any(|s| s.contains(&format!("{v}="))))
        .collect())
}

/// `bakeoff ci k8s`.
pub struct CiK8sArgs {
    pub common: CiCommon,
    pub image: String,
    /// Where the repository is inside the image.
    pub workdir: String,
    /// Whole CPUs per pod; `None`: the plan's cores, else 2.
    pub cpus: Option<u32>,
    pub memory: String,
    pub storage: String,
    pub storage_class: Option<String>,
    pub parallelism: Option<u32>,
    pub namespace: String,
}

/// Reads the plan and checks the shard count against it.
fn plan(c: &CiCommon) -> anyhow::Result<Plan> {
    let plan = Plan::load(&c.plan)?;
    // GitHub evaluates `${{ … }}` anywhere in a workflow, before any shell quoting.
    for (what, text) in [("path", plan_arg(&c.plan)), ("name", plan.name.clone())] {
        if text.contains("${{") {
            bail!("the plan's {what} `{text}` holds `${{{{`, which a workflow would evaluate; rename it");
        }
    }
    if c.shards == 0 {
        bail!("--shards 0: give 1 or more shards");
    }
    if c.shards > plan.repetitions {
        bail!(
            "--shards {}: `{}` runs {} and a shard's unit is one repetition of every contender; give at most {} shards, or raise `repetitions`",
            c.shards,
            c.plan.display(),
            crate::report::count(u64::from(plan.repetitions), "repetition"),
            plan.repetitions
        );
    }
    Ok(plan)
}

/// The plan's path as the workflow and the Job name it: as given, with `/` separators.
fn plan_arg(p: &Path) -> String {
    p.display().to_string().replace('\\', "/")
}

/// The merge's flags for CI.
fn merge_flags(c: &CiCommon) -> String {
    let mut f = String::new();
    if c.fail_on_diff {
        f.push_str(" --fail-on-diff");
    }
    if let Some(p) = c.fail_on_regression {
        f.push_str(&format!(" --fail-on-regression {p}%"));
    }
    if let Some(p) = c.fail_unless_equivalent {
        f.push_str(&format!(" --fail-unless-equivalent {p}%"));
    }
    f
}

/// Single-quoted for a POSIX shell.
fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn header(what: &str, c: &CiCommon) -> String {
    // A newline in a path must not end the comment (it would add keys to the document).
    let path: String = plan_arg(&c.plan)
        .chars()
        .flat_map(|ch| {
            if ch.is_control() {
                ch.escape_default().collect::<Vec<_>>()
            } else {
                vec![ch]
            }
        })
        .collect();
    format!(
        "# Written by `bakeoff ci {what} {} --shards {}{}` ({}).\n# Generate it again after changing the plan; do not edit it by hand.\n",
        path,
        c.shards,
        merge_flags(c),
        crate::results::tool()
    )
}

/// A workflow step that runs a command.
fn step(name: &str, run: String) -> Y {
    Y::map([("name", Y::str(name)), ("run", Y::str(run))])
}

/// A shard job's steps: check out, install, the plan's setup, the build cache, the shard's
/// run (at a pull request's base and head), and keeping its results.
fn shard_steps(a: &CiGithubArgs, plan: &Plan, checkout: Y, install: Y) -> anyhow::Result<Vec<Y>> {
    let c = &a.common;
    let n = c.shards;
    let mut shard_steps = vec![checkout, install];
    for s in plan.ci.setup.iter().chain(&a.setup) {
        shard_steps.push(step("Set up the contenders", s.clone()));
    }
    if plan.contenders.iter().any(|c| c.source.is_some()) {
        // Builds of the same commits are kept between runs (bakeoff's cache key decides
        // what is reused; a stale entry is only a miss).
        shard_steps.push(Y::map([
            ("name", Y::str("Keep the contenders' builds")),
            ("uses", Y::str("actions/cache@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str("~/.cache/bakeoff/builds")),
                    (
                        "key",
                        Y::str("bakeoff-builds-${{ runner.os }}-${{ github.event.pull_request.base.sha }}-${{ github.sha }}"),
                    ),
                    ("restore-keys", Y::str("bakeoff-builds-${{ runner.os }}-")),
                ]),
            ),
        ]));
    }
    // On a pull request, its base and head are the compared refs.
    let refs = match &a.pull_request {
        Some((base, new)) => {
            for name in [base, new] {
                if !plan
                    .contenders
                    .iter()
                    .any(|c| c.name == *name && c.source.is_some())
                {
                    bail!("--pull-request: `{name}` is not a contender of the plan built from a git `source`");
                }
            }
            format!(
                " $([ -n \"${{{{ github.event.pull_request.base.sha }}}}\" ] && echo --ref {}=${{{{ github.event.pull_request.base.sha }}}} --ref {}=${{{{ github.event.pull_request.head.sha }}}})",
                sh(base),
                sh(new)
            )
        }
        None => String::new(),
    };
    shard_steps.push(step(
        &format!("Run shard ${{{{ matrix.shard }}}} of {n}"),
        format!(
            "bakeoff run {} --shard \"${{{{ matrix.shard }}}}/{n}\" --out \"results/shard-${{{{ matrix.shard }}}}\"{refs}",
            sh(&plan_arg(&c.plan))
        ),
    ));
    shard_steps.push(Y::map([
        ("name", Y::str("Keep the shard's results")),
        ("if", Y::str("always()")),
        ("uses", Y::str("actions/upload-artifact@v4")),
        (
            "with",
            Y::map([
                ("name", Y::str("bakeoff-shard-${{ matrix.shard }}")),
                ("path", Y::str("results/shard-${{ matrix.shard }}")),
                ("if-no-files-found", Y::str("error")),
            ]),
        ),
    ]));
    Ok(shard_steps)
}

/// The merge job's steps: every shard's results, merged into one report.
fn merge_steps(c: &CiCommon, checkout: Y, install: Y) -> Vec<Y> {
    vec![
        checkout,
        install,
        Y::map([
            ("name", Y::str("Fetch every shard's results")),
            ("uses", Y::str("actions/download-artifact@v4")),
            (
                "with",
                Y::map([
                    ("pattern", Y::str("bakeoff-shard-*")),
                    ("path", Y::str("shards")),
                ]),
            ),
        ]),
        // `bakeoff merge` writes the report into the step summary itself.
        step(
            "Merge the shards",
            format!("bakeoff merge shards/* --out merged{}", merge_flags(c)),
        ),
        Y::map([
            ("name", Y::str("Keep the merged results and report")),
            ("if", Y::str("always()")),
            ("uses", Y::str("actions/upload-artifact@v4")),
            (
                "with",
                Y::map([
                    ("name", Y::str("bakeoff-merged")),
                    ("path", Y::str("merged")),
                ]),
            ),
        ]),
    ]
}

/// A GitHub Actions workflow: a matrix job per shard, then the merge.
pub fn github(a: &CiGithubArgs) -> anyhow::Result<String> {
    let c = &a.common;
    let plan = plan(c)?;
    let n = c.shards;
    // The whole history: contenders built from source resolve their refs in it.
    let checkout = Y::map([
        ("uses", Y::str("actions/checkout@v4")),
        ("with", Y::map([("fetch-depth", Y::Int(0))])),
    ]);
    let install = step("Install bakeoff", a.install.clone());
    let shard_steps = shard_steps(a, &plan, checkout.clone(), install.clone())?;
    let merge_steps = merge_steps(c, checkout, install);
    let mut on = vec![("workflow_dispatch", Y::map::<&str>([]))];
    if a.pull_request.is_some() {
        on.push(("pull_request", Y::map::<&str>([])));
    }
    let env: Vec<(&str, Y)> = plan
        .ci
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), Y::str(v.clone())))
        .collect();
    let doc = Y::map([
        ("name", Y::str(format!("bakeoff: {}", plan.name))),
        // Quoted: YAML 1.1 readers take a bare `on` for `true`.
        ("on", Y::map(on)),
        ("env", Y::map(env)),
        (
            "jobs",
            Y::map([
                (
                    "shard",
                    Y::map([
                        (
                            "name",
                            Y::str(format!("shard ${{{{ matrix.shard }}}} of {n}")),
                        ),
                        ("runs-on", Y::str(a.runs_on.clone())),
                        (
                            "strategy",
                            Y::map([
                                ("fail-fast", Y::Bool(false)),
                                (
                                    "matrix",
                                    Y::map([(
                                        "shard",
                                        Y::List((1..=n).map(|k| Y::Int(k.into())).collect()),
                                    )]),
                                ),
                            ]),
                        ),
                        ("steps", Y::List(shard_steps)),
                    ]),
                ),
                (
                    "merge",
                    Y::map([
                        ("needs", Y::str("shard")),
                        // Also when a shard failed: the merge then says which is missing.
                        ("if", Y::str("always()")),
                        ("runs-on", Y::str(a.runs_on.clone())),
                        ("steps", Y::List(merge_steps)),
                    ]),
                ),
            ]),
        ),
    ]);
    Ok(header("github", c) + &doc.to_yaml())
}

/// The Job's name: `bakeoff-` and the plan's name as a DNS label, short enough for the pods'
/// host names (`NAME-INDEX`) to stay within 63 characters.
pub fn k8s_name(plan_path: &Path) -> anyhow::Result<String> {
    let plan = Plan::load(plan_path)?;
    Ok(dns_name(&plan.name))
}

fn dns_name(name: &str) -> String {
    let mut s: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let mut s = format!("bakeoff-{}", s.trim_matches('-'));
    s.truncate(50);
    let s = s.trim_end_matches('-').to_string();
    // What the label cannot spell (`ベンチ`, `速度比較`) would make different plans one name:
    // their hash tells them apart.
    if !name.is_ascii() {
        let h = crate::results::hash_text(name);
        return format!("{s}-{}", &h[..8]);
    }
    s
}

/// What every object of a plan's Kubernetes Jobs shares: its name, labels, the results
/// claim and the image's container.
struct Pods<'a> {
    a: &'a CiK8sArgs,
    name: String,
    claim: String,
}

impl Pods<'_> {
    fn labels(&self) -> Y {
        Y::map([
            ("app.kubernetes.io/name", Y::str("bakeoff")),
            ("bakeoff/plan", Y::str(self.name.clone())),
        ])
    }

    fn meta(&self, n: &str) -> Y {
        Y::map([
            ("name", Y::str(n)),
            ("namespace", Y::str(self.a.namespace.clone())),
            ("labels", self.labels()),
        ])
    }

    /// The claim every pod mounts at /results.
    fn claim(&self) -> Y {
        let a = self.a;
        let mut claim_spec = vec![
            ("accessModes", Y::List(vec![Y::str("ReadWriteMany")])),
            (
                "resources",
                Y::map([("requests", Y::map([("storage", Y::str(a.storage.clone()))]))]),
            ),
        ];
        if let Some(sc) = &a.storage_class {
            claim_spec.push(("storageClassName", Y::str(sc.clone())));
        }
        Y::map([
            ("apiVersion", Y::str("v1")),
            ("kind", Y::str("PersistentVolumeClaim")),
            ("metadata", self.meta(&self.claim)),
            ("spec", Y::map(claim_spec)),
        ])
    }

    /// A Job of one container of the image in the repository's folder, with the results
    /// volume mounted, never restarted in place.
    fn job(
        &self,
        job_name: &str,
        spec: Vec<(&str, Y)>,
        pod: Vec<(&str, Y)>,
        container: &str,
        rest: Vec<(&str, Y)>,
    ) -> Y {
        let a = self.a;
        let mut c = vec![
            ("name", Y::str(container)),
            ("image", Y::str(a.image.clone())),
            ("workingDir", Y::str(a.workdir.clone())),
        ];
        c.extend(rest);
        c.push((
            "volumeMounts",
            Y::List(vec![Y::map([
                ("name", Y::str("results")),
                ("mountPath", Y::str("/results")),
            ])]),
        ));
        let mut pod_spec = vec![("restartPolicy", Y::str("Never"))];
        pod_spec.extend(pod);
        pod_spec.push(("containers", Y::List(vec![Y::map(c)])));
        pod_spec.push((
            "volumes",
            Y::List(vec![Y::map([
                ("name", Y::str("results")),
                (
                    "persistentVolumeClaim",
                    Y::map([("claimName", Y::str(self.claim.clone()))]),
                ),
            ])]),
        ));
        let mut job_spec = spec;
        // A shard that failed is reported by the merge; running it again on another node
        // would mix machines within its block.
        job_spec.push(("backoffLimit", Y::Int(0)));
        job_spec.push((
            "template",
            Y::map([
                ("metadata", Y::map([("labels", self.labels())])),
                ("spec", Y::map(pod_spec)),
            ]),
        ));
        Y::map([
            ("apiVersion", Y::str("batch/v1")),
            ("kind", Y::str("Job")),
            ("metadata", self.meta(job_name)),
            ("spec", Y::map(job_spec)),
        ])
    }
}

impl Pods<'_> {
    /// Each shard's pod on a node of its own.
    fn apart(&self) -> Y {
        one(
            "podAntiAffinity",
            one(
                "requiredDuringSchedulingIgnoredDuringExecution",
                Y::List(vec![Y::map([
                    (
                        "labelSelector",
                        one(
                            "matchLabels",
                            one("bakeoff/plan", Y::str(self.name.clone())),
                        ),
                    ),
                    ("topologyKey", Y::str("kubernetes.io/hostname")),
                ])]),
            ),
        )
    }
}

/// A shard's environment: the node it runs on as `BAKEOFF_MACHINE`, and the plan's
/// `[ci] env`, as the workflow sets it.
fn shard_env(plan: &Plan) -> Y {
    let mut env = vec![Y::map([
        ("name", Y::str("BAKEOFF_MACHINE")),
        (
            "valueFrom",
            one("fieldRef", one("fieldPath", Y::str("spec.nodeName"))),
        ),
    ])];
    env.extend(
        plan.ci
            .env
            .iter()
            .map(|(k, v)| Y::map([("name", Y::str(k.clone())), ("value", Y::str(v.clone()))])),
    );
    Y::List(env)
}

fn one(k: &str, v: Y) -> Y {
    Y::map([(k.to_string(), v)])
}

fn sh_c(cmd: String) -> Y {
    Y::List(vec![Y::str("sh"), Y::str("-c"), Y::str(cmd)])
}

/// A Kubernetes Indexed Job running one shard per pod, and the Job that merges them:
/// (job.yaml, merge.yaml).
pub fn k8s(a: &CiK8sArgs) -> anyhow::Result<(String, String)> {
    let c = &a.common;
    let plan = plan(c)?;
    let n = c.shards;
    let name = dns_name(&plan.name);
    let cpus = match a.cpus {
        Some(0) => bail!("--cpus 0: a pod needs at least one whole CPU"),
        Some(x) => x,
        None => plan.cores.as_ref().map_or(2, |cores| {
            let mut all: Vec<usize> = cores.contender.iter().chain(&cores.load).copied().collect();
            all.sort_unstable();
            all.dedup();
            all.len().max(1) as u32
        }),
    };
    let pods = Pods {
        a,
        claim: format!("{name}-results"),
        name: name.clone(),
    };
    let resources = || {
        let r = || {
            Y::map([
                ("cpu", Y::str(cpus.to_string())),
                ("memory", Y::str(a.memory.clone())),
            ])
        };
        Y::map([("requests", r()), ("limits", r())])
    };
    // The plan's `[ci] setup` first, as the workflow's steps run it.
    let setup: String = plan.ci.setup.iter().map(|s| format!("{s} && ")).collect();
    let run = format!(
        "{setup}exec bakeoff run {} --shards {n} --out \"/results/shard-$((JOB_COMPLETION_INDEX + 1))\"",
        sh(&plan_arg(&c.plan))
    );
    let shards = pods.job(
        &name,
        vec![
            ("completionMode", Y::str("Indexed")),
            ("completions", Y::Int(n.into())),
            (
                "parallelism",
                Y::Int(a.parallelism.unwrap_or(n).clamp(1, n).into()),
            ),
        ],
        vec![("affinity", pods.apart())],
        "shard",
        vec![
            ("command", sh_c(run)),
            ("env", shard_env(&plan)),
            ("resources", resources()),
        ],
    );
    let merge_cmd = format!(
        "bakeoff merge /results/shard-* --out /results/merged{}",
        merge_flags(c)
    );
    let merge = pods.job(
        &format!("{name}-merge"),
        Vec::new(),
        Vec::new(),
        "merge",
        vec![("command", sh_c(merge_cmd))],
    );
    let head = header("k8s", c);
    let job_text = format!(
        "{head}# The results claim and the Indexed Job: one pod per shard, each on its own node.\n{}---\n{}",
        pods.claim().to_yaml(),
        shards.to_yaml()
    );
    let merge_text = format!(
        "{head}# Apply once `{name}` has completed: merges /results/shard-* into /results/merged.\n{}",
        merge.to_yaml()
    );
    Ok((job_text, merge_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(dns_name("etcd 3.4 vs 3.5"), "bakeoff-etcd-3-4-vs-3-5");
        assert_eq!(dns_name("--A__b--"), "bakeoff-a-b");
        let long = dns_name(&"x".repeat(100));
        assert!(long.len() <= 50, "{long}");
        // Names a label cannot spell stay apart (they were all `bakeoff`).
        let (a, b) = (dns_name("ベンチ"), dns_name("速度比較"));
        assert_ne!(a, b);
        assert!(a.starts_with("bakeoff-") && a.len() <= 63, "{a}");
        assert!(a
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(sh("examples/etcd/plan.toml"), "examples/etcd/plan.toml");
        assert_eq!(sh("my plan's.toml"), r"'my plan'\''s.toml'");
    }
}
