//! A Roughtime server inside the lab, for when the daemon has none: one
//! thread on a loopback UDP socket that reads a batch of requests (the first
//! read waits, then it takes whatever else is queued, up to [`MAX_BATCH`],
//! as a server reading with `recvmmsg` does), answers the batch with
//! `authtime_roughtime::respond_batch` (one Merkle tree and one Ed25519
//! signature per version present) and sends the responses.
//!
//! It is NOT authtimed: no rate limits, no metrics, no clock state (the
//! midpoint is the system clock, the radius a fixed second), no TCP. What it
//! measures is authtime's Roughtime core plus one `recvfrom` and one
//! `sendto` per packet.

use std::{
    io::ErrorKind,
    net::{SocketAddr, UdpSocket},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use authtime_roughtime::{BatchTime, OnlineKey, SigningKey, request::srv_value, respond_batch};

/// Most requests answered under one signature (roughenough's default `-b`).
pub const MAX_BATCH: usize = 64;

/// What the server thread did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerWork {
    /// Batches answered.
    pub batches: u64,
    /// Responses sent.
    pub responses: u64,
    /// CPU seconds of the server thread.
    pub cpu_s: f64,
}

/// The running server; [`LabServer::stop`] ends it.
pub struct LabServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its long-term public key.
    pub public_key: [u8; 32],
    stop: Arc<AtomicBool>,
    cpu_ns: Arc<AtomicU64>,
    thread: Option<JoinHandle<ServerWork>>,
}

impl LabServer {
    /// Starts the server thread on 127.0.0.1 (a free port), pinned to `cpu`
    /// when given, with a fresh long-term key and an online key delegated
    /// for a day around now.
    ///
    /// # Errors
    /// No socket, no randomness, no clock.
    pub fn start(cpu: Option<usize>) -> Result<Self, String> {
        let mut seeds = [0u8; 64];
        getrandom::fill(&mut seeds).map_err(|e| format!("no randomness: {e}"))?;
        let long_term = SigningKey::from_bytes(seeds[..32].try_into().map_err(|_| "seed")?);
        let online = SigningKey::from_bytes(seeds[32..].try_into().map_err(|_| "seed")?);
        let now = unix_now()?;
        let key = OnlineKey::delegate(&long_term, online, now - 86_400, now + 86_400)
            .map_err(|e| e.to_string())?;
        let public_key = long_term.verifying_key().to_bytes();
        let srv = srv_value(&public_key);
        let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| e.to_string())?;
        let addr = socket.local_addr().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let cpu_out = Arc::clone(&cpu_ns);
        let thread = std::thread::Builder::new()
            .name("lab-roughtime".into())
            .spawn(move || {
                if let Some(cpu) = cpu {
                    let _ = crate::section_nts_server::pin_current(cpu);
                }
                serve(&socket, &key, &srv, &flag, &cpu_out)
            })
            .map_err(|e| format!("cannot start the server thread: {e}"))?;
        Ok(Self {
            addr,
            public_key,
            stop,
            cpu_ns,
            thread: Some(thread),
        })
    }

    /// CPU seconds of the server thread so far (updated after every batch).
    #[must_use]
    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Stops the thread and returns what it did.
    #[must_use]
    pub fn stop(mut self) -> ServerWork {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for LabServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn unix_now() -> Result<u64, String> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .map_err(|_| "the system clock is before 1970".to_owned())
}

fn serve(
    socket: &UdpSocket,
    key: &OnlineKey,
    srv: &[u8; 32],
    stop: &AtomicBool,
    cpu_ns: &AtomicU64,
) -> ServerWork {
    let cpu0 = crate::cpu_time::thread_cpu_time();
    let mut work = ServerWork::default();
    let mut bufs = vec![[0u8; 1500]; MAX_BATCH];
    let mut meta: Vec<(usize, SocketAddr)> = Vec::with_capacity(MAX_BATCH);
    while !stop.load(Ordering::Relaxed) {
        meta.clear();
        match socket.recv_from(&mut bufs[0]) {
            Ok((len, from)) => meta.push((len, from)),
            Err(_) => continue,
        }
        let _ = socket.set_nonblocking(true);
        while meta.len() < MAX_BATCH {
            match socket.recv_from(&mut bufs[meta.len()]) {
                Ok((len, from)) => meta.push((len, from)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        let _ = socket.set_nonblocking(false);
        let packets: Vec<&[u8]> = meta
            .iter()
            .zip(&bufs)
            .map(|((len, _), buf)| &buf[..*len])
            .collect();
        let Ok(midpoint) = unix_now() else { continue };
        let time = BatchTime {
            midpoint,
            radius: 1,
        };
        let Ok(answers) = respond_batch(&packets, time, key, srv) else {
            continue;
        };
        work.batches += 1;
        for (answer, (_, from)) in answers.iter().zip(&meta) {
            if let Ok(response) = answer
                && socket.send_to(response, from).is_ok()
            {
                work.responses += 1;
            }
        }
        let used = crate::cpu_time::thread_cpu_time() - cpu0;
        cpu_ns.store(
            u64::try_from(used.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
    work.cpu_s = (crate::cpu_time::thread_cpu_time() - cpu0).as_secs_f64();
    work
}
