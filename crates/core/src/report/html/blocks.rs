//! The page's building blocks as markup: its head with the style sheet,
//! tables of escaped cells, a list of labels and values, a headline card,
//! and the style class that shows a verdict. The pages and their sections
//! (tables, SLO, sweep) are made of them.

use std::fmt::Write;

use super::fmt::escape;
use super::style::STYLE;
use crate::verdict::Verdict;

/// The document's head: `what` (`report`, `sweep`) and the target in the
/// title, and the inline style sheet.
pub fn head(page: &mut String, what: &str, url: &str) {
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>metron {what}: {}</title>\n<style>\n{STYLE}</style>\n</head>\n",
        escape(url)
    );
}

/// A two-column table of labels and (already escaped) HTML values.
pub fn key_values(page: &mut String, class: &str, rows: &[(&str, String)]) {
    let _ = write!(page, "<table class=\"{class}\"><tbody>");
    for (label, value) in rows {
        let _ = write!(
            page,
            "<tr><th scope=\"row\">{label}</th><td>{value}</td></tr>"
        );
    }
    page.push_str("</tbody></table>\n");
}

/// A table with a header row; cells are already escaped HTML.
pub fn grid(page: &mut String, class: &str, head: &[&str], rows: &[Vec<String>]) {
    let rows: Vec<(&str, &[String])> = rows.iter().map(|r| ("", r.as_slice())).collect();
    classed_grid(page, class, head, &rows);
}

/// [`grid`] with a style class per row (empty for none).
pub fn classed_grid(page: &mut String, class: &str, head: &[&str], rows: &[(&str, &[String])]) {
    let _ = write!(page, "<table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(page, "<th scope=\"col\">{h}</th>");
    }
    page.push_str("</tr></thead><tbody>");
    for (row_class, row) in rows {
        if row_class.is_empty() {
            page.push_str("<tr>");
        } else {
            let _ = write!(page, "<tr class=\"{row_class}\">");
        }
        for (i, cell) in row.iter().enumerate() {
            let _ = if i == 0 {
                write!(page, "<th scope=\"row\">{cell}</th>")
            } else {
                write!(page, "<td>{cell}</td>")
            };
        }
        page.push_str("</tr>");
    }
    page.push_str("</tbody></table>\n");
}

/// One headline card: a label, a big value and a small note under it.
pub fn card(page: &mut String, label: &str, value: &str, note: &str, alert: bool) {
    let class = if alert { "card alert" } else { "card" };
    let _ = write!(
        page,
        "<div class=\"{class}\"><div class=\"label\">{label}</div><div class=\"value\">{value}</div><div class=\"note\">{note}</div></div>"
    );
}

/// The style class of a verdict box and of a table row.
pub fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Met => "met",
        Verdict::NotMet => "failed",
        Verdict::Inconclusive => "unsure",
    }
}
