//! `authtimed.toml(5)`, rendered from [`crate::config_reference`].

use clap::CommandFactory;
use clap_mangen::roff::{Roff, bold, italic, roman};

use crate::GeneratedFile;
use crate::config_reference::{DefaultValue, EXAMPLES, Key, SECTIONS, Section};
use crate::roff_blocks::{
    Example, PREAMBLE, body, examples_section, files_section, paragraphs, see_also_section,
    title_line, with_code,
};

const DESCRIPTION: &[&str] = &[
    "authtimed(8) reads this file when it is named with --config; the systemd unit names \
     /etc/authtime/authtimed.toml. `authtime serve`, `authtime status --config` and \
     `authtime config check` read the same format.",
    "The file is TOML. Every section and every key is optional: an empty file, or no \
     --config at all, gives the defaults below, which serve plain NTP on port 123 of every \
     address, rate limited, and announce the state of the host's clock as chronyd (or, \
     without chronyd, the kernel) reports it. Unknown sections and keys are errors, and so \
     is a value of the wrong type. Relative paths are relative to the directory of the \
     configuration file.",
    "`authtime config check FILE` checks a file and the key file it names, and prints each \
     problem as FILE:LINE:COLUMN: message; authtimed does not start with a file that fails \
     the check (exit status 2).",
    "SIGHUP reloads the key file and the NTS certificate and private key; every other \
     setting is read when authtimed starts.",
];

const FILES: &[(&str, &str)] = &[
    (
        "/etc/authtime/authtimed.toml",
        "The configuration file of the systemd unit.",
    ),
    (
        "/var/lib/authtime/nts-master-keys",
        "Where the embedded NTS key store belongs under systemd (`[keystore] path`).",
    ),
];

const SEE_ALSO: &[&str] = &[
    "authtimed(8)",
    "authtime(1)",
    "authtime-config-check(1)",
    "authtime-keygen(1)",
    "authtime-nts-cert(1)",
    "authtime-status(1)",
    "chronyd(8)",
    "chrony.conf(5)",
];

/// `man/authtimed.toml.5`.
#[must_use]
pub fn page() -> GeneratedFile {
    let version = authtimed::args::Args::command()
        .get_version()
        .unwrap_or_default()
        .to_owned();
    let mut page = String::from(PREAMBLE);
    page += &title_line("authtimed.toml", "5", &version, "File Formats");

    let mut roff = Roff::new();
    roff.control("SH", ["NAME"]);
    roff.text([roman(
        "authtimed.toml - configuration file of authtimed, the authtime NTP and NTS server",
    )]);
    roff.control("SH", ["SYNOPSIS"]);
    roff.text([bold("/etc/authtime/authtimed.toml")]);
    roff.control("SH", ["DESCRIPTION"]);
    paragraphs(&mut roff, DESCRIPTION.iter().copied());
    roff.control("SH", ["SECTIONS"]);
    for section in SECTIONS {
        render_section(&mut roff, section);
    }
    let examples: Vec<Example> = EXAMPLES
        .iter()
        .map(|(caption, text)| Example {
            caption: Some((*caption).to_owned()),
            lines: text.lines().map(str::to_owned).collect(),
        })
        .collect();
    files_section(&mut roff, FILES);
    examples_section(&mut roff, &examples);
    let see_also: Vec<String> = SEE_ALSO.iter().map(|s| (*s).to_owned()).collect();
    see_also_section(&mut roff, &see_also);
    page += &body(&roff);
    GeneratedFile::new("man", "authtimed.toml.5", page.into_bytes())
}

fn render_section(roff: &mut Roff, section: &Section) {
    let heading = format!("[{}]", section.name);
    roff.control("SS", [heading.as_str()]);
    roff.text(with_code(section.summary));
    for key in section.keys {
        render_key(roff, key);
    }
}

fn render_key(roff: &mut Roff, key: &Key) {
    roff.control("TP", []);
    match key.default {
        DefaultValue::Moved { .. } => roff.text([bold(key.name), roman(" (moved)")]),
        _ => roff.text([bold(key.name), roman(" = "), italic(key.kind.describe())]),
    };
    roff.text(with_code(key.text));
    match key.default {
        DefaultValue::Value(value) => {
            roff.control("br", []);
            roff.text([roman("Default: "), bold(value), roman(".")]);
        }
        DefaultValue::Unset { meaning, example } => {
            roff.control("br", []);
            roff.text([
                roman(format!("Default: none ({meaning}). Example: ")),
                bold(example),
                roman("."),
            ]);
        }
        DefaultValue::Moved { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_and_key_is_on_the_page() {
        let page = String::from_utf8(page().bytes).expect("utf-8");
        for section in SECTIONS {
            assert!(
                page.contains(&format!(".SS [{}]\n", section.name)),
                "[{}]",
                section.name
            );
            for key in section.keys {
                let tag = format!("\\fB{}\\fR", key.name.replace('-', "\\-"));
                assert!(page.contains(&tag), "[{}] {}", section.name, key.name);
            }
        }
    }
}
