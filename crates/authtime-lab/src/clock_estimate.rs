//! The core-clock estimate that turns CPU time into cycles, and the check that
//! decides whether it may be printed.
//!
//! # Why the method holds
//!
//! A chain of *dependent* instructions cannot run faster than one instruction
//! per latency, whatever the core's width, so (instructions × latency) divided
//! by the thread CPU time of the chain is the clock the core ran at. That
//! holds only while the core really executes every instruction at its
//! documented latency. Cores may shortcut chains: Intel's Golden Cove and later
//! fold `add reg, imm` in the renamer and retire several such adds per cycle,
//! which made the former single `add reg, 1` chain read 21 GHz on a 3.6 GHz
//! Sapphire Rapids core (issue 16). No single chain can prove it is not
//! shortcut, so two chains of different instructions are timed, interleaved:
//!
//! - `add r64, r64`, a register-register add: 1 cycle of latency on every
//!   x86-64 core (Intel since the Pentium Pro, AMD since the K7). The renamer
//!   cannot fold it, because the addend's value is unknown at rename time.
//! - `imul r64, r64`: 3 cycles of latency on Intel since Nehalem (2008) and on
//!   AMD since Zen (2017); it is executed by the multiplier, which no core
//!   fuses or eliminates (Agner Fog's instruction tables; uops.info).
//!
//! A shortcut that hit both the ALU and the multiplier in the same proportion
//! is not known on any core; if one chain is shortcut, the two disagree. The
//! estimate is used only when they agree within [`AGREEMENT`]. Where the kernel
//! offers the hardware cycle counter ([`crate::cycle_counter`]), the counter's
//! own cycles per CPU-second are the estimate and the chains its cross-check.
//! A core outside these families (AMD's Bulldozer line has a 6-cycle `imul
//! r64`) makes the chains disagree: cycles are then not printed, which is the
//! honest outcome, and the reason says so.

#![allow(unsafe_code, reason = "the calibration chains are inline asm")]

use std::time::Duration;

use crate::{cpu_time::thread_cpu_time, cycle_counter::CycleCounter};

/// Two measures of the clock agree when they differ by at most this fraction
/// of the smaller one.
pub const AGREEMENT: f64 = 0.10;

/// Latency of `imul r64, r64` in cycles (see the module doc).
pub const IMUL_LATENCY: u64 = 3;

/// Dependent instructions per loop iteration in each chain.
const PER_ITERATION: u64 = 64;

/// Cycles each chain runs per probe at the documented latencies: 12.8 M,
/// a few milliseconds at any clock of this century.
const CYCLES_PER_PROBE: u64 = 12_800_000;

/// The instruction chains the estimate is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Dependent `add r64, r64`, 1 cycle each.
    AddRegReg,
    /// Dependent `imul r64, r64`, [`IMUL_LATENCY`] cycles each.
    Imul,
}

impl Chain {
    /// Cycles one instruction of the chain takes at its documented latency.
    #[must_use]
    pub fn latency(self) -> u64 {
        match self {
            Self::AddRegReg => 1,
            Self::Imul => IMUL_LATENCY,
        }
    }

    /// Runs `iterations` × 64 dependent instructions of this chain.
    #[cfg(target_arch = "x86_64")]
    pub fn run(self, iterations: u64) {
        let operand = std::hint::black_box(0x9e37_79b9_7f4a_7c15_u64);
        let mut x = 1u64;
        let mut n = iterations.max(1);
        // SAFETY: pure register arithmetic on three named registers, no memory
        // access, no stack; `n` is at least 1 so the loop ends.
        unsafe {
            match self {
                Self::AddRegReg => core::arch::asm!(
                    "2:",
                    ".rept 64",
                    "add {x}, {op}",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    op = in(reg) operand,
                    options(nomem, nostack),
                ),
                Self::Imul => core::arch::asm!(
                    "2:",
                    ".rept 64",
                    "imul {x}, {op}",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    op = in(reg) operand,
                    options(nomem, nostack),
                ),
            }
        }
        std::hint::black_box((x, n));
    }

    /// Loop iterations that make [`CYCLES_PER_PROBE`] cycles of this chain.
    #[must_use]
    pub fn iterations_per_probe(self) -> u64 {
        CYCLES_PER_PROBE / (PER_ITERATION * self.latency())
    }

    /// Thread CPU time of one run of `iterations` × 64 instructions, and the
    /// hardware cycles counted over it when a counter is given.
    #[cfg(target_arch = "x86_64")]
    #[must_use]
    pub fn time(self, iterations: u64, counter: Option<&CycleCounter>) -> (Duration, Option<u64>) {
        let c0 = counter.and_then(CycleCounter::read);
        let t0 = thread_cpu_time();
        self.run(iterations);
        let t1 = thread_cpu_time();
        let c1 = counter.and_then(CycleCounter::read);
        let cycles = c0.zip(c1).and_then(|(a, b)| a.cycles_until(b));
        (t1.saturating_sub(t0), cycles)
    }
}

/// The clock estimate with its cross-check, and whether cycles may be printed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClockEstimate {
    /// The clock in GHz that turns CPU time into cycles; `None` when it
    /// cannot be trusted (then [`ClockEstimate::untrusted_because`] says why).
    pub ghz: Option<f64>,
    /// Where `ghz` comes from.
    pub method: Option<String>,
    /// Median GHz of the `add r64, r64` chain at 1 cycle per add.
    pub add_chain_ghz: Option<f64>,
    /// Median GHz of the `imul r64, r64` chain at 3 cycles per imul.
    pub imul_chain_ghz: Option<f64>,
    /// Median GHz from the hardware cycle counter over the same chains, where
    /// the kernel offers one.
    pub cycle_counter_ghz: Option<f64>,
    /// Why no cycles are printed, when `ghz` is `None`.
    pub untrusted_because: Option<String>,
}

impl ClockEstimate {
    /// Measures the chains `probes` times each, interleaved, and judges them.
    /// A disagreement is measured again (up to three times in all) before it
    /// is reported, so that one disturbed moment of a shared machine does not
    /// hide the cycles.
    #[must_use]
    pub fn measure(probes: usize) -> Self {
        let counter = CycleCounter::open();
        let mut estimate = Self::measure_once(probes, counter.as_ref());
        for _ in 0..2 {
            if estimate.ghz.is_some() {
                break;
            }
            estimate = Self::measure_once(probes, counter.as_ref());
        }
        estimate
    }

    fn measure_once(probes: usize, counter: Option<&CycleCounter>) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let (mut add, mut imul, mut counted) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..probes.max(1) {
                for (chain, out) in [(Chain::AddRegReg, &mut add), (Chain::Imul, &mut imul)] {
                    let iterations = chain.iterations_per_probe();
                    let (cpu, cycles) = chain.time(iterations, counter);
                    let secs = cpu.as_secs_f64();
                    if secs > 0.0 {
                        let nominal = iterations * PER_ITERATION * chain.latency();
                        out.push(nominal as f64 / secs / 1e9);
                        if let Some(c) = cycles.filter(|&c| c > 0) {
                            counted.push(c as f64 / secs / 1e9);
                        }
                    }
                }
            }
            let median = |v: &mut Vec<f64>| crate::stats::median(v);
            judge(median(&mut add), median(&mut imul), median(&mut counted))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (probes, counter);
            judge(None, None, None)
        }
    }

    /// One line for reports: the estimate and its check, or why there is none.
    #[must_use]
    pub fn describe(&self) -> String {
        let g = |v: Option<f64>| v.map_or_else(|| "–".into(), |g| format!("{g:.2} GHz"));
        let check = format!(
            "add chain {}, imul chain {}{}",
            g(self.add_chain_ghz),
            g(self.imul_chain_ghz),
            self.cycle_counter_ghz
                .map_or_else(String::new, |c| format!(", cycle counter {c:.2} GHz")),
        );
        match (self.ghz, &self.untrusted_because) {
            (Some(ghz), _) => format!(
                "{ghz:.2} GHz from the {} ({check})",
                self.method.as_deref().unwrap_or("estimate")
            ),
            (None, Some(why)) => format!("no cycles printed: {why}"),
            (None, None) => "no cycles printed: the clock could not be estimated".into(),
        }
    }
}

fn agree(a: f64, b: f64) -> bool {
    a > 0.0 && b > 0.0 && (a - b).abs() <= AGREEMENT * a.min(b)
}

/// Decides from the three measures which clock, if any, may turn times into
/// cycles. Pure, so that the rule is tested with the figures of any machine.
#[must_use]
pub fn judge(add: Option<f64>, imul: Option<f64>, counter: Option<f64>) -> ClockEstimate {
    let mut estimate = ClockEstimate {
        ghz: None,
        method: None,
        add_chain_ghz: add,
        imul_chain_ghz: imul,
        cycle_counter_ghz: counter,
        untrusted_because: None,
    };
    let pct = AGREEMENT * 100.0;
    let (Some(add), Some(imul)) = (add, imul) else {
        estimate.untrusted_because =
            Some("the clock is estimated from x86-64 instruction chains only".into());
        return estimate;
    };
    let chains = (add + imul) / 2.0;
    let (ghz, method, because) = match counter {
        Some(c) if agree(c, chains) => (
            Some(c),
            "hardware cycle counter, checked by the chains",
            None,
        ),
        Some(c) => (
            None,
            "",
            Some(format!(
                "the hardware cycle counter gives {c:.2} GHz and the instruction chains {chains:.2} GHz, \
                 more than {pct:.0}% apart"
            )),
        ),
        None if agree(add, imul) => (Some(chains), "add and imul chains, which agree", None),
        None => (
            None,
            "",
            Some(format!(
                "a chain of register adds gives {add:.2} GHz and a chain of 3-cycle multiplies {imul:.2} GHz, \
                 more than {pct:.0}% apart: this core does not run one of them at its documented latency"
            )),
        ),
    };
    estimate.ghz = ghz;
    estimate.method = ghz.map(|_| method.to_owned());
    estimate.untrusted_because = because;
    estimate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_that_agree_give_their_mean() {
        let e = judge(Some(3.60), Some(3.50), None);
        assert!((e.ghz.expect("trusted") - 3.55).abs() < 1e-9);
        assert!(e.untrusted_because.is_none());
        assert!(
            e.describe()
                .starts_with("3.55 GHz from the add and imul chains"),
            "{}",
            e.describe()
        );
    }

    #[test]
    fn a_folded_chain_is_caught() {
        // Issue 16's Sapphire Rapids figures: `add reg, 1` read 21.3 GHz where
        // the multiplier chain read 3.6 GHz.
        let e = judge(Some(21.3), Some(3.6), None);
        assert_eq!(e.ghz, None);
        let why = e.untrusted_because.clone().expect("a reason");
        assert!(
            why.contains("21.30 GHz") && why.contains("3.60 GHz"),
            "{why}"
        );
        assert!(e.describe().starts_with("no cycles printed"));
    }

    #[test]
    fn ten_percent_is_the_line() {
        assert!(judge(Some(3.30), Some(3.00), None).ghz.is_some());
        assert!(judge(Some(3.31), Some(3.00), None).ghz.is_none());
        assert!(judge(Some(3.00), Some(3.31), None).ghz.is_none());
    }

    #[test]
    fn the_counter_wins_when_the_chains_confirm_it() {
        let e = judge(Some(3.58), Some(3.62), Some(3.61));
        assert_eq!(e.ghz, Some(3.61));
        assert_eq!(
            e.method.as_deref(),
            Some("hardware cycle counter, checked by the chains")
        );
        let e = judge(Some(21.3), Some(3.6), Some(3.6));
        assert_eq!(e.ghz, None, "chains averaging 12.45 GHz do not confirm 3.6");
        assert!(e.untrusted_because.expect("why").contains("cycle counter"));
    }

    #[test]
    fn no_chains_no_cycles() {
        let e = judge(None, None, Some(3.0));
        assert_eq!(e.ghz, None);
        assert!(e.untrusted_because.is_some());
    }

    /// Median CPU time of `probes` runs of a chain, interleaved with runs of
    /// twice the length; returns (short, long) in seconds.
    #[cfg(target_arch = "x86_64")]
    fn short_and_long(chain: Chain, probes: usize) -> (f64, f64) {
        let n = chain.iterations_per_probe();
        let (mut short, mut long) = (Vec::new(), Vec::new());
        for _ in 0..probes {
            short.push(chain.time(n, None).0.as_secs_f64());
            long.push(chain.time(2 * n, None).0.as_secs_f64());
        }
        let m = |v: &mut Vec<f64>| crate::stats::median(v).unwrap_or(0.0);
        (m(&mut short), m(&mut long))
    }

    /// The premise of the method: a chain's time is proportional to its
    /// length (no fixed cost or shortcut that a range check would miss).
    /// A shared machine can disturb one attempt, so three are allowed.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn twice_the_chain_takes_twice_the_time() {
        for chain in [Chain::AddRegReg, Chain::Imul] {
            let mut ratios = Vec::new();
            let ok = (0..3).any(|_| {
                let (short, long) = short_and_long(chain, 7);
                let ratio = long / short;
                ratios.push(ratio);
                (1.8..2.2).contains(&ratio)
            });
            assert!(
                ok,
                "{chain:?}: twice the length took {ratios:?} times as long"
            );
        }
    }

    /// Where the kernel offers the cycle counter, it checks the premise of the
    /// method directly: a register-register add costs one cycle (true of every
    /// x86-64 core), and a trusted estimate agrees with the counter.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_cycle_counter_confirms_the_add_chain_where_it_exists() {
        let Some(counter) = CycleCounter::open() else {
            eprintln!("no hardware cycle counter here: checked by the other tests only");
            return;
        };
        let cycles_per = |chain: Chain| {
            let n = chain.iterations_per_probe();
            let mut per_instruction: Vec<f64> = (0..5)
                .filter_map(|_| chain.time(n, Some(&counter)).1)
                .map(|c| c as f64 / (n * PER_ITERATION) as f64)
                .collect();
            crate::stats::median(&mut per_instruction)
        };
        let Some(add) = cycles_per(Chain::AddRegReg) else {
            eprintln!("the counter was multiplexed on every probe: nothing to compare");
            return;
        };
        assert!(
            (add - 1.0).abs() <= AGREEMENT,
            "{add:.3} cycles per register add"
        );
        eprintln!("imul r64: {:?} cycles", cycles_per(Chain::Imul));
        let e = ClockEstimate::measure(5);
        if let (Some(ghz), Some(counted)) = (e.ghz, e.cycle_counter_ghz) {
            assert!(agree(ghz, counted), "{e:?}");
        }
    }

    /// The whole estimate on this machine is consistent with its own rule:
    /// trusted only when its measures agree, and a reason otherwise.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_estimate_on_this_machine_follows_the_rule() {
        let e = ClockEstimate::measure(5);
        let (add, imul) = (
            e.add_chain_ghz.expect("add"),
            e.imul_chain_ghz.expect("imul"),
        );
        match e.ghz {
            Some(ghz) => {
                assert!(agree(add, imul) || e.cycle_counter_ghz.is_some(), "{e:?}");
                assert!(ghz > 0.1, "{e:?}");
            }
            None => assert!(e.untrusted_because.is_some(), "{e:?}"),
        }
        eprintln!("clock: {}", e.describe());
    }
}
