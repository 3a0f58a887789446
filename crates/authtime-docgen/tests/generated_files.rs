//! The committed man pages and completions (`dist/man`, `dist/completions`)
//! are what the generator writes now, render without warnings, and parse in
//! their shells.
//!
//! groff, mandoc, bash, zsh and fish are used where installed; a check whose tool is
//! missing says so on standard output and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use authtime_docgen::{GeneratedFile, REGENERATE_COMMAND, compare_dirs, generate_all, write_all};

/// A fresh output in a folder of its own under cargo's test scratch space.
fn fresh_output(name: &str) -> (PathBuf, Vec<GeneratedFile>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("authtime-docgen-{name}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("old output removed");
    }
    let files = generate_all();
    write_all(&dir, &files).expect("written");
    (dir, files)
}

#[test]
fn committed_pages_and_completions_are_up_to_date() {
    let (fresh, _) = fresh_output("current");
    let committed = authtime_docgen::workspace_dist_dir();
    let differences = compare_dirs(&fresh, &committed).expect("compared");
    std::fs::remove_dir_all(&fresh).expect("removed");
    assert!(
        differences.is_empty(),
        "the generated documentation is out of date:\n  {}\nupdate it with `{REGENERATE_COMMAND}` \
         and commit dist/man and dist/completions",
        differences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn generating_twice_gives_the_same_bytes() {
    assert_eq!(generate_all(), generate_all());
}

#[test]
fn stale_files_are_removed_and_current_ones_left_alone() {
    let (dir, files) = fresh_output("rewrite");
    std::fs::write(dir.join("man/authtime-gone.1"), "old").expect("written");
    let report = write_all(&dir, &files).expect("rewritten");
    assert_eq!(report.removed, ["man/authtime-gone.1"]);
    assert!(report.written.is_empty(), "{:?}", report.written);
    assert_eq!(report.unchanged, files.len());
    std::fs::remove_dir_all(&dir).expect("removed");
}

/// Every page that a SEE ALSO or SUBCOMMANDS entry names as ours exists.
#[test]
fn references_to_our_pages_point_at_generated_pages() {
    let files = generate_all();
    let pages: Vec<String> = files
        .iter()
        .filter_map(|f| f.path.strip_prefix("man/"))
        .map(str::to_owned)
        .collect();
    for file in files.iter().filter(|f| f.path.starts_with("man/")) {
        let text = String::from_utf8_lossy(&file.bytes).replace("\\-", "-");
        let text = text.replace("\\fB", "").replace("\\fR", "");
        for (at, _) in text.match_indices("authtime") {
            let rest = &text[at..];
            let Some(open) = rest.find('(') else { continue };
            let name = &rest[..open];
            let section = rest[open + 1..].chars().next().unwrap_or(' ');
            let is_reference = rest[open..].starts_with(&format!("({section})"))
                && section.is_ascii_digit()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '.');
            if is_reference {
                let page = format!("{name}.{section}");
                assert!(
                    pages.contains(&page),
                    "{} refers to {name}({section}), which is not generated",
                    file.path
                );
            }
        }
    }
}

fn tool(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!(
            "{name} is not installed: its check is skipped (Debian: apt-get install {})",
            if name == "groff" { "groff-base" } else { name }
        );
    }
    found
}

#[test]
fn every_man_page_renders_without_warnings() {
    if !tool("groff") {
        return;
    }
    let (dir, files) = fresh_output("groff");
    for file in files.iter().filter(|f| f.path.starts_with("man/")) {
        let output = Command::new("groff")
            .args(["-man", "-ww", "-z", "-Tutf8"])
            .arg(dir.join(&file.path))
            .output()
            .expect("groff runs");
        let warnings = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && warnings.is_empty(),
            "groff -man -ww on {}: {}{warnings}",
            file.path,
            output.status
        );
    }
    std::fs::remove_dir_all(&dir).expect("removed");
}

/// mandoc's checks are stricter than groff's; the empty date is on purpose
/// (the same bytes at every run).
#[test]
fn every_man_page_passes_mandoc_lint() {
    if !tool("mandoc") {
        return;
    }
    let (dir, files) = fresh_output("mandoc");
    for file in files.iter().filter(|f| f.path.starts_with("man/")) {
        let output = Command::new("mandoc")
            .args(["-Tlint", "-W", "warning"])
            .arg(dir.join(&file.path))
            .output()
            .expect("mandoc runs");
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        let warnings: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("missing date"))
            .collect();
        assert!(
            warnings.is_empty(),
            "mandoc -Tlint on {}:\n{}",
            file.path,
            warnings.join("\n")
        );
    }
    std::fs::remove_dir_all(&dir).expect("removed");
}

#[test]
fn completion_scripts_parse_in_their_shells() {
    let (dir, files) = fresh_output("shells");
    for file in files.iter().filter(|f| f.path.starts_with("completions/")) {
        let name = file.path.trim_start_matches("completions/");
        let shell = if name.ends_with(".bash") {
            "bash"
        } else if name.ends_with(".fish") {
            "fish"
        } else {
            "zsh"
        };
        if !tool(shell) {
            continue;
        }
        let output = Command::new(shell)
            .arg("-n")
            .arg(dir.join(&file.path))
            .output()
            .expect("the shell runs");
        assert!(
            output.status.success(),
            "{shell} -n {}: {}",
            file.path,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).expect("removed");
}
