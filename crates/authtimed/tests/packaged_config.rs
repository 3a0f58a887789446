//! The configuration the Debian package installs as
//! `/etc/authtime/authtimed.toml` (`dist/debian/authtimed.toml`) is valid as
//! shipped, says what its comments say, and stays valid with its commented
//! NTS and metrics sections switched on.

use std::path::PathBuf;

use authtime_server::ConfigFile;

fn packaged() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/debian/authtimed.toml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_packaged_configuration_is_valid_and_serves_port_123_without_nts() {
    let settings = ConfigFile::parse(&packaged())
        .expect("parses")
        .validate(None)
        .expect("valid");
    let listen: Vec<String> = settings.listen.iter().map(ToString::to_string).collect();
    assert_eq!(listen, ["0.0.0.0:123", "[::]:123"]);
    assert!(settings.keys.is_none() && settings.nts.is_none() && settings.metrics.is_none());
    assert!(settings.rate_limit.is_some());
    assert_eq!(settings.run_as.user(), "authtime");
    assert_eq!(
        settings.log_format,
        authtime_server::daemon::logging::LogFormat::Auto
    );
}

#[test]
fn its_commented_sections_are_valid_when_switched_on() {
    let switched_on: String = packaged()
        .lines()
        .map(|line| {
            let rest = line.strip_prefix("# ").unwrap_or(line);
            // Only lines that are TOML once uncommented: sections and keys.
            if rest.starts_with('[') || rest.contains(" = ") && !rest.contains(": ") {
                rest.to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(switched_on.contains("\n[nts-ke]\n"), "{switched_on}");
    let settings = ConfigFile::parse(&switched_on)
        .unwrap_or_else(|e| panic!("{e}\n{switched_on}"))
        .validate(None)
        .unwrap_or_else(|p| panic!("{p:?}\n{switched_on}"));
    let nts = settings.nts.expect("NTS on");
    assert_eq!(nts.store_location, "/var/lib/authtime/nts-master-keys");
    assert!(nts.ke.is_some());
    assert_eq!(
        settings.metrics.map(|a| a.to_string()).as_deref(),
        Some("127.0.0.1:9123")
    );
    assert_eq!(
        settings.keys.map(|k| k.path),
        Some(PathBuf::from("/etc/authtime/ntp.keys"))
    );
}
