//! `--rate-profile`: holds and linear ramps as typed
//! (`1k:30s,1k-5k:60s,5k:30s`), or `@FILE` with `seconds,rate` rows.
//!
//! The inline form is checked while the flags are parsed, so a mistake in
//! it is a usage error naming the phase; a file is read with the rest of
//! the configuration.

use std::path::{Path, PathBuf};

use crate::clock::{nanos, Nanos};
use crate::schedule::{Phase, MAX_RATE};
use crate::units::{parse_duration, parse_si_f64};

/// What `--rate-profile` named.
#[derive(Clone, Debug, PartialEq)]
pub enum ProfileSpec {
    Phases(Vec<Phase>),
    File(PathBuf),
}

/// Parses the flag's value (clap's value parser).
pub fn parse_profile(spec: &str) -> Result<ProfileSpec, String> {
    if let Some(file) = spec.strip_prefix('@') {
        if file.is_empty() {
            return Err("'@' needs a file name, e.g. --rate-profile @rates.csv".into());
        }
        return Ok(ProfileSpec::File(PathBuf::from(file)));
    }
    let phases = spec
        .split(',')
        .map(|term| parse_phase(term.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    check_phases(&phases)?;
    Ok(ProfileSpec::Phases(phases))
}

/// `RATE:DURATION` (a hold) or `FROM-TO:DURATION` (a linear ramp).
fn parse_phase(term: &str) -> Result<Phase, String> {
    let form = "write a hold as RATE:DURATION (1k:30s) or a ramp as FROM-TO:DURATION (1k-5k:60s)";
    let Some((rates, length)) = term.rsplit_once(':') else {
        return Err(format!("{term:?} has no duration; {form}"));
    };
    let rate = |s: &str| parse_si_f64(s).map_err(|e| format!("{term:?}: {e}; {form}"));
    let (from, to) = match rates.split_once('-') {
        Some((a, b)) => (rate(a)?, rate(b)?),
        None => {
            let r = rate(rates)?;
            (r, r)
        }
    };
    let length = parse_duration(length).map_err(|e| format!("{term:?}: {e}; {form}"))?;
    if length.is_zero() {
        return Err(format!(
            "{term:?} lasts no time; give it a duration above zero"
        ));
    }
    Ok(Phase {
        label: term.to_string(),
        length: nanos(length),
        from,
        to,
    })
}

/// Rates the schedule can keep, and some request due at all.
fn check_phases(phases: &[Phase]) -> Result<(), String> {
    if let Some(p) = phases.iter().find(|p| p.from.max(p.to) > MAX_RATE) {
        return Err(format!(
            "{:?} goes above 1G requests/s, where intended times would be less than 1 ns apart",
            p.label
        ));
    }
    if phases.iter().all(|p| p.from == 0.0 && p.to == 0.0) {
        return Err("every rate is 0, so no request would ever be due".into());
    }
    Ok(())
}

/// Reads `seconds,rate` rows: the rate at each time, linear in between
/// (two rows at the same time make a step), from 0 to the last row's
/// time. Blank lines, `#` comments and a header row are skipped.
pub fn load_profile_file(path: &Path) -> Result<Vec<Phase>, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut points: Vec<(Nanos, f64, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |why: String| format!("{name}:{}: {why}", i + 1);
        let fields: Vec<&str> = line.split([',', ';', '\t']).map(str::trim).collect();
        let parsed = match fields.as_slice() {
            [t, r] => t.parse::<f64>().ok().zip(parse_si_f64(r).ok()),
            _ => None,
        };
        let Some((secs, rate)) = parsed else {
            if points.is_empty() && fields.iter().any(|f| f.chars().any(char::is_alphabetic)) {
                continue; // a header row
            }
            return Err(at(format!(
                "{line:?} is not a row of two numbers, seconds,rate (e.g. 30,1000)"
            )));
        };
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(at(format!(
                "{secs} is not a time in seconds from the start"
            )));
        }
        let t = (secs * 1e9).round() as Nanos;
        match points.last() {
            None if t != 0 => {
                return Err(at(
                    "the first row must be at second 0, where the run starts".into(),
                ))
            }
            Some(&(last, _, _)) if t < last => {
                return Err(at(format!("second {secs} comes before the row above it")))
            }
            _ => {}
        }
        points.push((t, rate, i + 1));
    }
    if points.len() < 2 {
        return Err(format!(
            "{name}: it needs at least two rows, seconds,rate, from 0 to the end (e.g. 0,100 and 60,100)"
        ));
    }
    let phases: Vec<Phase> = points
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| {
            let ((t0, from, _), (t1, to, _)) = (w[0], w[1]);
            Phase {
                label: format!("{}-{}s", trim(t0 as f64 / 1e9), trim(t1 as f64 / 1e9)),
                length: t1 - t0,
                from,
                to,
            }
        })
        .collect();
    if phases.is_empty() {
        return Err(format!(
            "{name}: every row is at second 0, so the profile lasts no time"
        ));
    }
    check_phases(&phases).map_err(|e| format!("{name}: {e}"))?;
    Ok(phases)
}

/// A number of seconds as short as it reads: `30`, `2.5`.
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Nanos = 1_000_000_000;

    fn phases(spec: &str) -> Vec<Phase> {
        match parse_profile(spec).unwrap() {
            ProfileSpec::Phases(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn holds_and_ramps() {
        let p = phases("1k:30s, 1k-5k:60s,5k:30s");
        assert_eq!(p.len(), 3);
        assert_eq!(
            (p[1].from, p[1].to, p[1].length),
            (1000.0, 5000.0, 60 * SEC)
        );
        assert_eq!(p[1].label, "1k-5k:60s");
        assert_eq!(phases("0.5:2m")[0].length, 120 * SEC);
        assert_eq!(
            parse_profile("@rates.csv"),
            Ok(ProfileSpec::File("rates.csv".into()))
        );
    }

    #[test]
    fn mistakes_name_the_phase() {
        for (spec, says) in [
            ("1k", "\"1k\" has no duration"),
            ("1k:0s", "lasts no time"),
            ("abc:10s", "\"abc:10s\""),
            ("1k:10x", "\"1k:10x\""),
            ("0:10s,0-0:5s", "every rate is 0"),
            ("2G:1s", "above 1G"),
            ("@", "needs a file name"),
        ] {
            let e = parse_profile(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn a_file_of_rows() {
        let dir = std::env::temp_dir().join(format!("metron-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("rates.csv");
        std::fs::write(&f, "seconds,rate\n0,100\n# ramp\n10,100\n10,500\n20,1k\n").unwrap();
        let p = load_profile_file(&f).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].from, p[0].to, p[0].length), (100.0, 100.0, 10 * SEC));
        assert_eq!((p[1].from, p[1].to), (500.0, 1000.0));
        assert_eq!(p[1].label, "10-20s");
        std::fs::write(&f, "0,100\n5,x\n").unwrap();
        let e = load_profile_file(&f).unwrap_err();
        assert!(
            e.ends_with(":2: \"5,x\" is not a row of two numbers, seconds,rate (e.g. 30,1000)"),
            "{e}"
        );
        std::fs::write(&f, "1,100\n5,100\n").unwrap();
        assert!(load_profile_file(&f).unwrap_err().contains("second 0"));
        std::fs::write(&f, "0,100\n").unwrap();
        assert!(load_profile_file(&f)
            .unwrap_err()
            .contains("at least two rows"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
