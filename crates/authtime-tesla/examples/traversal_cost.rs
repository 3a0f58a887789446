//! Prints the measured cost of the chain traversal for chains of 2^k keys
//! (method: `authtime_tesla::traversal::measure_traversal`).
//!
//! cargo run --release -p authtime-tesla --example traversal_cost [k_min] [k_max]

use std::time::Instant;

use authtime_tesla::traversal::measure_traversal;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u32>());
    let lo = args.next().and_then(Result::ok).unwrap_or(4);
    let hi = args.next().and_then(Result::ok).unwrap_or(32).min(40);
    println!(
        "| k | stored (peak) | F per step (max) | F per step (mean) | setup F | steps measured | windows | correct | seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for k in lo..=hi {
        let start = Instant::now();
        let c = measure_traversal(k);
        println!(
            "| {k} | {} | {} | {:.3} | {} | {} | {} | {} | {:.2} |",
            c.peak_stored,
            c.max_per_step,
            c.mean_per_step,
            c.setup_evaluations,
            c.steps_measured,
            c.windows,
            c.outputs_correct,
            start.elapsed().as_secs_f64()
        );
    }
}
