//! `authtime-docgen`: writes the man pages and shell completions into
//! `dist/man` and `dist/completions` (or checks that they are up to date).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Writes authtime's man pages and shell completions.
#[derive(Debug, Parser)]
#[command(
    name = "authtime-docgen",
    after_help = "Files in dist/man and dist/completions that are no longer generated are \
                  removed. Exit codes: 0 written (or, with --check, up to date), 1 with --check: \
                  out of date, 2 an error."
)]
struct Args {
    /// The `dist` folder to write into (default: this workspace's).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write nothing; list the files that differ and exit 1 if any does.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dist = args.out.unwrap_or_else(authtime_docgen::workspace_dist_dir);
    match run(&dist, args.check) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("authtime-docgen: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(dist: &std::path::Path, check: bool) -> anyhow::Result<ExitCode> {
    let files = authtime_docgen::generate_all();
    if check {
        let fresh = std::env::temp_dir().join(format!("authtime-docgen-{}", std::process::id()));
        authtime_docgen::write_all(&fresh, &files)?;
        let differences = authtime_docgen::compare_dirs(&fresh, dist);
        std::fs::remove_dir_all(&fresh)?;
        let differences = differences?;
        for difference in &differences {
            println!("{difference}");
        }
        if differences.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        println!("update them with: {}", authtime_docgen::REGENERATE_COMMAND);
        return Ok(ExitCode::from(1));
    }
    let report = authtime_docgen::write_all(dist, &files)?;
    for path in &report.written {
        println!("wrote {}", dist.join(path).display());
    }
    for path in &report.removed {
        println!("removed {}", dist.join(path).display());
    }
    println!(
        "{} files in {}: {} written, {} unchanged, {} removed",
        files.len(),
        dist.display(),
        report.written.len(),
        report.unchanged,
        report.removed.len()
    );
    Ok(ExitCode::SUCCESS)
}
