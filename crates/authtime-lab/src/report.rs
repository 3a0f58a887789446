//! The report: sections of tables, plots, findings and raw data, written as
//! `index.md`, one JSON file per section, and one CSV file per table.

use std::{fmt::Write as _, fs, path::Path};

use crate::{machine::Machine, plot::Plot};

/// A table of the report, next to the seed's own figures where it has them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Table {
    /// Short title.
    pub title: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Cells, already formatted.
    pub rows: Vec<Vec<String>>,
    /// A note printed under the table (units, sources).
    pub note: String,
}

impl Table {
    /// A table with headers and no rows yet.
    #[must_use]
    pub fn new(title: &str, columns: &[&str]) -> Self {
        Self {
            title: title.into(),
            columns: columns.iter().map(|&c| c.to_owned()).collect(),
            rows: vec![],
            note: String::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn markdown(&self) -> String {
        let mut s = format!(
            "**{}**\n\n| {} |\n|{}\n",
            self.title,
            self.columns.join(" | "),
            "---|".repeat(self.columns.len())
        );
        for row in &self.rows {
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
        if !self.note.is_empty() {
            let _ = write!(s, "\n{}\n", self.note);
        }
        s
    }

    fn csv(&self) -> String {
        let quote = |c: &str| {
            if c.contains([',', '"']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.to_owned()
            }
        };
        let mut s = self
            .columns
            .iter()
            .map(|c| quote(c))
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
        for row in &self.rows {
            s.push_str(&row.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
            s.push('\n');
        }
        s
    }
}

/// One section of the report (one experiment of one seed).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Section {
    /// Identifier, as `--only` takes it (`mac`, `rfc1810`, `partial`, `stack`).
    pub id: String,
    /// Title.
    pub title: String,
    /// Which seed document and which of its tables this repeats.
    pub seed: String,
    /// How it was measured: runs, medians, clocks, peers.
    pub method: String,
    /// Tables.
    pub tables: Vec<Table>,
    /// Plots.
    pub plots: Vec<Plot>,
    /// What the figures say, in sentences.
    pub findings: Vec<String>,
    /// Raw measurements.
    pub data: serde_json::Value,
}

/// Writes the whole report into `dir` (created if needed).
///
/// # Errors
/// A message naming the file that could not be written.
pub fn write(
    dir: &Path,
    machine: &Machine,
    sections: &[Section],
    quick: bool,
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let font = crate::plot::load_font();
    let mut md = String::from("# authtime lab report\n\n");
    let _ = writeln!(md, "Machine: {}\n", machine.summary());
    if quick {
        md.push_str(
            "Mode: `--quick` (short runs: the figures are indicative, the ratios noisy).\n\n",
        );
    }
    if font.is_none() {
        md.push_str(
            "No DejaVu font found (Debian `fonts-dejavu-core`): plots are written as SVG only.\n\n",
        );
    }
    for section in sections {
        let _ = write!(
            md,
            "## {}\n\n*Seed:* {}\n\n*Method:* {}\n\n",
            section.title, section.seed, section.method
        );
        for table in &section.tables {
            md.push_str(&table.markdown());
            md.push('\n');
            let stem = format!("{}-{}", section.id, slug(&table.title));
            write_file(&dir.join(format!("{stem}.csv")), &table.csv())?;
        }
        for plot in &section.plots {
            let svg = plot.write_svg(dir)?;
            let png = if font.is_some() {
                Some(plot.write_png(dir)?)
            } else {
                None
            };
            match png {
                Some(png) => {
                    let _ = writeln!(md, "![{}]({png}) ([SVG]({svg}))\n", plot.title);
                }
                None => {
                    let _ = writeln!(md, "![{}]({svg})\n", plot.title);
                }
            }
        }
        if !section.findings.is_empty() {
            md.push_str("*Findings:*\n\n");
            for f in &section.findings {
                let _ = writeln!(md, "- {f}");
            }
            md.push('\n');
        }
        let json = serde_json::json!({ "machine": machine, "section": section });
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        write_file(&dir.join(format!("{}.json", section.id)), &text)?;
    }
    write_file(&dir.join("index.md"), &md)
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// File-name form of a title.
#[must_use]
pub fn slug(title: &str) -> String {
    let mut s: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_render_as_markdown_and_csv() {
        let mut t = Table::new("MAC speed, 48 bytes", &["alg", "pkts/s"]);
        t.row(vec!["aes128-cmac".into(), "1,000".into()]);
        t.note = "medians".into();
        let md = t.markdown();
        assert!(md.contains("| alg | pkts/s |\n|---|---|\n| aes128-cmac | 1,000 |"));
        assert!(md.ends_with("medians\n"));
        assert_eq!(t.csv(), "alg,pkts/s\naes128-cmac,\"1,000\"\n");
        assert_eq!(slug("MAC speed, 48 bytes"), "mac-speed-48-bytes");
    }
}
