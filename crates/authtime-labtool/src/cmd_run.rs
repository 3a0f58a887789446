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
        duration: args
            .duration
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(|e| anyhow!("--duration: {e}"))?,
        xdp_protocols: args
            .protocols
            .as_deref()
            .map(authtime_lab::section_xdp::Protocol::parse_list)
            .transpose()
            .map_err(|e| anyhow!("--protocols: {e}"))?,
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

/// `90`, `90s`, `20m` or `1h`, at most a day.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let n: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a time (90, 90s, 20m, 1h)"))?;
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("`{text}`: unit must be s, m or h")),
    };
    let secs = n * scale;
    if !(10.0..=86_400.0).contains(&secs) {
        return Err(format!("`{text}`: must be 10 s to 24 h"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("1h").expect("parses").as_secs(), 3600);
        assert_eq!(parse_duration("20m").expect("parses").as_secs(), 1200);
        assert_eq!(parse_duration("90").expect("parses").as_secs(), 90);
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("3d").is_err());
    }
}
