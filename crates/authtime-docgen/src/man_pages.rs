//! `authtimed(8)`, `authtime(1)` and one page per `authtime` subcommand
//! (`authtime-nts-cert(1)`, as git and clap_mangen name them), from the clap
//! definitions.
//!
//! clap_mangen renders the title, synopsis, options and subcommand list. The
//! rest is taken apart here: the `after_help` text of a command is split into
//! paragraphs, and a paragraph's "Exit codes: ..." goes to EXIT STATUS, an
//! "Examples:" block to EXAMPLES (unfilled), everything else to DESCRIPTION.
//! FILES and SEE ALSO come from the tables below.

use clap::{Arg, ArgAction, Command, CommandFactory};
use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use crate::GeneratedFile;
use crate::roff_blocks::{
    Example, PREAMBLE, body, code_spans_in_bold, examples_section, files_section, man_part,
    paragraphs, see_also_section, title_line,
};

/// The files `authtimed` reads or where its data belongs.
const AUTHTIMED_FILES: &[(&str, &str)] = &[
    (
        "/etc/authtime/authtimed.toml",
        "The configuration file that the systemd unit names with --config; see \
         authtimed.toml(5). Without --config the embedded defaults apply.",
    ),
    (
        "/run/chrony/chronyd.sock",
        "chronyd's command socket, where the default clock source (`[clock] source = \"auto\"`) \
         reads the state of the host's clock.",
    ),
    (
        "/var/lib/authtime/",
        "The systemd unit's state directory: the place for the NTS cookie master keys \
         (`[keystore] path`).",
    ),
];

/// What `authtimed(8)` refers to.
const AUTHTIMED_SEE_ALSO: &[&str] = &[
    "authtime(1)",
    "authtime-config-check(1)",
    "authtime-status(1)",
    "authtimed.toml(5)",
    "chronyd(8)",
    "chrony.conf(5)",
];

/// What every `authtime` page refers to, besides its parent commands.
const AUTHTIME_SEE_ALSO: &[&str] = &["authtimed(8)", "authtimed.toml(5)", "chronyd(8)"];

/// Every command page: `authtimed.8`, then `authtime.1` and its subcommands.
#[must_use]
pub fn all_pages() -> Vec<GeneratedFile> {
    let mut pages = vec![authtimed_page()];
    pages.extend(authtime_pages());
    pages
}

/// `authtimed(8)`.
#[must_use]
pub fn authtimed_page() -> GeneratedFile {
    let mut cmd = authtimed::args::Args::command();
    cmd.build();
    let see_also: Vec<String> = AUTHTIMED_SEE_ALSO.iter().map(|s| (*s).to_owned()).collect();
    render_page(
        &cmd,
        "8",
        "System Administration",
        AUTHTIMED_FILES,
        &see_also,
    )
}

/// `authtime(1)` and one page per visible subcommand, at every depth.
#[must_use]
pub fn authtime_pages() -> Vec<GeneratedFile> {
    let mut root = without_help_subcommand(authtime::cli::Cli::command());
    root.build();
    let mut pages = Vec::new();
    collect_pages(&root, &mut Vec::new(), &mut pages);
    pages
}

fn collect_pages(cmd: &Command, parents: &mut Vec<String>, pages: &mut Vec<GeneratedFile>) {
    let name = page_name(cmd).to_owned();
    let see_also: Vec<String> = parents
        .iter()
        .map(|p| format!("{p}(1)"))
        .chain(AUTHTIME_SEE_ALSO.iter().map(|s| (*s).to_owned()))
        .collect();
    pages.push(render_page(cmd, "1", "User Commands", &[], &see_also));
    parents.push(name);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect_pages(sub, parents, pages);
    }
    parents.pop();
}

/// clap's `help` subcommand is not a page of its own (clap_mangen drops it too).
fn without_help_subcommand(cmd: Command) -> Command {
    cmd.disable_help_subcommand(true)
        .mut_subcommands(without_help_subcommand)
}

/// `authtime-nts-cert` for `authtime nts cert` (set by `Command::build`).
fn page_name(cmd: &Command) -> &str {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name())
}

fn render_page(
    cmd: &Command,
    section: &str,
    manual: &str,
    files: &[(&str, &str)],
    see_also: &[String],
) -> GeneratedFile {
    let name = page_name(cmd).to_owned();
    let man = Man::new(cmd.clone()).section(section);
    let help = HelpText::of(cmd);

    let mut page = String::from(PREAMBLE);
    page += &title_line(
        &name,
        section,
        cmd.get_version().unwrap_or_default(),
        manual,
    );
    let mut roff = Roff::new();
    roff.control("SH", ["NAME"]);
    roff.text([roman(format!("{name} - {}", one_line_summary(cmd, &name)))]);
    page += &body(&roff);
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    roff.text(synopsis(cmd));
    page += &body(&roff).replace(UNBREAKABLE_SPACE, "\\ ");

    let mut roff = Roff::new();
    roff.control("SH", ["DESCRIPTION"]);
    let about = cmd
        .get_long_about()
        .or_else(|| cmd.get_about())
        .map(ToString::to_string)
        .unwrap_or_default();
    paragraphs(
        &mut roff,
        about
            .split("\n\n")
            .chain(help.description.iter().map(String::as_str))
            .filter(|p| !p.trim().is_empty()),
    );
    page += &body(&roff);

    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        // clap_mangen separates an option's help from its possible values
        // with `.br`, a blank line and `.br`; a blank line is a paragraph
        // break that mandoc warns about between two breaks.
        let options = man_part(|w| man.render_options_section(w));
        page += &code_spans_in_bold(&options.replace("\n.br\n\n.br\n", "\n.sp\n"));
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        page += &code_spans_in_bold(&man_part(|w| man.render_subcommands_section(w)));
    }

    let mut roff = Roff::new();
    if !help.exit_status.is_empty() {
        roff.control("SH", ["EXIT STATUS"]);
        paragraphs(&mut roff, help.exit_status.iter().map(String::as_str));
    }
    files_section(&mut roff, files);
    examples_section(&mut roff, &help.examples);
    see_also_section(&mut roff, see_also);
    page += &body(&roff);

    GeneratedFile::new("man", format!("{name}.{section}"), page.into_bytes())
}

/// The SYNOPSIS line: every visible option with its value (clap_mangen's
/// leaves the values out), optional ones in brackets, repeatable ones
/// followed by "...", then the operands and the subcommand.
fn synopsis(cmd: &Command) -> Vec<Inline> {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    let visible = |a: &&Arg| !a.is_hide_set();
    for arg in cmd
        .get_arguments()
        .filter(visible)
        .filter(|a| !a.is_positional())
    {
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(short), Some(long)) if !takes_value(arg) => format!("-{short}|--{long}"),
            (_, Some(long)) => format!("--{long}"),
            (Some(short), None) => format!("-{short}"),
            (None, None) => continue,
        };
        let optional = !arg.is_required_set();
        line.push(roman(if optional { " [" } else { " " }));
        line.push(bold(flag));
        if takes_value(arg) {
            line.push(roman(UNBREAKABLE_SPACE));
            line.push(italic(value_name(arg)));
        }
        if optional {
            line.push(roman("]"));
        }
        if matches!(arg.get_action(), ArgAction::Append | ArgAction::Count) {
            line.push(roman("..."));
        }
    }
    for arg in cmd.get_positionals().filter(visible) {
        if arg.is_required_set() {
            line.push(roman(" "));
            line.push(italic(value_name(arg)));
        } else {
            line.push(roman(" ["));
            line.push(italic(value_name(arg)));
            line.push(roman("]"));
        }
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push(roman(" "));
        line.push(italic("command"));
        line.push(roman(" ..."));
    }
    line
}

/// Stands for roff's unbreakable space (`\ `, which the roff crate would
/// escape) between an option and its value, replaced after rendering.
const UNBREAKABLE_SPACE: &str = "\u{7}";

fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names().map_or_else(
        || arg.get_id().as_str().to_uppercase(),
        |names| {
            names
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// The NAME line's text: the short help without a leading "name: " and
/// without the final full stop.
fn one_line_summary(cmd: &Command, name: &str) -> String {
    let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
    let about = about.replace('\n', " ");
    let about = about.strip_prefix(&format!("{name}: ")).unwrap_or(&about);
    about.trim().trim_end_matches('.').to_owned()
}

/// A command's `after_help`, taken apart.
#[derive(Debug, Default, PartialEq, Eq)]
struct HelpText {
    /// Paragraphs that go on the description.
    description: Vec<String>,
    /// What follows "Exit codes:".
    exit_status: Vec<String>,
    /// The "Example:" and "Examples:" blocks.
    examples: Vec<Example>,
}

impl HelpText {
    fn of(cmd: &Command) -> Self {
        cmd.get_after_long_help()
            .or_else(|| cmd.get_after_help())
            .map(|text| Self::parse(&text.to_string()))
            .unwrap_or_default()
    }

    fn parse(text: &str) -> Self {
        let mut help = Self::default();
        for paragraph in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            let mut lines = paragraph.lines();
            let first = lines.next().unwrap_or_default().trim();
            if first.starts_with("Example") && first.ends_with(':') {
                let caption =
                    (!matches!(first, "Example:" | "Examples:")).then(|| first.to_owned());
                help.examples.push(Example {
                    caption,
                    lines: lines.map(|l| l.trim().to_owned()).collect(),
                });
            } else if let Some(at) = paragraph.find("Exit codes:") {
                let before = paragraph[..at].trim();
                if !before.is_empty() {
                    help.description.push(before.to_owned());
                }
                let codes = paragraph[at + "Exit codes:".len()..].trim();
                help.exit_status.push(codes.to_owned());
            } else {
                help.description.push(paragraph.to_owned());
            }
        }
        help
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_help_is_split_into_description_exit_status_and_examples() {
        let help = HelpText::parse(
            "Reads a file. Exit codes: 0 ok, 2 bad.\n\nMore words.\n\n\
             Examples:\n  authtime a\n  authtime b --x\n\n\
             Example (RFC 4493 example 2):\n  printf x | authtime c",
        );
        assert_eq!(help.description, ["Reads a file.", "More words."]);
        assert_eq!(help.exit_status, ["0 ok, 2 bad."]);
        assert_eq!(
            help.examples,
            [
                Example {
                    caption: None,
                    lines: vec!["authtime a".into(), "authtime b --x".into()],
                },
                Example {
                    caption: Some("Example (RFC 4493 example 2):".into()),
                    lines: vec!["printf x | authtime c".into()],
                },
            ]
        );
    }

    #[test]
    fn subcommand_pages_are_named_after_their_path() {
        let names: Vec<String> = authtime_pages().into_iter().map(|p| p.path).collect();
        assert!(names.contains(&"man/authtime.1".to_owned()), "{names:?}");
        assert!(
            names.contains(&"man/authtime-nts-cert.1".to_owned()),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("-help")),
            "no page for clap's help subcommand: {names:?}"
        );
    }

    #[test]
    fn every_page_has_one_preamble_and_no_date() {
        for page in all_pages() {
            let text = String::from_utf8(page.bytes).expect("utf-8");
            assert_eq!(text.matches(PREAMBLE).count(), 1, "{}", page.path);
            let title = text
                .lines()
                .find(|l| l.starts_with(".TH "))
                .expect("a .TH line");
            assert!(title.contains(" \"\" "), "{}: {title}", page.path);
        }
    }
}
