//! The three arguments of `done(summary, latency, requests)`.
//!
//! `summary` is a plain table: `duration` (µs), `requests`, `bytes` and
//! `errors = { connect, read, write, status, timeout }`.
//!
//! `latency` (µs) and `requests` (per-thread requests per second, sampled
//! as wrk samples them) are statistics objects over a histogram:
//! - `.min`, `.max`, `.mean`, `.stdev`, and `:percentile(p)` with `p` in
//!   0..100 (clamped into that range);
//! - `#obj`: the number of distinct recorded values (histogram buckets
//!   with a count);
//! - `obj(i)`: the `i`-th distinct recorded value and its count, 1-based,
//!   ascending (wrk's form);
//! - `obj[i]`: the value at percentile `100·i/#obj` (wrk2's form).
//!
//! Both forms give nil outside `1..#obj`, so loops over `1, #obj` work
//! either way. Values are the histogram's: the highest value equivalent to
//! each bucket, the same figures the report prints.

use hdrhistogram::Histogram;
use mlua::{Lua, Table, UserData, UserDataFields, UserDataMethods, Value};

use crate::stats::RunStats;

/// A statistics object: a histogram and its distinct recorded values.
pub(crate) struct StatsObject {
    histogram: Histogram<u64>,
    /// `(value, count)` per recorded bucket, ascending; computed once so
    /// that `obj(i)` in a loop is not quadratic.
    distinct: Vec<(u64, u64)>,
}

impl StatsObject {
    pub(crate) fn new(histogram: Histogram<u64>) -> StatsObject {
        let distinct = histogram
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        StatsObject {
            histogram,
            distinct,
        }
    }

    fn percentile(&self, p: f64) -> mlua::Result<u64> {
        if p.is_nan() {
            return Err(mlua::Error::runtime(
                "percentile(p): p is not a number; expected 0 to 100",
            ));
        }
        Ok(self.histogram.value_at_percentile(p.clamp(0.0, 100.0)))
    }

    /// The `i`-th distinct value and its count (1-based).
    fn entry(&self, i: i64) -> Option<(u64, u64)> {
        let index = usize::try_from(i).ok()?.checked_sub(1)?;
        self.distinct.get(index).copied()
    }

    /// wrk2's `obj[i]`: the value at percentile `100·i/#obj`.
    fn value_at_index(&self, i: i64) -> Option<u64> {
        let n = self.distinct.len() as i64;
        if i < 1 || i > n {
            return None;
        }
        let p = 100.0 * i as f64 / n as f64;
        Some(self.histogram.value_at_percentile(p))
    }
}

/// An integral Lua number as an index; anything else is not one.
fn as_index(key: &Value) -> Option<i64> {
    match key {
        Value::Integer(i) => Some(*i),
        Value::Number(n) if n.fract() == 0.0 => Some(*n as i64),
        _ => None,
    }
}

impl UserData for StatsObject {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("min", |_, this| Ok(this.histogram.min()));
        fields.add_field_method_get("max", |_, this| Ok(this.histogram.max()));
        fields.add_field_method_get("mean", |_, this| Ok(this.histogram.mean()));
        fields.add_field_method_get("stdev", |_, this| Ok(this.histogram.stdev()));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("percentile", |_, this, p: f64| this.percentile(p));
        methods.add_meta_method(mlua::MetaMethod::Len, |_, this, ()| Ok(this.distinct.len()));
        methods.add_meta_method(mlua::MetaMethod::Call, |_, this, i: i64| {
            Ok(this
                .entry(i)
                .map_or((None, None), |(v, c)| (Some(v), Some(c))))
        });
        // Reached only for keys that are not the fields or methods above.
        methods.add_meta_method(mlua::MetaMethod::Index, |_, this, key: Value| {
            Ok(as_index(&key).and_then(|i| this.value_at_index(i)))
        });
    }
}

/// The `summary` table.
pub(crate) fn summary(lua: &Lua, stats: &RunStats, duration_us: u64) -> mlua::Result<Table> {
    let counters = &stats.counters;
    let errors = lua.create_table()?;
    errors.set("connect", counters.errors.connect)?;
    errors.set("read", counters.errors.read)?;
    errors.set("write", counters.errors.write)?;
    errors.set("status", counters.errors.status)?;
    errors.set("timeout", counters.errors.timeout)?;
    let summary = lua.create_table()?;
    summary.set("duration", duration_us)?;
    summary.set("requests", counters.completed)?;
    summary.set("bytes", counters.bytes)?;
    summary.set("errors", errors)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1..=100 µs once each, plus 1000 µs twice.
    fn histogram() -> Histogram<u64> {
        let mut h = crate::stats::new_histogram();
        for v in 1..=100 {
            h.record(v).unwrap();
        }
        h.record_n(1000, 2).unwrap();
        h
    }

    fn state() -> Lua {
        let lua = Lua::new();
        let obj = lua.create_userdata(StatsObject::new(histogram())).unwrap();
        lua.globals().set("s", obj).unwrap();
        lua
    }

    fn eval<T: mlua::FromLuaMulti>(lua: &Lua, code: &str) -> T {
        lua.load(code).eval().unwrap()
    }

    #[test]
    fn fields_match_the_histogram() {
        let lua = state();
        let h = histogram();
        assert_eq!(eval::<u64>(&lua, "return s.min"), 1);
        assert_eq!(eval::<u64>(&lua, "return s.max"), h.max());
        assert_eq!(eval::<f64>(&lua, "return s.mean"), h.mean());
        assert_eq!(eval::<f64>(&lua, "return s.stdev"), h.stdev());
    }

    #[test]
    fn percentile_method_clamps_p() {
        let lua = state();
        assert_eq!(eval::<u64>(&lua, "return s:percentile(50)"), 51);
        assert_eq!(eval::<u64>(&lua, "return s:percentile(0)"), 1);
        assert_eq!(
            eval::<u64>(&lua, "return s:percentile(250)"),
            histogram().max()
        );
        assert!(lua.load("return s:percentile(0/0)").exec().is_err());
    }

    #[test]
    fn length_and_call_walk_distinct_values() {
        let lua = state();
        assert_eq!(eval::<i64>(&lua, "return #s"), 101);
        assert_eq!(eval::<(u64, u64)>(&lua, "return s(1)"), (1, 1));
        let (value, count) = eval::<(u64, u64)>(&lua, "return s(#s)");
        assert_eq!((value, count), (histogram().max(), 2));
        assert_eq!(eval::<Value>(&lua, "return s(0)"), Value::Nil);
        assert_eq!(eval::<Value>(&lua, "return s(102)"), Value::Nil);
    }

    #[test]
    fn index_gives_values_at_even_percentiles() {
        let lua = state();
        let h = histogram();
        let expected = h.value_at_percentile(100.0 * 50.0 / 101.0);
        assert_eq!(eval::<u64>(&lua, "return s[50]"), expected);
        assert_eq!(eval::<u64>(&lua, "return s[101]"), h.max());
        assert_eq!(eval::<Value>(&lua, "return s[0]"), Value::Nil);
        assert_eq!(eval::<Value>(&lua, "return s.unknown"), Value::Nil);
    }

    #[test]
    fn empty_histograms_have_no_entries() {
        let lua = Lua::new();
        let obj = StatsObject::new(crate::stats::new_histogram());
        lua.globals()
            .set("s", lua.create_userdata(obj).unwrap())
            .unwrap();
        assert_eq!(eval::<i64>(&lua, "return #s"), 0);
        assert_eq!(eval::<Value>(&lua, "return s[1]"), Value::Nil);
    }

    #[test]
    fn summary_carries_counters() {
        let mut stats = RunStats::merge(Vec::new(), std::time::Duration::from_secs(1));
        stats.counters.completed = 10;
        stats.counters.bytes = 2048;
        stats.counters.errors.timeout = 3;
        let lua = Lua::new();
        let table = summary(&lua, &stats, 1_500_000).unwrap();
        lua.globals().set("t", table).unwrap();
        let ok: bool = eval(
            &lua,
            "return t.duration == 1500000 and t.requests == 10 and t.bytes == 2048 \
             and t.errors.timeout == 3 and t.errors.connect == 0",
        );
        assert!(ok);
    }
}
