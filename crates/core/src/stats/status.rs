//! Responses by status code, for the report's `Status codes: 200 9990,
//! 503 10` line and the JSON's `counters.status_codes`.
//!
//! A run meets a handful of distinct codes, so they are counted in a few
//! fixed places, taken by the first codes seen, and any code beyond them
//! in one `other` count: a worker records without allocating and
//! [`StatusCodes`] stays `Copy` like the rest of the counters.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Distinct codes counted by value; more than any real run shows.
const PLACES: usize = 16;

/// Responses per status code.
#[derive(Clone, Copy, Default)]
pub struct StatusCodes {
    /// `(code, count)`, taken in the order codes first occur; a count of 0
    /// marks a free place.
    places: [(u16, u64); PLACES],
    /// Responses whose code found every place taken by others.
    other: u64,
}

impl StatusCodes {
    pub fn count(&mut self, code: u16) {
        self.count_n(code, 1);
    }

    fn count_n(&mut self, code: u16, n: u64) {
        for place in &mut self.places {
            if place.1 == 0 || place.0 == code {
                *place = (code, place.1 + n);
                return;
            }
        }
        self.other += n;
    }

    pub fn add(&mut self, o: &StatusCodes) {
        for &(code, n) in o.places.iter().filter(|p| p.1 > 0) {
            self.count_n(code, n);
        }
        self.other += o.other;
    }

    /// How many responses carried `code` (0 for one counted under other).
    pub fn get(&self, code: u16) -> u64 {
        self.places
            .iter()
            .find(|p| p.1 > 0 && p.0 == code)
            .map_or(0, |p| p.1)
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    pub fn total(&self) -> u64 {
        self.places.iter().map(|p| p.1).sum::<u64>() + self.other
    }

    /// The codes that occurred, in order of value, then any other.
    pub fn named(&self) -> Vec<(String, u64)> {
        let mut codes: Vec<(u16, u64)> = self.places.iter().copied().filter(|p| p.1 > 0).collect();
        codes.sort_unstable();
        let mut named: Vec<(String, u64)> = codes
            .into_iter()
            .map(|(code, n)| (code.to_string(), n))
            .collect();
        if self.other > 0 {
            named.push((OTHER.to_string(), self.other));
        }
        named
    }
}

/// The name codes beyond the fixed places are counted under.
const OTHER: &str = "other";

impl fmt::Display for StatusCodes {
    /// `200 9990, 503 10`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (code, n)) in self.named().iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{code} {n}")?;
        }
        Ok(())
    }
}

/// Equal when the same codes were counted as often, whatever order they
/// took their places in.
impl PartialEq for StatusCodes {
    fn eq(&self, o: &StatusCodes) -> bool {
        self.named() == o.named()
    }
}

impl Eq for StatusCodes {}

impl fmt::Debug for StatusCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

impl Serialize for StatusCodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.named())
    }
}

impl<'de> Deserialize<'de> for StatusCodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut codes = StatusCodes::default();
        for (name, n) in map {
            if name == OTHER {
                codes.other += n;
                continue;
            }
            let code = name.parse::<u16>().map_err(|_| {
                serde::de::Error::custom(format!("{name:?} is not an HTTP status code"))
            })?;
            codes.count_n(code, n);
        }
        Ok(codes)
    }
}

/// Completed calls by their status (`--grpc`), for the report's `gRPC
/// status: OK 9990, UNAVAILABLE 10` line and the JSON's `counters.grpc`:
/// one count per code the protocol defines, and one for any other.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct CallStatuses([u64; metron_grpc::status::KINDS]);

impl CallStatuses {
    pub fn count(&mut self, code: u8) {
        self.0[metron_grpc::status::kind(code)] += 1;
    }

    pub fn add(&mut self, o: &CallStatuses) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }

    /// Calls answered with `name`'s status (`OK`, `UNAVAILABLE`).
    pub fn get(&self, name: &str) -> u64 {
        metron_grpc::status::code(name).map_or(0, |c| self.0[metron_grpc::status::kind(c)])
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Calls that did not succeed.
    pub fn failed(&self) -> u64 {
        self.total() - self.0[usize::from(metron_grpc::status::OK)]
    }

    /// The statuses seen, by name, in the order of their codes.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        (0..metron_grpc::status::KINDS)
            .filter(|&k| self.0[k] > 0)
            .map(|k| (metron_grpc::status::name(k as u8), self.0[k]))
            .collect()
    }
}

impl fmt::Display for CallStatuses {
    /// `OK 9990, UNAVAILABLE 10`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (name, n)) in self.named().iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name} {n}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CallStatuses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

impl Serialize for CallStatuses {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.named())
    }
}

impl<'de> Deserialize<'de> for CallStatuses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut calls = CallStatuses::default();
        for (name, n) in map {
            let code = metron_grpc::status::code(&name).ok_or_else(|| {
                serde::de::Error::custom(format!("{name:?} is not a gRPC status"))
            })?;
            calls.0[metron_grpc::status::kind(code)] += n;
        }
        Ok(calls)
    }
}

/// WebSocket closes the server sent, by code: the report's `Closes by the
/// server: 1000 normal 9, 1001 going away 1` line and the JSON's
/// `counters.ws_closes` (`{"1000": 9, "1001": 1}`). The codes RFC 6455
/// names (1000 to 1015) are counted one by one, any other as `other`.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct CloseCodes([u64; CLOSE_KINDS]);

const FIRST_CLOSE: u16 = 1000;
const CLOSE_KINDS: usize = 17;

impl CloseCodes {
    pub fn count(&mut self, code: u16) {
        self.0[Self::kind(code)] += 1;
    }

    fn kind(code: u16) -> usize {
        match code {
            1000..=1015 => usize::from(code - FIRST_CLOSE),
            _ => CLOSE_KINDS - 1,
        }
    }

    pub fn add(&mut self, o: &CloseCodes) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The closes seen, by key (`"1000"`, or `"other"`), in order of code.
    fn keyed(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        (0..CLOSE_KINDS).filter(|&k| self.0[k] > 0).map(|k| {
            let key = match k {
                k if k == CLOSE_KINDS - 1 => "other".to_string(),
                k => (FIRST_CLOSE + k as u16).to_string(),
            };
            (key, self.0[k])
        })
    }
}

impl fmt::Display for CloseCodes {
    /// `1000 normal 9, 1001 going away 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (key, n)) in self.keyed().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            match key.parse::<u16>() {
                Ok(code) => write!(f, "{code} {} {n}", metron_ws::close_name(code))?,
                Err(_) => write!(f, "other codes {n}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CloseCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

impl Serialize for CloseCodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.keyed())
    }
}

impl<'de> Deserialize<'de> for CloseCodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut closes = CloseCodes::default();
        for (key, n) in map {
            let kind = match key.as_str() {
                "other" => CLOSE_KINDS - 1,
                code => match code.parse::<u16>() {
                    Ok(c @ 1000..=1015) => Self::kind(c),
                    _ => {
                        return Err(serde::de::Error::custom(format!(
                            "{key:?} is not a close code from 1000 to 1015, nor \"other\""
                        )))
                    }
                },
            };
            closes.0[kind] += n;
        }
        Ok(closes)
    }
}

/// WebSocket upgrades the server refused during the run, by the status
/// it answered: the report's `Upgrades refused by the server: 429 22`
/// line and the JSON's `counters.ws_refused` (`{"429": 22}`). The first
/// [`REFUSAL_KINDS`] statuses met are told apart, later ones are
/// `other`; an answer that is no valid upgrade's is `invalid`.
#[derive(Clone, Copy, Default)]
pub struct Refusals {
    /// (status, count); status 0 is `invalid`, count 0 an empty place.
    kinds: [(u16, u64); REFUSAL_KINDS],
    other: u64,
}

const REFUSAL_KINDS: usize = 6;

impl Refusals {
    /// One refusal with `status` (0: invalid).
    pub fn count(&mut self, status: u16) {
        self.count_n(status, 1);
    }

    fn count_n(&mut self, status: u16, n: u64) {
        let at = self.kinds.iter().position(|&(s, c)| s == status && c > 0);
        let at = at.or_else(|| self.kinds.iter().position(|&(_, c)| c == 0));
        match at {
            Some(i) => self.kinds[i] = (status, self.kinds[i].1 + n),
            None => self.other += n,
        }
    }

    pub fn add(&mut self, o: &Refusals) {
        for &(status, n) in o.kinds.iter().filter(|(_, n)| *n > 0) {
            self.count_n(status, n);
        }
        self.other += o.other;
    }

    pub fn total(&self) -> u64 {
        self.kinds.iter().map(|(_, n)| n).sum::<u64>() + self.other
    }

    /// By key (`"429"`, `"invalid"`, `"other"`), statuses in order.
    fn keyed(&self) -> Vec<(String, u64)> {
        let mut kinds: Vec<(u16, u64)> =
            self.kinds.iter().copied().filter(|(_, n)| *n > 0).collect();
        kinds.sort_unstable();
        let mut keyed: Vec<(String, u64)> = kinds
            .into_iter()
            .map(|(s, n)| match s {
                0 => ("invalid".to_string(), n),
                s => (s.to_string(), n),
            })
            .collect();
        if self.other > 0 {
            keyed.push(("other".to_string(), self.other));
        }
        keyed
    }
}

/// Equal when they count the same, whatever order each met the statuses
/// in.
impl PartialEq for Refusals {
    fn eq(&self, o: &Refusals) -> bool {
        self.keyed() == o.keyed()
    }
}

impl Eq for Refusals {}

impl fmt::Display for Refusals {
    /// `429 22, invalid 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (key, n)) in self.keyed().iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{key} {n}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Refusals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

impl Serialize for Refusals {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.keyed())
    }
}

impl<'de> Deserialize<'de> for Refusals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut refusals = Refusals::default();
        for (key, n) in map {
            match key.as_str() {
                "other" => refusals.other += n,
                "invalid" => refusals.count_n(0, n),
                status => match status.parse::<u16>() {
                    Ok(s @ 100..=599) => refusals.count_n(s, n),
                    _ => {
                        return Err(serde::de::Error::custom(format!(
                            "{key:?} is not an HTTP status, \"invalid\" nor \"other\""
                        )))
                    }
                },
            }
        }
        Ok(refusals)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn close_codes_print_by_name_and_read_back() {
        let mut c = CloseCodes::default();
        for code in [1001, 1000, 1000, 4000, 1011] {
            c.count(code);
        }
        assert_eq!(
            c.to_string(),
            "1000 normal 2, 1001 going away 1, 1011 internal error 1, other codes 1"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"1000":2,"1001":1,"1011":1,"other":1}"#);
        assert_eq!(serde_json::from_str::<CloseCodes>(&json).unwrap(), c);
        assert!(serde_json::from_str::<CloseCodes>(r#"{"999":1}"#).is_err());
        assert_eq!(c.total(), 5);
    }

    #[test]
    fn call_statuses_print_by_name_and_read_back() {
        let mut c = CallStatuses::default();
        for code in [14, 0, 0, 200, 0] {
            c.count(code);
        }
        assert_eq!(c.to_string(), "OK 3, UNAVAILABLE 1, OTHER 1");
        assert_eq!((c.total(), c.failed(), c.get("OK")), (5, 2, 3));
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"OK":3,"UNAVAILABLE":1,"OTHER":1}"#);
        assert_eq!(serde_json::from_str::<CallStatuses>(&json).unwrap(), c);
        assert!(serde_json::from_str::<CallStatuses>(r#"{"FINE":1}"#).is_err());
    }
    use super::*;

    /// Refusals are told apart by status (the first few met), merge by
    /// status, and go through JSON and back unchanged.
    #[test]
    fn refusals_count_by_status() {
        let mut a = Refusals::default();
        for s in [429, 429, 0, 503, 400, 401, 402, 404, 405] {
            a.count(s);
        }
        assert_eq!(
            a.to_string(),
            "invalid 1, 400 1, 401 1, 402 1, 429 2, 503 1, other 2"
        );
        let mut b = Refusals::default();
        b.count(429);
        b.add(&a);
        assert_eq!(b.total(), 10);
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(
            json,
            r#"{"invalid":1,"400":1,"401":1,"402":1,"429":3,"503":1,"other":2}"#
        );
        let back: Refusals = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b);
        assert!(serde_json::from_str::<Refusals>(r#"{"99x":1}"#).is_err());
    }

    #[test]
    fn codes_print_in_order_of_value() {
        let mut s = StatusCodes::default();
        for code in [503, 200, 200, 404, 200] {
            s.count(code);
        }
        assert_eq!(s.to_string(), "200 3, 404 1, 503 1");
        assert_eq!((s.get(200), s.get(302), s.total()), (3, 0, 5));
    }

    #[test]
    fn codes_beyond_the_places_are_counted_as_other() {
        let mut s = StatusCodes::default();
        for code in 200..200 + PLACES as u16 + 3 {
            s.count(code);
        }
        assert_eq!(s.total(), PLACES as u64 + 3);
        assert!(s.to_string().ends_with("other 3"), "{s}");
    }

    #[test]
    fn threads_add_up_and_json_reads_back() {
        let (mut a, mut b) = (StatusCodes::default(), StatusCodes::default());
        a.count(200);
        b.count(503);
        b.count(200);
        a.add(&b);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"200":2,"503":1}"#);
        let back: StatusCodes = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        assert!(serde_json::from_str::<StatusCodes>(r#"{"ok":1}"#).is_err());
    }
}
