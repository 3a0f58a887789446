//! The report of section `roughtime`: tables, findings and the method, from
//! what [`crate::section_roughtime::measure`] returned.

use crate::{
    report::{Section, Table},
    section_roughtime::{BATCH_SIZES, Measured, Plan, Round},
    stats::median,
};

fn fmt_rate(r: f64) -> String {
    if r >= 10_000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

fn med(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    median(&mut v)
}

/// Per-round ratios authtime ÷ roughenough of `metric`: rounds are paired by number.
fn ratios(rounds: &[Round], metric: impl Fn(&Round) -> Option<f64>) -> Vec<f64> {
    let mut out = Vec::new();
    for a in rounds.iter().filter(|r| r.server == "authtime") {
        let b = rounds
            .iter()
            .find(|r| r.server == "roughenough" && r.round == a.round);
        if let (Some(x), Some(y)) = (metric(a), b.and_then(&metric))
            && y > 0.0
        {
            out.push(x / y);
        }
    }
    out
}

/// Median ratio with its range, as printed.
fn ratio_cell(mut r: Vec<f64>) -> String {
    match median(&mut r) {
        Some(m) => format!("{m:.2}× (rounds {:.2} to {:.2})", r[0], r[r.len() - 1]),
        None => "–".into(),
    }
}

fn leaf_table(m: &Measured) -> Table {
    let mut t = Table::new(
        "Merkle leaves of a batch of 64 requests, by kernel (in process)",
        &["kernel", "µs per request", "÷ one at a time"],
    );
    for c in &m.leaves {
        t.row(vec![
            c.kernel.clone(),
            format!("{:.3}", c.us_per_request),
            format!("{:.3}", c.ratio_to_one_at_a_time),
        ]);
    }
    t.note = "SHA-512 of 0x00 || request for 64 requests of 1036 bytes (9 blocks each): \
              with the sha2 crate one request at a time (the server core before issue 27), \
              and with authtime_mac::sha512_many in SIMD lanes (checked equal to sha2 \
              before timing). CPU time of the measuring thread per request; median of the runs."
        .into();
    t
}

fn signer_table(m: &Measured) -> Table {
    let mut t = Table::new(
        "Ed25519 signature over a batch's SREP, by signer (in process)",
        &["signer", "µs per signature"],
    );
    for c in &m.signers {
        t.row(vec![c.signer.clone(), format!("{:.2}", c.us_per_signature)]);
    }
    t.note = "One signature over version 1's context string and a 156-byte message, \
              the same key and message for both (their signatures checked equal first); \
              CPU time of the measuring thread per signature, median of the runs. \
              A batch signs once per version present."
        .into();
    t
}

fn batch_table(m: &Measured) -> Table {
    let mut t = Table::new(
        "Cost per response by batch size (respond_batch, in process)",
        &[
            "batch",
            "version 1: µs/response",
            "version 1: ÷ batch of 1",
            "0x8000000c: µs/response",
            "0x8000000c: ÷ batch of 1",
        ],
    );
    for n in BATCH_SIZES {
        let cell = |wire: u32| {
            m.batch
                .iter()
                .find(|c| c.version == wire && c.batch == n)
                .map_or(("–".into(), "–".into()), |c| {
                    (
                        format!("{:.2}", c.us_per_response),
                        format!("{:.3}", c.ratio_to_1),
                    )
                })
        };
        let (a, b) = cell(1);
        let (c, d) = cell(0x8000_000c);
        t.row(vec![n.to_string(), a, b, c, d]);
    }
    t.note = "CPU time of the measuring thread (CLOCK_THREAD_CPUTIME_ID) per response; \
              median of the runs. Each batch holds valid 1024-byte requests with SRV, \
              all of one version; the answers of each size were verified once before timing."
        .into();
    t
}

fn server_table(m: &Measured) -> Table {
    let mut t = Table::new(
        "Responses per second, one core each (same run, alternating rounds)",
        &[
            "server",
            "responses/s (wall)",
            "responses per server CPU-s",
            "server CPU busy",
            "requests per signature",
            "rounds",
            "sent",
            "lost",
            "verified",
            "failed verification",
            "largest response (bytes)",
        ],
    );
    for name in ["authtime", "roughenough"] {
        let rs: Vec<&Round> = m.rounds.iter().filter(|r| r.server == name).collect();
        if rs.is_empty() {
            continue;
        }
        let sum = |f: fn(&Round) -> u64| rs.iter().map(|r| f(r)).sum::<u64>();
        t.row(vec![
            name.into(),
            med(rs.iter().map(|r| r.load.responses_per_s)).map_or("–".into(), fmt_rate),
            med(rs.iter().filter_map(|r| r.per_cpu_s)).map_or("–".into(), fmt_rate),
            med(rs.iter().filter_map(busy)).map_or("–".into(), |b| format!("{:.0}%", 100.0 * b)),
            med(rs.iter().filter_map(|r| r.mean_batch))
                .map_or("not observable".into(), |b| format!("{b:.1}")),
            rs.len().to_string(),
            sum(|r| r.load.sent).to_string(),
            sum(|r| r.load.lost).to_string(),
            sum(|r| r.load.verified).to_string(),
            sum(|r| r.load.verify_failed).to_string(),
            rs.iter()
                .map(|r| r.load.response_bytes_max)
                .max()
                .unwrap_or(0)
                .to_string(),
        ]);
    }
    t.note = "Medians of the rounds. Server CPU busy: the server's CPU seconds ÷ the \
              round's wall-clock seconds (100% = its core saturated). Requests per \
              signature: the mean batch of authtimed's `authtime_roughtime_batch_size` \
              histogram over the round (roughenough exports no such figure). Requests: 1036-byte packets (a 1024-byte message), \
              VER = {0x8000000c, 1} (both servers answer version 1), SRV naming the \
              server's key."
        .into();
    t
}

/// The server's CPU seconds per wall-clock second of a round.
fn busy(r: &&Round) -> Option<f64> {
    r.server_cpu_s
        .filter(|_| r.load.wall_s > 0.0)
        .map(|s| s / r.load.wall_s)
}

fn ratio_table(m: &Measured) -> Table {
    let mut t = Table::new(
        "authtime ÷ roughenough (median of per-round ratios)",
        &["measure", "ratio"],
    );
    t.row(vec![
        "responses per second (wall, server pinned to one CPU)".into(),
        ratio_cell(ratios(&m.rounds, |r| Some(r.load.responses_per_s))),
    ]);
    t.row(vec![
        "responses per server CPU-second".into(),
        ratio_cell(ratios(&m.rounds, |r| r.per_cpu_s)),
    ]);
    t
}

fn method(plan: &Plan, m: &Measured) -> String {
    format!(
        "Cost by batch size: `authtime_roughtime::respond_batch` on batches of {sizes:?} \
         requests, each version alone, {runs} runs of {run_ms} ms of thread CPU per size; \
         µs per response = CPU time ÷ responses, median of the runs, and its ratio to the \
         batch of one. Server comparison: {authtime} and roughenough 2.2's \
         `roughenough_server -j 1 -q` on 127.0.0.1, each pinned to CPU 0 \
         (sched_setaffinity){pin}; the load generator (one thread, pinned to CPU 1) keeps \
         {window} requests outstanding and sends a new one for every response, for {secs} s \
         or {max} requests per round, and counts a request lost after {stall} ms without \
         a response; every {every}th response is verified (Ed25519 signatures, \
         delegation window, Merkle path, nonce) with authtime's client core. {rounds} \
         rounds per server, alternating (the order swaps every round); per round the \
         responses per wall-clock second and per server CPU-second (user + system, from \
         /proc), medians of the rounds, and the median of the per-round ratios. The machine \
         is shared: absolute rates drift, the ratios of interleaved rounds hold better.",
        sizes = BATCH_SIZES,
        runs = plan.batch_runs,
        run_ms = plan.batch_run_time.as_millis(),
        authtime = m
            .authtime_server
            .as_deref()
            .unwrap_or("authtime (not started)"),
        pin = if m.servers_pinned {
            ""
        } else {
            " when the kernel allowed it (here it did not for every server)"
        },
        window = plan.window,
        secs = plan.round_time.as_secs_f64(),
        max = plan.round_requests,
        stall = crate::load_roughtime::STALL.as_millis(),
        every = plan.verify_every,
        rounds = plan.rounds,
    )
}

fn findings(m: &Measured) -> Vec<String> {
    let mut f = Vec::new();
    for wire in [1u32, 0x8000_000c] {
        let one = m.batch.iter().find(|c| c.version == wire && c.batch == 1);
        let big = m.batch.iter().find(|c| c.version == wire && c.batch == 64);
        if let (Some(a), Some(b)) = (one, big) {
            f.push(format!(
                "Version {wire:#x}: a response costs {:.1} µs of CPU alone and {:.1} µs in a \
                 batch of 64 ({:.2}× the single cost): one Ed25519 signature per batch.",
                a.us_per_response, b.us_per_response, b.ratio_to_1
            ));
        }
    }
    if let Some(note) = &m.daemon_note {
        f.push(format!(
            "authtime's side is NOT the daemon but the lab's own UDP loop over the same \
             Roughtime core (no rate limits, no metrics, a fixed radius): {note}."
        ));
    }
    if let Some(e) = &m.comparison_error {
        f.push(format!("Server comparison not measured: {e}."));
    }
    let failed: u64 = m.rounds.iter().map(|r| r.load.verify_failed).sum();
    if failed > 0 {
        let first = m
            .rounds
            .iter()
            .find_map(|r| r.load.first_failure.clone())
            .unwrap_or_default();
        f.push(format!(
            "{failed} sampled responses failed verification (first: {first})."
        ));
    }
    let busiest = m
        .rounds
        .iter()
        .filter_map(|r| busy(&r))
        .fold(0.0f64, f64::max);
    if !m.rounds.is_empty() && busiest < 0.9 {
        f.push(format!(
            "Neither server's core was saturated (at most {:.0}% busy in any round): the \
             one-thread load generator on the other core is the ceiling of the wall-clock \
             rates, which are therefore the generator's and not the servers'. Responses per \
             server CPU-second is the per-core figure to compare; it is a lower bound for a \
             batching server, whose batches grow when its queue is fuller.",
            100.0 * busiest
        ));
    }
    if m.rounds.iter().any(|r| !r.load_pinned) {
        f.push("The load generator could not be pinned to its CPU in every round.".into());
    }
    f
}

/// The section from the measurements.
#[must_use]
pub fn section(plan: &Plan, m: &Measured) -> Section {
    let mut tables = vec![batch_table(m)];
    if !m.rounds.is_empty() {
        tables.push(server_table(m));
        tables.push(ratio_table(m));
    }
    // After the comparison, so the first three tables keep their places.
    tables.push(leaf_table(m));
    tables.push(signer_table(m));
    Section {
        id: "roughtime".into(),
        title: "Roughtime: cost by batch size, and responses per second against roughenough".into(),
        seed: "Issue 21 (part 5): Roughtime responses per second per core against \
               roughenough's server in the same run, and how batch size changes the cost \
               per response."
            .into(),
        method: method(plan, m),
        tables,
        plots: vec![],
        findings: findings(m),
        data: serde_json::to_value(m).unwrap_or(serde_json::Value::Null),
    }
}
