//! Where in a configuration file a value is: from a dotted path
//! (`ntp.listen[1]`) or a byte offset to a 1-based line and column, so that
//! `authtime config check` can point at each problem.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A position in a file, both 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Line.
    pub line: usize,
    /// Column, in characters.
    pub column: usize,
}

/// The line and column of byte `offset` of `text`.
#[must_use]
pub fn location_of_offset(text: &str, offset: usize) -> Location {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// The location of the value at `path` (`section.key` with optional `[i]`
/// indexes), or of the deepest table on the way when the value is not in the
/// file (a default); `None` when the text does not parse or nothing matches.
#[must_use]
pub fn locate(text: &str, path: &str) -> Option<Location> {
    let root = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = root.get_ref();
    let mut found: Option<usize> = None;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let (key, index) = split_index(part);
        let Some((key_span, value)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == key)
        else {
            break;
        };
        found = Some(key_span.span().start);
        let value: &Spanned<DeValue<'_>> = match (index, value.get_ref()) {
            (Some(i), DeValue::Array(items)) => match items.get(i) {
                Some(item) => item,
                None => break,
            },
            _ => value,
        };
        if index.is_some() || parts.peek().is_none() {
            found = Some(value.span().start);
        }
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => break,
        }
    }
    found.map(|offset| location_of_offset(text, offset))
}

/// `listen[2]` → (`listen`, Some(2)).
fn split_index(part: &str) -> (&str, Option<usize>) {
    match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
        Some((key, index)) => (key, index.parse().ok()),
        None => (part, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "# comment\n[ntp]\nlisten = [\"a\",\n  \"b\"]\nstratum = 16\n\n[log]\nlevel = \"x\"\n";

    #[test]
    fn values_array_items_and_missing_keys_are_located() {
        let at = |path| locate(TEXT, path).map(|l| (l.line, l.column));
        assert_eq!(at("ntp.listen[0]"), Some((3, 11)));
        assert_eq!(at("ntp.listen[1]"), Some((4, 3)));
        assert_eq!(at("ntp.stratum"), Some((5, 11)));
        assert_eq!(at("log.level"), Some((8, 9)));
        // Not in the file: the section that would hold it.
        assert_eq!(at("ntp.workers"), Some((2, 2)));
        assert_eq!(at("metrics.listen"), None);
    }

    #[test]
    fn offsets_become_lines_and_columns() {
        assert_eq!(
            location_of_offset("ab\ncd", 4),
            Location { line: 2, column: 2 }
        );
        assert_eq!(
            location_of_offset("ab", 99),
            Location { line: 1, column: 3 }
        );
    }
}
