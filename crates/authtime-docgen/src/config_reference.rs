//! The reference of `authtimed.toml`: every section and key that
//! `authtime_server::ConfigFile` parses, with its type, its default and what
//! it does, in one table.
//!
//! This table is the only source of `authtimed.toml(5)` ([`crate::config_page`]).
//! It is written by hand, because the meaning of a key is prose, but the parts
//! that can drift are checked against the real parser by
//! `tests/config_reference.rs`: the sections and keys both ways (a key the
//! parser accepts and the table lacks fails, and the other way round), each
//! key's type, whether a section's presence switches something on, and each
//! default (a file that sets a key to its documented default must parse to
//! the same configuration as one that leaves it out).

/// One `[section]` of the file.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The table name, as written between the brackets.
    pub name: &'static str,
    /// Whether writing the section at all switches something on (`[nts-ke]`,
    /// `[keystore]`); the other sections are there with their defaults
    /// whether written or not.
    pub presence_enables: bool,
    /// What the section is about, one paragraph.
    pub summary: &'static str,
    /// Its keys, in the order the page lists them.
    pub keys: &'static [Key],
}

/// One `key = value` of a section.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The key, kebab-case as written.
    pub name: &'static str,
    /// The TOML type the parser accepts.
    pub kind: ValueKind,
    /// For a string (or strings) from a fixed set: every value validation
    /// accepts. The text names each of them in quotes.
    pub choices: &'static [&'static str],
    /// What applies when the key is left out.
    pub default: DefaultValue,
    /// What it does, one paragraph (ranges and related keys included).
    pub text: &'static str,
}

/// The TOML type of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` or `false`.
    Bool,
    /// An integer.
    Integer,
    /// A number (an integer is accepted too).
    Float,
    /// A string.
    String,
    /// A string naming a file; relative paths are relative to the
    /// configuration file's directory.
    Path,
    /// An array of strings.
    Strings,
    /// An array of integers.
    Integers,
    /// Any value (only keys that moved elsewhere, to say so).
    Any,
    /// An array of tables (`[[section.key]]`), whose keys the text lists.
    Tables,
}

impl ValueKind {
    /// How the man page names the type.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Bool => "boolean",
            Self::Integer => "integer",
            Self::Float => "number",
            Self::String => "string",
            Self::Path => "path",
            Self::Strings => "array of strings",
            Self::Integers => "array of integers",
            Self::Any => "any",
            Self::Tables => "array of tables",
        }
    }
}

/// What a key means when the file leaves it out.
#[derive(Debug, Clone, Copy)]
pub enum DefaultValue {
    /// This value, written as TOML.
    Value(&'static str),
    /// No value. `meaning` says what that means; `example` is a value (TOML)
    /// that the page shows and the tests set.
    Unset {
        /// What no value means, completing "Default: none: ...".
        meaning: &'static str,
        /// A value to show and to test with.
        example: &'static str,
    },
    /// The key moved to another section: the parser still reads it, so that
    /// validation can say where it went, and setting it is an error.
    Moved {
        /// Where it is now, `section.key`.
        to: &'static str,
    },
}

/// Every section, in the order the page lists them.
pub const SECTIONS: &[Section] = &[
    NTP,
    CLOCK,
    RATE_LIMIT,
    ACCESS,
    METRICS,
    LOG,
    DAEMON,
    NTS_KE,
    NTS_KE_BALANCER,
    KEYSTORE,
    ROUGHTIME,
    XDP,
];

/// Looks a section up by name.
#[must_use]
pub fn section(name: &str) -> Option<&'static Section> {
    SECTIONS.iter().find(|s| s.name == name)
}

const NTP: Section = Section {
    name: "ntp",
    presence_enables: false,
    summary: "What is served and where: the UDP addresses, the symmetric keys, and what \
              happens to requests whose authentication fails.",
    keys: &[
        Key {
            name: "listen",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value(r#"["0.0.0.0:123", "[::]:123"]"#),
            text: "UDP addresses to serve on, \"IP:PORT\" with IPv6 addresses in brackets. \
                   Ports below 1024 need root or CAP_NET_BIND_SERVICE. With the default, an \
                   address family the machine lacks (IPv6) is skipped with a warning. \
                   --listen replaces this list.",
        },
        Key {
            name: "keys",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "no keys: plain NTP only, and requests with a MAC are dropped",
                example: r#""ntp.keys""#,
            },
            text: "Symmetric keys: an ntpd/NTPsec ntp.keys or a chrony chrony.keys file (MD5, \
                   SHA1, SHA256, AES128 and AES256 keys). A request with a MAC under one of \
                   these keys gets a reply with a MAC under the same key. SIGHUP reloads the \
                   file; a file that fails to load keeps the old keys. --keys replaces it. \
                   authtime keygen writes such files.",
        },
        Key {
            name: "key-format",
            kind: ValueKind::String,
            choices: &["auto", "ntpd", "chrony"],
            default: DefaultValue::Value(r#""auto""#),
            text: "Format of the key file: \"auto\" (detected), \"ntpd\" or \"chrony\".",
        },
        Key {
            name: "stratum",
            kind: ValueKind::Any,
            choices: &[],
            default: DefaultValue::Moved {
                to: "clock.stratum",
            },
            text: "Moved to [clock]: set here, it is an error that says so.",
        },
        Key {
            name: "reference-id",
            kind: ValueKind::Any,
            choices: &[],
            default: DefaultValue::Moved {
                to: "clock.reference-id",
            },
            text: "Moved to [clock]: set here, it is an error that says so.",
        },
        Key {
            name: "auth-failure",
            kind: ValueKind::String,
            choices: &["drop", "crypto-nak"],
            default: DefaultValue::Value(r#""drop""#),
            text: "A request whose MAC fails or names an unknown key: \"drop\" it (as chrony \
                   does) or answer with a \"crypto-nak\" (as ntpd does).",
        },
        Key {
            name: "require-auth",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("false"),
            text: "Drop requests without a MAC.",
        },
        Key {
            name: "workers",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("0"),
            text: "Worker threads per listen address, each with its own SO_REUSEPORT socket; \
                   0 is one per CPU, at most 256. --workers replaces it.",
        },
        Key {
            name: "interleaved",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("true"),
            text: "Serve interleaved mode (RFC 9769): a client that asks for it (chronyd's \
                   xleave) gets, in each reply, the kernel's transmit timestamp of the previous \
                   reply to it, read back after that reply left, instead of a clock reading \
                   taken before it left. Plain, MAC and NTS requests. Off: every request gets a \
                   basic reply.",
        },
        Key {
            name: "interleaved-table-size",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("65536"),
            text: "Transmit times held for interleaved clients, one per client between two of \
                   its requests, 24 bytes each (the default is 1.5 MiB), 4 to 16777216; all \
                   workers share them. When it is full the oldest is overwritten and that \
                   client's next reply is basic (authtime_ntp_interleaved_evictions_total).",
        },
        Key {
            name: "max-request-age",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.1"),
            text: "Seconds a request may wait in the socket before the server reads it (from \
                   its kernel receive timestamp); older requests are dropped and counted \
                   (authtime_ntp_dropped_total{reason=\"stale\"}) rather than answered late, \
                   so that a starved or overloaded server spends its time on fresh requests. \
                   Under load the receive buffer (receive-buffer) keeps waits far shorter; \
                   this bound is for a server that was not scheduled. 0 is no bound, at most \
                   60.",
        },
        Key {
            name: "receive-buffer",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("262144"),
            text: "Receive buffer of each NTP socket in bytes, as the kernel counts them (832 \
                   bytes per queued 48-byte request on loopback and veth, so the default holds \
                   about 300): a few milliseconds of requests at full load, so \
                   that under overload the kernel drops what the server could only answer \
                   late (authtime_ntp_kernel_receive_drops_total). Set past \
                   net.core.rmem_max when the daemon starts as root. 4096 to 268435456.",
        },
        Key {
            name: "accuracy-sample",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.01"),
            text: "Fraction of basic replies whose kernel transmit timestamp is read back to \
                   measure how early the transmit timestamp served was \
                   (authtime_ntp_transmit_timestamp_error_seconds); 0 never, 1 every reply.",
        },
        Key {
            name: "transmit-timestamp",
            kind: ValueKind::String,
            choices: &["measured", "clock"],
            default: DefaultValue::Value(r#""measured""#),
            text: "The transmit timestamp of a basic reply: \"clock\" is the clock read \
                   just before the reply's MAC and send; \"measured\" adds the send-path \
                   delay the sampled replies measure (kernel transmit time minus T3, the \
                   median of every 128 samples added to what each worker adds, at most \
                   200 µs), so that the errors served centre on zero as the load changes. \
                   \"measured\" needs accuracy-sample above 0. Interleaved replies carry the \
                   kernel's time either way.",
        },
    ],
};

const CLOCK: Section = Section {
    name: "clock",
    presence_enables: false,
    summary: "Where the state of the clock served comes from. authtimed serves the system \
              clock and does not discipline it; what its replies announce about that clock \
              (leap indicator, stratum, reference id, reference time, root delay and root \
              dispersion) follows the source, and an unsynchronized clock is announced as \
              unsynchronized (leap 3, stratum 0, as chrony does). authtime status prints \
              what would be announced now, and why.",
    keys: &[
        Key {
            name: "source",
            kind: ValueKind::String,
            choices: &["auto", "chrony", "ntp", "kernel", "static"],
            default: DefaultValue::Value(r#""auto""#),
            text: "\"auto\": chronyd if its command socket (or its UDP command port on \
                   loopback) answers at start, else \"kernel\". \"chrony\": chronyd's tracking \
                   report (chronyd disciplines this host). \"ntp\": mode-3 queries to the NTP \
                   daemon at ntp-server that disciplines this host. \"kernel\": adjtimex read \
                   only (STA_UNSYNC, maxerror, the leap bits), with stratum and reference-id \
                   from this section. \"static\": a declaration (a lab, a stratum-1 host), \
                   stratum and reference-id required.",
        },
        Key {
            name: "chrony-socket",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Value(r#""/run/chrony/chronyd.sock""#),
            text: "chronyd's command socket (sources \"chrony\" and \"auto\"). It answers only \
                   root and chrony's user; \"auto\" then tries the UDP command port \
                   127.0.0.1:323.",
        },
        Key {
            name: "chrony-address",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the socket; for \"auto\", then 127.0.0.1:323",
                example: r#""127.0.0.1:323""#,
            },
            text: "chronyd's UDP command address, \"IP:PORT\", instead of the socket; chronyd \
                   answers tracking there to every local user.",
        },
        Key {
            name: "ntp-server",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "required with source \"ntp\"",
                example: r#""127.0.0.1:123""#,
            },
            text: "The NTP daemon to follow (source \"ntp\"), \"IP:PORT\" or an IP address \
                   (port 123). It may not be an address this server serves itself.",
        },
        Key {
            name: "stratum",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "2 for sources \"kernel\" and \"auto\"; required for \"static\"",
                example: "1",
            },
            text: "Stratum announced while synchronized, 1 to 15 (sources \"kernel\" and \
                   \"static\"; \"auto\" uses it when it falls back to the kernel).",
        },
        Key {
            name: "reference-id",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "\"127.127.1.1\" for \"kernel\" and \"auto\"; required for \"static\"",
                example: r#""GPS""#,
            },
            text: "Reference id announced (sources \"kernel\" and \"static\"): a name of up to \
                   4 characters at stratum 1 (\"GPS\", \"PPS\"), the upstream's IP address \
                   above; names such as \"LOCL\" are refused above stratum 1.",
        },
        Key {
            name: "root-delay",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.0"),
            text: "Root delay in seconds (source \"static\" only).",
        },
        Key {
            name: "root-dispersion",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.0"),
            text: "Root dispersion in seconds (source \"static\" only); it grows by 15 \
                   microseconds per second since the reading, as for every source.",
        },
        Key {
            name: "leap-seconds-list",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "no leap seconds are announced",
                example: r#""/usr/share/zoneinfo/leap-seconds.list""#,
            },
            text: "A leap-seconds.list file whose leap seconds are announced (source \
                   \"static\" only; the other sources say themselves when a leap second \
                   comes).",
        },
        Key {
            name: "unsynchronized",
            kind: ValueKind::String,
            choices: &["answer", "drop"],
            default: DefaultValue::Value(r#""answer""#),
            text: "While the clock is unsynchronized: \"answer\" (with leap 3, as chrony, \
                   NTPsec and ntpd-rs do; clients then refuse the server) or \"drop\" the \
                   requests (counted).",
        },
        Key {
            name: "max-unreadable",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("30.0"),
            text: "Seconds the source may fail to answer before the clock is announced \
                   unsynchronized; until then the last reading is served, its dispersion \
                   growing. More than 0, at most 86400.",
        },
        Key {
            name: "poll-interval",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("1.0"),
            text: "Seconds between two readings of the source, 0.01 to 1.",
        },
    ],
};

const RATE_LIMIT: Section = Section {
    name: "rate-limit",
    presence_enables: false,
    summary: "Per-client token buckets: a client (an IPv4 address, or an IPv6 prefix) that \
              sends faster than allowed gets one RATE Kiss-o'-Death per kiss-interval, and \
              its other requests are dropped. On by default.",
    keys: &[
        Key {
            name: "enabled",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("true"),
            text: "Whether clients are rate limited at all.",
        },
        Key {
            name: "rate",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.5"),
            text: "Sustained requests per second per client, above 0.",
        },
        Key {
            name: "burst",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("16.0"),
            text: "Requests a client may send at once after being idle, at least 1.",
        },
        Key {
            name: "kiss-interval",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("4.0"),
            text: "Seconds between two RATE kisses to one client, 0 to 86400.",
        },
        Key {
            name: "table-size",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("65536"),
            text: "Buckets in the table, 1 to 16777216; memory is fixed, about 48 bytes a \
                   bucket.",
        },
        Key {
            name: "ipv6-prefix",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("64"),
            text: "Leading bits of an IPv6 address that identify one client, at most 128.",
        },
    ],
};

const ACCESS: Section = Section {
    name: "access",
    presence_enables: false,
    summary: "Which clients' NTP requests (plain, with a MAC, or NTS) are answered; the \
              others are dropped and counted. NTS-KE connections are not filtered here.",
    keys: &[
        Key {
            name: "allow",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value("[]"),
            text: "Networks answered, in CIDR notation or as single addresses; an empty list \
                   answers everyone.",
        },
        Key {
            name: "deny",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value("[]"),
            text: "Networks never answered, even inside an allowed one.",
        },
    ],
};

const METRICS: Section = Section {
    name: "metrics",
    presence_enables: false,
    summary: "The Prometheus endpoint: packets received, answered and dropped by reason, MAC \
              failures by key id, rate-limited requests, crypto-NAKs, key reloads, the clock \
              state announced and the NTS counters, in Prometheus' text format at \
              http://ADDRESS/metrics.",
    keys: &[Key {
        name: "listen",
        kind: ValueKind::String,
        choices: &[],
        default: DefaultValue::Unset {
            meaning: "no endpoint",
            example: r#""127.0.0.1:9123""#,
        },
        text: "Address of the endpoint, \"IP:PORT\". --metrics replaces it.",
    }],
};

const LOG: Section = Section {
    name: "log",
    presence_enables: false,
    summary: "What is logged, and how. Logs go to standard error; nothing a peer sends is \
              logged above debug level.",
    keys: &[
        Key {
            name: "level",
            kind: ValueKind::String,
            choices: &["error", "warn", "info", "debug", "trace"],
            default: DefaultValue::Value(r#""info""#),
            text: "The most verbose level shown: \"error\", \"warn\", \"info\", \"debug\" or \
                   \"trace\".",
        },
        Key {
            name: "format",
            kind: ValueKind::String,
            choices: &["auto", "text", "journald", "json"],
            default: DefaultValue::Value(r#""auto""#),
            text: "\"auto\" (journald's under systemd, when standard error is the journal's \
                   stream, else text), \"text\" (timestamp, level, message and fields), \
                   \"journald\" (the level as a <N> prefix, no timestamp) or \"json\" (one \
                   JSON object a line). --log-format replaces it.",
        },
    ],
};

const DAEMON: Section = Section {
    name: "daemon",
    presence_enables: false,
    summary: "Who authtimed runs as once its sockets are bound. Started as root, it binds \
              its ports, then switches to an unprivileged user and group for good and keeps \
              no capability. Under systemd the unit starts it as that user already, and \
              nothing changes.",
    keys: &[
        Key {
            name: "user",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the user \"authtime\"",
                example: r#""ntp""#,
            },
            text: "The user to switch to when started as root. --user replaces it.",
        },
        Key {
            name: "group",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the user's primary group",
                example: r#""ntp""#,
            },
            text: "The group to switch to. --group replaces it.",
        },
        Key {
            name: "allow-root",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("false"),
            text: "Keep running as root (no switch) when started as root; not recommended. \
                   --allow-root sets it.",
        },
    ],
};

const NTS_KE: Section = Section {
    name: "nts-ke",
    presence_enables: true,
    summary: "The NTS key-establishment server (RFC 8915 section 4): TLS 1.3 on TCP, which \
              gives clients the keys and cookies for NTS-protected NTP. Present, it is \
              served, and NTS-protected NTP is answered on the [ntp] addresses with the \
              cookie master keys of [keystore] (its defaults when that section is absent). \
              SIGHUP reloads the certificate and key.",
    keys: &[
        Key {
            name: "listen",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value(r#"["0.0.0.0:4460", "[::]:4460"]"#),
            text: "TCP addresses to accept NTS-KE on, \"IP:PORT\".",
        },
        Key {
            name: "certificate-chain",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "required",
                example: r#""nts-chain.pem""#,
            },
            text: "PEM certificate chain, leaf first. authtime nts cert makes one for \
                   private networks and tests; a public server wants one from a public CA.",
        },
        Key {
            name: "private-key",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "required",
                example: r#""nts-key.pem""#,
            },
            text: "PEM private key of the leaf certificate.",
        },
        Key {
            name: "ntp-server",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "no server record: clients use the address they reached NTS-KE on",
                example: r#""time.example.net""#,
            },
            text: "NTP server announced to clients (NTPv4 Server Negotiation record): a host \
                   name or an IP address, without brackets or port.",
        },
        Key {
            name: "ntp-port",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the port of the first [ntp] listen address when it is not 123; \
                          else no port record, and clients use 123",
                example: "11123",
            },
            text: "NTP port announced to clients (NTPv4 Port Negotiation record).",
        },
        Key {
            name: "aead",
            kind: ValueKind::Strings,
            choices: &["aes-siv-cmac-256", "aes-siv-cmac-512", "aes-128-gcm-siv"],
            default: DefaultValue::Value(
                r#"["aes-siv-cmac-256", "aes-siv-cmac-512", "aes-128-gcm-siv"]"#,
            ),
            text: "AEADs for NTP the server accepts (the client's order of preference \
                   decides among them): \"aes-siv-cmac-256\" (mandatory, RFC 8915 section \
                   5.1), \"aes-siv-cmac-512\", \"aes-128-gcm-siv\". chrony 4.4 to 4.6 \
                   derive AES-128-GCM-SIV keys wrongly: leave it out when such clients use \
                   the server.",
        },
        Key {
            name: "handshake-timeout",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("1.0"),
            text: "Seconds a client has to complete the TLS handshake, 0.05 to 60.",
        },
        Key {
            name: "session-timeout",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("2.0"),
            text: "Seconds a whole NTS-KE session may take, 0.05 to 120.",
        },
        Key {
            name: "max-connections",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("512"),
            text: "Connections served at once, 1 to 1000000; more are closed at once.",
        },
        Key {
            name: "workers",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("0"),
            text: "Threads doing TLS; 0 is one per CPU, at most 256.",
        },
        Key {
            name: "certificate-check-interval",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("10.0"),
            text: "Seconds between checks of the certificate files for a change (and of \
                   pool-token-files, and of the [nts-ke-balancer] backends' token and CA \
                   files), 0.1 to 86400; 0 checks only on SIGHUP.",
        },
        Key {
            name: "client-limit",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("true"),
            text: "Whether each client (an IPv4 address, or an IPv6 prefix) is limited in \
                   handshakes and open connections. A connection over a limit is closed \
                   right after it is accepted, before any TLS work, and counted.",
        },
        Key {
            name: "client-rate",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("0.2"),
            text: "Sustained handshakes (accepted connections) per second per client, above 0.",
        },
        Key {
            name: "client-burst",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("16.0"),
            text: "Handshakes a client may start at once after being idle, at least 1.",
        },
        Key {
            name: "client-max-connections",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("8"),
            text: "Connections one client may hold open at once, 1 to 1000000.",
        },
        Key {
            name: "client-table-size",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("16384"),
            text: "Clients remembered, 1 to 16777216; memory is fixed, about 48 bytes a \
                   client. When the table is full a newcomer takes the place of the least \
                   recently seen client, which starts over.",
        },
        Key {
            name: "ipv6-prefix",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("64"),
            text: "Leading bits of an IPv6 address that identify one NTS-KE client, at most 128.",
        },
        Key {
            name: "pool-token-files",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value("[]"),
            text: "Files holding the Authentication tokens of NTS pool key-exchange load \
                   balancers (draft-ietf-ntp-nts-keyexchange-pool-00, as ntpd-rs 1.9 speaks \
                   it), one token a file, surrounding whitespace trimmed; empty is not a pool \
                   member. With a token, a load balancer may ask which AEADs and protocols \
                   the server supports and have it make cookies for keys the balancer \
                   chose (Fixed Key Request), on a connection kept alive for up to 1000 \
                   requests; without a valid token these records get Error 0 as from any \
                   server. The trade-off: the load balancer knows the keys of every session \
                   it hands this server, so it can read and forge that NTP traffic; give \
                   tokens only to balancers trusted as much as this server. The files are \
                   secrets (mode 0600; a file its group or others can read is refused, an \
                   empty file too) and are re-read on SIGHUP and when they change (checked \
                   every certificate-check-interval); a failed reload keeps the previous \
                   tokens.",
        },
    ],
};

const NTS_KE_BALANCER: Section = Section {
    name: "nts-ke-balancer",
    presence_enables: true,
    summary: "The NTS-KE server as a key-exchange load balancer of an NTS pool \
              (draft-ietf-ntp-nts-keyexchange-pool-00). Present (it needs [nts-ke]), clients \
              still do NTS-KE here, but their cookies come from a pool member (for example \
              ntpd-rs 1.9 with accepted-pool-authentication-tokens): the server picks a \
              backend that is up, by weight, skipping the names the client denies (NTP \
              Server Deny) and backends without a common AEAD, exports the client's keys \
              and sends them in a Fixed Key Request with the backend's token. A backend \
              that cannot be connected to is marked down and another is tried; one that \
              fails after the keys were sent gets no retry elsewhere (the client gets \
              Internal Server Error). The client is told to use the backend's NTP server. \
              No local cookies are issued; of [nts-ke], the AEADs (aead) still limit what \
              clients get, while ntp-server and ntp-port do not apply.",
    keys: &[
        Key {
            name: "check-interval",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("10.0"),
            text: "Seconds between health checks of each backend (a Support query, which also \
                   learns its AEADs), 0.1 to 86400, jittered by up to a quarter either way. \
                   The first round runs before NTS-KE is served.",
        },
        Key {
            name: "timeout",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("1.0"),
            text: "Seconds allowed for each step with a backend (connect and TLS handshake; \
                   request and answer), 0.05 to 60. A client's session stays bounded by \
                   [nts-ke] session-timeout.",
        },
        Key {
            name: "backend",
            kind: ValueKind::Tables,
            choices: &[],
            default: DefaultValue::Value("[]"),
            text: "The pool members, one [[nts-ke-balancer.backend]] table each, at least one. \
                   Keys: name (required): the NTP server name given to clients when the \
                   backend sends no Server record, and the name NTP Server Deny records \
                   match (unique, ASCII case ignored); address (required): its NTS-KE \
                   \"host:port\" (port 4460 when left out, IPv6 in brackets); tls-name: the \
                   name its certificate must hold (default: the host of address); ca-file: \
                   PEM file of the CA to trust (default: the public roots); token-file \
                   (required): the file holding the pool authentication token the backend \
                   accepts, one word, refused unless only its owner can read it (chmod \
                   600); weight: its share of the clients, 1 to 1000000 (default \
                   1); ntp-port: the NTP port given to clients when the backend sends no \
                   Port record (default: none, clients use 123). The token and CA files \
                   are read at start and again on SIGHUP and when one changes (modification \
                   time, size or mode, checked every [nts-ke] certificate-check-interval; \
                   0: on SIGHUP only), each backend all or nothing: a backend whose new \
                   token or CA cannot be used (a file others can read, empty, not PEM) \
                   keeps its previous ones, the failure is logged naming the backend and \
                   the file (never the token) and counted in \
                   authtime_kelb_reload_failures_total. Sessions already under way finish \
                   with the token they started with; the backend's up or down state \
                   changes at its next health check.",
        },
    ],
};

const KEYSTORE: Section = Section {
    name: "keystore",
    presence_enables: true,
    summary: "Where the NTS cookie master keys live. Present (or with an [nts-ke] section), \
              NTS-protected NTP is answered; a [keystore] without [nts-ke] serves the NTP \
              side of a fleet whose NTS-KE runs elsewhere and shares the store.",
    keys: &[
        Key {
            name: "kind",
            kind: ValueKind::String,
            choices: &["embedded", "redis", "memcached"],
            default: DefaultValue::Value(r#""embedded""#),
            text: "\"embedded\" (a local file, written atomically, mode 0600), \"redis\" or \
                   \"memcached\" (shared by a fleet; they take url).",
        },
        Key {
            name: "path",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Value(r#""nts-master-keys""#),
            text: "The embedded store's file. Under systemd, /etc is read-only: use \
                   /var/lib/authtime/nts-master-keys (the unit's state directory).",
        },
        Key {
            name: "url",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "required with kind \"redis\" or \"memcached\"",
                example: r#""redis://127.0.0.1:6379/0?key=authtime:nts""#,
            },
            text: "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?key=NAME]; rediss:// the same \
                   over TLS (&ca=/ABSOLUTE/ca.pem trusts that CA instead of the system's); \
                   redis+sentinel://SENTINELS/MASTER[/DB][?key=NAME] or rediss+sentinel:// \
                   to find the master through Sentinel, SENTINELS being \
                   HOST[:PORT][,HOST[:PORT]...]; or memcached://HOST[:PORT][/NAME]. USER and \
                   PASSWORD are percent-decoded.",
        },
        Key {
            name: "rotation-interval",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("86400"),
            text: "Seconds between master-key rotations, 2 to 31622400.",
        },
        Key {
            name: "old-keys",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("7"),
            text: "Keys kept after they stop being current, 1 to 64: cookies stay valid for \
                   that many rotation intervals.",
        },
        Key {
            name: "cookie-aead",
            kind: ValueKind::String,
            choices: &["auto", "aes-siv-cmac-256", "aes-siv-cmac-512"],
            default: DefaultValue::Value("\"auto\""),
            text: "The AEAD new master keys seal cookies with: \"auto\", \"aes-siv-cmac-256\" \
                   or \"aes-siv-cmac-512\". \"auto\" keeps the AEAD of the ring's newest key, so \
                   that a fleet keeps what all its servers read, and gives a new ring \
                   AES-SIV-CMAC-256. Releases before 2026-11-27 read only AES-SIV-CMAC-512 keys: \
                   set \"aes-siv-cmac-256\" on every server sharing the store once all run this \
                   release or later. Cookies sealed under older keys open under their own AEAD \
                   until their key expires.",
        },
        Key {
            name: "poll-interval",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("5.0"),
            text: "Seconds between two reads of the store, 0.1 to 3600: a rotation by another \
                   server is seen within this time.",
        },
        Key {
            name: "key-encryption-key",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the master keys are stored unsealed",
                example: r#""/etc/authtime/nts-kek""#,
            },
            text: "A key-encryption key file made by `authtime nts kek` (mode 0600; \
                   a file its group or others can read is refused). The master keys are sealed \
                   under it (AES-256-GCM-SIV, bound to the store's key name and a version) before \
                   they reach the store, for every kind, embedded too. A server whose keys do \
                   not open what the store holds refuses to start and never overwrites it. \
                   Give every server of a fleet the same file.",
        },
        Key {
            name: "accepted-key-encryption-keys",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value("[]"),
            text: "Further key-encryption key files whose sealed keys are opened (never \
                   written with): for changing the key-encryption key across a running fleet \
                   (docs/security.md). Needs key-encryption-key.",
        },
        Key {
            name: "seal-plaintext-keys",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("false"),
            text: "With key-encryption-key: master keys found unsealed in the store are sealed \
                   in place (migration of a fleet to sealing) instead of refused. Turn it off \
                   once the store holds sealed keys.",
        },
    ],
};

const ROUGHTIME: Section = Section {
    name: "roughtime",
    presence_enables: true,
    summary: "The Roughtime server (RFC 10049 version 1 and the drafts' 0x8000000c), on UDP \
              and TCP. Present = served. Every request of one receive batch is answered under \
              one signed Merkle tree. The radius (RADI) follows the clock state: \
              ceil(root delay / 2 + root dispersion + 0.5 s for the whole-second midpoint), at \
              least 1 s; while the clock is unsynchronized nothing is answered. Requests under \
              1024 bytes are dropped. See docs/roughtime.md.",
    keys: &[
        Key {
            name: "listen",
            kind: ValueKind::Strings,
            choices: &[],
            default: DefaultValue::Value(r#"["0.0.0.0:2002", "[::]:2002"]"#),
            text: "Addresses served on UDP and on TCP, \"IP:PORT\" with IPv6 addresses in \
                   brackets. With the default, an address family the machine lacks is skipped.",
        },
        Key {
            name: "long-term-key",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "delegation is required instead",
                example: r#""/etc/authtime/roughtime.key""#,
            },
            text: "The long-term Ed25519 seed (64 hex digits on one line), made by `authtime \
                   roughtime keygen`; mode 0600 (a file its group or others can read is \
                   refused). The server makes online keys itself, keeps the current one in the \
                   [keystore] when there is one (sealed when sealing is configured, beside the \
                   NTS master keys, so a fleet shares one) and rotates it before its MAXT. Give \
                   exactly one of long-term-key and delegation.",
        },
        Key {
            name: "delegation",
            kind: ValueKind::Path,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "long-term-key is required instead",
                example: r#""/etc/authtime/roughtime.delegation""#,
            },
            text: "For a long-term key kept offline: an online key and its certificates made \
                   by `authtime roughtime delegate` (mode 0600). Re-read when the file changes; \
                   the server warns ahead of its MAXT and answers nothing outside MINT..MAXT.",
        },
        Key {
            name: "online-key-lifetime",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("86400"),
            text: "Seconds an online key made from long-term-key is valid after it is made \
                   (MINT is set up to 5 minutes earlier for clients whose clocks lag), 4 to \
                   31622400; a new key is made when a third of the lifetime is left. Not with \
                   delegation.",
        },
        Key {
            name: "rate-limit",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("4.0"),
            text: "Sustained requests per second per client (an IPv4 address or an IPv6 /64); \
                   0 = no limit. Requests over it are dropped and counted.",
        },
        Key {
            name: "rate-limit-burst",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("16.0"),
            text: "Requests a client may send at once after being idle, at least 1.",
        },
        Key {
            name: "max-radius",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("10"),
            text: "Seconds, 1 to 86400: while the radius the clock state calls for is larger, \
                   nothing is answered (counted as radius_too_large). It never makes the \
                   radius smaller.",
        },
        Key {
            name: "max-connections",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("64"),
            text: "TCP connections open at once, 1 to 100000, at most 4 of them from one \
                   address; more are closed at once.",
        },
        Key {
            name: "tcp-timeout",
            kind: ValueKind::Float,
            choices: &[],
            default: DefaultValue::Value("2.0"),
            text: "Seconds a TCP client has to send each whole request (counted from the connection or \
                   the previous response, not per read), 0.05 to 60.",
        },
        Key {
            name: "workers",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("1"),
            text: "UDP worker threads (and SO_REUSEPORT sockets) per address, 1 to 256.",
        },
    ],
};

const XDP: Section = Section {
    name: "xdp",
    presence_enables: true,
    summary: "NTP (plain, MAC and NTS), and Roughtime over UDP when [roughtime] is \
              configured, answered from AF_XDP sockets on one interface, before the kernel's \
              IP stack sees the requests. Present = on; Linux only. An XDP program attached \
              to the interface steers UDP to the served ports into one AF_XDP socket per \
              receive queue, each with a worker thread that runs the same batch logic as the \
              socket workers (NTP's, and Roughtime's, told apart by destination port) and \
              writes each reply into the frame its request came in. Everything else (ARP, \
              ICMP, TCP such as NTS-KE and Roughtime over TCP, other ports) goes through the \
              kernel. The endpoints are the [ntp] listen and [roughtime] listen addresses on \
              the served ports (0.0.0.0 or :: means every address of that family on the \
              interface); those sockets stay bound and serve every other interface. In copy \
              mode on Linux 6.11 or later, replies' transmit times come back from the \
              completion ring (AF_XDP transmit metadata) for interleaved mode and the \
              measured T3; otherwise NTP replies are basic and T3 is the bare clock \
              reading. The daemon refuses to start when anything is missing \
              (the interface, a queue, CAP_BPF, CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK or \
              enough RLIMIT_MEMLOCK, driver or kernel support), and the program is detached \
              when it exits, even on SIGKILL. See docs/xdp.md.",
    keys: &[
        Key {
            name: "interface",
            kind: ValueKind::String,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "required: the section is refused without it",
                example: r#""eth0""#,
            },
            text: "The network interface to attach the XDP program to, by name.",
        },
        Key {
            name: "queues",
            kind: ValueKind::Integers,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "every receive queue the interface has when the daemon starts",
                example: "[0]",
            },
            text: "Receive queues to serve, by index (ethtool -l shows them): one AF_XDP \
                   socket and one worker thread each. A queue not listed keeps passing its \
                   frames to the kernel, whose sockets answer them.",
        },
        Key {
            name: "attach",
            kind: ValueKind::String,
            choices: &["native", "generic"],
            default: DefaultValue::Value(r#""native""#),
            text: "Where the program runs: \"native\" in the driver (veth, virtio-net, mlx5, \
                   i40e, ice, ...; refused by drivers without XDP support), or \"generic\" \
                   after the kernel has built its socket buffer, on every interface, with no \
                   speed gain.",
        },
        Key {
            name: "zero-copy",
            kind: ValueKind::Bool,
            choices: &[],
            default: DefaultValue::Value("false"),
            text: "Bind the AF_XDP sockets in zero-copy mode (the driver writes frames into \
                   the UMEM directly; needs driver support, refused on veth); false = copy \
                   mode, which works everywhere.",
        },
        Key {
            name: "frames",
            kind: ValueKind::Integer,
            choices: &[],
            default: DefaultValue::Value("4096"),
            text: "UMEM chunks of 2048 bytes per queue, 64 to 262144 (the default is 8 MiB a \
                   queue). The UMEM is locked memory: without CAP_IPC_LOCK it counts against \
                   RLIMIT_MEMLOCK (systemd's LimitMEMLOCK=), which all AF_XDP sockets of one \
                   user share.",
        },
        Key {
            name: "ports",
            kind: ValueKind::Integers,
            choices: &[],
            default: DefaultValue::Unset {
                meaning: "the ports of [ntp] listen and [roughtime] listen",
                example: "[123]",
            },
            text: "Every UDP port the program steers to the AF_XDP sockets, NTP's and \
                   Roughtime's alike, at most 4, each a port of [ntp] listen or [roughtime] \
                   listen (ports of other services are refused: the daemon would not answer \
                   them); a Roughtime port not listed is served by its sockets only. Without \
                   it, the ports of both must number at most 4. [ntp] listen and [roughtime] \
                   listen must not use port 0 with this section, nor share a port (the \
                   workers tell NTP and Roughtime apart by destination port).",
        },
    ],
};

/// Two example files for the page's EXAMPLES section: a title and the
/// file. The tests parse both and validate the first.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "A public server on the standard port that follows the host's chronyd, with \
         symmetric keys and metrics on loopback:",
        r#"[ntp]
listen = ["0.0.0.0:123", "[::]:123"]
keys = "/etc/authtime/ntp.keys"

[clock]
source = "chrony"
chrony-address = "127.0.0.1:323"

[metrics]
listen = "127.0.0.1:9123"
"#,
    ),
    (
        "NTS as well, with the cookie master keys in the systemd unit's state directory:",
        r#"[nts-ke]
certificate-chain = "/etc/authtime/nts-chain.pem"
private-key = "/etc/authtime/nts-key.pem"

[keystore]
path = "/var/lib/authtime/nts-master-keys"
"#,
    ),
];
