//! The configuration reference (`src/config_reference.rs`, the source of
//! authtimed.toml(5)) against the real parser, `authtime_server::ConfigFile`,
//! both ways: every section and key the parser reads is documented and every
//! documented one is read, with the documented type, default and set of
//! values; the values shown are accepted; the example files, the packaged configuration and
//! the TOML in docs/ use only documented keys.
//!
//! When one fails after a change to the configuration: update
//! `crates/authtime-docgen/src/config_reference.rs`, then regenerate the
//! pages with `cargo run -p authtime-docgen`.

mod serde_shape;

use std::collections::BTreeSet;
use std::path::Path;

use authtime_docgen::config_reference::{DefaultValue, Key, SECTIONS, Section, ValueKind};
use authtime_server::ConfigFile;
use clap::CommandFactory;
use serde_shape::{Shape, shape_of};

const UPDATE: &str = "update crates/authtime-docgen/src/config_reference.rs, then run \
                      `cargo run -p authtime-docgen`";

/// The sections as the parser defines them.
fn parsed_sections() -> Vec<(&'static str, Shape)> {
    match shape_of::<ConfigFile>() {
        Shape::Struct(fields) => fields,
        other => panic!("ConfigFile is not a struct: {other:?}"),
    }
}

/// A section's struct, and whether it is optional (`Option<...Section>`).
fn section_fields(shape: &Shape) -> (&[(&'static str, Shape)], bool) {
    match shape {
        Shape::Struct(fields) => (fields, false),
        Shape::Option(inner) => match inner.as_ref() {
            Shape::Struct(fields) => (fields, true),
            other => panic!("not a section: {other:?}"),
        },
        other => panic!("not a section: {other:?}"),
    }
}

fn parsed_section(name: &str) -> (Vec<(&'static str, Shape)>, bool) {
    let sections = parsed_sections();
    let (_, shape) = sections
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("the parser has no [{name}]: {UPDATE}"));
    let (fields, optional) = section_fields(shape);
    (fields.to_vec(), optional)
}

fn documented(section: &Section) -> Vec<&'static str> {
    section.keys.iter().map(|k| k.name).collect()
}

fn debug_of(text: &str) -> String {
    match ConfigFile::parse(text) {
        Ok(file) => format!("{file:?}"),
        Err(e) => panic!("the parser refuses\n{text}\n: {e}"),
    }
}

/// `[section]` and `key = value`.
fn file_with(section: &Section, key: &Key, value: &str) -> String {
    format!("[{}]\n{} = {value}\n", section.name, key.name)
}

/// The value the tests set for a key: its default, or its example.
fn value_of(key: &Key) -> &'static str {
    match key.default {
        DefaultValue::Value(v) => v,
        DefaultValue::Unset { example, .. } => example,
        DefaultValue::Moved { .. } => "1",
    }
}

fn difference<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().filter(|x| !b.contains(x)).copied().collect()
}

#[test]
fn every_section_the_parser_reads_is_documented_and_no_other() {
    let parsed: Vec<&str> = parsed_sections().iter().map(|(n, _)| *n).collect();
    let documented: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
    let undocumented = difference(&parsed, &documented);
    let unknown = difference(&documented, &parsed);
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "sections the parser reads but the reference lacks: {undocumented:?}; sections the \
         reference documents but the parser does not read: {unknown:?}: {UPDATE}"
    );
}

#[test]
fn every_key_the_parser_reads_is_documented_and_no_other() {
    let mut problems = Vec::new();
    for section in SECTIONS {
        let (fields, optional) = parsed_section(section.name);
        let parsed: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
        let documented = documented(section);
        for key in difference(&parsed, &documented) {
            problems.push(format!(
                "[{}] {key} is read but not documented",
                section.name
            ));
        }
        for key in difference(&documented, &parsed) {
            problems.push(format!(
                "[{}] {key} is documented but not read",
                section.name
            ));
        }
        if optional != section.presence_enables {
            problems.push(format!(
                "[{}]: presence_enables is {}, but the section is {}an Option in ConfigFile",
                section.name,
                section.presence_enables,
                if optional { "" } else { "not " }
            ));
        }
    }
    assert!(problems.is_empty(), "{}: {UPDATE}", problems.join("\n"));
}

#[test]
fn every_documented_type_is_the_parsers() {
    let mut problems = Vec::new();
    for section in SECTIONS {
        let (fields, _) = parsed_section(section.name);
        for key in section.keys {
            let Some((_, shape)) = fields.iter().find(|(n, _)| *n == key.name) else {
                continue; // reported by every_key_the_parser_reads_is_documented_and_no_other
            };
            let unset = !matches!(key.default, DefaultValue::Value(_));
            let (inner, optional) = match shape {
                Shape::Option(inner) => (inner.as_ref(), true),
                other => (other, false),
            };
            if optional != unset {
                problems.push(format!(
                    "[{}] {}: the field is {}an Option, so its default should {}be Unset or Moved",
                    section.name,
                    key.name,
                    if optional { "" } else { "not " },
                    if optional { "" } else { "not " },
                ));
            }
            let matches = match key.kind {
                ValueKind::Bool => *inner == Shape::Bool,
                ValueKind::Integer => *inner == Shape::Integer,
                ValueKind::Float => *inner == Shape::Float,
                ValueKind::String | ValueKind::Path => *inner == Shape::String,
                ValueKind::Strings => *inner == Shape::Seq(Box::new(Shape::String)),
                ValueKind::Integers => *inner == Shape::Seq(Box::new(Shape::Integer)),
                ValueKind::Any => *inner == Shape::Any,
                ValueKind::Tables => {
                    matches!(inner, Shape::Seq(element) if matches!(**element, Shape::Struct(_)))
                }
            };
            if !matches {
                problems.push(format!(
                    "[{}] {}: documented as {:?}, parsed as {inner:?}",
                    section.name, key.name, key.kind
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}: {UPDATE}", problems.join("\n"));
}

/// A key set to its documented default parses to the same configuration as
/// a file without it; a key documented without a default is `None` until
/// set.
#[test]
fn every_documented_default_is_the_parsers() {
    let mut problems = Vec::new();
    for section in SECTIONS {
        let bare = format!("[{}]\n", section.name);
        let without = debug_of(&bare);
        for key in section.keys {
            let with = debug_of(&file_with(section, key, value_of(key)));
            match key.default {
                DefaultValue::Value(value) => {
                    if with != without {
                        problems.push(format!(
                            "[{}] {} = {value} is documented as the default, but setting it \
                             changes the configuration",
                            section.name, key.name
                        ));
                    }
                }
                DefaultValue::Unset { .. } | DefaultValue::Moved { .. } => {
                    let at = with
                        .bytes()
                        .zip(without.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let field = format!("{}: ", key.name.replace('-', "_"));
                    let ok = without[..at].ends_with(&field)
                        && without[at..].starts_with("None")
                        && with[at..].starts_with("Some(");
                    if !ok {
                        problems.push(format!(
                            "[{}] {} is documented as unset by default, but the parser's \
                             default is not None (or setting it to {} changes something \
                             else):\n  without: {}\n  with:    {}",
                            section.name,
                            key.name,
                            value_of(key),
                            &without[at.saturating_sub(40)..],
                            &with[at.saturating_sub(40)..],
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}\n{UPDATE}", problems.join("\n"));
}

/// A value of another type is refused: what the page's types promise.
#[test]
fn a_value_of_another_type_is_refused() {
    for section in SECTIONS {
        for key in section.keys {
            let wrong = match key.kind {
                ValueKind::Bool => r#""yes""#,
                ValueKind::Integer | ValueKind::Float => r#""1""#,
                ValueKind::String | ValueKind::Path => "1",
                ValueKind::Strings | ValueKind::Integers | ValueKind::Tables => r#""x""#,
                ValueKind::Any => continue,
            };
            let text = file_with(section, key, wrong);
            assert!(
                ConfigFile::parse(&text).is_err(),
                "[{}] {} = {wrong} is accepted, but the reference says {}",
                section.name,
                key.name,
                key.kind.describe()
            );
        }
    }
}

/// The problems validation finds at `section.key`, or at its elements for
/// a key that takes strings (a rule about the whole list, such as the
/// mandatory AEAD, is not about the value).
fn problems_at(section: &Section, key: &Key, value: &str) -> Vec<String> {
    let path = match key.kind {
        ValueKind::Strings => format!("{}.{}[", section.name, key.name),
        _ => format!("{}.{}", section.name, key.name),
    };
    let text = file_with(section, key, value);
    let file = ConfigFile::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    match file.validate(None) {
        Ok(_) => Vec::new(),
        Err(problems) => problems
            .into_iter()
            .filter(|p| p.path == path || (path.ends_with('[') && p.path.starts_with(&path)))
            .map(|p| p.message)
            .collect(),
    }
}

/// `value`, or `[value]` for a key that takes strings.
fn toml_string(key: &Key, value: &str) -> String {
    match key.kind {
        ValueKind::Strings => format!("[\"{value}\"]"),
        _ => format!("\"{value}\""),
    }
}

/// A key with a fixed set of values: each documented value is valid and
/// named in the text, and the values that validation lists when it refuses
/// one are exactly the documented ones.
#[test]
fn every_documented_choice_is_the_validations() {
    let mut problems = Vec::new();
    for section in SECTIONS {
        for key in section.keys.iter().filter(|k| !k.choices.is_empty()) {
            let name = format!("[{}] {}", section.name, key.name);
            for choice in key.choices {
                let refused = problems_at(section, key, &toml_string(key, choice));
                if !refused.is_empty() {
                    problems.push(format!("{name} = {choice:?} is refused: {refused:?}"));
                }
                if !key.text.contains(&format!("\"{choice}\"")) {
                    problems.push(format!("{name}: the text does not name \"{choice}\""));
                }
            }
            let refused = problems_at(section, key, &toml_string(key, "no-such-value"));
            let listed: BTreeSet<&str> = refused
                .iter()
                .filter_map(|m| m.rsplit_once('(')?.1.split_once(')'))
                .flat_map(|(list, _)| list.split(", ").flat_map(|v| v.split(" or ")))
                .map(str::trim)
                .collect();
            let documented: BTreeSet<&str> = key.choices.iter().copied().collect();
            if listed != documented {
                problems.push(format!(
                    "{name}: validation lists {listed:?} when it refuses a value ({refused:?}), \
                     the reference {documented:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}\n{UPDATE}", problems.join("\n"));
}

#[test]
fn moved_keys_are_errors_that_say_where_they_went() {
    for section in SECTIONS {
        for key in section.keys {
            let DefaultValue::Moved { to } = key.default else {
                continue;
            };
            let (to_section, to_key) = to.split_once('.').expect("section.key");
            let target = SECTIONS
                .iter()
                .find(|s| s.name == to_section)
                .and_then(|s| s.keys.iter().find(|k| k.name == to_key));
            assert!(target.is_some(), "{to} is not a documented key");
            let problems = ConfigFile::parse(&file_with(section, key, "1"))
                .expect("parses")
                .validate(None)
                .expect_err("a moved key is an error");
            let path = format!("{}.{}", section.name, key.name);
            assert!(
                problems
                    .iter()
                    .any(|p| p.path == path && p.message.contains(&format!("[{to_section}]"))),
                "{path}: {problems:?}"
            );
        }
    }
}

#[test]
fn the_examples_on_the_page_parse_and_the_first_is_valid() {
    for (caption, text) in authtime_docgen::config_reference::EXAMPLES {
        ConfigFile::parse(text).unwrap_or_else(|e| panic!("{caption}\n{text}\n{e}"));
    }
    let (caption, text) = authtime_docgen::config_reference::EXAMPLES[0];
    if let Err(problems) = ConfigFile::parse(text).expect("parses").validate(None) {
        panic!("{caption}\n{text}\n{problems:?}");
    }
}

/// The `[section]` and `key = value` lines of a TOML text that the
/// reference does not document, commented-out ones (`# [section]`,
/// `# key = value`) included: examples show keys that way too. Lines, not a parse, because
/// the blocks in docs/ join the files of several servers.
fn undocumented_keys(text: &str) -> Vec<String> {
    let bare_key = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    let mut found = Vec::new();
    let mut section = None;
    // Inside `[[section.key]]`: the key of kind array of tables, whose text
    // lists its keys as `name:` or `name (required):`.
    let mut tables: Option<&authtime_docgen::config_reference::Key> = None;
    for line in text.lines() {
        let line = line.trim();
        let uncommented = line.trim_start_matches('#').trim();
        if let Some(name) = uncommented
            .strip_prefix("[[")
            .and_then(|l| l.split_once("]]"))
            .map(|(name, _)| name)
        {
            let key = name.split_once('.').and_then(|(s, k)| {
                authtime_docgen::config_reference::section(s)?
                    .keys
                    .iter()
                    .find(|key| {
                        key.name == k
                            && key.kind == authtime_docgen::config_reference::ValueKind::Tables
                    })
            });
            if key.is_none() {
                found.push(format!("[[{name}]]"));
                section = None;
            }
            tables = key;
            continue;
        }
        if let Some(key) = tables {
            if let Some((sub, _)) = uncommented.split_once('=') {
                let sub = sub.trim();
                if bare_key(sub)
                    && !key.text.contains(&format!("{sub}:"))
                    && !key.text.contains(&format!("{sub} (required):"))
                {
                    found.push(format!("[[{}]] {sub}", key.name));
                }
                continue;
            }
            if uncommented.starts_with('[') {
                tables = None;
            } else {
                continue;
            }
        }
        let header = uncommented
            .strip_prefix('[')
            .and_then(|l| l.split_once(']'))
            .filter(|(name, rest)| {
                bare_key(name) && (rest.trim().is_empty() || rest.trim().starts_with('#'))
            });
        if let Some((name, _)) = header {
            section = authtime_docgen::config_reference::section(name);
            if section.is_none() {
                found.push(format!("[{name}]"));
            }
        } else if let Some((key, _)) = uncommented.split_once('=') {
            let key = key.trim();
            if let Some(section) = section.filter(|_| bare_key(key))
                && !section.keys.iter().any(|k| k.name == key)
            {
                found.push(format!("[{}] {key}", section.name));
            }
        }
    }
    found
}

#[test]
fn example_and_packaged_files_and_the_toml_in_docs_use_only_documented_keys() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = Vec::new();
    // dist/debian holds the file the package installs in /etc.
    for dir in ["examples", "docs", "dist/debian"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut entries: Vec<_> = entries.map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for path in entries {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            match path.extension().and_then(|e| e.to_str()) {
                Some("toml") => texts.push((path.display().to_string(), text)),
                Some("md") => {
                    for (i, block) in text.split("```toml\n").skip(1).enumerate() {
                        let block = block.split("```").next().unwrap_or_default();
                        texts.push((format!("{} block {}", path.display(), i + 1), block.into()));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(texts.len() >= 2, "found {} files", texts.len());
    let mut problems = Vec::new();
    for (name, text) in &texts {
        for key in undocumented_keys(text) {
            problems.push(format!("{name}: {key}"));
        }
    }
    assert!(
        problems.is_empty(),
        "undocumented keys:\n{}\n{UPDATE}",
        problems.join("\n")
    );
}

/// Options the reference names ("--listen replaces this list") exist.
#[test]
fn options_named_in_the_reference_are_authtimeds() {
    let cmd = authtimed::args::Args::command();
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    for section in SECTIONS {
        let texts = std::iter::once(section.summary).chain(section.keys.iter().map(|k| k.text));
        for text in texts {
            for word in text.split_whitespace() {
                let Some(option) = word.strip_prefix("--") else {
                    continue;
                };
                let option = option.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
                assert!(
                    longs.contains(&option),
                    "[{}]: authtimed has no --{option} (it has {longs:?}): {UPDATE}",
                    section.name
                );
            }
        }
    }
}

#[test]
fn keys_of_an_array_of_tables_are_checked_against_its_text() {
    let text = "[nts-ke-balancer]\ncheck-interval = 5.0\n\
                [[nts-ke-balancer.backend]]\nname = \"a\"\ntoken-file = \"t\"\nbogus = 1\n\
                [[nts-ke-balancer.nope]]\nx = 1\n\
                [nts-ke]\nlisten = []\nalso-bogus = 2\n";
    assert_eq!(
        undocumented_keys(text),
        [
            "[[backend]] bogus",
            "[[nts-ke-balancer.nope]]",
            "[nts-ke] also-bogus"
        ]
    );
}
