//! The servers of the `xdp` section, per protocol: chronyd (with the key
//! file for NTP, as an NTS server for NTS-NTP) or roughenough 2.2 (for
//! Roughtime), `authtime serve` on sockets and `authtime serve` with
//! `[xdp]`, each on its own address of the server namespace, the peers and
//! authtime on sockets pinned to the servers' CPU for the whole protocol,
//! authtime on AF_XDP only started to see that it starts (then per
//! measurement, by [`start_serve`]).

use std::{
    fs,
    net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use authtime_roughtime::{SigningKey, Version};

use crate::{
    load_roughtime::request_pool,
    netns::{self, NetnsPair},
    scheduling::pin_process,
    section_accuracy::spawn_logged,
    section_ntp::{ServerProcess, TempDir, find_chronyd, log_tail, wait_ready},
    section_xdp::{Protocol, SERVER_CPU, ServerKind},
};

/// The `[clock]` of the authtime servers: stratum 1, as chronyd's `local
/// stratum 1` announces.
const CLOCK: &str = "[clock]\nsource = \"static\"\nstratum = 1\nreference-id = \"LOCL\"\n";
/// The NTS-KE port (every NTS server on its own address).
pub(crate) const NTS_KE_PORT: u16 = 4460;
/// The Roughtime port.
pub(crate) const ROUGHTIME_PORT: u16 = 2002;
/// How long a server may take to serve NTS-KE or Roughtime once it answers.
const START_LIMIT: Duration = Duration::from_secs(10);

/// What the generator needs besides the address.
#[derive(Debug, Clone)]
pub(crate) enum Credentials {
    /// NTP: the chrony-format key file's key is the generator's (or none).
    Ntp,
    /// NTS-NTP: the CA to trust, and the NTS-KE server.
    Nts {
        /// The CA certificate.
        ca: PathBuf,
        /// NTS-KE at the server's address.
        ke: SocketAddr,
    },
    /// Roughtime: the long-term public key.
    Roughtime {
        /// Ed25519 public key.
        public_key: [u8; 32],
    },
}

/// A server and how to reach it; the AF_XDP one runs only during its own
/// measurements (`process` is `None` between them).
pub(crate) struct Server {
    /// Which of the three.
    pub(crate) kind: ServerKind,
    /// The running process.
    pub(crate) process: Option<ServerProcess>,
    /// Where the load goes (NTP port 123, or the Roughtime port).
    pub(crate) target: SocketAddr,
    /// The plain NTP endpoint that says the server is up (`None`:
    /// roughenough, which serves no NTP).
    pub(crate) probe: Option<SocketAddr>,
    /// The configuration `authtime serve` is started with (AF_XDP only).
    pub(crate) config: Option<PathBuf>,
    /// Pinned to [`SERVER_CPU`].
    pub(crate) pinned: bool,
    /// What the generator needs.
    pub(crate) credentials: Credentials,
}

/// What a protocol's servers share: the key file (NTP), the certificates
/// (NTS), the long-term key (Roughtime).
pub(crate) struct Material {
    /// The chrony-format key file.
    pub(crate) key_file: PathBuf,
    /// CA, chain and key for the server addresses (NTS), or why not.
    pub(crate) certificates: Result<crate::section_nts_server::Certificates, String>,
    /// The Roughtime long-term key seed (hex in a file) and its public key.
    pub(crate) roughtime_key: Result<(PathBuf, [u8; 32]), String>,
}

impl Material {
    /// Makes the certificates and the Roughtime key in `dir`.
    pub(crate) fn make(pair: &NetnsPair, dir: &TempDir, key_file: PathBuf) -> Self {
        Self {
            key_file,
            certificates: make_certificates(dir, &pair.server_addrs),
            roughtime_key: roughtime_key(dir),
        }
    }
}

/// A CA and a leaf for `addrs` with `authtime nts cert`.
fn make_certificates(
    dir: &TempDir,
    addrs: &[Ipv4Addr],
) -> Result<crate::section_nts_server::Certificates, String> {
    let out_dir = dir.path("nts");
    fs::create_dir_all(&out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let mut command = Command::new(crate::section_nts_server::authtime_exe()?);
    command.args(["nts", "cert", "--name", "localhost"]);
    for a in addrs {
        command.arg("--ip").arg(a.to_string());
    }
    let out = command
        .arg("--out-dir")
        .arg(&out_dir)
        .output()
        .map_err(|e| format!("cannot run authtime nts cert: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "authtime nts cert: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(crate::section_nts_server::Certificates {
        ca: out_dir.join("nts-ca.pem"),
        chain: out_dir.join("nts-chain.pem"),
        key: out_dir.join("nts-key.pem"),
    })
}

/// A fresh Ed25519 seed in a file of mode 0600 (hex, as both authtime and
/// roughenough read it), and its public key.
fn roughtime_key(dir: &TempDir) -> Result<(PathBuf, [u8; 32]), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness: {e}"))?;
    let path = dir.path("roughtime-seed.hex");
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{hex}\n").as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    // Both roughenough and ed25519-dalek derive the key pair from the seed
    // as RFC 8032 does.
    Ok((
        path,
        SigningKey::from_bytes(&seed).verifying_key().to_bytes(),
    ))
}

/// Starts the three servers of `protocol` (the AF_XDP one only to see that
/// it starts); each that could not be comes back with the reason.
pub(crate) fn start(
    protocol: Protocol,
    pair: &NetnsPair,
    dir: &TempDir,
    material: &Material,
) -> Vec<Result<Server, String>> {
    ServerKind::ALL
        .iter()
        .enumerate()
        .map(|(i, &kind)| {
            let addr = pair.server_addrs[i];
            match (protocol, kind) {
                (Protocol::Roughtime, ServerKind::Chronyd) => {
                    start_roughenough(pair, dir, material, addr)
                }
                (_, ServerKind::Chronyd) => match find_chronyd() {
                    None => Err(
                        "chronyd was not found (PATH, /usr/sbin, /sbin; Debian package `chrony`)"
                            .to_owned(),
                    ),
                    Some(chronyd) => start_chronyd(protocol, pair, dir, &chronyd, material, addr),
                },
                (_, ServerKind::Sockets) => {
                    let config = write_config(protocol, pair, dir, material, addr, false)?;
                    let mut server = start_serve(pair, kind, &config, targets(protocol, addr))?;
                    server.credentials = credentials(protocol, material, addr)?;
                    wait_in(pair, &mut server)?;
                    Ok(server)
                }
                (_, ServerKind::Xdp) => probe_xdp(protocol, pair, dir, material, addr),
            }
        })
        .collect()
}

/// The load target and the plain NTP probe of a server on `addr`.
fn targets(protocol: Protocol, addr: Ipv4Addr) -> (SocketAddr, SocketAddr) {
    let ntp = SocketAddr::from((addr, 123));
    match protocol {
        Protocol::Roughtime => ((addr, ROUGHTIME_PORT).into(), ntp),
        _ => (ntp, ntp),
    }
}

/// The generator's credentials for a server on `addr`.
fn credentials(
    protocol: Protocol,
    material: &Material,
    addr: Ipv4Addr,
) -> Result<Credentials, String> {
    Ok(match protocol {
        Protocol::Ntp => Credentials::Ntp,
        Protocol::Nts => Credentials::Nts {
            ca: material
                .certificates
                .as_ref()
                .map_err(Clone::clone)?
                .ca
                .clone(),
            ke: (addr, NTS_KE_PORT).into(),
        },
        Protocol::Roughtime => Credentials::Roughtime {
            public_key: material.roughtime_key.as_ref().map_err(Clone::clone)?.1,
        },
    })
}

/// Waits (bounded) until the server serves NTS-KE or answers Roughtime with
/// a response that verifies (run it in the generator's namespace: see
/// [`wait_in`]); nothing to wait for with NTP.
fn wait_protocol(
    process: &mut ServerProcess,
    credentials: &Credentials,
    target: SocketAddr,
) -> Result<(), String> {
    let deadline = Instant::now() + START_LIMIT;
    match credentials {
        Credentials::Ntp => Ok(()),
        Credentials::Nts { ke, .. } => {
            while Instant::now() < deadline {
                process.check_alive()?;
                if TcpStream::connect_timeout(ke, Duration::from_millis(200)).is_ok() {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(format!(
                "{} did not accept NTS-KE connections at {ke} within {} s: {}",
                process.name,
                START_LIMIT.as_secs(),
                log_tail(&process.log)
            ))
        }
        Credentials::Roughtime { public_key } => {
            let pool = request_pool(1, &[Version::Rfc1], public_key)?;
            let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
            socket
                .set_read_timeout(Some(Duration::from_millis(100)))
                .map_err(|e| e.to_string())?;
            let mut buf = [0u8; 2048];
            let mut last = String::from("no answer");
            while Instant::now() < deadline {
                process.check_alive()?;
                let _ = socket.send_to(&pool[0], target);
                if let Ok((n, _)) = socket.recv_from(&mut buf) {
                    match authtime_roughtime::verify_response(&pool[0], &buf[..n], public_key) {
                        Ok(_) => return Ok(()),
                        Err(e) => last = format!("a response that does not verify: {e}"),
                    }
                }
            }
            Err(format!(
                "{} did not answer Roughtime at {target} within {} s ({last}): {}",
                process.name,
                START_LIMIT.as_secs(),
                log_tail(&process.log)
            ))
        }
    }
}

/// Starts `authtime serve --config CONFIG` in the server namespace, waits
/// until it answers plain NTP at the probe and serves its protocol, and
/// pins it. `targets`: the load target and the NTP probe.
pub(crate) fn start_serve(
    pair: &NetnsPair,
    kind: ServerKind,
    config: &Path,
    (target, probe): (SocketAddr, SocketAddr),
) -> Result<Server, String> {
    let exe = crate::section_nts_server::authtime_exe()?;
    let mut command = pair.server_command(&exe);
    command.arg("serve").arg("--config").arg(config);
    let log = config.with_extension("log");
    let mut process = spawn_logged(command, log, "authtime serve")?;
    netns::run_in(&pair.generator, || wait_ready(&mut process, probe))??;
    let pinned = pin_process(process.pid(), SERVER_CPU);
    Ok(Server {
        kind,
        process: Some(process),
        target,
        probe: Some(probe),
        config: None,
        pinned,
        credentials: Credentials::Ntp,
    })
}

/// Starts the AF_XDP server of a measurement: as [`start_serve`], then
/// waits for its protocol.
pub(crate) fn start_xdp_for_measurement(
    pair: &NetnsPair,
    server: &Server,
) -> Result<Server, String> {
    let config = server.config.as_deref().ok_or("no configuration")?;
    let probe = server.probe.ok_or("no probe")?;
    let mut started = start_serve(pair, server.kind, config, (server.target, probe))?;
    started.credentials = server.credentials.clone();
    wait_in(pair, &mut started)?;
    Ok(started)
}

/// [`wait_protocol`] from the generator's namespace.
fn wait_in(pair: &NetnsPair, server: &mut Server) -> Result<(), String> {
    let (credentials, target) = (server.credentials.clone(), server.target);
    let Some(process) = server.process.as_mut() else {
        return Ok(());
    };
    netns::run_in(&pair.generator, || {
        wait_protocol(process, &credentials, target)
    })?
}

/// The configuration of an authtime server on `addr` for `protocol`: one
/// worker, no rate limit, a stratum-1 static clock; with `[xdp]` on the
/// server-side veth (native mode) when `xdp`.
fn write_config(
    protocol: Protocol,
    pair: &NetnsPair,
    dir: &TempDir,
    material: &Material,
    addr: Ipv4Addr,
    xdp: bool,
) -> Result<PathBuf, String> {
    let mut text = match protocol {
        Protocol::Ntp => format!(
            "[ntp]\nlisten = [\"{addr}:123\"]\nkeys = \"{}\"\nkey-format = \"chrony\"\n\
             workers = 1\n[rate-limit]\nenabled = false\n{CLOCK}",
            material.key_file.display()
        ),
        Protocol::Nts => {
            let certs = material.certificates.as_ref().map_err(Clone::clone)?;
            format!(
                "[ntp]\nlisten = [\"{addr}:123\"]\nworkers = 1\n[rate-limit]\nenabled = false\n\
                 {CLOCK}[nts-ke]\nlisten = [\"{addr}:{NTS_KE_PORT}\"]\n\
                 certificate-chain = \"{}\"\nprivate-key = \"{}\"\nworkers = 1\n\
                 [keystore]\nkind = \"embedded\"\npath = \"{}\"\n",
                certs.chain.display(),
                certs.key.display(),
                dir.path(if xdp {
                    "master-keys-xdp"
                } else {
                    "master-keys-sockets"
                })
                .display()
            )
        }
        Protocol::Roughtime => {
            let (seed, _) = material.roughtime_key.as_ref().map_err(Clone::clone)?;
            format!(
                "[ntp]\nlisten = [\"{addr}:123\"]\nworkers = 1\n[rate-limit]\nenabled = false\n\
                 {CLOCK}[roughtime]\nlisten = [\"{addr}:{ROUGHTIME_PORT}\"]\n\
                 long-term-key = \"{}\"\nworkers = 1\nrate-limit = 0\n",
                seed.display()
            )
        }
    };
    if xdp {
        text.push_str(&format!(
            "[xdp]\ninterface = \"{}\"\nattach = \"native\"\n",
            pair.veth.0
        ));
    }
    let name = format!(
        "authtime-{}-{}.toml",
        protocol.tag(),
        if xdp { "xdp" } else { "sockets" }
    );
    let config = dir.path(&name);
    fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    Ok(config)
}

/// authtime on AF_XDP, on `addr`, the server-side veth in native mode:
/// started once to see whether this build has the AF_XDP data path (the
/// daemon's own message when it has not), then stopped until its
/// measurements.
fn probe_xdp(
    protocol: Protocol,
    pair: &NetnsPair,
    dir: &TempDir,
    material: &Material,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let config = write_config(protocol, pair, dir, material, addr, true)?;
    let (target, probe) = targets(protocol, addr);
    let mut server = Server {
        kind: ServerKind::Xdp,
        process: None,
        target,
        probe: Some(probe),
        config: Some(config),
        pinned: false,
        credentials: credentials(protocol, material, addr)?,
    };
    drop(start_xdp_for_measurement(pair, &server)?);
    server.process = None;
    Ok(server)
}

/// chronyd on `addr`, port 123, as the accuracy section runs it (never
/// touching the clock, `local stratum 1`, answering everyone, no command
/// socket): with the key file for NTP; for NTS-NTP as section `nts` runs
/// it (the certificate and key, NTS-KE on port 4460), with its NTS-KE in
/// the main process (`ntsprocesses 0`: the key exchanges are made before a
/// measurement, and the server's CPU is one process's).
fn start_chronyd(
    protocol: Protocol,
    pair: &NetnsPair,
    dir: &TempDir,
    chronyd: &Path,
    material: &Material,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let conf = dir.path(&format!("chrony-{}.conf", protocol.tag()));
    let auth = match protocol {
        Protocol::Nts => {
            let certs = material.certificates.as_ref().map_err(Clone::clone)?;
            format!(
                "ntsport {NTS_KE_PORT}\nntsserverkey {}\nntsservercert {}\nntsprocesses 0\n",
                certs.key.display(),
                certs.chain.display()
            )
        }
        _ => format!("keyfile {}\n", material.key_file.display()),
    };
    fs::write(
        &conf,
        format!(
            "bindaddress {addr}\nport 123\nallow\nlocal stratum 1\n{auth}cmdport 0\n\
             bindcmdaddress /\npidfile {}\n",
            dir.path(&format!("chronyd-{}.pid", protocol.tag()))
                .display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let mut command = pair.server_command(chronyd);
    command.args(["-x", "-u", "root", "-d", "-f"]).arg(&conf);
    let log = dir.path(&format!("chronyd-{}.log", protocol.tag()));
    let mut process = spawn_logged(command, log, "chronyd")?;
    let target = SocketAddr::from((addr, 123));
    netns::run_in(&pair.generator, || wait_ready(&mut process, target))??;
    let mut server = Server {
        kind: ServerKind::Chronyd,
        process: Some(process),
        target,
        probe: Some(target),
        config: None,
        pinned: false,
        credentials: credentials(protocol, material, addr)?,
    };
    wait_in(pair, &mut server)?;
    server.pinned = server
        .process
        .as_ref()
        .is_some_and(|p| pin_process(p.pid(), SERVER_CPU));
    Ok(server)
}

/// roughenough 2.2's server on `addr`, the Roughtime port, one worker
/// (`-j 1`), quiet, with the section's long-term key seed.
fn start_roughenough(
    pair: &NetnsPair,
    dir: &TempDir,
    material: &Material,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let bin = crate::section_roughtime::roughenough_server().ok_or(
        "roughenough 2.2 not found in the peer cache ($AUTHTIME_PEER_CACHE or \
         ~/.cache/authtime-peers): run scripts/ensure-roughenough.sh",
    )?;
    let (seed, _) = material.roughtime_key.as_ref().map_err(Clone::clone)?;
    let mut command = pair.server_command(&bin);
    command
        .args([
            "-i",
            &addr.to_string(),
            "-p",
            &ROUGHTIME_PORT.to_string(),
            "-j",
            "1",
            "-q",
        ])
        .arg("--seed-file")
        .arg(seed)
        .env("NO_COLOR", "1");
    let process = spawn_logged(command, dir.path("roughenough.log"), "roughenough_server")?;
    let mut server = Server {
        kind: ServerKind::Chronyd,
        process: Some(process),
        target: (addr, ROUGHTIME_PORT).into(),
        probe: None,
        config: None,
        pinned: false,
        credentials: credentials(Protocol::Roughtime, material, addr)?,
    };
    wait_in(pair, &mut server)?;
    server.pinned = server
        .process
        .as_ref()
        .is_some_and(|p| pin_process(p.pid(), SERVER_CPU));
    Ok(server)
}
