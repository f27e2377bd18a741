//! deploy/grafana/metron.json, the Grafana dashboard, read as Grafana
//! reads it: panels, their queries, and the variables the queries use.

use serde_json::Value;

use super::deploy::read;

/// Where the dashboard is, from the repository's root.
pub const FILE: &str = "deploy/grafana/metron.json";

/// The dashboard's JSON model.
pub fn dashboard() -> Value {
    let text = read(FILE);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{FILE} is not JSON: {e}"))
}

/// One query of a panel.
#[derive(Clone, Debug)]
pub struct Query {
    pub panel: String,
    pub ref_id: String,
    pub expr: String,
    /// What the series are called in the panel (`{{label}}` for a
    /// label's value).
    pub legend: String,
    /// Evaluated at one instant (a stat's last value), not over the
    /// dashboard's time range.
    pub instant: bool,
}

/// Every panel of the dashboard, rows' nested panels included.
pub fn panels(d: &Value) -> Vec<&Value> {
    let mut all = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        all.push(p);
        if let Some(inner) = p["panels"].as_array() {
            all.extend(inner);
        }
    }
    all
}

/// Every query of every panel, in order.
pub fn queries(d: &Value) -> Vec<Query> {
    let mut all = Vec::new();
    for p in panels(d) {
        let title = p["title"].as_str().unwrap_or("(untitled)").to_string();
        for t in p["targets"].as_array().into_iter().flatten() {
            all.push(Query {
                panel: title.clone(),
                ref_id: t["refId"].as_str().unwrap_or_default().to_string(),
                expr: t["expr"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{FILE}: a query of {title:?} has no expr"))
                    .to_string(),
                legend: t["legendFormat"].as_str().unwrap_or_default().to_string(),
                instant: t["instant"].as_bool() == Some(true),
            });
        }
    }
    all
}

/// The dashboard's variables, by name.
pub fn variables(d: &Value) -> Vec<&Value> {
    d["templating"]["list"]
        .as_array()
        .map(|l| l.iter().collect())
        .unwrap_or_default()
}

/// The `$name` and `${name}` references in `text`.
pub fn references(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let (name, skip) = match after.strip_prefix('{') {
            Some(braced) => {
                let end = braced.find('}').expect("an unclosed ${");
                (&braced[..end], end + 2)
            }
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        if !name.is_empty() {
            names.push(name.to_string());
        }
        rest = &after[skip.min(after.len())..];
    }
    names
}

/// `expr` as Grafana sends it to Prometheus: each `$name` or `${name}`
/// replaced by its value in `values`; a name without one is left as it
/// is, and the query then fails to parse.
pub fn substitute(expr: &str, values: &[(&str, &str)]) -> String {
    let mut out = expr.to_string();
    // Longest names first, so that `$__range` does not eat the start of
    // `$__range_s`.
    let mut values = values.to_vec();
    values.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, value) in values {
        out = out
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("${name}"), value);
    }
    out
}

/// The metric names a PromQL expression reads: the words that begin with
/// `metron_`.
pub fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("metron_") {
        let boundary = at == 0 || {
            let before = rest.as_bytes()[at - 1];
            !(before.is_ascii_alphanumeric() || before == b'_')
        };
        let after = &rest[at..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(after.len());
        if boundary {
            names.push(after[..end].to_string());
        }
        rest = &after[end..];
    }
    names
}
