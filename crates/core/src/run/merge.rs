//! `metron merge`: one report from several instances' JSON documents (the
//! `--shard` parts of one run, say), or from several interval logs.

use std::io::{self, Read, Write};
use std::path::Path;

use super::describe;
use super::error::Error;
use super::saved::{read_document, read_sweep, write_document};
use super::sink::{write_html, write_json};
use crate::cli::MergeArgs;
use crate::report::json::Document;
use crate::report::{hlog, merge};
use crate::verdict::{generator_limit, Slo, SloReport, Verdict};

/// Merges the files `args` names and prints the text report; with
/// documents, also writes the merged document and page when asked.
pub fn merge(args: &MergeArgs, out: &mut dyn Write) -> Result<(), Error> {
    let mut json = Vec::new();
    for path in &args.files {
        if is_json(path)? {
            json.push(path);
        }
    }
    if json.is_empty() {
        return merge_logs(args, out);
    }
    if json.len() < args.files.len() {
        return Err(Error::Merge(
            "give JSON documents or interval logs, not both".into(),
        ));
    }
    let mut docs = Vec::with_capacity(json.len());
    for path in json {
        if read_sweep(path)?.is_some() {
            return Err(Error::input(
                path,
                "a sweep's document: merge takes the documents of runs",
            ));
        }
        docs.push((path.display().to_string(), read_document(path)?));
    }
    let mut merged = merge::documents(&docs).map_err(Error::Merge)?;
    for w in &merged.warnings {
        let _ = writeln!(std::io::stderr(), "metron merge: warning: {w}");
    }
    if let Some(slo) = &args.slo {
        merged.doc.slo = Some(judge(slo, &docs, &merged.doc)?);
    }
    write_document(&merged.doc, Path::new("the merged document"), out)?;
    if let Some(path) = &args.json {
        write_json(path, &merged.doc)?;
    }
    if let Some(path) = &args.html {
        write_html(path, &merged.doc)?;
    }
    match Error::unless_met(merged.doc.slo) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

/// The merged run judged against `slo`: its terms on the merged figures;
/// inconclusive when the generator of any instance was the limit, since
/// then the server never had the whole load.
fn judge(slo: &Slo, docs: &[(String, Document)], merged: &Document) -> Result<SloReport, Error> {
    for (name, doc) in docs {
        let stats = doc.stats().map_err(|e| Error::input(Path::new(name), e))?;
        let load = doc.config.load();
        if let Some(why) = generator_limit(&describe::document_facts(doc, &stats, &load)) {
            let mut judged = judge_one(slo, merged)?;
            judged.verdict = Verdict::Inconclusive;
            judged.exit_status = Verdict::Inconclusive.exit_status();
            judged.reason = Some(format!("in {name}, {why}"));
            return Ok(judged);
        }
    }
    judge_one(slo, merged)
}

fn judge_one(slo: &Slo, doc: &Document) -> Result<SloReport, Error> {
    let stats = doc
        .stats()
        .map_err(|e| Error::input(Path::new("the merged document"), e))?;
    let load = doc.config.load();
    Ok(slo.judge(&describe::document_facts(doc, &stats, &load)))
}

/// Interval logs add up into the text report alone.
fn merge_logs(args: &MergeArgs, out: &mut dyn Write) -> Result<(), Error> {
    if args.json.is_some() || args.html.is_some() {
        return Err(Error::Merge(
            "--json and --html need JSON documents (written by --json); interval logs \
             merge into the text report only"
                .into(),
        ));
    }
    let stats = hlog::merge(&args.files)?;
    hlog::write_merged(out, &args.files, &stats)?;
    Ok(())
}

/// Whether a file holds JSON (a document) rather than an interval log:
/// its first character that is not white space opens an object.
fn is_json(path: &Path) -> Result<bool, Error> {
    let input = |e: io::Error| Error::input(path, e);
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(input)?;
    Ok(head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{'))
}
