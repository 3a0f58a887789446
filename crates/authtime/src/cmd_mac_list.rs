//! `authtime mac list`: every algorithm of the registry with its sizes, as an
//! aligned table or as JSON, and the partial-MAC family last.

use anyhow::Result;
use authtime_mac::{Algorithm, KeyLength};
use serde::Serialize;

use crate::{Outcome, Streams, cli::ListArgs};

/// One row of the listing. The JSON field names are a stable interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListEntry {
    /// Name to give to `--alg`, or the pattern of a family.
    pub name: String,
    /// `"algorithm"` for a base algorithm, `"family"` for a pattern such as
    /// `partial:<inner>:<rate>`.
    pub kind: &'static str,
    /// Shortest key in bytes; `null` for a family (the inner algorithm's).
    pub key_min: Option<usize>,
    /// Longest key in bytes; `null` for a family.
    pub key_max: Option<usize>,
    /// Nonce length in bytes, 0 for none; `null` for a family.
    pub nonce_len: Option<usize>,
    /// Tag length in bytes; `null` for a family.
    pub tag_len: Option<usize>,
    /// One line about the algorithm.
    pub summary: String,
}

/// The name pattern of the partial-MAC family.
pub const PARTIAL_FAMILY: &str = "partial:<inner>:<rate>";

/// Every base algorithm, then the partial-MAC family.
#[must_use]
pub fn entries() -> Vec<ListEntry> {
    let mut entries: Vec<ListEntry> = Algorithm::ALL
        .iter()
        .map(|alg| {
            let info = alg.info();
            let (key_min, key_max) = match info.key {
                KeyLength::Exact(n) => (n, n),
                KeyLength::Range { min, max } => (min, max),
            };
            ListEntry {
                name: info.name.to_owned(),
                kind: "algorithm",
                key_min: Some(key_min),
                key_max: Some(key_max),
                nonce_len: Some(info.nonce_len),
                tag_len: Some(info.tag_len),
                summary: info.summary.to_owned(),
            }
        })
        .collect();
    entries.push(ListEntry {
        name: PARTIAL_FAMILY.to_owned(),
        kind: "family",
        key_min: None,
        key_max: None,
        nonce_len: None,
        tag_len: None,
        summary: "any algorithm above over keyed random 8-byte pieces at rate in (0, 1], \
                  e.g. partial:aes128-cmac:0.25; nonce 8 bytes or the inner's"
            .to_owned(),
    });
    entries
}

/// Runs `authtime mac list`.
///
/// # Errors
/// A failed write.
pub fn list(args: &ListArgs, streams: &mut Streams<'_>) -> Result<Outcome> {
    let entries = entries();
    if args.json {
        serde_json::to_writer_pretty(&mut *streams.stdout, &entries)?;
        writeln!(streams.stdout)?;
    } else {
        streams.stdout.write_all(table(&entries).as_bytes())?;
    }
    Ok(Outcome::Success)
}

/// The entries as a table with aligned columns and no trailing spaces.
#[must_use]
pub fn table(entries: &[ListEntry]) -> String {
    let mut rows = vec![[
        "NAME".to_owned(),
        "KEY".to_owned(),
        "NONCE".to_owned(),
        "TAG".to_owned(),
        "SUMMARY (sizes in bytes)".to_owned(),
    ]];
    rows.extend(entries.iter().map(|e| {
        [
            e.name.clone(),
            key_cell(e),
            match e.nonce_len {
                Some(0) => "-".to_owned(),
                Some(n) => n.to_string(),
                None => "8|inner".to_owned(),
            },
            e.tag_len
                .map_or_else(|| "inner".to_owned(), |n| n.to_string()),
            e.summary.clone(),
        ]
    }));
    let mut widths = [0usize; 4];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in &rows {
        for (cell, width) in row.iter().zip(widths) {
            out.push_str(&format!("{cell:<width$}  "));
        }
        out.push_str(&row[4]);
        out.push('\n');
    }
    out
}

/// "16" for an exact length, "1-32" for a range, "inner" for a family.
fn key_cell(entry: &ListEntry) -> String {
    match (entry.key_min, entry.key_max) {
        (Some(min), Some(max)) if min == max => min.to_string(),
        (Some(min), Some(max)) => format!("{min}-{max}"),
        _ => "inner".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_then_the_family() {
        let entries = entries();
        assert_eq!(entries.len(), Algorithm::ALL.len() + 1);
        for (entry, alg) in entries.iter().zip(Algorithm::ALL) {
            assert_eq!(entry.name, alg.name());
            assert!(alg.info().key.accepts(entry.key_min.expect("base")));
            assert!(alg.info().key.accepts(entry.key_max.expect("base")));
        }
        assert_eq!(entries.last().map(|e| e.kind), Some("family"));
    }

    #[test]
    fn table_columns_line_up() {
        let text = table(&entries());
        let lines: Vec<&str> = text.lines().collect();
        let column = |line: &str| {
            line.find("  ")
                .map(|i| i + line[i..].len() - line[i..].trim_start().len())
        };
        let key_column = column(lines[0]).expect("header");
        for line in &lines {
            assert_eq!(column(line), Some(key_column), "{line}");
            assert_eq!(line.trim_end(), *line, "no trailing spaces");
        }
        let cmac = lines
            .iter()
            .find(|l| l.starts_with("aes128-cmac "))
            .expect("row");
        assert!(cmac.contains(" 16 "), "{cmac}");
        let legacy = lines
            .iter()
            .find(|l| l.starts_with("md5-legacy "))
            .expect("row");
        assert!(legacy.contains(" 1-32 "), "{legacy}");
        assert!(lines.last().expect("rows").starts_with(PARTIAL_FAMILY));
    }
}
