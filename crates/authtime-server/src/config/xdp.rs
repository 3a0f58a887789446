//! `[xdp]`: the opt-in AF_XDP data path for NTP (docs/xdp.md). Absent = the
//! sockets serve everything, as always.
//!
//! Present, the daemon attaches an XDP program to `interface` that steers
//! UDP to the served NTP ports into AF_XDP sockets, one per receive queue,
//! each with a worker thread that answers from the frame's own buffer. The
//! `[ntp] listen` sockets stay bound: they serve every other interface, and
//! this one again as soon as the program is gone.

use std::net::SocketAddr;

use serde::Deserialize;

use crate::config::Problem;

/// Default `frames`: UMEM chunks per queue (2048 bytes each, 8 MiB).
pub const DEFAULT_FRAMES: u32 = 4096;
/// Fewest `frames`: room for a receive batch and its replies.
pub const MIN_FRAMES: u32 = 64;
/// Most `frames` (512 MiB of UMEM per queue).
pub const MAX_FRAMES: u32 = 1 << 18;
/// Bytes per UMEM chunk.
pub const FRAME_SIZE: u32 = 2048;
/// The most ports one XDP program serves (authtime-xdp's `MAX_PORTS`).
pub const MAX_PORTS: usize = 4;
/// The longest interface name Linux accepts (`IFNAMSIZ` - 1).
const MAX_IFNAME: usize = 15;

/// `[xdp]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct XdpSection {
    /// The network interface the program is attached to (required).
    pub interface: Option<String>,
    /// Receive queues to serve; none = all of the interface's.
    pub queues: Option<Vec<u32>>,
    /// `native` (in the driver) or `generic` (after the skb is built).
    pub attach: String,
    /// Bind the AF_XDP sockets in zero-copy mode (drivers with support).
    pub zero_copy: bool,
    /// UMEM chunks per queue.
    pub frames: u32,
    /// UDP ports steered to the AF_XDP sockets; none = the ports of
    /// `[ntp] listen`.
    pub ports: Option<Vec<u16>>,
}

impl Default for XdpSection {
    fn default() -> Self {
        Self {
            interface: None,
            queues: None,
            attach: "native".into(),
            zero_copy: false,
            frames: DEFAULT_FRAMES,
            ports: None,
        }
    }
}

/// Where the XDP program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpAttach {
    /// In the driver (`XDP_FLAGS_DRV_MODE`).
    Native,
    /// After the skb is built (`XDP_FLAGS_SKB_MODE`): every interface.
    Generic,
}

/// A validated `[xdp]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpSettings {
    /// The interface.
    pub interface: String,
    /// The queues; `None`: every receive queue the interface has at start.
    pub queues: Option<Vec<u32>>,
    /// Native or generic.
    pub attach: XdpAttach,
    /// Zero-copy (else copy mode).
    pub zero_copy: bool,
    /// UMEM chunks per queue.
    pub frames: u32,
    /// The ports given, or `None` for those of `[ntp] listen` (resolved
    /// against the addresses actually served, which `--listen` may change:
    /// [`served_endpoints`]).
    pub ports: Option<Vec<u16>>,
}

impl XdpSettings {
    /// UMEM bytes per queue.
    #[must_use]
    pub fn umem_bytes(&self) -> u64 {
        u64::from(self.frames) * u64::from(FRAME_SIZE)
    }
}

/// The endpoints the AF_XDP path answers for: the `listen` addresses whose
/// port is in `ports` (all of them without `ports`), and the ports the
/// program steers.
///
/// # Errors
/// What is wrong, as a sentence: a port 0, a port no listen address serves,
/// more than [`MAX_PORTS`] ports.
pub fn served_endpoints(
    listen: &[SocketAddr],
    ports: Option<&[u16]>,
) -> Result<(Vec<SocketAddr>, Vec<u16>), String> {
    if let Some(addr) = listen.iter().find(|a| a.port() == 0) {
        return Err(format!(
            "the AF_XDP path serves fixed ports: [ntp] listen has {addr} (port 0)"
        ));
    }
    let mut chosen: Vec<u16> = match ports {
        Some(ports) => {
            for &port in ports {
                if !listen.iter().any(|a| a.port() == port) {
                    return Err(format!(
                        "port {port} is not a port of [ntp] listen (the AF_XDP path answers \
                         only what the sockets would)"
                    ));
                }
            }
            ports.to_vec()
        }
        None => listen.iter().map(SocketAddr::port).collect(),
    };
    chosen.sort_unstable();
    chosen.dedup();
    if chosen.len() > MAX_PORTS {
        return Err(format!(
            "{} ports ({chosen:?}): one XDP program serves at most {MAX_PORTS}; choose them \
             with xdp.ports",
            chosen.len()
        ));
    }
    let served = listen
        .iter()
        .copied()
        .filter(|a| chosen.contains(&a.port()))
        .collect();
    Ok((served, chosen))
}

impl XdpSection {
    /// Checks the section against the addresses `[ntp]` listens on.
    pub(crate) fn validate(
        &self,
        listen: &[SocketAddr],
        problems: &mut Vec<Problem>,
    ) -> Option<XdpSettings> {
        let before = problems.len();
        let interface = match self.interface.as_deref() {
            None => {
                problems.push(Problem::new(
                    "xdp.interface",
                    "the interface to attach the XDP program to is required (for example \
                     interface = \"eth0\")",
                ));
                String::new()
            }
            Some(name) => {
                if name.is_empty()
                    || name.len() > MAX_IFNAME
                    || name
                        .bytes()
                        .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b == 0)
                    || name == "."
                    || name == ".."
                {
                    problems.push(Problem::new(
                        "xdp.interface",
                        format!(
                            "`{name}` is not an interface name (1 to {MAX_IFNAME} bytes, no \
                             '/', ':' or spaces)"
                        ),
                    ));
                }
                name.to_owned()
            }
        };
        if let Some(queues) = &self.queues {
            if queues.is_empty() {
                problems.push(Problem::new(
                    "xdp.queues",
                    "no queue (leave queues out to serve every receive queue)",
                ));
            }
            for (i, q) in queues.iter().enumerate() {
                if queues[..i].contains(q) {
                    problems.push(Problem::new(
                        format!("xdp.queues[{i}]"),
                        format!("queue {q} is listed twice"),
                    ));
                }
            }
        }
        let attach = match self.attach.as_str() {
            "native" => XdpAttach::Native,
            "generic" => XdpAttach::Generic,
            other => {
                problems.push(Problem::new(
                    "xdp.attach",
                    format!("unknown mode `{other}` (native or generic)"),
                ));
                XdpAttach::Native
            }
        };
        if !(MIN_FRAMES..=MAX_FRAMES).contains(&self.frames) {
            problems.push(Problem::new(
                "xdp.frames",
                format!(
                    "{} frames per queue must be {MIN_FRAMES} to {MAX_FRAMES} (each is {FRAME_SIZE} \
                     bytes of UMEM, locked memory: without CAP_IPC_LOCK it counts against \
                     RLIMIT_MEMLOCK)",
                    self.frames
                ),
            ));
        }
        if let Some(ports) = &self.ports {
            if ports.is_empty() {
                problems.push(Problem::new(
                    "xdp.ports",
                    "no port (leave ports out to serve the ports of [ntp] listen)",
                ));
            }
            if ports.contains(&0) {
                problems.push(Problem::new("xdp.ports", "port 0 cannot be served"));
            }
        }
        if problems.len() == before
            && let Err(message) = served_endpoints(listen, self.ports.as_deref())
        {
            let at = if self.ports.is_some() {
                "xdp.ports"
            } else {
                "ntp.listen"
            };
            problems.push(Problem::new(at, message));
        }
        (problems.len() == before).then(|| XdpSettings {
            interface,
            queues: self.queues.clone(),
            attach,
            zero_copy: self.zero_copy,
            frames: self.frames,
            ports: self.ports.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigFile;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().expect("addr")).collect()
    }

    fn problems(text: &str) -> Vec<Problem> {
        ConfigFile::parse(text)
            .expect("parses")
            .validate(None)
            .expect_err("invalid")
    }

    #[test]
    fn a_valid_section_resolves_with_its_defaults() {
        let settings =
            ConfigFile::parse("[ntp]\nlisten = [\"192.0.2.1:123\"]\n[xdp]\ninterface = \"eth0\"\n")
                .expect("parses")
                .validate(None)
                .expect("valid");
        let xdp = settings.xdp.expect("xdp");
        assert_eq!(
            xdp,
            XdpSettings {
                interface: "eth0".into(),
                queues: None,
                attach: XdpAttach::Native,
                zero_copy: false,
                frames: DEFAULT_FRAMES,
                ports: None,
            }
        );
        assert_eq!(xdp.umem_bytes(), 8 << 20);
        assert!(
            ConfigFile::parse("")
                .expect("parses")
                .validate(None)
                .expect("valid")
                .xdp
                .is_none()
        );
    }

    #[test]
    fn each_bad_value_is_a_problem_at_its_key() {
        let p = problems(
            "[ntp]\nlisten = [\"192.0.2.1:123\"]\n[xdp]\nqueues = [0, 1, 0]\n\
             attach = \"driver\"\nframes = 8\nports = [0]\n",
        );
        let paths: Vec<&str> = p.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "xdp.interface",
                "xdp.queues[2]",
                "xdp.attach",
                "xdp.frames",
                "xdp.ports"
            ],
            "{p:?}"
        );
        assert!(p[2].message.ends_with("(native or generic)"), "{p:?}");
        assert!(p[3].message.contains("RLIMIT_MEMLOCK"), "{p:?}");
        let p = problems("[xdp]\ninterface = \"a/b\"\n");
        assert_eq!(p[0].path, "xdp.interface");
        let p = problems("[xdp]\ninterface = \"averyveryverylongname\"\n");
        assert_eq!(p[0].path, "xdp.interface");
    }

    #[test]
    fn ports_must_be_listened_on_and_fixed() {
        let p = problems(
            "[ntp]\nlisten = [\"192.0.2.1:123\"]\n[xdp]\ninterface = \"eth0\"\nports = [124]\n",
        );
        assert_eq!(p[0].path, "xdp.ports");
        assert!(p[0].message.contains("124"), "{p:?}");
        let p = problems("[ntp]\nlisten = [\"127.0.0.1:0\"]\n[xdp]\ninterface = \"lo\"\n");
        assert_eq!(p[0].path, "ntp.listen");
        assert!(p[0].message.contains("port 0"), "{p:?}");
        let five = "[ntp]\nlisten = [\"0.0.0.0:1\", \"0.0.0.0:2\", \"0.0.0.0:3\", \
                    \"0.0.0.0:4\", \"0.0.0.0:5\"]\n[xdp]\ninterface = \"eth0\"\n";
        let p = problems(five);
        assert!(p[0].message.contains("xdp.ports"), "{p:?}");
    }

    #[test]
    fn served_endpoints_are_the_listen_addresses_on_the_ports() {
        let listen = addrs(&["0.0.0.0:123", "[::]:123", "192.0.2.1:4123"]);
        let (served, ports) = served_endpoints(&listen, None).expect("ok");
        assert_eq!(served, listen);
        assert_eq!(ports, [123, 4123]);
        let (served, ports) = served_endpoints(&listen, Some(&[4123])).expect("ok");
        assert_eq!(served, addrs(&["192.0.2.1:4123"]));
        assert_eq!(ports, [4123]);
        assert!(served_endpoints(&listen, Some(&[9])).is_err());
    }
}
