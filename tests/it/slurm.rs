//! A real Slurm job array of three metron shards, as a user runs one:
//! `deploy/slurm/metron-array.sbatch` submitted with `sbatch --array=0-2`
//! against the built-in target, every task taking its part from Slurm's
//! environment (`--shard auto`) and starting at one wall-clock instant
//! (`--start-at`), then `metron merge` over the three documents.
//!
//! It needs a Slurm cluster whose node is this host (the tasks reach the
//! target on 127.0.0.1 and write to this host's temporary directory):
//! `deploy/slurm/one-node-cluster.sh` brings one up. Without one the test
//! says so and passes, unless `METRON_REQUIRE_SLURM=1` (CI, once that
//! script succeeded) makes it fail.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::files::read_json;
use crate::common::judged::*;
use crate::common::slurm::*;
use crate::common::*;
use metron::serve::ServeConfig;
use serde_json::Value;

/// The shards, the total rate and how long each sends.
const SHARDS: u64 = 3;
const RATE: f64 = 600.0;
const DURATION: &str = "4s";
/// How far ahead of submission the schedule starts: time for Slurm to
/// start all three tasks and for each to connect.
const START_MARGIN: u64 = 8;
/// The longest the whole job may take, from submission to the last task's
/// end.
const JOB_LIMIT: Duration = Duration::from_secs(120);

/// Three array tasks, one shard each, start together and send 600
/// requests/s between them; merged, their documents add up to one run at
/// that rate, with each shard named once.
#[test]
fn a_slurm_job_array_runs_three_shards_of_one_schedule() {
    if let Some(why) = no_cluster() {
        if std::env::var("METRON_REQUIRE_SLURM").as_deref() == Ok("1") {
            panic!("METRON_REQUIRE_SLURM=1 but {why}");
        }
        eprintln!(
            "note: no Slurm cluster here ({why}); the process-level shard test in \
             tests/shard.rs still runs"
        );
        return;
    }
    let _g = serial();
    let srv = server(ServeConfig::default());
    let target = url(&srv, "/");
    let tmp = TempDir::new("slurm");
    let base = PathBuf::from(tmp.file("submitted", ""))
        .parent()
        .expect("the file is in the directory")
        .to_path_buf();
    let sbatch = format!(
        "{}/deploy/slurm/metron-array.sbatch",
        env!("CARGO_MANIFEST_DIR")
    );
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let export = format!(
        "ALL,METRON={},TARGET_URL={target},RATE={RATE},DURATION={DURATION},CONNECTIONS=6,\
         START_AT={},OUT_DIR={}",
        env!("CARGO_BIN_EXE_metron"),
        now + START_MARGIN,
        base.display()
    );
    let o = slurm(
        "sbatch",
        &[
            "--parsable",
            &format!("--array=0-{}", SHARDS - 1),
            &format!("--chdir={}", base.display()),
            &format!("--export={export}"),
            &sbatch,
        ],
    );
    assert_status(&o, 0);
    // --parsable prints "JOBID" or "JOBID;CLUSTER".
    let id = stdout(&o)
        .trim()
        .split(';')
        .next()
        .unwrap_or("")
        .to_string();
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
        "sbatch printed no job id: {}",
        stdout(&o)
    );
    let job = Job(id);

    // The job is done when squeue no longer lists it (without slurmdbd
    // there is no sacct to ask how it ended: its files tell).
    let start = Instant::now();
    loop {
        let q = slurm("squeue", &["-h", "-j", &job.0, "-o", "%i %t"]);
        // Once a finished job is purged, squeue rejects its id.
        if stdout(&q).trim().is_empty() {
            break;
        }
        assert!(
            start.elapsed() < JOB_LIMIT,
            "job {} still queued after {JOB_LIMIT:?}:\n{}\n{}",
            job.0,
            stdout(&q),
            task_outputs(&base)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let shards: Vec<PathBuf> = (0..SHARDS)
        .map(|i| base.join(format!("shard-{i}.json")))
        .collect();
    for path in &shards {
        assert!(
            path.exists(),
            "{} was not written; the tasks printed:\n{}",
            path.display(),
            task_outputs(&base)
        );
    }

    let merged = base.join("merged.json");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(shards.iter().map(|p| p.display().to_string()));
    args.extend(["--json".into(), merged.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = metron(&args);
    assert_status(&o, 0);

    let docs: Vec<Value> = shards.iter().map(|p| read_json(p)).collect();
    let mut indices: Vec<u64> = docs
        .iter()
        .map(|d| {
            let shard = &d["config"]["shard"];
            assert_eq!(shard["count"], SHARDS, "config.shard: {shard}");
            shard["index"]
                .as_u64()
                .unwrap_or_else(|| panic!("config.shard without an index: {shard}"))
        })
        .collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..SHARDS).collect::<Vec<_>>());
    // Each file is the shard its task number names.
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(d["config"]["shard"]["index"], i as u64, "shard-{i}.json");
    }

    let m: Value = read_json(&merged);
    let sum: u64 = docs.iter().map(completed).sum();
    assert_eq!(completed(&m), sum, "merged counters: {}", m["counters"]);
    let rps = m["requests_per_sec"]
        .as_f64()
        .unwrap_or_else(|| panic!("no requests_per_sec in the merged document"));
    assert!(
        (rps / RATE - 1.0).abs() <= 0.05,
        "merged rate {rps}/s, want {RATE}/s within 5%; shards: {:?}",
        docs.iter()
            .map(|d| d["requests_per_sec"].clone())
            .collect::<Vec<_>>()
    );
    let instances = m["instances"]
        .as_array()
        .unwrap_or_else(|| panic!("no instances array in the merged document"));
    assert_eq!(instances.len(), SHARDS as usize, "instances: {instances:?}");
    drop(job);
    drop(srv);
}
