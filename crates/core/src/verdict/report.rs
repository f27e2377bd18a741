//! A judged run as the reports and the JSON document carry it: each term
//! with its measured value, and the verdict.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a judged run comes to, named in the JSON document as `met`,
/// `not met` or `inconclusive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "met")]
    Met,
    #[serde(rename = "not met")]
    NotMet,
    /// The generator, not the server, limited the load (or nothing was
    /// measured): neither a pass nor a fail.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl Verdict {
    /// 0 met, 3 not met, 4 inconclusive.
    pub fn exit_status(self) -> u8 {
        match self {
            Verdict::Met => 0,
            Verdict::NotMet => 3,
            Verdict::Inconclusive => 4,
        }
    }

    /// Its name in the reports and the JSON document.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "not met",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--slo`: each term with its measured value, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloReport {
    /// The objective as given.
    pub spec: String,
    pub verdict: Verdict,
    /// Why it is inconclusive, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// 0, 3 or 4.
    pub exit_status: u8,
    pub rows: Vec<SloRow>,
}

/// One term of an objective, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloRow {
    /// As given (`p99<10ms`).
    pub term: String,
    /// The measured value: microseconds (`unit` = `us`) or a share from 0
    /// to 1 (`share`); `None` when nothing was measured (no request
    /// completed or was given up; none was due), and the term is not met.
    pub value: Option<f64>,
    pub unit: String,
    pub met: bool,
}

impl SloReport {
    /// The verdict in words, as the text report's last line and the page
    /// say it: `met`, `not met (p99<10ms)` naming the failed terms, or
    /// `inconclusive: why`.
    pub fn sentence(&self) -> String {
        match (self.verdict, &self.reason) {
            (Verdict::Inconclusive, Some(why)) => format!("{}: {why}", self.verdict),
            (Verdict::NotMet, _) => {
                let failed: Vec<&str> = self
                    .rows
                    .iter()
                    .filter(|r| !r.met)
                    .map(|r| r.term.as_str())
                    .collect();
                format!("{} ({})", self.verdict, failed.join(", "))
            }
            (v, _) => v.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses() {
        assert_eq!(Verdict::Met.exit_status(), 0);
        assert_eq!(Verdict::NotMet.exit_status(), 3);
        assert_eq!(Verdict::Inconclusive.exit_status(), 4);
    }

    #[test]
    fn verdicts_keep_their_names_in_the_document() {
        for v in [Verdict::Met, Verdict::NotMet, Verdict::Inconclusive] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{v}\""));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
    }
}
