//! `interop-matrix`: builds the interop matrix from the rows a test run
//! recorded, prints it, and writes it into (or checks it against) the README.

use std::path::PathBuf;
use std::process::ExitCode;

use authtime_docgen::interop_matrix;
use clap::Parser;

/// Builds the interop matrix from the rows the interop tests recorded.
#[derive(Debug, Parser)]
#[command(
    name = "interop-matrix",
    after_help = "Exit codes: 0 printed (and written, or with --check: the README matches \
                  the run), 1 with --check: the README claims a row the run did not prove, \
                  or lacks one it proved, 2 an error (no rows, no markers)."
)]
struct Args {
    /// The rows directory (default: target/tmp/interop-rows of this workspace).
    #[arg(long, value_name = "DIR")]
    rows: Option<PathBuf>,
    /// The file whose matrix section to write or check (default: README.md).
    #[arg(long, value_name = "FILE")]
    readme: Option<PathBuf>,
    /// Write the matrix into the README's section.
    #[arg(long, conflicts_with = "check")]
    write: bool,
    /// Compare the README's section with the run; exit 1 on any difference.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("interop-matrix: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let root = authtime_docgen::workspace_dist_dir()
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let rows_dir = args
        .rows
        .unwrap_or_else(|| root.join("target/tmp/interop-rows"));
    let readme_path = args.readme.unwrap_or_else(|| root.join("README.md"));
    let table = interop_matrix::table(&interop_matrix::read_rows(&rows_dir)?);
    print!("{table}");
    let readme = std::fs::read_to_string(&readme_path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", readme_path.display()))?;
    if args.write {
        let new = interop_matrix::replace_section(&readme, &table)?;
        std::fs::write(&readme_path, new)?;
        eprintln!("interop-matrix: wrote {}", readme_path.display());
    } else if args.check {
        let (unproven, missing) = interop_matrix::differences(&readme, &table)?;
        for line in &unproven {
            eprintln!(
                "interop-matrix: claimed in {} but not proven by this run: {line}",
                readme_path.display()
            );
        }
        for line in &missing {
            eprintln!(
                "interop-matrix: proven by this run but not in {}: {line}",
                readme_path.display()
            );
        }
        if !unproven.is_empty() || !missing.is_empty() {
            eprintln!(
                "interop-matrix: after a full run, update it with scripts/interop-matrix.sh --write"
            );
            return Ok(ExitCode::from(1));
        }
        eprintln!("interop-matrix: {} matches this run", readme_path.display());
    }
    Ok(ExitCode::SUCCESS)
}
