//! Faults: the ways a failing server answers, which responses get them, and
//! the exact bytes each one writes.
//!
//! A load generator is pointed at servers that break, so the built-in
//! target can break on purpose: close before or in the middle of a
//! response, reset, go silent, send garbage, a malformed status line, a bad
//! chunk size, a body shorter than its length, a head too large to accept,
//! or a valid response one byte at a time. [`Fault`] names the behaviour,
//! [`FaultPlan`] says which responses (or connections) get it, and
//! [`After`] is how the connection goes on: keep going, close, reset, or
//! hold it silently. What goes on the wire before that is `fault_bytes`'s.
//!
//! Which responses are picked is a pure function of their position, so a
//! run can be repeated exactly: every Nth one, or the kth one with
//! probability p by the kth output of a SplitMix64 sequence from a seed.
//! No lock and no shared RNG state: just one counter per server.

/// What a faulty answer does instead of a good response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Reads the request, then closes without writing a byte.
    CloseBeforeHead,
    /// Writes the first half of the response head, then closes.
    CloseMidHead,
    /// Writes the head and the first half of the body, then closes. (A
    /// response without a body, to HEAD or a 204, is cut mid-head.)
    CloseMidBody,
    /// Resets the connection (RST, through `SO_LINGER` 0), no byte written.
    Reset,
    /// Never answers: holds the connection open and silent until the
    /// client gives up (every later request on it is ignored too).
    NeverAnswer,
    /// Writes bytes that are not HTTP at all, then closes.
    Garbage,
    /// Writes a valid response whose head is over 1 MiB, then closes.
    HugeHead,
    /// Writes a response whose status line is malformed, then closes.
    BadStatusLine,
    /// Writes a chunked response with a chunk size that is not hex, then
    /// closes.
    BadChunk,
    /// Writes one body byte fewer than its Content-Length says, then
    /// closes. (A response without a body loses the last byte of its head.)
    ShortBody,
    /// Writes the good response one byte at a time, with a pause
    /// (`--trickle-interval`) between bytes.
    Trickle,
}

/// Every fault with its name on the command line and in `/fault/NAME`.
const NAMES: [(Fault, &str); 11] = [
    (Fault::CloseBeforeHead, "close-before-head"),
    (Fault::CloseMidHead, "close-mid-head"),
    (Fault::CloseMidBody, "close-mid-body"),
    (Fault::Reset, "reset"),
    (Fault::NeverAnswer, "never-answer"),
    (Fault::Garbage, "garbage"),
    (Fault::HugeHead, "huge-head"),
    (Fault::BadStatusLine, "bad-status-line"),
    (Fault::BadChunk, "bad-chunk"),
    (Fault::ShortBody, "short-body"),
    (Fault::Trickle, "trickle"),
];

impl Fault {
    /// Every fault, in the order `--help` lists them.
    pub fn all() -> impl Iterator<Item = Fault> {
        NAMES.iter().map(|(f, _)| *f)
    }

    /// The fault called `name`, as written after `--fault` or `/fault/`.
    pub fn from_name(name: &str) -> Option<Fault> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(f, _)| *f)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("", |(_, n)| n)
    }

    /// Whether the fault has an HTTP/2 form (README, Faults). Those that do
    /// not are refused with `--http2`, and answered 400 when a stream asks
    /// for them by route.
    pub fn has_http2_form(self) -> bool {
        self.no_http2_form().is_none()
    }

    /// Why the fault has no HTTP/2 form, if it has none.
    pub fn no_http2_form(self) -> Option<&'static str> {
        match self {
            Fault::CloseMidHead => Some("a header block is sent whole"),
            Fault::BadChunk => Some("HTTP/2 has no chunked coding"),
            _ => None,
        }
    }

    /// Why the fault has no HTTP/3 form, if it has none: the same faults
    /// as over HTTP/2, for the same reasons.
    pub fn no_http3_form(self) -> Option<&'static str> {
        match self {
            Fault::CloseMidHead => Some("a header block is sent whole"),
            Fault::BadChunk => Some("HTTP/3 has no chunked coding"),
            _ => None,
        }
    }

    /// What happens to the connection once the fault's bytes are written,
    /// given whether the response it replaces would have closed it.
    pub(crate) fn after(self, base_closes: bool) -> After {
        match self {
            Fault::Reset => After::Reset,
            Fault::NeverAnswer => After::Hold,
            Fault::Trickle if !base_closes => After::KeepOpen,
            _ => After::Close,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a connection goes on after a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The fault was a valid (if slow) response: serve the next request.
    KeepOpen,
    /// Close politely: FIN, then read on for a moment.
    Close,
    /// Close with a reset.
    Reset,
    /// Write nothing more and read until the client closes.
    Hold,
}

/// A probability above 0 and at most 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probability(f64);

// Never NaN: `new` refuses it.
impl Eq for Probability {}

impl Probability {
    pub fn new(p: f64) -> Result<Probability, String> {
        if p > 0.0 && p <= 1.0 {
            Ok(Probability(p))
        } else {
            Err(format!(
                "a probability must be above 0 and at most 1, not {p}"
            ))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

/// Which of the responses (or connections) get the fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The Nth, 2Nth, 3Nth, … (`Every(1)` is every one).
    Every(u64),
    /// Each one independently with probability `p`, drawn from a sequence
    /// seeded with `seed`, so the same seed picks the same positions.
    Chance { p: Probability, seed: u64 },
}

impl Pick {
    /// Whether the `k`th one (from 1) is picked.
    pub fn picks(&self, k: u64) -> bool {
        match *self {
            Pick::Every(n) => n > 0 && k % n == 0,
            Pick::Chance { p, seed } => unit_draw(seed, k) < p.get(),
        }
    }
}

/// What a [`FaultPlan`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Per {
    /// Responses, server-wide: each picked response is faulty.
    #[default]
    Response,
    /// Accepted connections: every response on a picked connection is
    /// faulty.
    Connection,
}

impl Per {
    /// Each unit as `--fault-per` names it, with its one-line help.
    pub const CHOICES: [(Per, &'static str, &'static str); 2] = [
        (
            Per::Response,
            "response",
            "Responses, server-wide: each picked response is faulty",
        ),
        (
            Per::Connection,
            "connection",
            "Accepted connections: every response on a picked connection is faulty",
        ),
    ];
}

/// Which fault, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    pub fault: Fault,
    pub pick: Pick,
    pub per: Per,
}

impl FaultPlan {
    /// `fault` on every `n`th response.
    pub fn every(fault: Fault, n: u64) -> FaultPlan {
        FaultPlan {
            fault,
            pick: Pick::Every(n),
            per: Per::Response,
        }
    }

    /// `fault` on each response with probability `p`.
    pub fn chance(fault: Fault, p: Probability, seed: u64) -> FaultPlan {
        FaultPlan {
            fault,
            pick: Pick::Chance { p, seed },
            per: Per::Response,
        }
    }

    /// The same plan counting connections instead of responses.
    pub fn per_connection(self) -> FaultPlan {
        FaultPlan {
            per: Per::Connection,
            ..self
        }
    }

    /// Whether the `k`th response or connection (from 1) gets the fault.
    pub fn picks(&self, k: u64) -> bool {
        self.pick.picks(k)
    }

    /// The plan the `--fault*` flags describe, if any.
    pub fn from_flags(
        spec: Option<FaultSpec>,
        every: Option<u64>,
        per: Option<Per>,
        seed: Option<u64>,
    ) -> Result<Option<FaultPlan>, String> {
        let Some(spec) = spec else {
            let without = [
                (every.is_some(), "--fault-every"),
                (per.is_some(), "--fault-per"),
                (seed.is_some(), "--fault-seed"),
            ];
            return match without.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(format!("{flag} needs --fault (which fault to inject)")),
                None => Ok(None),
            };
        };
        let pick = match (spec.chance, every, seed) {
            (Some(_), Some(_), _) => {
                return Err(format!(
                    "--fault {spec} and --fault-every both say how often; give one of them"
                ))
            }
            (None, _, Some(_)) => {
                return Err("--fault-seed only applies to a probability, \
                            as in --fault reset:0.2"
                    .to_string())
            }
            (Some(p), None, seed) => Pick::Chance {
                p,
                seed: seed.unwrap_or(0),
            },
            (None, every, None) => Pick::Every(every.unwrap_or(1)),
        };
        Ok(Some(FaultPlan {
            fault: spec.fault,
            pick,
            per: per.unwrap_or_default(),
        }))
    }

    /// Rejects what a hand-built plan may hold but the flags cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.pick == Pick::Every(0) {
            return Err("--fault-every must be at least 1".to_string());
        }
        Ok(())
    }
}

/// The value of `--fault`: `NAME` or `NAME:P`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    pub fault: Fault,
    pub chance: Option<Probability>,
}

impl std::fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.chance {
            Some(p) => write!(f, "{}:{}", self.fault, p.get()),
            None => write!(f, "{}", self.fault),
        }
    }
}

/// Parses `--fault NAME[:P]`.
pub fn parse_fault(s: &str) -> Result<FaultSpec, String> {
    let (name, chance) = match s.split_once(':') {
        Some((name, p)) => (name, Some(p)),
        None => (s, None),
    };
    let Some(fault) = Fault::from_name(name) else {
        let names: Vec<_> = NAMES.iter().map(|(_, n)| *n).collect();
        return Err(format!(
            "unknown fault '{name}'; expected one of {}",
            names.join(", ")
        ));
    };
    let chance = match chance {
        None => None,
        Some(p) => Some(
            parse_probability(p)
                .map_err(|why| format!("in '{s}', the part after ':' {why}, e.g. {name}:0.2"))?,
        ),
    };
    Ok(FaultSpec { fault, chance })
}

/// Parses a probability P (0 < P <= 1), as in `--fault NAME:P`; the error
/// is a phrase to follow the value it was given for.
pub fn parse_probability(s: &str) -> Result<Probability, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Probability::new(p),
        _ => Err("must be a probability above 0 and at most 1".to_string()),
    }
}

/// The `k`th draw of the SplitMix64 sequence seeded with `seed`, as a
/// number in [0, 1). SplitMix64's state after k steps is `seed + k·γ`, so
/// any draw is computed directly from its position.
fn unit_draw(seed: u64, k: u64) -> f64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut z = seed.wrapping_add(k.wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits fill an f64's mantissa exactly.
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for fault in Fault::all() {
            assert_eq!(Fault::from_name(fault.name()), Some(fault));
        }
        assert_eq!(Fault::from_name("Reset"), None);
    }

    #[test]
    fn every_n_picks_the_nth() {
        let plan = FaultPlan::every(Fault::Reset, 3);
        let picked: Vec<u64> = (1..=10).filter(|&k| plan.picks(k)).collect();
        assert_eq!(picked, [3, 6, 9]);
        assert!((1..=5).all(|k| FaultPlan::every(Fault::Reset, 1).picks(k)));
    }

    #[test]
    fn chance_is_repeatable_and_near_its_probability() {
        let p = Probability::new(0.2).unwrap();
        let plan = FaultPlan::chance(Fault::Reset, p, 7);
        let picked: Vec<u64> = (1..=20).filter(|&k| plan.picks(k)).collect();
        let again: Vec<u64> = (1..=20).filter(|&k| plan.picks(k)).collect();
        assert_eq!(picked, again);
        let other = FaultPlan::chance(Fault::Reset, p, 8);
        let differs = (1..=100).any(|k| plan.picks(k) != other.picks(k));
        assert!(differs, "the seed changes the picks");
        let hits = (1..=100_000).filter(|&k| plan.picks(k)).count();
        assert!((19_000..21_000).contains(&hits), "{hits}");
        let always = FaultPlan::chance(Fault::Reset, Probability::new(1.0).unwrap(), 0);
        assert!((1..=1000).all(|k| always.picks(k)));
    }

    #[test]
    fn draws_are_splitmix64() {
        // SplitMix64 from state 0: its first output is 0xE220A8397B1DCDAF.
        let first = 0xE220_A839_7B1D_CDAFu64;
        assert_eq!(unit_draw(0, 1), (first >> 11) as f64 / (1u64 << 53) as f64);
    }

    #[test]
    fn fault_values_parse_or_say_why_not() {
        let ok = |s: &str| parse_fault(s).unwrap();
        assert_eq!(
            ok("reset"),
            FaultSpec {
                fault: Fault::Reset,
                chance: None
            }
        );
        assert_eq!(ok("trickle:0.5").chance, Some(Probability(0.5)));
        assert_eq!(ok("garbage:1").chance, Some(Probability(1.0)));
        assert_eq!(ok("bad-chunk:1e-3").chance, Some(Probability(0.001)));
        let cases = [
            (
                "nope",
                "unknown fault 'nope'; expected one of close-before-head, ",
            ),
            ("", "unknown fault ''"),
            ("Reset", "unknown fault 'Reset'"),
            ("reset:", "the part after ':' must be a probability"),
            ("reset:0", "above 0 and at most 1, e.g. reset:0.2"),
            ("reset:1.5", "in 'reset:1.5', the part after ':'"),
            ("reset:-0.1", "above 0"),
            ("reset:NaN", "above 0"),
            ("reset:20%", "must be a probability"),
            ("reset:0.2:3", "must be a probability"),
        ];
        for (value, want) in cases {
            let err = parse_fault(value).unwrap_err();
            assert!(err.contains(want), "{value:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn fault_flags_combine_or_say_why_not() {
        let reset = Some(parse_fault("reset").unwrap());
        let chance = Some(parse_fault("reset:0.25").unwrap());
        let plan = |spec, every, per, seed| FaultPlan::from_flags(spec, every, per, seed);
        assert_eq!(plan(None, None, None, None), Ok(None));
        assert_eq!(
            plan(reset, None, None, None),
            Ok(Some(FaultPlan::every(Fault::Reset, 1)))
        );
        assert_eq!(
            plan(reset, Some(3), Some(Per::Connection), None),
            Ok(Some(FaultPlan::every(Fault::Reset, 3).per_connection()))
        );
        let p = Probability::new(0.25).unwrap();
        assert_eq!(
            plan(chance, None, None, Some(9)),
            Ok(Some(FaultPlan::chance(Fault::Reset, p, 9)))
        );
        assert_eq!(
            plan(chance, None, None, None),
            Ok(Some(FaultPlan::chance(Fault::Reset, p, 0)))
        );
        let refused = [
            (
                plan(None, Some(2), None, None),
                "--fault-every needs --fault",
            ),
            (
                plan(None, None, Some(Per::Response), None),
                "--fault-per needs --fault",
            ),
            (
                plan(None, None, None, Some(1)),
                "--fault-seed needs --fault",
            ),
            (
                plan(chance, Some(2), None, None),
                "--fault reset:0.25 and --fault-every both say how often",
            ),
            (
                plan(reset, None, None, Some(1)),
                "--fault-seed only applies to a probability",
            ),
        ];
        for (result, want) in refused {
            let err = result.unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        assert!(FaultPlan::every(Fault::Reset, 0).check().is_err());
        assert_eq!(FaultPlan::every(Fault::Reset, 2).check(), Ok(()));
    }
}
