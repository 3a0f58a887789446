//! The pieces of roff that every page shares: the apostrophe preamble once
//! at the top, text with `code` spans in bold, and the FILES, EXAMPLES and
//! SEE ALSO sections.

use std::io::{self, Write};

use clap_mangen::roff::{Inline, Roff, bold, roman};

/// What the `roff` crate writes at the top of every rendering (it makes
/// `'` an apostrophe on groff and elsewhere). A page has it once.
pub(crate) const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// A rendering without the preamble.
pub(crate) fn body(roff: &Roff) -> String {
    without_preamble(roff.render())
}

/// The output of one of `clap_mangen::Man`'s `render_*` methods, without
/// the preamble.
pub(crate) fn man_part(render: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    if render(&mut out).is_err() {
        unreachable!("rendering into memory failed");
    }
    without_preamble(String::from_utf8_lossy(&out).into_owned())
}

fn without_preamble(text: String) -> String {
    match text.strip_prefix(PREAMBLE) {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

/// The `.TH` line: the title in capitals, the section, no date (so that the
/// output is the same at every run), the version and the manual's name.
/// Written here because the `roff` crate drops an empty argument, which
/// would shift the ones after it. Then no hyphenation and a ragged right
/// margin, so that options and paths are never split.
pub(crate) fn title_line(name: &str, section: &str, version: &str, manual: &str) -> String {
    let quoted = |s: &str| format!("\"{}\"", s.replace('"', "'"));
    format!(
        ".TH {} {section} \"\" {} {}\n.nh\n.ad l\n",
        quoted(&name.to_uppercase()),
        quoted(&format!("authtime {version}")),
        quoted(manual)
    )
}

/// Rendered roff with the `` `code` `` spans of its text lines in bold: for
/// what clap_mangen renders from help texts.
pub(crate) fn code_spans_in_bold(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for line in roff.lines() {
        let ticks = line.matches('`').count();
        if line.starts_with('.') || ticks == 0 || !ticks.is_multiple_of(2) {
            out.push_str(line);
        } else {
            for (i, part) in line.split('`').enumerate() {
                if i > 0 {
                    out.push_str(if i % 2 == 1 { "\\fB" } else { "\\fR" });
                }
                out.push_str(part);
            }
        }
        out.push('\n');
    }
    out
}

/// A command line of an example, broken before its options (and after
/// pipes) with shell continuations so that it fits in `width` characters
/// where it can.
pub(crate) fn wrap_command(line: &str, width: usize) -> Vec<String> {
    if line.len() <= width {
        return vec![line.to_owned()];
    }
    let mut pieces: Vec<String> = Vec::new();
    let mut after_pipe = true;
    for word in line.split(' ') {
        match pieces.last_mut() {
            Some(piece) if !after_pipe && !word.starts_with("--") => {
                piece.push(' ');
                piece.push_str(word);
            }
            _ => pieces.push(word.to_owned()),
        }
        after_pipe = word == "|";
    }
    let mut lines = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        if current.is_empty() {
            current = piece;
        } else if current.len() + 1 + piece.len() + 2 <= width {
            current.push(' ');
            current.push_str(&piece);
        } else {
            lines.push(format!("{current} \\"));
            current = format!("    {piece}");
        }
    }
    lines.push(current);
    lines
}

/// `text` with each `` `code` `` span in bold (the backticks dropped).
pub(crate) fn with_code(text: &str) -> Vec<Inline> {
    if !text.matches('`').count().is_multiple_of(2) {
        return vec![roman(text)];
    }
    text.split('`')
        .enumerate()
        .filter(|(_, part)| !part.is_empty())
        .map(|(i, part)| if i % 2 == 1 { bold(part) } else { roman(part) })
        .collect()
}

/// Paragraphs of text, `.PP` between them.
pub(crate) fn paragraphs<'a>(roff: &mut Roff, paragraphs: impl IntoIterator<Item = &'a str>) {
    for (i, paragraph) in paragraphs.into_iter().enumerate() {
        if i > 0 {
            roff.control("PP", []);
        }
        for line in paragraph.lines() {
            roff.text(with_code(line.trim()));
        }
    }
}

/// A `.SH FILES` section: each path in bold with what it is.
pub(crate) fn files_section(roff: &mut Roff, files: &[(&str, &str)]) {
    if files.is_empty() {
        return;
    }
    roff.control("SH", ["FILES"]);
    for (path, what) in files {
        roff.control("TP", []);
        roff.text([bold(*path)]);
        roff.text(with_code(what));
    }
}

/// One example: an optional caption and command lines, shown unfilled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Example {
    /// What the example shows, when the text says more than "Examples:".
    pub(crate) caption: Option<String>,
    /// The lines, unindented.
    pub(crate) lines: Vec<String>,
}

/// Example lines longer than this are broken (an 80-column terminal less
/// the page's indentation).
const EXAMPLE_WIDTH: usize = 68;

/// A `.SH EXAMPLES` section.
pub(crate) fn examples_section(roff: &mut Roff, examples: &[Example]) {
    if examples.is_empty() {
        return;
    }
    roff.control("SH", ["EXAMPLES"]);
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            roff.control("PP", []);
        }
        if let Some(caption) = &example.caption {
            roff.text(with_code(caption));
        }
        roff.control("RS", ["4"]);
        roff.control("nf", []);
        for line in example
            .lines
            .iter()
            .flat_map(|l| wrap_command(l, EXAMPLE_WIDTH))
        {
            roff.text([roman(line)]);
        }
        roff.control("fi", []);
        roff.control("RE", []);
    }
}

/// A `.SH SEE ALSO` section from `name(section)` references.
pub(crate) fn see_also_section(roff: &mut Roff, pages: &[String]) {
    if pages.is_empty() {
        return;
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let separator = if i + 1 == pages.len() { "" } else { ", " };
        match page.split_once('(') {
            Some((name, section)) => {
                line.push(bold(name));
                line.push(roman(format!("({section}{separator}")));
            }
            None => {
                line.push(bold(page.as_str()));
                line.push(roman(separator));
            }
        }
    }
    roff.text(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preamble_is_what_the_roff_crate_writes() {
        let rendered = Roff::new().control("SH", ["X"]).render();
        assert!(rendered.starts_with(PREAMBLE), "{rendered}");
        assert_eq!(body(Roff::new().control("SH", ["X"])), ".SH X\n");
    }

    #[test]
    fn code_spans_are_bold_and_unbalanced_backticks_stay_text() {
        assert_eq!(
            with_code("see `authtime status` now"),
            vec![roman("see "), bold("authtime status"), roman(" now")]
        );
        assert_eq!(with_code("a ` b"), vec![roman("a ` b")]);
    }

    #[test]
    fn long_commands_break_before_options_and_after_pipes() {
        assert_eq!(wrap_command("authtime mac list", 10), ["authtime mac list"]);
        let line = "printf 6bc1bee2 | xxd -r -p | authtime mac verify --alg aes128-cmac \
                    --key 2b7e151628aed2a6abf7158809cf4f3c --tag 070a16b46b4d4144f79bdd9dd04a287c";
        assert_eq!(
            wrap_command(line, 68),
            [
                "printf 6bc1bee2 | xxd -r -p | authtime mac verify \\",
                "    --alg aes128-cmac --key 2b7e151628aed2a6abf7158809cf4f3c \\",
                "    --tag 070a16b46b4d4144f79bdd9dd04a287c",
            ]
        );
    }

    #[test]
    fn code_spans_of_rendered_text_lines_become_bold() {
        assert_eq!(
            code_spans_in_bold(".TP\nAddress, `IP:PORT` (or `x`)\n.B `y`\n"),
            ".TP\nAddress, \\fBIP:PORT\\fR (or \\fBx\\fR)\n.B `y`\n"
        );
    }

    #[test]
    fn see_also_names_are_bold_and_separated() {
        let mut roff = Roff::new();
        see_also_section(&mut roff, &["authtime(1)".into(), "chronyd(8)".into()]);
        assert_eq!(
            body(&roff),
            ".SH \"SEE ALSO\"\n\\fBauthtime\\fR(1), \\fBchronyd\\fR(8)\n"
        );
    }
}
