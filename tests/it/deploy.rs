//! The deployment files agree with one another and with metron's flags:
//! the Kubernetes manifests in deploy/kubernetes/ (the Indexed Job, the
//! ConfigMap it mounts, the results volume, the merge Job), the
//! Dockerfile, and docs/distributed.md, which walks through them.
//!
//! Nothing here talks to a cluster or a container engine: the files are
//! read and checked as text and as YAML.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use serde_norway::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// One YAML document of a manifest file.
struct Doc {
    file: String,
    value: Value,
}

impl Doc {
    fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
}

/// The names of the manifest files, sorted.
fn manifest_files() -> Vec<String> {
    let dir = root().join("deploy/kubernetes");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .collect();
    names.sort();
    names
}

/// The documents of a YAML stream, split at its `---` lines (a block
/// scalar's lines are indented, so they are never taken for one).
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            docs.push(String::new());
        } else {
            let doc = docs.last_mut().unwrap();
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

/// Every document of every manifest file; each must parse.
fn manifests() -> Vec<Doc> {
    let mut docs = Vec::new();
    for file in manifest_files() {
        let text = read(&format!("deploy/kubernetes/{file}"));
        for (n, doc) in documents(&text).into_iter().enumerate() {
            let value: Value = serde_norway::from_str(&doc).unwrap_or_else(|e| {
                panic!(
                    "deploy/kubernetes/{file}: document {} is not valid YAML: {e}",
                    n + 1
                )
            });
            if value.is_null() {
                continue; // an empty document (a trailing `---`)
            }
            docs.push(Doc {
                file: file.clone(),
                value,
            });
        }
    }
    docs
}

fn find<'a>(docs: &'a [Doc], kind: &str, name: &str) -> &'a Doc {
    let found: Vec<&Doc> = docs
        .iter()
        .filter(|d| d.kind() == kind && d.name() == name)
        .collect();
    match found.as_slice() {
        [one] => one,
        [] => panic!("no {kind} named {name:?} in deploy/kubernetes/"),
        _ => panic!(
            "{} {kind}s named {name:?} in deploy/kubernetes/",
            found.len()
        ),
    }
}

fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} should be a string, found {v:?}"))
}

fn seq_of<'a>(v: &'a Value, what: &str) -> &'a [Value] {
    v.as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{what} should be a list, found {v:?}"))
}

fn int_of(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} should be a whole number, found {v:?}"))
}

/// The pod spec of a Job, and its one container.
fn pod_and_container(job: &Doc) -> (&Value, &Value) {
    let pod = &job.value["spec"]["template"]["spec"];
    let containers = seq_of(&pod["containers"], &format!("{}: containers", job.file));
    assert_eq!(
        containers.len(),
        1,
        "{}: the Job should run one container",
        job.file
    );
    (pod, &containers[0])
}

fn args_of(container: &Value, file: &str) -> Vec<String> {
    seq_of(&container["args"], &format!("{file}: args"))
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("{file}: an argument should be a string, found {other:?}"),
        })
        .collect()
}

/// The value given to `flag` in `args`: `--flag V`, `--flag=V`, or for a
/// short flag also `-fV`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let short = !flag.starts_with("--");
    for (i, arg) in args.iter().enumerate() {
        if arg == flag {
            return args.get(i + 1).map(String::as_str);
        }
        if let Some(v) = arg.strip_prefix(flag) {
            if let Some(v) = v.strip_prefix('=') {
                return Some(v);
            }
            if short && !v.is_empty() && !arg.starts_with("--") {
                return Some(v);
            }
        }
    }
    None
}

/// The `$(NAME)` references in `s`, which Kubernetes expands from the
/// container's env (and leaves as they are when the name is not there).
fn references(s: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("$(") {
        let after = &rest[start + 2..];
        let end = after
            .find(')')
            .unwrap_or_else(|| panic!("unclosed $( in {s:?}"));
        names.push(&after[..end]);
        rest = &after[end + 1..];
    }
    names
}

/// The volume mounted at the directory that holds `path` in `container`,
/// and the rest of the path below that directory.
fn volume_for<'a>(
    pod: &'a Value,
    container: &Value,
    path: &'a str,
    file: &str,
) -> (&'a Value, &'a str) {
    let mounts = seq_of(&container["volumeMounts"], &format!("{file}: volumeMounts"));
    let (mount, rest) = mounts
        .iter()
        .find_map(|m| {
            let dir = str_of(&m["mountPath"], "mountPath").trim_end_matches('/');
            path.strip_prefix(dir)
                .and_then(|r| r.strip_prefix('/'))
                .map(|rest| (m, rest))
        })
        .unwrap_or_else(|| panic!("{file}: {path} is on no mounted volume"));
    let name = str_of(&mount["name"], "a volume mount's name");
    let volume = seq_of(&pod["volumes"], &format!("{file}: volumes"))
        .iter()
        .find(|v| v["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("{file}: the pod mounts a volume {name:?} it does not define"));
    (volume, rest)
}

fn claim_of<'a>(volume: &'a Value, what: &str) -> &'a str {
    volume["persistentVolumeClaim"]["claimName"]
        .as_str()
        .unwrap_or_else(|| panic!("{what} should be on a PersistentVolumeClaim, found {volume:?}"))
}

/// What the run Job writes and what the merge Job must read.
struct Run {
    shards: u64,
    /// The `--json` path of each pod, its index substituted.
    shard_files: Vec<String>,
    claim: String,
    image: String,
}

fn check_run_job(docs: &[Doc]) -> Run {
    let job = find(docs, "Job", "metron");
    let file = &job.file;
    let spec = &job.value["spec"];
    assert_eq!(
        job.value["apiVersion"].as_str(),
        Some("batch/v1"),
        "{file}: apiVersion"
    );
    assert_eq!(
        spec["completionMode"].as_str(),
        Some("Indexed"),
        "{file}: the pods find their shard in JOB_COMPLETION_INDEX, which only an Indexed Job sets"
    );
    let completions = int_of(&spec["completions"], "spec.completions");
    let parallelism = int_of(&spec["parallelism"], "spec.parallelism");
    assert!(completions > 0, "{file}: completions");
    assert_eq!(
        completions, parallelism,
        "{file}: every shard must run at the same time: parallelism must equal completions"
    );
    assert_eq!(
        spec["backoffLimit"].as_u64(),
        Some(0),
        "{file}: a retried pod would start after --start-at; backoffLimit should be 0"
    );

    let (pod, container) = pod_and_container(job);
    assert_eq!(
        pod["restartPolicy"].as_str(),
        Some("Never"),
        "{file}: restartPolicy"
    );
    let args = args_of(container, file);

    assert_eq!(
        flag_value(&args, "--shard"),
        Some(format!("auto/{completions}").as_str()),
        "{file}: --shard should be auto/N with N the Job's completions; args: {args:?}"
    );
    let start_at = flag_value(&args, "--start-at")
        .unwrap_or_else(|| panic!("{file}: no --start-at in {args:?}"));
    assert!(!start_at.is_empty(), "{file}: --start-at is empty");
    assert!(
        ["-R", "--rate", "--rate-profile"]
            .iter()
            .any(|f| flag_value(&args, f).is_some()),
        "{file}: --shard splits a schedule, so the run needs -R or --rate-profile; args: {args:?}"
    );

    // Every $(VAR) in the args must be in the container's env, or
    // Kubernetes passes it on literally.
    let env: BTreeSet<&str> = container["env"]
        .as_sequence()
        .map(|vars| vars.iter().filter_map(|v| v["name"].as_str()).collect())
        .unwrap_or_default();
    for arg in &args {
        for name in references(arg) {
            assert!(
                env.contains(name),
                "{file}: the argument {arg:?} names $({name}), which the container's env does not define (defined: {env:?})"
            );
        }
    }
    assert!(
        references(start_at) == ["START_AT"] || !start_at.contains("$("),
        "{file}: --start-at {start_at:?}"
    );

    // The results: one file per pod on a PersistentVolumeClaim.
    let json =
        flag_value(&args, "--json").unwrap_or_else(|| panic!("{file}: no --json in {args:?}"));
    assert!(
        references(json).contains(&"JOB_COMPLETION_INDEX"),
        "{file}: --json {json:?} should name $(JOB_COMPLETION_INDEX), or the pods write over each other's results"
    );
    let (volume, _) = volume_for(pod, container, json, file);
    let claim = claim_of(volume, &format!("{file}: the volume of --json {json}"));
    let shard_files: Vec<String> = (0..completions)
        .map(|i| json.replace("$(JOB_COMPLETION_INDEX)", &i.to_string()))
        .collect();

    // The script: a key of the ConfigMap mounted where -s points.
    let script = flag_value(&args, "-s")
        .or_else(|| flag_value(&args, "--script"))
        .unwrap_or_else(|| panic!("{file}: no -s in {args:?}"));
    let (volume, key) = volume_for(pod, container, script, file);
    let map_name = volume["configMap"]["name"].as_str().unwrap_or_else(|| {
        panic!("{file}: -s {script} should be on a ConfigMap volume, found {volume:?}")
    });
    // With `items`, a key is mounted under a path of its own.
    let key = match volume["configMap"]["items"].as_sequence() {
        None => key.to_string(),
        Some(items) => str_of(
            &items
                .iter()
                .find(|it| it["path"].as_str() == Some(key))
                .unwrap_or_else(|| panic!("{file}: the ConfigMap volume has no item at {key}"))
                ["key"],
            "an item's key",
        )
        .to_string(),
    };
    let map = find(docs, "ConfigMap", map_name);
    assert_eq!(
        map.file, "configmap.yaml",
        "the ConfigMap {map_name} should be defined in configmap.yaml"
    );
    let text = map.value["data"][key.as_str()].as_str().unwrap_or_else(|| {
        panic!("configmap.yaml: {map_name} holds no {key:?}, which -s {script} reads")
    });
    assert!(!text.trim().is_empty(), "configmap.yaml: {key} is empty");

    let image = str_of(&container["image"], "the container's image").to_string();
    Run {
        shards: completions,
        shard_files,
        claim: claim.to_string(),
        image,
    }
}

#[test]
fn every_manifest_parses_and_names_its_kind() {
    let docs = manifests();
    assert!(!docs.is_empty(), "deploy/kubernetes/ holds no manifests");
    for doc in &docs {
        assert!(
            !doc.kind().is_empty() && doc.value["apiVersion"].as_str().is_some(),
            "deploy/kubernetes/{}: a document without kind or apiVersion",
            doc.file
        );
    }
    for file in manifest_files() {
        assert!(
            docs.iter().any(|d| d.file == file),
            "deploy/kubernetes/{file} holds no document"
        );
    }
}

#[test]
fn the_indexed_job_shards_the_run() {
    check_run_job(&manifests());
}

#[test]
fn the_merge_job_reads_every_shard() {
    let docs = manifests();
    let run = check_run_job(&docs);
    let job = find(&docs, "Job", "metron-merge");
    let file = &job.file;
    assert_eq!(
        job.value["apiVersion"].as_str(),
        Some("batch/v1"),
        "{file}: apiVersion"
    );
    assert!(
        job.value["spec"]["completionMode"].as_str() != Some("Indexed"),
        "{file}: the merge is one pod, not an Indexed Job"
    );
    let (pod, container) = pod_and_container(job);
    let args = args_of(container, file);
    assert_eq!(
        args.first().map(String::as_str),
        Some("merge"),
        "{file}: should run `metron merge`; args: {args:?}"
    );

    // The documents to merge: the words that are neither flags nor their values.
    let mut inputs = Vec::new();
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--json" | "--html" => {
                let out = rest
                    .next()
                    .unwrap_or_else(|| panic!("{file}: {arg} without a file"));
                let (volume, _) = volume_for(pod, container, out, file);
                assert_eq!(
                    claim_of(volume, &format!("{file}: {arg} {out}")),
                    run.claim,
                    "{file}: {arg} {out} should go to the results volume"
                );
                assert!(
                    !run.shard_files.contains(out),
                    "{file}: {arg} {out} would overwrite a shard's document"
                );
            }
            flag if flag.starts_with('-') => panic!("{file}: unexpected flag {flag} in {args:?}"),
            input => inputs.push(input.to_string()),
        }
    }
    assert!(
        flag_value(&args, "--json").is_some() && flag_value(&args, "--html").is_some(),
        "{file}: the merge should write --json and --html; args: {args:?}"
    );
    assert_eq!(
        inputs.len() as u64,
        run.shards,
        "{file}: merges {} files, but the run has {} shards",
        inputs.len(),
        run.shards
    );
    let inputs: BTreeSet<&String> = inputs.iter().collect();
    let expected: BTreeSet<&String> = run.shard_files.iter().collect();
    assert_eq!(
        inputs, expected,
        "{file}: the files merged should be exactly those the run's pods write"
    );
    for input in &inputs {
        let (volume, _) = volume_for(pod, container, input, file);
        assert_eq!(
            claim_of(volume, &format!("{file}: {input}")),
            run.claim,
            "{file}: {input} should be read from the volume the run wrote to"
        );
    }
    assert_eq!(
        str_of(&container["image"], "the merge container's image"),
        run.image,
        "{file}: the merge should use the run's image"
    );
}

#[test]
fn the_results_volume_is_shared() {
    let docs = manifests();
    let run = check_run_job(&docs);
    let pvc = find(&docs, "PersistentVolumeClaim", &run.claim);
    assert_eq!(
        pvc.file, "pvc.yaml",
        "the claim {} should be in pvc.yaml",
        run.claim
    );
    let modes: Vec<&str> = seq_of(&pvc.value["spec"]["accessModes"], "pvc.yaml: accessModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        modes.contains(&"ReadWriteMany"),
        "pvc.yaml: pods on several nodes write to the volume at once: it needs ReadWriteMany, has {modes:?}"
    );
}

#[test]
fn kustomization_starts_the_run_but_not_the_merge() {
    let text = read("deploy/kubernetes/kustomization.yaml");
    let value: Value = serde_norway::from_str(&text).expect("kustomization.yaml parses");
    let resources: Vec<&str> = seq_of(&value["resources"], "kustomization.yaml: resources")
        .iter()
        .map(|r| str_of(r, "a resource"))
        .collect();
    for resource in &resources {
        assert!(
            root().join("deploy/kubernetes").join(resource).is_file(),
            "kustomization.yaml lists {resource}, which does not exist"
        );
    }
    for needed in ["pvc.yaml", "configmap.yaml", "job.yaml"] {
        assert!(
            resources.contains(&needed),
            "kustomization.yaml should list {needed}"
        );
    }
    // Applied with the run, the merge would start before any shard exists.
    assert!(
        !resources.contains(&"merge-job.yaml"),
        "kustomization.yaml should leave merge-job.yaml to be applied after the run"
    );
}

#[test]
fn the_walkthrough_names_every_file() {
    let doc = read("docs/distributed.md");
    let mut wanted: Vec<String> = manifest_files()
        .iter()
        .map(|f| format!("deploy/kubernetes/{f}"))
        .collect();
    wanted.push("deploy/slurm/metron-array.sbatch".to_string());
    for name in &wanted {
        assert!(
            doc.contains(name.as_str()),
            "docs/distributed.md does not mention {name}"
        );
    }
    for flag in [
        "--shard",
        "--start-at",
        "--json",
        "metron merge",
        "--warmup",
    ] {
        assert!(
            doc.contains(flag),
            "docs/distributed.md does not explain {flag}"
        );
    }
}

/// The package name in the root Cargo.toml's `[package]` table.
fn package_name() -> String {
    let manifest = read("Cargo.toml");
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("name") {
                let v = v.trim_start();
                if let Some(v) = v.strip_prefix('=') {
                    return v.trim().trim_matches('"').to_string();
                }
            }
        }
    }
    panic!("Cargo.toml has no [package] name");
}

#[test]
fn the_dockerfile_builds_in_one_stage_and_runs_in_another() {
    let text = read("Dockerfile");
    // Instructions, with continuation lines joined and comments dropped.
    let mut instructions: Vec<String> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                pending.push_str(part);
                pending.push(' ');
            }
            None => {
                pending.push_str(trimmed);
                instructions.push(std::mem::take(&mut pending));
            }
        }
    }
    let keyword = |i: &String| {
        i.split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase()
    };
    let froms: Vec<usize> = (0..instructions.len())
        .filter(|&i| keyword(&instructions[i]) == "FROM")
        .collect();
    assert!(
        froms.len() >= 2,
        "Dockerfile: a build stage and a runtime stage, found {} FROM",
        froms.len()
    );
    assert_eq!(froms[0], 0, "Dockerfile: should begin with FROM");

    let first: Vec<&str> = instructions[froms[0]].split_whitespace().collect();
    assert!(
        first.len() == 4 && first[2].eq_ignore_ascii_case("AS"),
        "Dockerfile: the first stage should be named (FROM image AS name): {:?}",
        instructions[froms[0]]
    );
    let stage = first[3];

    let build = &instructions[froms[0]..froms[1]];
    let package = package_name();
    assert!(
        build.iter().any(|i| i.contains("cargo build")
            && i.contains("--release")
            && i.contains("--locked")
            && i.contains(&format!("-p {package}"))),
        "Dockerfile: the build stage should run cargo build --release --locked -p {package}"
    );

    let last = &instructions[*froms.last().unwrap()..];
    assert!(
        last.iter()
            .any(|i| keyword(i) == "COPY" && i.contains(&format!("--from={stage}"))),
        "Dockerfile: the runtime stage should copy the binary from the {stage} stage"
    );
    let entrypoint = last
        .iter()
        .find(|i| keyword(i) == "ENTRYPOINT")
        .expect("Dockerfile: the runtime stage has no ENTRYPOINT");
    assert!(
        entrypoint.contains("[\"") && entrypoint.contains("metron\""),
        "Dockerfile: the entrypoint should be the metron binary, in exec form: {entrypoint}"
    );
    assert!(
        last.iter().any(|i| keyword(i) == "USER"),
        "Dockerfile: the runtime stage should not run as root"
    );

    let ignore = read(".dockerignore");
    assert!(
        ignore
            .lines()
            .any(|l| l.trim().trim_end_matches('/') == "target"),
        ".dockerignore should leave target/ out of the build context"
    );
}
