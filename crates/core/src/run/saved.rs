//! Saved documents: `metron report FILE.json` prints a run's text report
//! (and writes its page or CSV rows) again from its JSON document, or a
//! sweep's table and page from the sweep's; `metron merge` reads
//! documents the same way.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::error::Error;
use super::sink::{write_file, write_html};
use crate::cli::ReportArgs;
use crate::http::websocket_banner;
use crate::report::json::{Document, SCHEMA};
use crate::report::sweep::{judged_columns, rate_words, write_header, write_row, SweepDocument};
use crate::report::{csv, html, text, TextReport};

/// `metron report`: the text report (and optionally the HTML report and
/// CSV rows) of a saved JSON document.
pub fn rerender(args: &ReportArgs, out: &mut dyn Write) -> Result<(), Error> {
    if let Some(sweep) = read_sweep(&args.file)? {
        if args.csv.is_some() {
            return Err(Error::input(
                &args.file,
                "a sweep's document has no time series for --csv (its steps are the table \
                 metron report prints); give a run's document",
            ));
        }
        return rerender_sweep(&sweep, args.html.as_deref(), out);
    }
    let doc = read_document(&args.file)?;
    write_document(&doc, &args.file, out)?;
    if let Some(path) = &args.html {
        write_html(path, &doc)?;
    }
    if let Some(path) = &args.csv {
        let mut rows = Vec::new();
        csv::write_document(&mut rows, &doc)?;
        write_file("--csv", path, &rows)?;
    }
    Ok(())
}

/// The text report of a saved (or merged) document, as its run printed it
/// with `-L -U`; `path` names it in errors.
pub fn write_document(doc: &Document, path: &Path, mut out: &mut dyn Write) -> Result<(), Error> {
    let stats = doc.stats().map_err(|why| Error::input(path, why))?;
    let c = &doc.config;
    let duration = Duration::from_secs_f64(c.duration_s);
    // The report names the protocol the server spoke, and the banner does
    // when the run offered HTTP/2, as the run's own report did.
    let protocol = doc.protocol.as_ref();
    let banner = match &c.ws {
        Some(ws) => Some(websocket_banner(ws.pushes()).to_string()),
        None => protocol
            .as_ref()
            .filter(|p| p.multiplexes() || c.max_streams.is_some())
            .map(ToString::to_string),
    };
    text::write_banner(
        &mut out,
        &c.url,
        duration,
        c.threads,
        c.connections,
        banner.as_deref(),
    )?;
    match (&c.llm, &c.requests) {
        (Some(l), Some(r)) => {
            let order = r.described.replace("file order", "order");
            text::write_llm_line(
                &mut out,
                &l.api,
                &l.path,
                r.count,
                &l.prompts,
                &order,
                &l.described,
            )?;
        }
        (_, Some(r)) => {
            let entries = (r.count, c.ws.is_some());
            text::write_replay_line(&mut out, &r.file, entries, r.hosts, &r.described)?;
        }
        (_, None) => {}
    }
    let view = TextReport {
        url: &c.url,
        duration,
        threads: c.threads,
        connections: c.connections,
        load: c.load(),
        latency: true,
        u_latency: true,
        protocol,
        profile_phases: c.rate_profile.len(),
        stats: &stats,
        // Not kept in the document: the warning uses the default.
        lag_allowance: None,
        ws: c.ws.as_ref(),
    };
    text::write_results(&mut out, &view)?;
    text::write_instances(&mut out, &doc.instances)?;
    // The verdict is the last line, as a run's report ends with it
    // (`metron merge --slo`'s too, after the instances' table).
    if let Some(slo) = &doc.slo {
        text::write_slo(&mut out, slo)?;
    }
    Ok(())
}

/// `metron report SWEEP.json [--html OUT]`: the table and conclusion of a
/// saved sweep again, and its page.
fn rerender_sweep(
    doc: &SweepDocument,
    html: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let c = &doc.config;
    writeln!(
        out,
        "Sweep of {} from {} to {}: SLO {}",
        c.run.url,
        rate_words(c.from),
        rate_words(c.to),
        c.slo
    )?;
    let judged = judged_columns(&c.slo);
    write_header(out, &judged)?;
    for (i, s) in doc.steps.iter().enumerate() {
        write_row(out, i + 1, s, &judged)?;
    }
    writeln!(out, "{}", doc.conclusion)?;
    if let Some(path) = html {
        write_file("--html", path, html::render_sweep(doc).as_bytes())?;
    }
    Ok(())
}

/// A sweep's document (`metron sweep --json`), when the file is one.
pub fn read_sweep(path: &Path) -> Result<Option<SweepDocument>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::input(path, e))?;
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    if value.get("kind").and_then(|k| k.as_str()) != Some("sweep") {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| Error::input(path, format!("not a metron sweep: {e}")))
}

/// Whether `text` is an HdrHistogram interval log: its header lines, or
/// (a log without them) a first line of interval fields.
fn is_interval_log(text: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.starts_with("#[") || first.starts_with("\"StartTimestamp\"")
}

/// A run's document, refused unless it is JSON of the schema this
/// version reads.
pub fn read_document(path: &Path) -> Result<Document, Error> {
    let input = |why: String| Error::input(path, why);
    let text = std::fs::read_to_string(path).map_err(|e| input(e.to_string()))?;
    if is_interval_log(&text) {
        return Err(input(format!(
            "an interval log (--hlog), not a JSON result; metron merge {} prints its report",
            path.display()
        )));
    }
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        input(if e.is_eof() {
            format!("the document is cut short ({e}); was its run stopped while writing it? run it again")
        } else {
            format!("not JSON: {e}")
        })
    })?;
    let schema = value.get("schema").and_then(|v| v.as_u64());
    if schema != Some(u64::from(SCHEMA)) {
        let found = schema.map_or("no schema field".to_string(), |s| format!("schema {s}"));
        return Err(input(format!(
            "{found}, but this metron reads schema {SCHEMA} documents written by --json"
        )));
    }
    serde_json::from_value(value).map_err(|e| input(format!("not a metron result: {e}")))
}
