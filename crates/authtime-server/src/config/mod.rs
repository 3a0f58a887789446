//! The daemon's TOML configuration: what the file may say, the embedded
//! defaults, and the validation that turns it into [`Settings`].
//!
//! Parsing is strict (`deny_unknown_fields`, kebab-case keys); every value has
//! an explicit default, so an empty file is the default configuration.
//! Validation reports every problem at once, each with the dotted path of the
//! value (`ntp.listen[1]`) that [`crate::config::location`] maps to a line.

pub mod clock;
pub mod data_path;
pub mod file;
pub mod location;
pub mod nts_balancer;
pub mod roughtime;
pub mod xdp;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use authtime_keys::KeyFileFormat;
use authtime_ntske::ClientLimitConfig;
use authtime_proto::{AuthFailurePolicy, RateLimitConfig, ServerConfig};
use serde::Deserialize;

use crate::admission::access::AccessList;
use crate::config::clock::{ClockSection, ClockSettings};

/// The standard NTP port, which the default configuration serves.
pub const NTP_PORT: u16 = 123;

/// Worker threads per listen address are capped here: more would only add
/// contention on a machine of any size we know.
pub const MAX_WORKERS: usize = 256;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ConfigFile {
    /// `[ntp]`: what is served and where.
    pub ntp: NtpSection,
    /// `[clock]`: where the state of the clock served comes from.
    pub clock: ClockSection,
    /// `[rate-limit]`: per-client token buckets.
    pub rate_limit: RateLimitSection,
    /// `[access]`: who may ask.
    pub access: AccessSection,
    /// `[metrics]`: the Prometheus endpoint.
    pub metrics: MetricsSection,
    /// `[log]`: how much to say, and in which format.
    pub log: LogSection,
    /// `[daemon]`: the identity `authtimed` runs as once its sockets are bound.
    pub daemon: DaemonSection,
    /// `[nts-ke]`: the NTS key-establishment server (RFC 8915 section 4);
    /// present = enabled.
    pub nts_ke: Option<NtsKeSection>,
    /// `[keystore]`: where NTS cookie master keys live; present (or an
    /// `[nts-ke]` section) = NTS-protected NTP is served.
    pub keystore: Option<KeystoreSection>,
    /// `[roughtime]`: the Roughtime server; present = enabled.
    pub roughtime: Option<crate::config::roughtime::RoughtimeSection>,
    /// `[nts-ke-balancer]`: NTS-KE answered by pool members (draft-ietf-ntp-nts-keyexchange-pool-00);
    /// present = the NTS-KE server balances.
    pub nts_ke_balancer: Option<nts_balancer::NtsBalancerSection>,
    /// `[xdp]`: NTP answered from AF_XDP sockets on one interface
    /// (docs/xdp.md); present = enabled.
    pub xdp: Option<xdp::XdpSection>,
}

/// The standard NTS-KE port (RFC 8915 section 4).
pub const NTS_KE_PORT: u16 = 4460;

/// `[nts-ke]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct NtsKeSection {
    /// TCP addresses to accept NTS-KE on.
    pub listen: Vec<String>,
    /// PEM certificate chain, leaf first (relative to the configuration file).
    pub certificate_chain: Option<PathBuf>,
    /// PEM private key of the leaf certificate.
    pub private_key: Option<PathBuf>,
    /// NTP server announced to clients (host name or IP address); none =
    /// clients use the address they reached NTS-KE on.
    pub ntp_server: Option<String>,
    /// NTP port announced to clients; none = the first `[ntp] listen` port
    /// when it is not 123, else nothing (clients use 123).
    pub ntp_port: Option<u16>,
    /// AEADs accepted for NTP; the client's order decides among them.
    pub aead: Vec<String>,
    /// Seconds a client has to complete the TLS handshake.
    pub handshake_timeout: f64,
    /// Seconds a whole NTS-KE session may take.
    pub session_timeout: f64,
    /// Most connections open at once; more are closed at once.
    pub max_connections: usize,
    /// Threads doing TLS; 0 = one per CPU.
    pub workers: usize,
    /// Seconds between checks of the certificate files for a change (SIGHUP
    /// also reloads them); 0 = only on SIGHUP.
    pub certificate_check_interval: f64,
    /// Whether each client's handshakes and open connections are limited.
    pub client_limit: bool,
    /// Sustained handshakes per second per client.
    pub client_rate: f64,
    /// Handshakes a client may start at once after being idle.
    pub client_burst: f64,
    /// Connections one client may hold open at once.
    pub client_max_connections: u32,
    /// Clients remembered (memory is fixed: about 48 bytes each).
    pub client_table_size: usize,
    /// Leading bits of an IPv6 address that identify one client.
    pub ipv6_prefix: u8,
    /// Files holding the Authentication tokens of NTS pool load balancers, one
    /// token a file; empty = not a pool member.
    pub pool_token_files: Vec<PathBuf>,
}

impl Default for NtsKeSection {
    fn default() -> Self {
        Self {
            listen: vec![
                format!("0.0.0.0:{NTS_KE_PORT}"),
                format!("[::]:{NTS_KE_PORT}"),
            ],
            certificate_chain: None,
            private_key: None,
            ntp_server: None,
            ntp_port: None,
            aead: vec![
                "aes-siv-cmac-256".into(),
                "aes-siv-cmac-512".into(),
                "aes-128-gcm-siv".into(),
            ],
            handshake_timeout: 1.0,
            session_timeout: 2.0,
            max_connections: 512,
            workers: 0,
            certificate_check_interval: 10.0,
            client_limit: true,
            client_rate: ClientLimitConfig::default().rate,
            client_burst: ClientLimitConfig::default().burst,
            client_max_connections: ClientLimitConfig::default().max_connections,
            client_table_size: ClientLimitConfig::default().table_size,
            ipv6_prefix: ClientLimitConfig::default().ipv6_prefix_len,
            pool_token_files: Vec::new(),
        }
    }
}

/// `[keystore]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct KeystoreSection {
    /// `embedded` (a local file), `redis` or `memcached`.
    pub kind: String,
    /// The key file of the embedded store (relative to the configuration file).
    pub path: PathBuf,
    /// `redis://[[user]:password@]host[:port][/db][?key=NAME]`, `rediss://…`
    /// (TLS, `&ca=/path`), `redis+sentinel://host[:port],…/MASTER[/db]`, or
    /// `memcached://host[:port][/NAME]`.
    pub url: Option<String>,
    /// Seconds between master-key rotations.
    pub rotation_interval: u64,
    /// Keys kept after they stop being current (their cookies stay valid).
    pub old_keys: u32,
    /// The AEAD of new master keys: `auto` (the ring's newest key's, or
    /// AES-SIV-CMAC-256 for a new ring), `aes-siv-cmac-256` or
    /// `aes-siv-cmac-512`.
    pub cookie_aead: String,
    /// Seconds between two reads of the store (a rotation by another
    /// server is seen within this time).
    pub poll_interval: f64,
    /// Key-encryption key file (made by `authtime nts kek`): the master
    /// keys are sealed under it before they reach the store.
    pub key_encryption_key: Option<PathBuf>,
    /// Other key-encryption key files whose sealed blobs are opened too
    /// (never written with): for changing the key across a fleet.
    pub accepted_key_encryption_keys: Vec<PathBuf>,
    /// Seal unsealed master keys found in the store (migration), instead of
    /// refusing them.
    pub seal_plaintext_keys: bool,
}

impl Default for KeystoreSection {
    fn default() -> Self {
        Self {
            kind: "embedded".into(),
            path: PathBuf::from("nts-master-keys"),
            url: None,
            rotation_interval: 86_400,
            old_keys: 7,
            cookie_aead: "auto".into(),
            poll_interval: 5.0,
            key_encryption_key: None,
            accepted_key_encryption_keys: Vec::new(),
            seal_plaintext_keys: false,
        }
    }
}

/// A validated `[nts-ke]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct NtsKeSettings {
    /// Addresses to accept on.
    pub listen: Vec<SocketAddr>,
    /// Certificate chain file.
    pub certificate_chain: PathBuf,
    /// Private key file.
    pub private_key: PathBuf,
    /// NTP server announced.
    pub ntp_server: Option<String>,
    /// NTP port announced; `None`: the port of the first NTP address served,
    /// when it is not 123 (resolved when the server has bound it).
    pub ntp_port: Option<u16>,
    /// AEAD ids offered, in preference order (IANA numbers).
    pub aead_ids: Vec<u16>,
    /// Handshake timeout.
    pub handshake_timeout: std::time::Duration,
    /// Session timeout.
    pub session_timeout: std::time::Duration,
    /// Connection cap.
    pub max_connections: usize,
    /// TLS threads (resolved: never 0).
    pub workers: usize,
    /// Certificate file check interval; `None` = SIGHUP only.
    pub certificate_check_interval: Option<std::time::Duration>,
    /// Limits per client, checked before TLS; `None` when off.
    pub client_limits: Option<ClientLimitConfig>,
    /// Pool token files (resolved against the configuration's directory); empty =
    /// not an NTS pool member.
    pub pool_token_files: Vec<PathBuf>,
    /// `[nts-ke-balancer]`: when set, requests are answered by pool members.
    pub balancer: Option<nts_balancer::BalancerSettings>,
}

/// Validated NTS settings: the key store and, when enabled, NTS-KE.
#[derive(Debug, Clone, PartialEq)]
pub struct NtsSettings {
    /// The store, as a URL or path that `authtime_keys::store::open_store` opens.
    pub store_location: String,
    /// Rotation period in seconds.
    pub rotation_interval: u64,
    /// Old keys kept.
    pub old_keys: u32,
    /// The AEAD of new master keys.
    pub cookie_aead: authtime_nts::CookieAead,
    /// Store poll interval.
    pub poll_interval: std::time::Duration,
    /// NTS-KE, when an `[nts-ke]` section is present.
    pub ke: Option<NtsKeSettings>,
    /// Sealing of the stored master keys, when a key-encryption key is set.
    pub sealing: Option<SealingSettings>,
}

/// Validated `[keystore]` sealing settings (the files are read at start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealingSettings {
    /// The key-encryption key written with.
    pub current: PathBuf,
    /// Others accepted for reading.
    pub accepted: Vec<PathBuf>,
    /// Seal plaintext found in the store instead of refusing it.
    pub seal_plaintext: bool,
}

/// AEAD names accepted in `[nts-ke] aead`, with their IANA ids (RFC 8915 section 5.1).
pub const AEAD_NAMES: [(&str, u16); 3] = [
    ("aes-siv-cmac-256", 15),
    ("aes-siv-cmac-512", 17),
    ("aes-128-gcm-siv", 30),
];

/// `[ntp]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct NtpSection {
    /// UDP addresses to serve on (`ip:port`, IPv6 in brackets).
    pub listen: Vec<String>,
    /// Key file (ntpd `ntp.keys` or chrony `chrony.keys`), relative to the
    /// configuration file. None: no keys, so only plain NTP is answered.
    pub keys: Option<PathBuf>,
    /// `auto` (detect), `chrony` or `ntpd`.
    pub key_format: String,
    /// Moved to `[clock]`; set here, it is an error that says so.
    pub stratum: Option<toml::Value>,
    /// Moved to `[clock]`; set here, it is an error that says so.
    pub reference_id: Option<toml::Value>,
    /// `drop` (as chrony) or `crypto-nak` (as ntpd) for failed authentication.
    pub auth_failure: String,
    /// Drop requests without a MAC.
    pub require_auth: bool,
    /// Worker threads per listen address, each with its own socket; 0 = one per CPU.
    pub workers: usize,
    /// Serve interleaved mode (RFC 9769).
    pub interleaved: bool,
    /// Transmit times held for interleaved clients.
    pub interleaved_table_size: usize,
    /// Seconds a request may wait before it is read; older ones are dropped
    /// (0: no bound).
    pub max_request_age: f64,
    /// Receive buffer of each NTP socket, bytes.
    pub receive_buffer: usize,
    /// Fraction of basic replies whose transmit error is measured.
    pub accuracy_sample: f64,
    /// `clock` (the clock reading) or `measured` (plus the send-path delay
    /// the samples measure) as the transmit timestamp of basic replies.
    pub transmit_timestamp: String,
}

impl Default for NtpSection {
    fn default() -> Self {
        Self {
            listen: vec![format!("0.0.0.0:{NTP_PORT}"), format!("[::]:{NTP_PORT}")],
            keys: None,
            key_format: "auto".into(),
            stratum: None,
            reference_id: None,
            auth_failure: "drop".into(),
            require_auth: false,
            workers: 0,
            interleaved: true,
            interleaved_table_size: data_path::DEFAULT_INTERLEAVED_TABLE,
            max_request_age: data_path::DEFAULT_MAX_REQUEST_AGE,
            receive_buffer: data_path::DEFAULT_RECEIVE_BUFFER,
            accuracy_sample: data_path::DEFAULT_ACCURACY_SAMPLE,
            transmit_timestamp: data_path::DEFAULT_TRANSMIT_TIMESTAMP.into(),
        }
    }
}

/// `[rate-limit]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct RateLimitSection {
    /// Whether clients are rate limited at all.
    pub enabled: bool,
    /// Sustained requests per second per client.
    pub rate: f64,
    /// Requests a client may send at once after being idle.
    pub burst: f64,
    /// Shortest interval between two RATE kisses to one client, in seconds.
    pub kiss_interval: f64,
    /// Buckets in the table (memory is fixed: about 48 bytes each).
    pub table_size: usize,
    /// Leading bits of an IPv6 address that identify one client.
    pub ipv6_prefix: u8,
}

impl Default for RateLimitSection {
    fn default() -> Self {
        let d = RateLimitConfig::default();
        Self {
            enabled: true,
            rate: d.rate,
            burst: d.burst,
            kiss_interval: d.kiss_interval_ns as f64 / 1e9,
            table_size: d.table_size,
            ipv6_prefix: d.ipv6_prefix_len,
        }
    }
}

/// `[access]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct AccessSection {
    /// Networks (CIDR, or single addresses) allowed; empty = everyone.
    pub allow: Vec<String>,
    /// Networks denied, even inside an allowed one.
    pub deny: Vec<String>,
}

/// `[metrics]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct MetricsSection {
    /// Address of the Prometheus endpoint (`127.0.0.1:9123`); none = no endpoint.
    pub listen: Option<String>,
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct LogSection {
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// `auto` (journald's format under systemd, else text), `text`,
    /// `journald` or `json`.
    pub format: String,
}

impl Default for LogSection {
    fn default() -> Self {
        Self {
            level: "info".into(),
            format: "auto".into(),
        }
    }
}

/// `[daemon]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct DaemonSection {
    /// The user to switch to once the sockets are bound, when started as
    /// root; none = `authtime`.
    pub user: Option<String>,
    /// The group; none = the user's primary group.
    pub group: Option<String>,
    /// Keep running as root (no switch) when started as root.
    pub allow_root: bool,
}

/// Where the keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySource {
    /// The key file.
    pub path: PathBuf,
    /// Its format, or `None` to detect it.
    pub format: Option<KeyFileFormat>,
}

/// A validated configuration, ready to start a server from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Addresses to serve on.
    pub listen: Vec<SocketAddr>,
    /// Whether `listen` is the built-in default (then an address family the
    /// machine lacks, such as IPv6, is skipped with a warning).
    pub listen_is_default: bool,
    /// The key file, if any.
    pub keys: Option<KeySource>,
    /// How failed authentication is treated (the clock fields are replaced
    /// by the clock source's announcement at every batch).
    pub server: ServerConfig,
    /// Where the clock's state comes from.
    pub clock: ClockSettings,
    /// Worker threads per listen address (resolved: never 0).
    pub workers: usize,
    /// Interleaved mode, staleness, receive buffer, self-measurement.
    pub data_path: data_path::DataPathSettings,
    /// Per-client limits, or `None` when rate limiting is off.
    pub rate_limit: Option<RateLimitConfig>,
    /// Allow and deny lists.
    pub access: AccessList,
    /// The metrics endpoint, if any.
    pub metrics: Option<SocketAddr>,
    /// Most verbose log level shown.
    pub log_level: tracing::Level,
    /// How log lines are written.
    pub log_format: crate::daemon::logging::LogFormat,
    /// Who `authtimed` runs as once its sockets are bound.
    pub run_as: crate::daemon::privileges::RunAs,
    /// NTS, when a `[keystore]` or `[nts-ke]` section is present.
    pub nts: Option<NtsSettings>,
    /// Roughtime, when a `[roughtime]` section is present.
    pub roughtime: Option<crate::config::roughtime::RoughtimeSettings>,
    /// The AF_XDP data path, when an `[xdp]` section is present.
    pub xdp: Option<xdp::XdpSettings>,
}

impl Default for Settings {
    /// The embedded defaults: the standard port on every IPv4 and IPv6
    /// address, no keys, rate limiting on, no metrics endpoint.
    fn default() -> Self {
        match ConfigFile::default().validate(None) {
            Ok(settings) => settings,
            // The defaults are checked by a unit test; this arm is never taken.
            Err(_) => unreachable!("the embedded defaults are valid"),
        }
    }
}

/// One thing wrong with a configuration, at a dotted path (`ntp.listen[1]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: the section, key and array index.
    pub path: String,
    /// What.
    pub message: String,
}

impl Problem {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl ConfigFile {
    /// Parses the text of a configuration file.
    ///
    /// # Errors
    /// The TOML parser's error (with its byte span): bad syntax, an unknown
    /// key, a value of the wrong type.
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// Checks every value and resolves them into [`Settings`]. A relative key
    /// file path is taken relative to `config_dir` (the configuration file's
    /// directory), or to the working directory when there is none.
    ///
    /// # Errors
    /// Every problem found, in file order.
    pub fn validate(&self, config_dir: Option<&Path>) -> Result<Settings, Vec<Problem>> {
        let mut problems = Vec::new();
        let listen = self.validate_listen(&mut problems);
        let keys = self.validate_keys(config_dir, &mut problems);
        let server = self.validate_server(&mut problems);
        let clock = self.clock.validate(config_dir, &listen, &mut problems);
        let workers = match self.ntp.workers {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n if n > MAX_WORKERS => {
                problems.push(Problem::new(
                    "ntp.workers",
                    format!("{n} workers is more than the {MAX_WORKERS} allowed"),
                ));
                1
            }
            n => n,
        };
        let data_path = data_path::validate(&self.ntp, &mut problems);
        let rate_limit = self.rate_limit.validate(&mut problems);
        let access = validate_access(&self.access, &mut problems);
        let metrics = self.metrics.listen.as_deref().and_then(|text| {
            parse_socket_addr(text)
                .map_err(|message| problems.push(Problem::new("metrics.listen", message)))
                .ok()
        });
        let log_level = self.log.level.parse().unwrap_or_else(|_| {
            problems.push(Problem::new(
                "log.level",
                format!(
                    "unknown level `{}` (error, warn, info, debug or trace)",
                    self.log.level
                ),
            ));
            tracing::Level::INFO
        });
        let log_format = self.log.format.parse().unwrap_or_else(|message| {
            problems.push(Problem::new("log.format", message));
            crate::daemon::logging::LogFormat::Auto
        });
        let run_as = crate::daemon::privileges::RunAs::new(
            self.daemon.user.clone(),
            self.daemon.group.clone(),
            self.daemon.allow_root,
        )
        .unwrap_or_else(|(key, message)| {
            problems.push(Problem::new(format!("daemon.{key}"), message));
            crate::daemon::privileges::RunAs::default()
        });
        let nts = self.validate_nts(config_dir, &mut problems);
        let roughtime = self.roughtime.as_ref().and_then(|section| {
            let relative = |path: &Path| match config_dir {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path.to_path_buf(),
            };
            section.validate(&relative, &mut problems)
        });
        let xdp = self
            .xdp
            .as_ref()
            .and_then(|section| section.validate(&listen, &mut problems));
        if !problems.is_empty() {
            return Err(problems);
        }
        let Some(clock) = clock else {
            unreachable!("a [clock] section that failed validation added a problem");
        };
        Ok(Settings {
            clock,
            nts,
            roughtime,
            xdp,
            listen_is_default: self.ntp.listen == NtpSection::default().listen,
            listen,
            keys,
            server,
            workers,
            data_path,
            rate_limit,
            access,
            metrics,
            log_level,
            log_format,
            run_as,
        })
    }

    fn validate_listen(&self, problems: &mut Vec<Problem>) -> Vec<SocketAddr> {
        if self.ntp.listen.is_empty() {
            problems.push(Problem::new(
                "ntp.listen",
                "no address to listen on (for example [\"127.0.0.1:11123\"])",
            ));
        }
        let mut listen = Vec::new();
        for (i, text) in self.ntp.listen.iter().enumerate() {
            match parse_socket_addr(text) {
                Ok(addr) if listen.contains(&addr) => problems.push(Problem::new(
                    format!("ntp.listen[{i}]"),
                    format!("{addr} is listed twice"),
                )),
                Ok(addr) => listen.push(addr),
                Err(message) => problems.push(Problem::new(format!("ntp.listen[{i}]"), message)),
            }
        }
        listen
    }

    fn validate_keys(
        &self,
        config_dir: Option<&Path>,
        problems: &mut Vec<Problem>,
    ) -> Option<KeySource> {
        let format = match self.ntp.key_format.as_str() {
            "auto" => None,
            name => KeyFileFormat::from_name(name).or_else(|| {
                problems.push(Problem::new(
                    "ntp.key-format",
                    format!("unknown key file format `{name}` (auto, chrony or ntpd)"),
                ));
                None
            }),
        };
        let path = self.ntp.keys.as_ref()?;
        if path.as_os_str().is_empty() {
            problems.push(Problem::new("ntp.keys", "the key file name is empty"));
            return None;
        }
        let path = match config_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.clone(),
        };
        Some(KeySource { path, format })
    }

    fn validate_server(&self, problems: &mut Vec<Problem>) -> ServerConfig {
        let ntp = &self.ntp;
        let auth_failure = match ntp.auth_failure.as_str() {
            "drop" => AuthFailurePolicy::Drop,
            "crypto-nak" => AuthFailurePolicy::CryptoNak,
            other => {
                problems.push(Problem::new(
                    "ntp.auth-failure",
                    format!("unknown policy `{other}` (drop or crypto-nak)"),
                ));
                AuthFailurePolicy::Drop
            }
        };
        for (key, set) in [
            ("stratum", ntp.stratum.is_some()),
            ("reference-id", ntp.reference_id.is_some()),
        ] {
            if set {
                problems.push(Problem::new(
                    format!("ntp.{key}"),
                    format!(
                        "`{key}` moved to the [clock] section: the stratum and reference id now follow the \
                         clock source (chronyd, an NTP daemon, the kernel); declare them there with \
                         source = \"kernel\" or \"static\""
                    ),
                ));
            }
        }
        ServerConfig {
            auth_failure,
            require_authentication: ntp.require_auth,
            ..ServerConfig::default()
        }
    }
}

impl ConfigFile {
    fn validate_nts(
        &self,
        config_dir: Option<&Path>,
        problems: &mut Vec<Problem>,
    ) -> Option<NtsSettings> {
        if self.keystore.is_none() && self.nts_ke.is_none() {
            if self.nts_ke_balancer.is_some() {
                problems.push(Problem::new(
                    "nts-ke-balancer",
                    "a balancer answers NTS-KE: it needs an [nts-ke] section",
                ));
            }
            return None;
        }
        let relative = |path: &Path| match config_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        };
        let store = self.keystore.clone().unwrap_or_default();
        let store_location = match (store.kind.as_str(), &store.url) {
            ("embedded", None) if store.path.as_os_str().is_empty() => {
                problems.push(Problem::new("keystore.path", "the key file name is empty"));
                String::new()
            }
            ("embedded", None) => relative(&store.path).display().to_string(),
            ("embedded", Some(_)) => {
                problems.push(Problem::new(
                    "keystore.url",
                    "the embedded store takes a `path`, not a `url`",
                ));
                String::new()
            }
            (kind @ ("redis" | "memcached"), Some(url)) => {
                let schemes: &[&str] = match kind {
                    "redis" => &["redis", "rediss", "redis+sentinel", "rediss+sentinel"],
                    _ => &["memcached"],
                };
                if !schemes.iter().any(|s| url.starts_with(&format!("{s}://"))) {
                    problems.push(Problem::new(
                        "keystore.url",
                        format!("a {kind} store needs a {}:// URL", schemes.join("://, ")),
                    ));
                }
                url.clone()
            }
            (kind @ ("redis" | "memcached"), None) => {
                problems.push(Problem::new(
                    "keystore.url",
                    format!("a {kind} store needs `url = \"{kind}://host:port\"`"),
                ));
                String::new()
            }
            (other, _) => {
                problems.push(Problem::new(
                    "keystore.kind",
                    format!("unknown store `{other}` (embedded, redis or memcached)"),
                ));
                String::new()
            }
        };
        if !store_location.is_empty()
            && let Err(e) = authtime_keys::store::open_store(&store_location)
        {
            problems.push(Problem::new("keystore.url", e.to_string()));
        }
        // Seconds-long rotations serve tests and demonstrations; production
        // wants hours or days (the default is one day).
        if !(2..=366 * 86_400).contains(&store.rotation_interval) {
            problems.push(Problem::new(
                "keystore.rotation-interval",
                format!("{} s must be 2 to 31622400", store.rotation_interval),
            ));
        }
        if !(1..=64).contains(&store.old_keys) {
            problems.push(Problem::new(
                "keystore.old-keys",
                format!("{} must be 1 to 64", store.old_keys),
            ));
        }
        let cookie_aead = match store.cookie_aead.as_str() {
            "auto" => authtime_nts::CookieAead::Auto,
            "aes-siv-cmac-256" => {
                authtime_nts::CookieAead::Fixed(authtime_nts::AeadAlgorithm::AesSivCmac256)
            }
            "aes-siv-cmac-512" => {
                authtime_nts::CookieAead::Fixed(authtime_nts::AeadAlgorithm::AesSivCmac512)
            }
            other => {
                problems.push(Problem::new(
                    "keystore.cookie-aead",
                    format!("unknown AEAD `{other}` (auto, aes-siv-cmac-256 or aes-siv-cmac-512)"),
                ));
                authtime_nts::CookieAead::Auto
            }
        };
        let poll_interval = seconds(store.poll_interval, 0.1, 3600.0)
            .map_err(|m| problems.push(Problem::new("keystore.poll-interval", m)))
            .unwrap_or_default();
        let sealing = store.validate_sealing(&relative, problems);
        let mut ke = self
            .nts_ke
            .as_ref()
            .and_then(|ke| ke.validate(&relative, problems));
        if let Some(balancer) = &self.nts_ke_balancer {
            if self.nts_ke.is_none() {
                problems.push(Problem::new(
                    "nts-ke-balancer",
                    "a balancer answers NTS-KE: it needs an [nts-ke] section",
                ));
            }
            let settings = balancer.validate(&relative, problems);
            if let Some(ke) = &mut ke {
                if !ke.pool_token_files.is_empty() {
                    problems.push(Problem::new(
                        "nts-ke-balancer",
                        "a load balancer is not a pool member: leave [nts-ke] pool-token-files \
                         out, or this section",
                    ));
                }
                ke.balancer = settings;
            }
        }
        Some(NtsSettings {
            store_location,
            rotation_interval: store.rotation_interval,
            old_keys: store.old_keys,
            cookie_aead,
            poll_interval,
            ke,
            sealing,
        })
    }
}

impl KeystoreSection {
    fn validate_sealing(
        &self,
        relative: &dyn Fn(&Path) -> PathBuf,
        problems: &mut Vec<Problem>,
    ) -> Option<SealingSettings> {
        let Some(current) = &self.key_encryption_key else {
            if !self.accepted_key_encryption_keys.is_empty() {
                problems.push(Problem::new(
                    "keystore.accepted-key-encryption-keys",
                    "needs `key-encryption-key` (the key written with)",
                ));
            }
            if self.seal_plaintext_keys {
                problems.push(Problem::new(
                    "keystore.seal-plaintext-keys",
                    "needs `key-encryption-key` (the key to seal with)",
                ));
            }
            return None;
        };
        for (i, path) in std::iter::once(current)
            .chain(&self.accepted_key_encryption_keys)
            .enumerate()
        {
            if path.as_os_str().is_empty() {
                let at = match i {
                    0 => "keystore.key-encryption-key".to_owned(),
                    i => format!("keystore.accepted-key-encryption-keys[{}]", i - 1),
                };
                problems.push(Problem::new(&at, "the file name is empty"));
            }
        }
        Some(SealingSettings {
            current: relative(current),
            accepted: self
                .accepted_key_encryption_keys
                .iter()
                .map(|p| relative(p))
                .collect(),
            seal_plaintext: self.seal_plaintext_keys,
        })
    }
}

impl NtsKeSection {
    fn validate(
        &self,
        relative: &dyn Fn(&Path) -> PathBuf,
        problems: &mut Vec<Problem>,
    ) -> Option<NtsKeSettings> {
        let before = problems.len();
        if self.listen.is_empty() {
            problems.push(Problem::new("nts-ke.listen", "no address to listen on"));
        }
        let mut listen = Vec::new();
        for (i, text) in self.listen.iter().enumerate() {
            match parse_socket_addr(text) {
                Ok(addr) if listen.contains(&addr) => problems.push(Problem::new(
                    format!("nts-ke.listen[{i}]"),
                    format!("{addr} is listed twice"),
                )),
                Ok(addr) => listen.push(addr),
                Err(m) => problems.push(Problem::new(format!("nts-ke.listen[{i}]"), m)),
            }
        }
        let mut file = |key: &str, value: &Option<PathBuf>| match value {
            Some(p) if !p.as_os_str().is_empty() => relative(p),
            _ => {
                problems.push(Problem::new(
                    format!("nts-ke.{key}"),
                    format!("NTS-KE needs `{key}` (a PEM file)"),
                ));
                PathBuf::new()
            }
        };
        let certificate_chain = file("certificate-chain", &self.certificate_chain);
        let private_key = file("private-key", &self.private_key);
        if let Some(server) = &self.ntp_server
            && (server.is_empty()
                || server.len() > 253
                || server.starts_with('[')
                || !server.bytes().all(|b| b.is_ascii_graphic()))
        {
            problems.push(Problem::new(
                "nts-ke.ntp-server",
                format!("`{server}` is not a host name or an IP address (no brackets, no port)"),
            ));
        }
        if self.ntp_port == Some(0) {
            problems.push(Problem::new(
                "nts-ke.ntp-port",
                "port 0 cannot be announced",
            ));
        }
        let ntp_port = self.ntp_port;
        let mut aead_ids = Vec::new();
        for (i, name) in self.aead.iter().enumerate() {
            match AEAD_NAMES.iter().find(|(n, _)| n == name) {
                Some((_, id)) if !aead_ids.contains(id) => aead_ids.push(*id),
                Some(_) => problems.push(Problem::new(
                    format!("nts-ke.aead[{i}]"),
                    format!("`{name}` is listed twice"),
                )),
                None => problems.push(Problem::new(
                    format!("nts-ke.aead[{i}]"),
                    format!(
                        "unknown AEAD `{name}` (aes-siv-cmac-256, aes-siv-cmac-512 or aes-128-gcm-siv)"
                    ),
                )),
            }
        }
        if !aead_ids.contains(&15) {
            problems.push(Problem::new(
                "nts-ke.aead",
                "aes-siv-cmac-256 must be offered (RFC 8915 section 5.1 makes it mandatory)",
            ));
        }
        let mut secs = |key: &str, value: f64, min: f64, max: f64| {
            seconds(value, min, max)
                .map_err(|m| problems.push(Problem::new(format!("nts-ke.{key}"), m)))
                .unwrap_or_default()
        };
        let handshake_timeout = secs("handshake-timeout", self.handshake_timeout, 0.05, 60.0);
        let session_timeout = secs("session-timeout", self.session_timeout, 0.05, 120.0);
        let check = (self.certificate_check_interval != 0.0).then(|| {
            secs(
                "certificate-check-interval",
                self.certificate_check_interval,
                0.1,
                86_400.0,
            )
        });
        if !(1..=1_000_000).contains(&self.max_connections) {
            problems.push(Problem::new(
                "nts-ke.max-connections",
                format!("{} must be 1 to 1000000", self.max_connections),
            ));
        }
        let workers = match self.workers {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n if n > MAX_WORKERS => {
                problems.push(Problem::new(
                    "nts-ke.workers",
                    format!("{n} workers is more than the {MAX_WORKERS} allowed"),
                ));
                1
            }
            n => n,
        };
        let client_limits = self.validate_client_limits(problems);
        let mut pool_token_files = Vec::new();
        for (i, path) in self.pool_token_files.iter().enumerate() {
            if path.as_os_str().is_empty() {
                problems.push(Problem::new(
                    format!("nts-ke.pool-token-files[{i}]"),
                    "the file name is empty",
                ));
            } else if pool_token_files.contains(&relative(path)) {
                problems.push(Problem::new(
                    format!("nts-ke.pool-token-files[{i}]"),
                    format!("{} is listed twice", path.display()),
                ));
            } else {
                pool_token_files.push(relative(path));
            }
        }
        (problems.len() == before).then(|| NtsKeSettings {
            listen,
            certificate_chain,
            private_key,
            ntp_server: self.ntp_server.clone(),
            ntp_port,
            aead_ids,
            handshake_timeout,
            session_timeout,
            max_connections: self.max_connections,
            workers,
            certificate_check_interval: check,
            client_limits,
            pool_token_files,
            balancer: None,
        })
    }

    /// The per-client keys, checked like those of `[rate-limit]`.
    fn validate_client_limits(&self, problems: &mut Vec<Problem>) -> Option<ClientLimitConfig> {
        let before = problems.len();
        let mut check = |ok: bool, key: &str, message: String| {
            if !ok {
                problems.push(Problem::new(format!("nts-ke.{key}"), message));
            }
        };
        check(
            self.client_rate.is_finite() && self.client_rate > 0.0,
            "client-rate",
            format!("{} handshakes per second must be above 0", self.client_rate),
        );
        check(
            self.client_burst.is_finite() && self.client_burst >= 1.0,
            "client-burst",
            format!("a burst of {} must be at least 1", self.client_burst),
        );
        check(
            (1..=1_000_000).contains(&self.client_max_connections),
            "client-max-connections",
            format!("{} must be 1 to 1000000", self.client_max_connections),
        );
        check(
            (1..=authtime_ntske::client_limit::MAX_TABLE_SIZE).contains(&self.client_table_size),
            "client-table-size",
            format!("{} clients must be 1 to 16777216", self.client_table_size),
        );
        check(
            self.ipv6_prefix <= 128,
            "ipv6-prefix",
            format!("a prefix of {} bits is longer than 128", self.ipv6_prefix),
        );
        if problems.len() > before || !self.client_limit {
            return None;
        }
        Some(ClientLimitConfig {
            rate: self.client_rate,
            burst: self.client_burst,
            max_connections: self.client_max_connections,
            table_size: self.client_table_size,
            ipv6_prefix_len: self.ipv6_prefix,
        })
    }
}

/// A duration from seconds within `min..=max`.
pub(crate) fn seconds(value: f64, min: f64, max: f64) -> Result<std::time::Duration, String> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(std::time::Duration::from_secs_f64(value))
    } else {
        Err(format!("{value} s must be {min} to {max}"))
    }
}

impl RateLimitSection {
    fn validate(&self, problems: &mut Vec<Problem>) -> Option<RateLimitConfig> {
        let before = problems.len();
        let mut check = |ok: bool, key: &str, message: String| {
            if !ok {
                problems.push(Problem::new(format!("rate-limit.{key}"), message));
            }
        };
        check(
            self.rate.is_finite() && self.rate > 0.0,
            "rate",
            format!("{} requests per second must be above 0", self.rate),
        );
        check(
            self.burst.is_finite() && self.burst >= 1.0,
            "burst",
            format!("a burst of {} must be at least 1", self.burst),
        );
        check(
            self.kiss_interval.is_finite() && (0.0..=86_400.0).contains(&self.kiss_interval),
            "kiss-interval",
            format!("{} s must be 0 to 86400", self.kiss_interval),
        );
        check(
            (1..=1 << 24).contains(&self.table_size),
            "table-size",
            format!("{} buckets must be 1 to 16777216", self.table_size),
        );
        check(
            self.ipv6_prefix <= 128,
            "ipv6-prefix",
            format!("a prefix of {} bits is longer than 128", self.ipv6_prefix),
        );
        if problems.len() > before || !self.enabled {
            return None;
        }
        Some(RateLimitConfig {
            rate: self.rate,
            burst: self.burst,
            kiss_interval_ns: (self.kiss_interval * 1e9) as u64,
            table_size: self.table_size,
            ipv6_prefix_len: self.ipv6_prefix,
        })
    }
}

fn validate_access(section: &AccessSection, problems: &mut Vec<Problem>) -> AccessList {
    let mut parse_all = |key: &str, list: &[String]| {
        let mut nets = Vec::new();
        for (i, text) in list.iter().enumerate() {
            match crate::admission::access::parse_network(text) {
                Ok(net) => nets.push(net),
                Err(message) => problems.push(Problem::new(format!("access.{key}[{i}]"), message)),
            }
        }
        nets
    };
    let allow = parse_all("allow", &section.allow);
    let deny = parse_all("deny", &section.deny);
    AccessList::new(allow, deny)
}

/// Parses `ip:port` (IPv6 in brackets), with a hint in the error.
///
/// # Errors
/// A message quoting the text.
pub fn parse_socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "`{text}` is not an address with a port (for example 127.0.0.1:11123 or [::1]:11123)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<Problem> {
        ConfigFile::parse(text)
            .expect("parses")
            .validate(None)
            .expect_err("invalid")
    }

    #[test]
    fn empty_file_is_the_default_and_serves_the_standard_port() {
        let settings = ConfigFile::parse("")
            .expect("parses")
            .validate(None)
            .expect("valid");
        assert!(settings.listen_is_default);
        assert_eq!(
            settings.listen,
            [
                "0.0.0.0:123".parse::<SocketAddr>().expect("addr"),
                "[::]:123".parse().expect("addr")
            ]
        );
        assert!(settings.keys.is_none() && settings.metrics.is_none());
        assert!(settings.workers >= 1);
        assert_eq!(settings.rate_limit, Some(RateLimitConfig::default()));
        assert_eq!(settings.server, ServerConfig::default());
        assert_eq!(Settings::default().listen, settings.listen);
        assert_eq!(settings.log_format, crate::daemon::logging::LogFormat::Auto);
        assert_eq!(
            settings.run_as.user(),
            crate::daemon::privileges::DEFAULT_USER
        );
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_parse_errors_with_a_span() {
        for text in [
            "[ntp]\nlisten = [\"127.0.0.1:1\"]\nstratm = 3\n",
            "[clock]\nstratum = \"two\"\n",
            "[nope]\n",
        ] {
            let err = ConfigFile::parse(text).expect_err(text);
            assert!(err.span().is_some(), "{err}");
        }
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let found = problems(
            "[ntp]\nlisten = [\"127.0.0.1:11123\", \"localhost\", \"127.0.0.1:11123\"]\n\
             stratum = 16\nauth-failure = \"nak\"\nkey-format = \"pem\"\nreference-id = \"TOOLONG\"\n\
             [rate-limit]\nrate = 0\nburst = 0.5\n\
             [access]\nallow = [\"10.0.0.0/33\"]\ndeny = [\"::1\", \"x\"]\n\
             [metrics]\nlisten = \"9123\"\n[log]\nlevel = \"loud\"\nformat = \"syslog\"\n\
             [daemon]\nuser = \"root; rm\"\n",
        );
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "ntp.listen[1]",
                "ntp.listen[2]",
                "ntp.key-format",
                "ntp.auth-failure",
                "ntp.stratum",
                "ntp.reference-id",
                "rate-limit.rate",
                "rate-limit.burst",
                "access.allow[0]",
                "access.deny[1]",
                "metrics.listen",
                "log.level",
                "log.format",
                "daemon.user",
            ]
        );
        assert!(found[0].message.contains("127.0.0.1:11123"), "{found:?}");
    }

    #[test]
    fn relative_key_files_are_found_next_to_the_config() {
        let settings = ConfigFile::parse(
            "[ntp]\nlisten = [\"[::1]:11123\"]\nkeys = \"ntp.keys\"\nkey-format = \"chrony\"\n\
             workers = 3\n[rate-limit]\nenabled = false\n[metrics]\nlisten = \"127.0.0.1:9123\"\n",
        )
        .expect("parses")
        .validate(Some(Path::new("/etc/authtime")))
        .expect("valid");
        assert_eq!(
            settings.keys,
            Some(KeySource {
                path: PathBuf::from("/etc/authtime/ntp.keys"),
                format: Some(KeyFileFormat::Chrony)
            })
        );
        assert_eq!(settings.workers, 3);
        assert!(!settings.listen_is_default);
        assert_eq!(settings.rate_limit, None);
        assert_eq!(
            settings.metrics,
            Some("127.0.0.1:9123".parse().expect("addr"))
        );
    }

    #[test]
    fn nts_is_off_by_default_and_on_with_a_keystore_or_nts_ke_section() {
        let plain = ConfigFile::parse("")
            .expect("parses")
            .validate(None)
            .expect("valid");
        assert!(plain.nts.is_none());
        let store_only = ConfigFile::parse(
            "[keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:7000?key=k\"\n",
        )
        .expect("parses")
        .validate(None)
        .expect("valid");
        let nts = store_only.nts.expect("nts");
        assert_eq!(nts.store_location, "redis://127.0.0.1:7000?key=k");
        assert!(nts.ke.is_none());
        for url in [
            "rediss://authtime:pw@127.0.0.1:7000?key=k",
            "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster?key=k",
            "rediss+sentinel://:pw@127.0.0.1/mymaster",
        ] {
            let config = format!("[keystore]\nkind = \"redis\"\nurl = \"{url}\"\n");
            let valid = ConfigFile::parse(&config)
                .expect("parses")
                .validate(None)
                .expect(url);
            assert_eq!(valid.nts.expect("nts").store_location, url);
        }
        let ke = ConfigFile::parse(
            "[ntp]\nlisten = [\"127.0.0.1:11123\"]\n[nts-ke]\nlisten = [\"127.0.0.1:14460\"]\n\
             certificate-chain = \"cert.pem\"\nprivate-key = \"key.pem\"\naead = [\"aes-128-gcm-siv\", \"aes-siv-cmac-256\"]\n",
        )
        .expect("parses")
        .validate(Some(Path::new("/etc/authtime")))
        .expect("valid");
        let nts = ke.nts.expect("nts");
        assert_eq!(nts.store_location, "/etc/authtime/nts-master-keys");
        let ke = nts.ke.expect("ke");
        assert_eq!(
            ke.certificate_chain,
            PathBuf::from("/etc/authtime/cert.pem")
        );
        assert_eq!(ke.aead_ids, [30, 15]);
        assert_eq!(
            ke.ntp_port, None,
            "resolved from the bound NTP port at start"
        );
    }

    #[test]
    fn sealing_keys_are_paths_relative_to_the_config_and_need_a_current_key() {
        let sealed = ConfigFile::parse(
            "[keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:7000\"\n\
             key-encryption-key = \"kek\"\naccepted-key-encryption-keys = [\"/etc/old-kek\"]\n\
             seal-plaintext-keys = true\n",
        )
        .expect("parses")
        .validate(Some(Path::new("/etc/authtime")))
        .expect("valid");
        let sealing = sealed.nts.expect("nts").sealing.expect("sealing");
        assert_eq!(sealing.current, Path::new("/etc/authtime/kek"));
        assert_eq!(sealing.accepted, vec![PathBuf::from("/etc/old-kek")]);
        assert!(sealing.seal_plaintext);
        let problems = ConfigFile::parse(
            "[keystore]\naccepted-key-encryption-keys = [\"a\"]\nseal-plaintext-keys = true\n",
        )
        .expect("parses")
        .validate(None)
        .expect_err("no current key");
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "keystore.accepted-key-encryption-keys",
                "keystore.seal-plaintext-keys"
            ]
        );
        let plain = ConfigFile::parse("[keystore]\n")
            .expect("parses")
            .validate(None);
        assert_eq!(plain.expect("valid").nts.expect("nts").sealing, None);
    }

    #[test]
    fn nts_problems_are_reported_with_their_paths() {
        let found = problems(
            "[nts-ke]\nlisten = [\"x\"]\naead = [\"aes-128-gcm-siv\", \"rot13\"]\n\
             handshake-timeout = -1\nmax-connections = 0\nntp-server = \"[::1]\"\n\
             [keystore]\nkind = \"redis\"\nrotation-interval = 1\nold-keys = 0\n",
        );
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "keystore.url",
                "keystore.rotation-interval",
                "keystore.old-keys",
                "nts-ke.listen[0]",
                "nts-ke.certificate-chain",
                "nts-ke.private-key",
                "nts-ke.ntp-server",
                "nts-ke.aead[1]",
                "nts-ke.aead",
                "nts-ke.handshake-timeout",
                "nts-ke.max-connections",
            ]
        );
    }

    const KE_BASE: &str = "[nts-ke]\nlisten = [\"127.0.0.1:14460\"]\n\
                           certificate-chain = \"c.pem\"\nprivate-key = \"k.pem\"\n";

    fn ke_settings(extra: &str) -> NtsKeSettings {
        ConfigFile::parse(&format!("{KE_BASE}{extra}"))
            .expect("parses")
            .validate(None)
            .expect("valid")
            .nts
            .and_then(|nts| nts.ke)
            .expect("nts-ke")
    }

    #[test]
    fn nts_ke_client_limits_are_on_by_default_and_configurable() {
        assert_eq!(
            ke_settings("").client_limits,
            Some(ClientLimitConfig::default())
        );
        assert_eq!(ke_settings("client-limit = false\n").client_limits, None);
        let limits = ke_settings(
            "client-rate = 2.5\nclient-burst = 4\nclient-max-connections = 3\n\
             client-table-size = 100\nipv6-prefix = 56\n",
        )
        .client_limits
        .expect("limits");
        assert_eq!(
            limits,
            ClientLimitConfig {
                rate: 2.5,
                burst: 4.0,
                max_connections: 3,
                table_size: 100,
                ipv6_prefix_len: 56,
            }
        );
    }

    #[test]
    fn pool_token_files_are_off_by_default_resolved_and_checked() {
        assert!(ke_settings("").pool_token_files.is_empty());
        let settings = ConfigFile::parse(&format!(
            "{KE_BASE}pool-token-files = [\"pool-token\", \"/etc/authtimed/kelb2\"]\n"
        ))
        .expect("parses")
        .validate(Some(Path::new("/etc/authtime")))
        .expect("valid")
        .nts
        .and_then(|nts| nts.ke)
        .expect("nts-ke");
        assert_eq!(
            settings.pool_token_files,
            [
                PathBuf::from("/etc/authtime/pool-token"),
                PathBuf::from("/etc/authtimed/kelb2")
            ]
        );
        let found = problems(&format!(
            "{KE_BASE}pool-token-files = [\"\", \"a\", \"a\"]\n"
        ));
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            ["nts-ke.pool-token-files[0]", "nts-ke.pool-token-files[2]"]
        );
    }

    #[test]
    fn malformed_nts_ke_client_limits_are_reported_even_when_off() {
        let found = problems(&format!(
            "{KE_BASE}client-limit = false\nclient-rate = 0\nclient-burst = 0.5\n\
             client-max-connections = 0\nclient-table-size = 0\nipv6-prefix = 129\n"
        ));
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "nts-ke.client-rate",
                "nts-ke.client-burst",
                "nts-ke.client-max-connections",
                "nts-ke.client-table-size",
                "nts-ke.ipv6-prefix",
            ]
        );
        assert!(found[0].message.contains("above 0"), "{found:?}");
        let nan = problems(&format!("{KE_BASE}client-rate = nan\nclient-burst = inf\n"));
        let paths: Vec<&str> = nan.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["nts-ke.client-rate", "nts-ke.client-burst"]);
        // Wrong types and negative counts are parse errors.
        for bad in [
            "client-max-connections = -1",
            "client-rate = \"fast\"",
            "ipv6-prefix = 300",
            "client-limit = 1",
        ] {
            assert!(
                ConfigFile::parse(&format!("{KE_BASE}{bad}\n")).is_err(),
                "{bad}"
            );
        }
    }
}
