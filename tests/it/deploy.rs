//! The deployment files agree with one another and with metron's flags:
//! the Kubernetes manifests in deploy/kubernetes/ (the Indexed Job, the
//! ConfigMap it mounts, the results volume, the merge Job), the
//! Dockerfile, and docs/distributed.md, which walks through them.
//!
//! Nothing here talks to a cluster or a container engine: the files are
//! read and checked as text and as YAML.

use std::collections::BTreeSet;

use serde_norway::Value;

use crate::common::deploy::*;

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

/// The pods serve their live figures where their Prometheus annotations
/// say: `--dashboard` on every address at the annotated port, the path
/// /metrics, a named container port, and a linger that outlasts a scrape
/// or two after the run. The headless Service selects those pods on that
/// port, and carries no annotations of its own, which would have every
/// shard scraped twice.
#[test]
fn prometheus_finds_each_shards_metrics_where_the_job_serves_them() {
    let docs = manifests();
    check_run_job(&docs);
    let job = find(&docs, "Job", "metron");
    let file = &job.file;
    let template = &job.value["spec"]["template"];
    let (_, container) = pod_and_container(job);
    let args = args_of(container, file);
    let dashboard = flag_value(&args, "--dashboard")
        .unwrap_or_else(|| panic!("{file}: no --dashboard=ADDR in {args:?}"));
    let (host, port) = dashboard
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("{file}: --dashboard={dashboard} should be HOST:PORT"));
    assert!(
        ["0.0.0.0", "[::]"].contains(&host),
        "{file}: --dashboard={dashboard} listens on loopback alone, out of Prometheus' reach"
    );
    let port: u16 = port
        .parse()
        .unwrap_or_else(|_| panic!("{file}: --dashboard={dashboard}: not a port"));
    let linger = flag_value(&args, "--dashboard-linger")
        .unwrap_or_else(|| panic!("{file}: without --dashboard-linger the page closes with the run, before Prometheus scrapes its last figures"));
    let seconds: u64 = linger
        .strip_suffix('s')
        .and_then(|s| s.parse().ok())
        .or_else(|| {
            linger
                .strip_suffix('m')
                .and_then(|m| m.parse::<u64>().ok())
                .map(|m| m * 60)
        })
        .unwrap_or_else(|| panic!("{file}: --dashboard-linger {linger}: write it in s or m"));
    assert!(
        seconds >= 30,
        "{file}: --dashboard-linger {linger} is shorter than two scrapes at 15 s"
    );

    let annotations = &template["metadata"]["annotations"];
    let note = |key: &str| {
        str_of(
            &annotations[key],
            &format!("{file}: the pod template's annotation {key}"),
        )
    };
    assert_eq!(note("prometheus.io/scrape"), "true");
    assert_eq!(note("prometheus.io/port"), port.to_string());
    assert_eq!(note("prometheus.io/path"), "/metrics");
    let ports = seq_of(
        &container["ports"],
        &format!("{file}: the container's ports"),
    );
    let named = ports
        .iter()
        .find(|p| p["containerPort"].as_u64() == Some(u64::from(port)))
        .unwrap_or_else(|| panic!("{file}: no containerPort {port} for --dashboard"));
    let name = str_of(&named["name"], "the metrics port's name");

    let service = find(&docs, "Service", "metron-metrics");
    let spec = &service.value["spec"];
    assert_eq!(
        spec["clusterIP"].as_str(),
        Some("None"),
        "{}: headless, so that each pod is its own endpoint",
        service.file
    );
    let labels = &template["metadata"]["labels"];
    let selector = spec["selector"]
        .as_mapping()
        .unwrap_or_else(|| panic!("{}: a selector", service.file));
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(
            &labels[k], v,
            "{}: selects {k:?}={v:?}, which the load pods do not carry",
            service.file
        );
    }
    let service_ports = seq_of(&spec["ports"], "the Service's ports");
    assert!(
        service_ports.iter().any(|p| {
            p["targetPort"].as_str() == Some(name)
                || p["targetPort"].as_u64() == Some(u64::from(port))
        }),
        "{}: no port leads to the pods' {name} port",
        service.file
    );
    let service_annotations = &service.value["metadata"]["annotations"];
    assert!(
        service_annotations["prometheus.io/scrape"].is_null(),
        "{}: annotated as well as the pods, every shard would be scraped twice",
        service.file
    );
    let kustomization = read("deploy/kubernetes/kustomization.yaml");
    assert!(
        kustomization.contains(&service.file),
        "kustomization.yaml should create {}",
        service.file
    );
}

/// deploy/grafana/metron.json is a dashboard Grafana 9 and later import:
/// a JSON model with a uid and no id, a templated Prometheus data source
/// that every panel and query uses, panels that fit the 24-column grid
/// without overlapping, and queries that read only series /metrics has
/// and the variables the dashboard defines. The panels the README
/// promises are there. (tests/it/prometheus.rs runs every query against a
/// real Prometheus.)
#[test]
fn the_grafana_dashboard_reads_only_what_metron_exposes() {
    use crate::common::grafana::*;
    let d = dashboard();
    assert!(d["id"].is_null(), "{FILE}: an id ties it to one Grafana");
    assert!(d["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty() && u.len() <= 40));
    assert!(
        d["schemaVersion"].as_u64().is_some_and(|v| v >= 36),
        "Grafana 9's model or later"
    );
    let vars = variables(&d);
    let defined: BTreeSet<&str> = vars.iter().filter_map(|v| v["name"].as_str()).collect();
    let source = vars
        .iter()
        .find(|v| v["type"] == "datasource")
        .unwrap_or_else(|| panic!("{FILE}: no data source variable"));
    assert_eq!(source["query"], "prometheus");
    let source_ref = format!("${{{}}}", source["name"].as_str().unwrap());
    let uses_source = |v: &serde_json::Value, what: &str| {
        assert_eq!(v["type"], "prometheus", "{FILE}: {what}: {v}");
        assert_eq!(
            v["uid"].as_str(),
            Some(source_ref.as_str()),
            "{FILE}: {what}"
        );
    };
    for v in &vars {
        if v["type"] == "query" {
            uses_source(&v["datasource"], &format!("variable {}", v["name"]));
        }
    }

    let exposed = read("crates/core/src/dashboard/metrics.rs");
    let builtins = ["__rate_interval", "__interval", "__range", "__range_s"];
    let mut ids = BTreeSet::new();
    let mut cells: Vec<(String, [u64; 4])> = Vec::new();
    for p in panels(&d) {
        let title = p["title"].as_str().unwrap_or_default();
        assert!(
            ids.insert(p["id"].as_u64().expect("a panel id")),
            "{FILE}: id of {title:?} twice"
        );
        if p["type"] == "row" {
            continue;
        }
        uses_source(&p["datasource"], title);
        let g = &p["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| g[k].as_u64().expect("gridPos"));
        assert!(w > 0 && h > 0 && x + w <= 24, "{FILE}: {title:?} at {g}");
        for (other, [ox, oy, ow, oh]) in &cells {
            assert!(
                x + w <= *ox || ox + ow <= x || y + h <= *oy || oy + oh <= y,
                "{FILE}: {title:?} overlaps {other:?}"
            );
        }
        cells.push((title.to_string(), [x, y, w, h]));
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{FILE}: {title:?} queries nothing");
        let refs: BTreeSet<&str> = targets.iter().filter_map(|t| t["refId"].as_str()).collect();
        assert_eq!(refs.len(), targets.len(), "{FILE}: {title:?}: refIds");
        for t in targets {
            uses_source(&t["datasource"], title);
        }
    }
    let queries = queries(&d);
    for q in &queries {
        for name in references(&q.expr) {
            assert!(
                defined.contains(name.as_str()) || builtins.contains(&name.as_str()),
                "{FILE}: {} uses ${name}, which is neither a variable nor Grafana's",
                q.panel
            );
        }
        let names = metric_names(&q.expr);
        assert!(!names.is_empty(), "{FILE}: {}: {}", q.panel, q.expr);
        let known = |n: &str| exposed.contains(&format!("\"{n}\""));
        for name in names {
            assert!(
                known(&name)
                    || ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|s| name.strip_suffix(s).is_some_and(known)),
                "{FILE}: {} reads {name}, which /metrics does not have",
                q.panel
            );
        }
    }

    // The panels' substance: rate asked and achieved, corrected p50, p99
    // and p99.9 over all shards from added histograms, send lag, the
    // ledger, and errors by kind.
    let exprs: Vec<String> = queries
        .iter()
        .map(|q| q.expr.split_whitespace().collect::<String>())
        .collect();
    let has = |needle: &str| {
        let needle: String = needle.split_whitespace().collect();
        assert!(
            exprs.iter().any(|e| e.contains(&needle)),
            "{FILE}: no query has {needle}"
        );
    };
    has("sum(rate(metron_requests_intended_total");
    has("sum(rate(metron_requests_completed_total");
    for q in ["0.5", "0.99", "0.999"] {
        has(&format!(
            "histogram_quantile({q}, sum by (le) (rate(metron_latency_seconds_bucket"
        ));
    }
    has("[$__rate_interval]");
    has("metron_send_lag_seconds_bucket");
    // The ledger's figures stay after the run, so they are each
    // shard's last in the time range.
    for ledger in [
        "metron_requests_intended_total",
        "metron_requests_completed_total",
        "metron_requests_errors_total{shard=~\"$shard\",kind=~\"read|write|timeout\"}",
        "metron_requests_waiting",
        "metron_requests_in_flight",
    ] {
        has(&format!("sum(last_over_time({ledger}"));
    }
    has("histogram_quantile(0.99, sum by (le) (last_over_time(metron_latency_seconds_bucket");
    has("sum by (kind) (rate(metron_requests_errors_total");
    has("by (shard)");
}
