//! Reading a configuration file into [`Settings`], with every problem as
//! `FILE:LINE:COLUMN: path: message`, and the command-line values that
//! replace the file's (`--listen`, `--keys`, `--metrics`, `--workers`), for
//! `authtimed` and `authtime serve` alike.

use std::path::{Path, PathBuf};

use crate::config::location::{locate, location_of_offset};
use crate::config::{KeySource, MAX_WORKERS, parse_socket_addr};
use crate::{ConfigFile, Settings};

/// A configuration file's problems, each as `FILE:LINE:COLUMN: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblems {
    /// One line per problem.
    pub lines: Vec<String>,
}

impl ConfigProblems {
    /// The first problem, and how many more there are, on one line.
    #[must_use]
    pub fn one_line(&self, path: &Path) -> String {
        let first = self.lines.first().cloned().unwrap_or_default();
        match self.lines.len() {
            0 | 1 => first,
            n => format!(
                "{first} (and {} more: see authtime config check {})",
                n - 1,
                path.display()
            ),
        }
    }
}

/// Reads, parses and validates the configuration file at `path`.
///
/// # Errors
/// The file cannot be read (the outer error), or it has problems (the inner).
pub fn read_settings(path: &Path) -> std::io::Result<Result<Settings, ConfigProblems>> {
    let text = std::fs::read_to_string(path)?;
    let name = path.display();
    let file = match ConfigFile::parse(&text) {
        Ok(file) => file,
        Err(e) => {
            let at = e.span().map_or_else(String::new, |span| {
                let l = location_of_offset(&text, span.start);
                format!("{}:{}:", l.line, l.column)
            });
            let message = e.message().replace('\n', " ");
            return Ok(Err(ConfigProblems {
                lines: vec![format!("{name}:{at} {}", message.trim())],
            }));
        }
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    Ok(file
        .validate(Some(dir.unwrap_or(Path::new("."))))
        .map_err(|problems| ConfigProblems {
            lines: problems
                .iter()
                .map(|p| {
                    let at = locate(&text, &p.path)
                        .map_or_else(String::new, |l| format!("{}:{}:", l.line, l.column));
                    format!("{name}:{at} {}: {}", p.path, p.message)
                })
                .collect(),
        }))
}

/// Command-line values that replace the configuration file's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--listen`, repeated: replaces `[ntp] listen`.
    pub listen: Vec<String>,
    /// `--keys`: replaces `[ntp] keys`.
    pub keys: Option<PathBuf>,
    /// `--metrics`: replaces `[metrics] listen`.
    pub metrics: Option<String>,
    /// `--workers`: replaces `[ntp] workers` (0: one per CPU).
    pub workers: Option<usize>,
    /// `--log-format`: replaces `[log] format`.
    pub log_format: Option<String>,
    /// `--user`: replaces `[daemon] user`.
    pub user: Option<String>,
    /// `--group`: replaces `[daemon] group`.
    pub group: Option<String>,
    /// `--allow-root`: stay root when started as root.
    pub allow_root: bool,
}

impl Overrides {
    /// `settings` with these values in place of the file's.
    ///
    /// # Errors
    /// A value that does not parse, named after its option.
    pub fn apply(&self, mut settings: Settings) -> Result<Settings, String> {
        if !self.listen.is_empty() {
            settings.listen = self
                .listen
                .iter()
                .map(|text| parse_socket_addr(text).map_err(|e| format!("--listen: {e}")))
                .collect::<Result<_, _>>()?;
            settings.listen_is_default = false;
        }
        if let Some(path) = &self.keys {
            settings.keys = Some(KeySource {
                path: path.clone(),
                format: settings.keys.as_ref().and_then(|k| k.format),
            });
        }
        if let Some(text) = &self.metrics {
            settings.metrics =
                Some(parse_socket_addr(text).map_err(|e| format!("--metrics: {e}"))?);
        }
        if let Some(text) = &self.log_format {
            settings.log_format = text.parse().map_err(|e| format!("--log-format: {e}"))?;
        }
        if self.user.is_some() || self.group.is_some() || self.allow_root {
            let given = crate::daemon::privileges::RunAs::new(
                self.user.clone(),
                self.group.clone(),
                self.allow_root,
            )
            .map_err(|(key, message)| format!("--{key}: {message}"))?;
            settings.run_as = settings.run_as.overridden(given);
        }
        if let Some(n) = self.workers {
            settings.workers = match n {
                0 => std::thread::available_parallelism().map_or(1, usize::from),
                n if n > MAX_WORKERS => {
                    return Err(format!("--workers {n}: at most {MAX_WORKERS}"));
                }
                n => n,
            };
        }
        Ok(settings)
    }
}

/// The settings `authtimed` and `authtime serve` start with: the file's (or
/// the embedded defaults) with `overrides` applied, as one line per error.
///
/// # Errors
/// An unreadable or invalid file, or a bad override.
pub fn settings_for_serve(
    config: Option<&Path>,
    overrides: &Overrides,
) -> Result<Settings, String> {
    let settings = match config {
        None => Settings::default(),
        Some(path) => read_settings(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .map_err(|problems| problems.one_line(path))?,
    };
    overrides.apply(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_the_files_values_and_name_their_option() {
        let base = Settings::default();
        let o = Overrides {
            listen: vec!["127.0.0.1:11123".into()],
            keys: Some(PathBuf::from("k")),
            metrics: Some("127.0.0.1:9123".into()),
            workers: Some(3),
            log_format: Some("json".into()),
            user: Some("nobody".into()),
            group: None,
            allow_root: false,
        };
        let s = o.apply(base.clone()).expect("valid");
        assert_eq!(s.listen, ["127.0.0.1:11123".parse().expect("addr")]);
        assert!(!s.listen_is_default);
        assert_eq!(s.workers, 3);
        assert_eq!(s.log_format, crate::daemon::logging::LogFormat::Json);
        assert_eq!(s.run_as.user(), "nobody");
        assert_eq!(s.keys.map(|k| k.path), Some(PathBuf::from("k")));
        let bad = Overrides {
            listen: vec!["127.0.0.1".into()],
            ..Overrides::default()
        };
        assert!(
            bad.apply(base.clone())
                .expect_err("no port")
                .starts_with("--listen: ")
        );
        let bad = Overrides {
            workers: Some(MAX_WORKERS + 1),
            ..Overrides::default()
        };
        assert!(
            bad.apply(base.clone())
                .expect_err("too many")
                .starts_with("--workers ")
        );
        for (bad, option) in [
            (
                Overrides {
                    log_format: Some("syslog".into()),
                    ..Overrides::default()
                },
                "--log-format: ",
            ),
            (
                Overrides {
                    user: Some("-x".into()),
                    ..Overrides::default()
                },
                "--user: ",
            ),
            (
                Overrides {
                    group: Some("a b".into()),
                    ..Overrides::default()
                },
                "--group: ",
            ),
        ] {
            let err = bad.apply(base.clone()).expect_err(option);
            assert!(err.starts_with(option), "{err}");
        }
    }

    #[test]
    fn problems_are_located_and_summed_up_on_one_line() {
        let dir = std::env::temp_dir().join(format!("authtime-config-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("bad.toml");
        std::fs::write(&path, "[ntp]\nlisten = [\"nowhere\"]\nworkers = 999\n").expect("write");
        let problems = read_settings(&path)
            .expect("readable")
            .expect_err("invalid");
        assert_eq!(problems.lines.len(), 2, "{problems:?}");
        assert!(
            problems.lines[0].contains("bad.toml:2:11: ntp.listen[0]"),
            "{problems:?}"
        );
        assert!(
            problems.one_line(&path).contains("(and 1 more"),
            "{problems:?}"
        );
        let err = settings_for_serve(Some(&dir.join("missing.toml")), &Overrides::default())
            .expect_err("missing");
        assert!(err.contains("missing.toml"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
