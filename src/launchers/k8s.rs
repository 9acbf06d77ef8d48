//! A Kubernetes Indexed Job running one shard per pod, and the Job that merges them.

use super::*;

/// The Job's name: `bakeoff-` and the plan's name as a DNS label, short enough for the pods'
/// host names (`NAME-INDEX`) to stay within 63 characters.
pub fn k8s_name(plan_path: &Path) -> anyhow::Result<String> {
    let plan = Plan::load(plan_path)?;
    Ok(dns_name(&plan.name))
}

pub(super) fn dns_name(name: &str) -> String {
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
pub(super) struct Pods<'a> {
    pub(super) a: &'a CiK8sArgs,
    pub(super) name: String,
    pub(super) claim: String,
}

impl Pods<'_> {
    pub(super) fn labels(&self) -> Y {
        Y::map([
            ("app.kubernetes.io/name", Y::str("bakeoff")),
            ("bakeoff/plan", Y::str(self.name.clone())),
        ])
    }

    pub(super) fn meta(&self, n: &str) -> Y {
        Y::map([
            ("name", Y::str(n)),
            ("namespace", Y::str(self.a.namespace.clone())),
            ("labels", self.labels()),
        ])
    }

    /// The claim every pod mounts at /results.
    pub(super) fn claim(&self) -> Y {
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
    pub(super) fn job(
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
    /// A pod that mounts the results claim and waits an hour, for `kubectl cp` to copy the
    /// merged report out of it (a finished Job's pod cannot be copied from).
    pub(super) fn fetch(&self) -> Y {
        let a = self.a;
        Y::map([
            ("apiVersion", Y::str("v1")),
            ("kind", Y::str("Pod")),
            ("metadata", self.meta(&format!("{}-fetch", self.name))),
            (
                "spec",
                Y::map([
                    ("restartPolicy", Y::str("Never")),
                    ("activeDeadlineSeconds", Y::Int(3600)),
                    (
                        "containers",
                        Y::List(vec![Y::map([
                            ("name", Y::str("fetch")),
                            ("image", Y::str(a.image.clone())),
                            ("command", Y::List(vec![Y::str("sleep"), Y::str("3600")])),
                            (
                                "volumeMounts",
                                Y::List(vec![Y::map([
                                    ("name", Y::str("results")),
                                    ("mountPath", Y::str("/results")),
                                ])]),
                            ),
                        ])]),
                    ),
                    (
                        "volumes",
                        Y::List(vec![Y::map([
                            ("name", Y::str("results")),
                            (
                                "persistentVolumeClaim",
                                Y::map([("claimName", Y::str(self.claim.clone()))]),
                            ),
                        ])]),
                    ),
                ]),
            ),
        ])
    }

    /// Each shard's pod on a node of its own.
    pub(super) fn apart(&self) -> Y {
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
pub(super) fn shard_env(plan: &Plan) -> Y {
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

pub(super) fn one(k: &str, v: Y) -> Y {
    Y::map([(k.to_string(), v)])
}

pub(super) fn sh_c(cmd: String) -> Y {
    Y::List(vec![Y::str("sh"), Y::str("-c"), Y::str(cmd)])
}

/// A shard pod's shell script: the plan's `[ci] setup` first, each line its own shell as a
/// workflow's steps are (a `#` comment, or a line ending in `||` or `&`, cannot swallow the
/// run), any failing fails the pod; then the run of shard JOB_COMPLETION_INDEX + 1 of `n`.
fn shard_script(plan: &Plan, plan_path: &str, n: u32) -> String {
    let setup: String = plan
        .ci
        .setup
        .iter()
        .map(|s| format!("sh -c {}\n", sh(s)))
        .collect();
    let setup = match setup.is_empty() {
        true => setup,
        false => format!("set -e\n{setup}"),
    };
    format!(
        "{setup}exec bakeoff run {} --shards {n} --out \"/results/shard-$((JOB_COMPLETION_INDEX + 1))\"",
        sh(plan_path)
    )
}

/// The files `ci k8s` writes.
pub struct K8sFiles {
    /// The results claim and the Indexed Job.
    pub job: String,
    /// The Job that merges the shards.
    pub merge: String,
    /// The pod the merged report is copied out of.
    pub fetch: String,
}

/// A Kubernetes Indexed Job running one shard per pod, the Job that merges them, and the pod
/// to copy the report from.
pub fn k8s(a: &CiK8sArgs) -> anyhow::Result<K8sFiles> {
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
    let run = shard_script(&plan, &plan_arg(&c.plan), n);
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
    let head = header("k8s", c, &format!(" --image {}", sh(&a.image)));
    let job_text = format!(
        "{head}# The results claim and the Indexed Job: one pod per shard, each on its own node.\n{}---\n{}",
        pods.claim().to_yaml(),
        shards.to_yaml()
    );
    let merge_text = format!(
        "{head}# Apply once `{name}` has completed: merges /results/shard-* into /results/merged.\n{}",
        merge.to_yaml()
    );
    let fetch_text = format!(
        "{head}# Apply once `{name}-merge` has completed, then `kubectl cp` /results/merged out of the pod; it ends itself within the hour.\n{}",
        pods.fetch().to_yaml()
    );
    Ok(K8sFiles {
        job: job_text,
        merge: merge_text,
        fetch: fetch_text,
    })
}
