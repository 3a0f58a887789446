//! `authtime-lab run`: runs the lab's experiments and writes the report.

use anyhow::{Context, anyhow};

use crate::{Streams, cli::RunArgs};

/// Runs the selected sections, printing progress to standard error and the
/// report's location and findings to standard output.
///
/// # Errors
/// An unknown section, or a measurement or report that failed.
pub fn run(args: &RunArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let only = args
        .only
        .as_deref()
        .map(authtime_lab::SectionId::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let opts = authtime_lab::LabOptions {
        quick: args.quick,
        only,
        out: args.out.clone(),
    };
    let sections = {
        let stderr = &mut *streams.stderr;
        let mut progress = authtime_lab::Progress::new(|line| {
            let _ = writeln!(stderr, "{line}");
        });
        authtime_lab::run(&opts, &mut progress)
            .map_err(|e| anyhow!(e))
            .context("lab")?
    };
    writeln!(
        streams.stdout,
        "report: {}",
        args.out.join("index.md").display()
    )?;
    for section in &sections {
        writeln!(streams.stdout, "\n{}", section.title)?;
        for finding in &section.findings {
            writeln!(streams.stdout, "  - {finding}")?;
        }
    }
    Ok(())
}
