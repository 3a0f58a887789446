//! Which capabilities each step needs, found by running a child without
//! them (`capsh --drop`, inside `ip netns exec`): the docs' list is this
//! test's result. Needs root, iproute2 and capsh; skipped otherwise.

mod support;

use std::process::{Command, Stdio};

use authtime_xdp::{AttachMode, Attachment, LoadedProgram, ProgramSpec, Xsk, XskConfig};
use support::Pair;

/// The child: try each step on the interface AUTHTIME_XDP_CAPS_CHILD names
/// and print one `probe STEP: RESULT` line per step.
#[test]
fn caps_child() {
    let Ok(ifname) = std::env::var("AUTHTIME_XDP_CAPS_CHILD") else {
        return;
    };
    let spec = ProgramSpec::udp_ports(&[10123]).expect("spec");
    let show = |r: Result<(), authtime_xdp::Error>| match r {
        Ok(()) => "ok".to_owned(),
        Err(e) => format!("{e:?} / {e}"),
    };
    println!(
        "\nprobe load: {}",
        show(LoadedProgram::load(&spec, 1).map(drop))
    );
    println!(
        "\nprobe attach: {}",
        show(Attachment::attach(&ifname, &spec, AttachMode::Native).map(drop))
    );
    // A queue stays busy for a moment after its socket closes (the kernel
    // frees the UMEM from a work queue): retry a bound socket briefly.
    let open = |config: &XskConfig| {
        let mut tries = 0;
        loop {
            match Xsk::open(&ifname, 0, config) {
                Err(authtime_xdp::Error::QueueBusy { .. }) if tries < 40 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                other => return other.map(drop),
            }
        }
    };
    println!("\nprobe xsk: {}", show(open(&XskConfig::default())));
    let big = XskConfig {
        frame_count: 8192,
        fill_size: 8192,
        ..XskConfig::default()
    };
    println!("\nprobe xsk16m: {}", show(open(&big)));
}

/// Runs the child in the server namespace without `drop` (a capsh list).
fn probe(pair: &Pair, drop: &str) -> Vec<(String, String)> {
    let exe = std::env::current_exe().expect("test binary");
    let exe = exe.to_str().expect("utf-8 path");
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.server,
            "capsh",
            &format!("--drop={drop}"),
            "--",
            "-c",
        ])
        .arg(format!(
            "exec {exe} caps_child --exact --nocapture --test-threads=1"
        ))
        .env("AUTHTIME_XDP_CAPS_CHILD", &pair.server_if)
        .stdin(Stdio::null())
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let probes: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("probe "))
        .filter_map(|l| l.split_once(": "))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    assert_eq!(
        probes.len(),
        4,
        "child output: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (step, result) in &probes {
        eprintln!("without {drop}: {step}: {result}");
    }
    probes
}

fn result<'a>(probes: &'a [(String, String)], step: &str) -> &'a str {
    probes
        .iter()
        .find(|(s, _)| s == step)
        .map_or("", |(_, r)| r)
}

#[test]
fn each_step_needs_the_capabilities_the_docs_name() {
    skip_unless_root!();
    if Command::new("capsh")
        .arg("--help")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("skipped: no capsh");
        return;
    }
    let pair = Pair::create("cp").expect("namespaces");

    let all = probe(&pair, "cap_sys_module");
    assert_eq!(result(&all, "load"), "ok");
    assert_eq!(result(&all, "attach"), "ok");
    assert_eq!(result(&all, "xsk"), "ok");

    let no_raw = probe(&pair, "cap_net_raw");
    assert_eq!(result(&no_raw, "load"), "ok");
    assert_eq!(result(&no_raw, "attach"), "ok");
    assert!(
        result(&no_raw, "xsk").contains("needs CAP_NET_RAW"),
        "{no_raw:?}"
    );

    let no_bpf = probe(&pair, "cap_bpf,cap_sys_admin");
    assert!(
        result(&no_bpf, "load").contains("MissingCapability"),
        "{no_bpf:?}"
    );
    assert!(result(&no_bpf, "attach").contains("CAP_BPF"), "{no_bpf:?}");
    assert_eq!(result(&no_bpf, "xsk"), "ok");

    let no_admin = probe(&pair, "cap_net_admin,cap_sys_admin");
    assert!(
        result(&no_admin, "load").contains("MissingCapability"),
        "{no_admin:?}"
    );
    assert!(
        result(&no_admin, "attach").contains("CAP_NET_ADMIN"),
        "{no_admin:?}"
    );
    assert_eq!(result(&no_admin, "xsk"), "ok");

    // With CAP_IPC_LOCK, a 16 MiB UMEM; without, the UMEM counts against
    // RLIMIT_MEMLOCK (when that is below 16 MiB, as the usual 8 MiB is).
    assert_eq!(result(&all, "xsk16m"), "ok");
    let no_lock = probe(&pair, "cap_ipc_lock");
    assert_eq!(result(&no_lock, "load"), "ok");
    if memlock_limit().is_some_and(|l| l < 16 << 20) {
        assert!(
            result(&no_lock, "xsk16m").contains("MemlockLimit"),
            "{no_lock:?}"
        );
    }
}

/// The soft RLIMIT_MEMLOCK in bytes, from /proc/self/limits.
fn memlock_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}
