//! Arrival processes and rate profiles against ground truth: Poisson
//! arrivals have exponential gaps at the requested rate and repeat from
//! their seed, even arrivals have none of that spread, a profile's count
//! of intended requests is its integral, and a run under either says what
//! it did in its banner and its JSON document.

use std::time::Duration;

use crate::common::judged::*;
use crate::common::*;
use metron::cli::profile::load_profile_file;
use metron::clock::Nanos;
use metron::schedule::{Arrivals, Load, Phase, Process, Profile, Share, Spacing};

/// The run's -R 2000 for 3 s with seed 7, and longer runs with other
/// seeds: gaps average 1/R, spread as an exponential's (CV 1, and a share
/// e^-1 of them longer than the mean), and each second holds about R.
#[test]
fn poisson_gaps_are_exponential_with_mean_one_over_the_rate() {
    let rate = 2000.0;
    for (seed, secs) in [(7, 3), (1, 20), (2, 20), (12345, 20)] {
        let p = poisson(rate, seed, secs * SEC);
        let times = times_before(&p, secs * SEC, 1_000_000);
        let expected = rate * secs as f64;
        let n = times.len() as f64;
        // A Poisson count: within 5 standard deviations of its mean.
        assert!(
            (n - expected).abs() < 5.0 * expected.sqrt(),
            "seed {seed}: {n} requests in {secs} s"
        );
        let g = gaps(&times);
        let (mean, cv) = mean_cv(&g);
        let want = 1e9 / rate;
        assert!(
            (mean / want - 1.0).abs() < 0.05,
            "seed {seed}: mean gap {mean:.0} ns, want {want:.0}"
        );
        assert!((0.9..=1.1).contains(&cv), "seed {seed}: CV {cv:.3}");
        let longer = g.iter().filter(|&&x| x > mean).count() as f64 / g.len() as f64;
        assert!(
            (longer - (-1.0f64).exp()).abs() < 0.03,
            "seed {seed}: {longer:.3} of the gaps are longer than the mean"
        );
        for s in 0..secs {
            let in_s = times
                .iter()
                .filter(|&&t| (s * SEC..(s + 1) * SEC).contains(&t))
                .count() as f64;
            assert!(
                (in_s - rate).abs() < 5.0 * rate.sqrt(),
                "seed {seed}: {in_s} requests in second {s}"
            );
        }
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "seed {seed}");
    }
}

/// A seed gives one schedule, however it is read: by a second process,
/// backwards, from a fork, or split into the lanes of two threads; another
/// seed gives another.
#[test]
fn the_same_seed_gives_the_same_schedule_and_another_seed_another() {
    let len = 3 * SEC;
    let a = times_before(&poisson(2000.0, 7, len), len, 100_000);
    let b = times_before(&poisson(2000.0, 7, len), len, 100_000);
    assert_eq!(a, b);
    // Backwards, from a fresh cursor and from a fork of a used one.
    let p = poisson(2000.0, 7, len);
    let mut c = p.cursor();
    let backwards: Vec<Nanos> = (0..a.len() as u64).rev().map(|k| c.time_of(k)).collect();
    assert!(backwards.iter().rev().eq(a.iter()));
    let mut fork = c.fork();
    assert_eq!(fork.time_of(a.len() as u64 / 2), a[a.len() / 2]);
    assert_eq!(c.index_before(len), a.len() as u64);
    // Two lanes, as two threads read them, interleave into the sequence.
    let mut lanes: Vec<Nanos> = (0..2)
        .flat_map(|lane| {
            let mut s = Share::new(&p, 0, lane, 2);
            std::iter::from_fn(move || {
                let t = s.peek();
                s.advance();
                Some(t)
            })
            .take_while(|&t| t < len)
            .take(100_000)
            .collect::<Vec<_>>()
        })
        .collect();
    lanes.sort_unstable();
    assert_eq!(lanes, a);
    // Another seed: as many requests or so, at other times.
    let other = times_before(&poisson(2000.0, 8, len), len, 100_000);
    assert_ne!(other, a);
    let shared = other.iter().filter(|t| a.binary_search(t).is_ok()).count();
    assert!(shared < other.len() / 100, "{shared} times in common");
}

/// Even arrivals have no spread: every gap is 1/R, to the nanosecond,
/// whether -R builds them or a profile does.
#[test]
fn constant_arrivals_have_no_spread() {
    let len = 3 * SEC;
    let from_rate = match Load::constant(2000.0) {
        Load::Open(a) => times_before(a.as_ref(), len, 100_000),
        Load::Closed => unreachable!(),
    };
    let profiled = Process::new(Profile::constant(2000.0), Spacing::Even, len);
    let from_profile = times_before(&profiled, len, 100_000);
    for times in [&from_rate, &from_profile] {
        assert_eq!(times.len(), 6000);
        let (mean, cv) = mean_cv(&gaps(times));
        assert_eq!(mean, 500_000.0);
        assert!(cv < 1e-3, "CV {cv}");
        assert!(gaps(times).iter().all(|&g| g == 500_000.0));
    }
}

/// Even arrivals under a profile: as many requests as its integral,
/// within one, in the whole and up to the start of every phase, and none
/// after its end. Holds, ramps up and down, a ramp from 0, a pause, and a
/// file's rows.
#[test]
fn the_count_of_intended_requests_is_the_integral() {
    let dir = TempDir::new("arrivals-integral");
    let file = dir.file("rates.csv", "seconds,rate\n0,0\n1,400\n1,100\n3,100\n");
    let mut profiles: Vec<(String, Vec<Phase>)> = [
        "1k:2s,1k-5k:4s",
        "0:1s,500:1s",
        "0-1k:2s",
        "300:1s,300-0:1s",
        "0-600:1s,0:500ms,200-0:1500ms,0.5:4s",
        "7:1s,1k-10:2s,10-1k:2s",
    ]
    .iter()
    .map(|s| (s.to_string(), phases(s)))
    .collect();
    let from_file = load_profile_file(std::path::Path::new(&file)).unwrap();
    profiles.push(("@rates.csv".into(), from_file));
    for (spec, phases) in profiles {
        let profile = Profile::new(phases);
        let length = profile.length().expect("a profile ends");
        let total = profile.total();
        let starts = profile.starts().to_vec();
        // The integral at each phase's start, from the phases' own rates.
        let mut before = vec![0.0];
        for ph in profile.phases() {
            let last = *before.last().unwrap();
            before.push(last + (ph.from + ph.to) / 2.0 * ph.length as f64 / 1e9);
        }
        assert!((before.last().unwrap() - total).abs() < 1e-6, "{spec}");
        let p = Process::new(profile, Spacing::Even, length);
        let times = times_before(&p, Nanos::MAX, 1_000_000);
        let n = times.len() as f64;
        assert!(
            (n - total).abs() <= 1.0,
            "{spec}: {n} requests, integral {total}"
        );
        assert!(
            times.iter().all(|&t| t < length),
            "{spec}: a time past the end"
        );
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{spec}");
        let mut c = p.cursor();
        assert_eq!(c.index_before(Nanos::MAX), times.len() as u64, "{spec}");
        for (i, &start) in starts.iter().enumerate() {
            let due = times.partition_point(|&t| t < start) as f64;
            assert!(
                (due - before[i]).abs() <= 1.0,
                "{spec}: {due} due before phase {i}, integral {}",
                before[i]
            );
            assert_eq!(c.index_before(start), due as u64, "{spec}: phase {i}");
        }
        // Poisson arrivals under the same profile: the count is Poisson
        // with the integral as its mean.
        let random = Process::new(
            Profile::new(p.profile().unwrap().phases().to_vec()),
            Spacing::Poisson { seed: 7 },
            length,
        );
        let n = times_before(&random, Nanos::MAX, 1_000_000).len() as f64;
        assert!(
            (n - total).abs() <= 5.0 * total.sqrt() + 1.0,
            "{spec}: {n} Poisson requests, integral {total}"
        );
    }
}

/// Nothing is due in a pause, and the first request after it is due as it
/// ends; a ramp from 0 puts request k where the integral reaches k.
#[test]
fn a_pause_sends_nothing_and_a_ramp_from_zero_follows_its_integral() {
    let p = Process::new(
        Profile::new(phases("200:1s,0:1s,200:1s")),
        Spacing::Even,
        3 * SEC,
    );
    let times = times_before(&p, Nanos::MAX, 10_000);
    let count = |a: Nanos, b: Nanos| times.iter().filter(|&&t| (a..b).contains(&t)).count();
    assert_eq!(
        (count(0, SEC), count(SEC, 2 * SEC), count(2 * SEC, 3 * SEC)),
        (200, 0, 200)
    );
    assert_eq!(times[200], 2 * SEC);
    // 0 to 1000/s over 2 s: the integral is 250 t², so request k is due
    // at sqrt(k / 250) s.
    let ramp = Process::new(Profile::new(phases("0-1k:2s")), Spacing::Even, 2 * SEC);
    let times = times_before(&ramp, Nanos::MAX, 10_000);
    assert_eq!(times.len(), 1000);
    for (k, &t) in times.iter().enumerate() {
        let want = (k as f64 / 250.0).sqrt() * 1e9;
        assert!(
            (t as f64 - want).abs() <= 1000.0,
            "request {k}: {t} ns, want {want:.0}"
        );
    }
}

/// The gaps shrink over a ramp up and grow over a ramp down, and each is
/// one over the rate where it falls; Poisson gaps do so on average.
#[test]
fn ramps_are_monotone() {
    let up = Process::new(Profile::new(phases("100-2k:2s")), Spacing::Even, 2 * SEC);
    let times = times_before(&up, Nanos::MAX, 10_000);
    let g = gaps(&times);
    // Rounding to the nanosecond may make a later gap 1 ns longer.
    assert!(
        g.windows(2).all(|w| w[1] <= w[0] + 1.0),
        "an up-ramp's gap grew"
    );
    assert!(
        g[0] > 10.0 * g[g.len() - 1],
        "{} .. {}",
        g[0],
        g[g.len() - 1]
    );
    let profile = up.profile().unwrap();
    for k in (0..g.len()).step_by(97) {
        let rate = profile.rate_at(times[k]);
        let want = 1e9 / rate;
        assert!(
            (g[k] / want - 1.0).abs() < 0.06,
            "gap {k}: {} ns at {rate:.0}/s",
            g[k]
        );
    }
    let down = Process::new(Profile::new(phases("2k-100:2s")), Spacing::Even, 2 * SEC);
    let g = gaps(&times_before(&down, Nanos::MAX, 10_000));
    assert!(
        g.windows(2).all(|w| w[1] + 1.0 >= w[0]),
        "a down-ramp's gap shrank"
    );
    // Poisson under a ramp up: the mean gap of each quarter shrinks.
    let random = Process::new(
        Profile::new(phases("500-8k:4s")),
        Spacing::Poisson { seed: 7 },
        4 * SEC,
    );
    let times = times_before(&random, Nanos::MAX, 100_000);
    let quarter_means: Vec<f64> = (0..4)
        .map(|q| {
            let inside: Vec<Nanos> = times
                .iter()
                .copied()
                .filter(|t| (q * SEC..(q + 1) * SEC).contains(t))
                .collect();
            mean_cv(&gaps(&inside)).0
        })
        .collect();
    assert!(
        quarter_means.windows(2).all(|w| w[1] < w[0]),
        "{quarter_means:?}"
    );
}

/// A run with Poisson arrivals: the banner names the seed, the books
/// balance, the JSON says how requests were spread, and the requests due
/// are exactly those the seed's schedule puts in the run.
#[test]
fn a_poisson_run_names_its_seed_and_follows_its_schedule() {
    let _g = serial();
    let srv = recording();
    let dir = TempDir::new("arrivals-run");
    let json = dir.file("run.json", "");
    let o = metron(&[
        "-t2",
        "-c20",
        "-R2000",
        "-d3s",
        "--arrival",
        "poisson",
        "--seed",
        "7",
        "--json",
        &json,
        &url(&srv, "/"),
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(
        out.lines().any(|l| l == "  Poisson arrivals (--seed 7)"),
        "{out}"
    );
    let doc = run_document(std::path::Path::new(&json));
    let c = &doc.counters;
    assert!(c.balanced(), "{c:?}");
    assert_eq!(doc.config.arrival, Some(metron::schedule::Arrival::Poisson));
    assert_eq!(doc.config.arrival_seed, Some(7));
    assert_eq!(doc.config.rate, Some(2000.0));
    let mut schedule = poisson(2000.0, 7, 3 * SEC).cursor();
    assert_eq!(c.due, schedule.index_before(3 * SEC), "{c:?}");
    assert_eq!(c.errors.lost_requests() + c.errors.status, 0, "{c:?}");
    assert!(c.completed + 20 >= c.due, "{c:?}");
    // The server answered every completed request and received no more
    // than were sent.
    let received = srv.stats().requests();
    assert!(
        received >= c.completed && received <= c.completed + c.in_flight,
        "server {received}, {c:?}"
    );
}

/// Without --seed the seed comes from the clock, and the banner prints it
/// so that the run can be repeated: the schedule of that seed is the one
/// the run followed.
#[test]
fn a_seed_from_the_clock_is_printed_and_is_the_one_used() {
    let _g = serial();
    let srv = server(metron::serve::ServeConfig::default());
    let (o, text) = bench_at(
        &["-t1", "-c4", "-R500", "-d1s", "--arrival", "poisson"],
        &url(&srv, "/"),
    );
    assert_balanced(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("  Poisson arrivals (--seed "))
        .unwrap_or_else(|| panic!("no arrival line: {text}"));
    let seed: u64 = line
        .trim_start_matches("  Poisson arrivals (--seed ")
        .trim_end_matches(')')
        .parse()
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    let mut schedule = poisson(500.0, seed, SEC).cursor();
    assert_eq!(
        o.stats.counters.due,
        schedule.index_before(SEC),
        "seed {seed}"
    );
}

/// Constant arrivals: no arrival line in the banner, and the JSON says
/// `constant` without a seed.
#[test]
fn a_constant_run_says_so_in_its_document() {
    let _g = serial();
    let srv = server(metron::serve::ServeConfig::default());
    let dir = TempDir::new("arrivals-constant");
    let json = dir.file("run.json", "");
    let o = metron(&[
        "-t1",
        "-c4",
        "-R500",
        "-d1s",
        "--arrival",
        "constant",
        "--json",
        &json,
        &url(&srv, "/"),
    ]);
    assert_status(&o, 0);
    assert!(!stdout(&o).contains("arrivals"), "{}", stdout(&o));
    let doc = run_document(std::path::Path::new(&json));
    assert_eq!(
        doc.config.arrival,
        Some(metron::schedule::Arrival::Constant)
    );
    assert_eq!(doc.config.arrival_seed, None);
    assert_eq!(doc.counters.due, 500);
    assert!(doc.counters.balanced());
}

/// A run under a profile: its phases in the banner, the report and the
/// JSON, each with the requests intended in it.
#[test]
fn a_profile_run_breaks_out_its_phases() {
    let _g = serial();
    let srv = server(metron::serve::ServeConfig::default());
    let dir = TempDir::new("arrivals-profile");
    let json = dir.file("run.json", "");
    let o = metron_within(
        &[
            "-t2",
            "-c20",
            "--rate-profile",
            "200:1s,200-800:2s",
            "--json",
            &json,
            &url(&srv, "/"),
        ],
        Duration::from_secs(30),
    );
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l.starts_with("  rate profile 200:1s,200-800:2s")),
        "{out}"
    );
    assert!(out.contains("  Phases ("), "{out}");
    let doc = run_document(std::path::Path::new(&json));
    let c = &doc.counters;
    assert!(c.balanced(), "{c:?}");
    // -d defaults to the profile's 3 s; 200 + 1000 requests in it.
    assert_eq!(doc.config.duration_s, 3.0);
    assert!(c.due.abs_diff(1200) <= 1, "{c:?}");
    assert_eq!(doc.config.rate, Some(400.0));
    let p = &doc.phases;
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(
        (p[0].label.as_str(), p[1].label.as_str()),
        ("200:1s", "200-800:2s")
    );
    assert_eq!(p[0].due + p[1].due, c.due);
    assert!(p[0].due.abs_diff(200) <= 2, "{:?}", p[0].due);
    assert!(p[1].due.abs_diff(1000) <= 2, "{:?}", p[1].due);
    assert_eq!((p[0].start_s, p[0].length_s), (0.0, 1.0));
    assert_eq!((p[1].start_s, p[1].length_s), (1.0, 2.0));
    assert_eq!(
        p.iter().map(|x| x.completed).sum::<u64>(),
        c.completed,
        "{p:?}"
    );
    let rp = &doc.config.rate_profile;
    assert_eq!(rp.len(), 2);
    assert_eq!((rp[1].from, rp[1].to, rp[1].start_s), (200.0, 800.0, 1.0));
}

/// Profiles and arrivals that cannot run are one-line errors naming what
/// to change.
#[test]
fn profile_and_arrival_mistakes_are_named() {
    let srv = server(metron::serve::ServeConfig::default());
    let u = url(&srv, "/");
    let e = usage_error(&metron(&["-d", "5s", "--rate-profile", "1k:2s", &u]), 1);
    assert!(
        e.contains("-d 5s") && e.contains("--rate-profile") && e.contains("2s"),
        "{e}"
    );
    let dir = TempDir::new("arrivals-mistakes");
    let bad = dir.file("bad.csv", "0,100\n1,100\n2,abc\n");
    let e = usage_error(&metron(&["--rate-profile", &format!("@{bad}"), &u]), 1);
    assert!(e.contains(&format!("{bad}:3:")), "{e}");
    assert!(e.contains("\"2,abc\""), "{e}");
    let missing = format!("{bad}.missing");
    let e = usage_error(&metron(&["--rate-profile", &format!("@{missing}"), &u]), 1);
    assert!(e.contains(&missing) && e.contains("cannot read it"), "{e}");
    let e = usage_error(&metron(&["--rate-profile", "1k", &u]), 2);
    assert!(e.contains("\"1k\" has no duration"), "{e}");
    let e = usage_error(&metron(&["-R", "100", "--rate-profile", "1k:2s", &u]), 2);
    assert!(e.contains("--rate-profile") && e.contains("--rate"), "{e}");
    let e = usage_error(&metron(&["--arrival", "poisson", "-d1s", &u]), 1);
    assert!(e.contains("--arrival poisson") && e.contains("-R"), "{e}");
    let e = usage_error(&metron(&["--arrival", "sometimes", "-d1s", &u]), 2);
    assert!(e.contains("sometimes"), "{e}");
    let e = usage_error(&metron(&["-R", "100", "--seed", "7", "-d1s", &u]), 1);
    assert!(
        e.contains("--seed") && e.contains("--arrival poisson"),
        "{e}"
    );
    // Nothing reached the server.
    assert_eq!(srv.stats().requests(), 0);
}

/// A profile of more phases than the report breaks out (a rate file of
/// many rows) says the table is left out and why, in the run's report and
/// in `metron report` of its document, rather than dropping it silently.
#[test]
fn a_profile_of_too_many_phases_says_its_table_is_left_out() {
    let _g = serial();
    let srv = server(metron::serve::ServeConfig::default());
    let dir = TempDir::new("arrivals-many-phases");
    let json = dir.file("run.json", "");
    let phases = metron::stats::phase::MAX_PHASES + 1;
    let profile = vec!["100:40ms"; phases].join(",");
    let o = metron_within(
        &[
            "-t1",
            "-c4",
            "--rate-profile",
            &profile,
            "--json",
            &json,
            &url(&srv, "/"),
        ],
        Duration::from_secs(30),
    );
    assert_status(&o, 0);
    let line = format!("  Phases: no table for a profile of {phases} phases (at most ");
    let out = stdout(&o);
    assert!(out.contains(&line), "{out}");
    assert!(!out.contains("  Phases ("), "{out}");
    let again = metron(&["report", &json]);
    assert_status(&again, 0);
    assert!(stdout(&again).contains(&line), "{}", stdout(&again));
}
