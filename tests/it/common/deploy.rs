//! The deployment files (deploy/kubernetes, the Dockerfile) read as
//! their tools read them: manifests as YAML documents, fields by path.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use serde_norway::Value;

/// The repository, where the deployment files are.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the repository, as text.
pub fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// One YAML document of a manifest file.
pub struct Doc {
    pub file: String,
    pub value: Value,
}

impl Doc {
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
}

/// The names of the manifest files, sorted.
pub fn manifest_files() -> Vec<String> {
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
pub fn documents(text: &str) -> Vec<String> {
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
pub fn manifests() -> Vec<Doc> {
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

/// The one document of `kind` named `name`.
pub fn find<'a>(docs: &'a [Doc], kind: &str, name: &str) -> &'a Doc {
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

/// `v` as a string; `what` names it when it is not one.
pub fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} should be a string, found {v:?}"))
}

/// `v` as a list; `what` names it when it is not one.
pub fn seq_of<'a>(v: &'a Value, what: &str) -> &'a [Value] {
    v.as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{what} should be a list, found {v:?}"))
}

/// `v` as a whole number; `what` names it when it is not one.
pub fn int_of(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} should be a whole number, found {v:?}"))
}

/// The pod spec of a Job, and its one container.
pub fn pod_and_container(job: &Doc) -> (&Value, &Value) {
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

/// A container's `args`, numbers written as words.
pub fn args_of(container: &Value, file: &str) -> Vec<String> {
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
pub fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
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
pub fn references(s: &str) -> Vec<&str> {
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
pub fn volume_for<'a>(
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

/// The claim a volume mounts; `what` names the volume.
pub fn claim_of<'a>(volume: &'a Value, what: &str) -> &'a str {
    volume["persistentVolumeClaim"]["claimName"]
        .as_str()
        .unwrap_or_else(|| panic!("{what} should be on a PersistentVolumeClaim, found {volume:?}"))
}

/// What the run Job writes and what the merge Job must read.
pub struct Run {
    pub shards: u64,
    /// The `--json` path of each pod, its index substituted.
    pub shard_files: Vec<String>,
    pub claim: String,
    pub image: String,
}

/// Checks the run Job's shape; returns what it writes.
pub fn check_run_job(docs: &[Doc]) -> Run {
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

/// The package name in the root Cargo.toml's `[package]` table.
pub fn package_name() -> String {
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
