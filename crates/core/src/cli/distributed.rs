//! `--shard` and `--start-at`: one schedule over several instances.
//!
//! Both are parsed here as the user wrote them; [`ShardSpec::resolve`]
//! reads the index a scheduler gives each instance (a Kubernetes Indexed
//! Job's `JOB_COMPLETION_INDEX`, a Slurm job array's
//! `SLURM_ARRAY_TASK_ID`) when the spec says `auto`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::schedule::Shard;

/// Set by Kubernetes in every pod of an Indexed Job: the pod's index.
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Set by Slurm in every task of a job array: its index, how many tasks
/// the array has, its lowest index (`--array=1-3` starts at 1) and the
/// step between indices (`--array=0-8:2`).
pub const SLURM_INDEX: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
pub const SLURM_STEP: &str = "SLURM_ARRAY_TASK_STEP";

/// `--shard` as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardSpec {
    /// `I/N`.
    Fixed(Shard),
    /// `auto/N`, or `auto` (the count from Slurm too).
    Auto(Option<u64>),
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardSpec::Fixed(s) => write!(f, "{}/{}", s.index(), s.count()),
            ShardSpec::Auto(Some(n)) => write!(f, "auto/{n}"),
            ShardSpec::Auto(None) => f.write_str("auto"),
        }
    }
}

/// Parses `I/N`, `auto/N` or `auto`.
pub fn parse_shard(s: &str) -> Result<ShardSpec, String> {
    let usage = "write I/N (this is instance I of N, counting from 0), auto/N or auto";
    let (index, count) = match s.split_once('/') {
        Some((i, n)) => (i.trim(), Some(n.trim())),
        None => (s.trim(), None),
    };
    let count = match count {
        None => None,
        Some(n) => match n.parse::<u64>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("{n:?} is not a number of instances; {usage}")),
        },
    };
    if index == "auto" {
        return Ok(ShardSpec::Auto(count));
    }
    let Some(count) = count else {
        return Err(format!("{s:?} names no instance count; {usage}"));
    };
    let Ok(index) = index.parse::<u64>() else {
        return Err(format!("{index:?} is not an instance index; {usage}"));
    };
    Shard::new(index, count)
        .map(ShardSpec::Fixed)
        .ok_or_else(|| {
            format!(
                "instance {index} of {count} does not exist: indices count from 0, so use 0 to {}",
                count - 1
            )
        })
}

impl ShardSpec {
    /// The shard, reading the scheduler's variables for `auto` through
    /// `var`. The error is the one line to print after `--shard SPEC: `.
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let count = match *self {
            ShardSpec::Fixed(shard) => return Ok(shard),
            ShardSpec::Auto(count) => count,
        };
        let number = |name: &str| -> Result<Option<u64>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name}={v:?} is not a whole number")),
            }
        };
        let (index, count) = if let Some(i) = number(K8S_INDEX)? {
            let Some(n) = count else {
                return Err(format!(
                    "{K8S_INDEX} gives this pod's index but not how many there are; \
                     write --shard auto/N with N the Job's completions"
                ));
            };
            (i, n)
        } else if let Some(id) = number(SLURM_INDEX)? {
            // `--array=M-X:S` numbers tasks M, M+S, …: the index counts them.
            let min = number(SLURM_MIN)?.unwrap_or(0);
            let step = number(SLURM_STEP)?.unwrap_or(1).max(1);
            let i = id
                .checked_sub(min)
                .filter(|off| off % step == 0)
                .map(|off| off / step)
                .ok_or_else(|| {
                    format!(
                        "{SLURM_INDEX}={id} is not on the array's range from {min} by {step}; \
                         submit a plain range such as --array=0-{}",
                        count.map_or("(N-1)".to_string(), |n| (n.max(1) - 1).to_string())
                    )
                })?;
            let n = match (count, number(SLURM_COUNT)?) {
                (Some(n), _) | (None, Some(n)) => n,
                (None, None) => {
                    return Err(format!(
                        "{SLURM_INDEX} is set but {SLURM_COUNT} is not; write --shard auto/N"
                    ))
                }
            };
            (i, n)
        } else {
            return Err(format!(
                "neither {K8S_INDEX} (a Kubernetes Indexed Job's pods) nor {SLURM_INDEX} (a \
                 Slurm job array's tasks) is set; run it there, or give the index: --shard I/{}",
                count.map_or("N".to_string(), |n| n.to_string())
            ));
        };
        Shard::new(index, count).ok_or_else(|| {
            format!("this instance's index {index} is not below the instance count {count}")
        })
    }
}

/// `--start-at`: Unix seconds with an optional fraction, or RFC 3339.
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let usage = "give Unix seconds (1764000000.5) or an RFC 3339 time (2026-11-24T12:00:00Z)";
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if !(secs.is_finite() && secs >= 0.0) || secs > 1e11 {
            return Err(format!("{s:?} is not a time; {usage}"));
        }
        return Ok(UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    let parsed = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("{s:?} is not a time ({e}); {usage}"))?;
    let nanos = parsed.unix_timestamp_nanos();
    u64::try_from(nanos)
        .map(|n| UNIX_EPOCH + Duration::from_nanos(n))
        .map_err(|_| format!("{s:?} is before 1970; {usage}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn shard_specs() {
        assert_eq!(
            parse_shard("1/3"),
            Ok(ShardSpec::Fixed(Shard::new(1, 3).unwrap()))
        );
        assert_eq!(parse_shard("auto/4"), Ok(ShardSpec::Auto(Some(4))));
        assert_eq!(parse_shard("auto"), Ok(ShardSpec::Auto(None)));
        let e = parse_shard("3/3").unwrap_err();
        assert!(e.contains("use 0 to 2"), "{e}");
        for bad in ["3", "a/3", "1/0", "1/x", "-1/3"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_reads_the_scheduler() {
        let k8s = [(K8S_INDEX, "2")];
        assert_eq!(
            ShardSpec::Auto(Some(3)).resolve(env(&k8s)),
            Ok(Shard::new(2, 3).unwrap())
        );
        let e = ShardSpec::Auto(None).resolve(env(&k8s)).unwrap_err();
        assert!(e.contains("--shard auto/N"), "{e}");
        let slurm = [(SLURM_INDEX, "3"), (SLURM_COUNT, "3"), (SLURM_MIN, "1")];
        assert_eq!(
            ShardSpec::Auto(None).resolve(env(&slurm)),
            Ok(Shard::new(2, 3).unwrap())
        );
        let stepped = [(SLURM_INDEX, "4"), (SLURM_COUNT, "3"), (SLURM_STEP, "2")];
        assert_eq!(
            ShardSpec::Auto(None).resolve(env(&stepped)),
            Ok(Shard::new(2, 3).unwrap())
        );
        let odd = [(SLURM_INDEX, "3"), (SLURM_COUNT, "3"), (SLURM_STEP, "2")];
        let e = ShardSpec::Auto(None).resolve(env(&odd)).unwrap_err();
        assert!(e.contains("--array=0-(N-1)"), "{e}");
        let e = ShardSpec::Auto(Some(3)).resolve(env(&[])).unwrap_err();
        assert!(
            e.contains(K8S_INDEX) && e.contains(SLURM_INDEX) && e.contains("--shard I/3"),
            "{e}"
        );
        let e = ShardSpec::Auto(Some(3))
            .resolve(env(&[(K8S_INDEX, "5")]))
            .unwrap_err();
        assert!(e.contains("index 5"), "{e}");
    }

    #[test]
    fn start_times() {
        let at = |s| parse_start_at(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap());
        assert_eq!(
            at("1764000000.5"),
            Ok(Duration::from_millis(1_764_000_000_500))
        );
        assert_eq!(
            at("2026-11-24T12:00:00Z"),
            Ok(Duration::from_secs(1_795_521_600))
        );
        assert_eq!(
            at("2026-11-24T13:00:00.25+01:00"),
            Ok(Duration::from_millis(1_795_521_600_250))
        );
        for bad in ["soon", "-5", "2026-11-24", "nan"] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
    }
}
