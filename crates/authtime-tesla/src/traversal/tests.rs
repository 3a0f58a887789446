use super::*;
use crate::owf::{ChainKey, Counted, CountingFunction, TeslaF, f};

/// SplitMix64: a seeded generator for test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn bits(n: u64) -> u32 {
    64 - n.saturating_sub(1).leading_zeros()
}

/// Runs the whole traversal of `len` counting outputs, checking every output,
/// the state against the layout formula, and the storage and work bounds.
fn check_counting(len: u64) {
    let (mut t, commitment) = Traversal::new(CountingFunction::default(), 0, len).expect("len");
    assert_eq!(commitment, len, "commitment is position len");
    assert_eq!(t.function().evaluations, len, "setup is one pass");
    let k = bits(len);
    for p in (0..len).rev() {
        assert_eq!(t.next_position(), Some(p));
        assert_eq!(t.current_layout(), Some(layout(p)), "state at {p} of {len}");
        assert!(
            t.stored_values() <= 2 * k as usize + 1,
            "storage at {p} of {len}"
        );
        let before = t.function().evaluations;
        assert_eq!(t.next(), Some(p), "output at {p} of {len}");
        let cost = t.function().evaluations - before;
        assert!(
            cost <= u64::from(k.saturating_sub(1)),
            "{cost} hashes at {p}"
        );
    }
    assert_eq!(t.next(), None);
    assert!(t.is_empty());
}

#[test]
fn traversal_equals_chain_for_lengths_1_to_70() {
    for len in 1..=70 {
        check_counting(len);
    }
}

#[test]
fn traversal_equals_chain_for_random_lengths_up_to_5000() {
    let mut rng = Rng(0x7e51a);
    for _ in 0..40 {
        check_counting(1 + rng.below(5000));
    }
    check_counting(4096);
    check_counting(4097);
}

#[test]
fn traversal_of_real_keys_equals_full_chain() {
    let mut rng = Rng(99);
    let mut lens: Vec<u64> = (1..=70).collect();
    lens.extend((0..5).map(|_| 1 + rng.below(5000)));
    for len in lens {
        let seed = ChainKey::from_bytes([len as u8; 32]);
        let mut chain = vec![seed.clone()];
        for i in 0..len as usize {
            chain.push(f(&chain[i]));
        }
        let (mut t, commitment) = Traversal::new(TeslaF, seed, len).expect("len");
        assert_eq!(commitment, chain[len as usize]);
        for p in (0..len as usize).rev() {
            assert_eq!(t.next().as_ref(), Some(&chain[p]), "len {len} position {p}");
        }
        assert!(t.next().is_none());
    }
}

// Chain from the all-zero seed: K_0 = F(F(F(0))), computed independently with
// Python's hmac module over the one-octet message 0x00.
#[test]
fn commitment_of_three_key_chain_known_answer() {
    let (mut t, commitment) =
        Traversal::new(TeslaF, ChainKey::from_bytes([0; 32]), 3).expect("len");
    assert_eq!(
        hex::encode(commitment.as_bytes()),
        "7d3f429c0e1d92b60c78746d2b3a81e8b1b8cb45034fea5417907c05a3b610d1"
    );
    let k1 = t.next().expect("K_1");
    assert_eq!(f(&k1), commitment);
}

#[test]
fn skip_matches_stepping() {
    let mut rng = Rng(5);
    for _ in 0..300 {
        let len = 1 + rng.below(3000);
        let (mut t, _) = Traversal::new(CountingFunction::default(), 0, len).expect("len");
        let mut pos = len - 1;
        loop {
            let jump = match rng.below(4) {
                0 => 0,
                1 => rng.below(4),
                2 => rng.below(64),
                _ => rng.below(len),
            };
            t.skip(jump);
            if jump > pos {
                assert!(t.is_empty());
                break;
            }
            pos -= jump;
            assert_eq!(t.current_layout(), Some(layout(pos)));
            assert_eq!(t.next(), Some(pos));
            if pos == 0 {
                break;
            }
            pos -= 1;
        }
    }
}

#[test]
fn skip_by_rebuild_costs_less_than_stepping() {
    let len = 1 << 16;
    let (mut t, _) = Traversal::new(CountingFunction::default(), 0, len).expect("len");
    t.function_mut().evaluations = 0;
    t.skip(40_000);
    assert!(
        t.function().evaluations < 40_000,
        "{}",
        t.function().evaluations
    );
    assert_eq!(t.next(), Some(len - 1 - 40_000));
}

#[test]
fn state_round_trips_and_corruption_is_refused() {
    let mut rng = Rng(11);
    for _ in 0..50 {
        let len = 1 + rng.below(2000);
        let seed = ChainKey::from_bytes([3; 32]);
        let (mut t, _) = Traversal::new(TeslaF, seed, len).expect("len");
        t.skip(rng.below(len));
        let bytes = t.to_bytes();
        let mut back = Traversal::from_bytes(TeslaF, &bytes).expect("restore");
        assert_eq!(back.to_bytes(), bytes);
        while let Some(v) = t.next() {
            assert_eq!(back.next(), Some(v));
        }
        assert!(back.next().is_none());
        // Truncation and a moved position are refused.
        assert!(Traversal::from_bytes(TeslaF, &bytes[..bytes.len() - 1]).is_err());
        let mut moved = bytes.clone();
        moved[16] ^= 1;
        assert!(Traversal::from_bytes(TeslaF, &moved).is_err());
    }
    let (mut done, _) = Traversal::new(CountingFunction::default(), 0, 3).expect("len");
    done.skip(5);
    let back = Traversal::from_bytes(CountingFunction::default(), &done.to_bytes()).expect("empty");
    assert!(back.is_empty());
}

#[test]
fn builder_in_steps_equals_one_pass_and_survives_save() {
    let seed = ChainKey::from_bytes([9; 32]);
    let (mut whole, c1) = Traversal::new(TeslaF, seed.clone(), 777).expect("len");
    let mut b = TraversalBuilder::new(TeslaF, seed, 777).expect("len");
    let mut total = 0;
    while !b.is_done() {
        total += b.work(13);
        let saved = b.to_bytes();
        b = TraversalBuilder::from_bytes(TeslaF, &saved).expect("builder restore");
    }
    assert_eq!(total, 777);
    assert_eq!(b.remaining_work(), 0);
    let (mut stepped, c2) = b.finish();
    assert_eq!(c1, c2);
    while let Some(v) = whole.next() {
        assert_eq!(stepped.next(), Some(v));
    }
}

#[test]
fn layout_formula_matches_the_bounds() {
    for k in 1..=12u32 {
        let mut peak = 0;
        for p in 0..(1u64 << k) {
            let l = layout(p);
            let stored = l.pebbles.len() + l.jobs.iter().filter(|j| j.owns_value).count();
            peak = peak.max(stored);
            let mut dedup = l.pebbles.clone();
            dedup.dedup();
            assert_eq!(dedup, l.pebbles, "pebbles unique at {p}");
        }
        assert!(peak <= 2 * k as usize, "peak {peak} for k={k}");
    }
}

#[test]
fn measurement_of_short_chains_runs_them_whole() {
    let c = measure_traversal(12);
    assert_eq!(c.windows, 1);
    assert_eq!(c.steps_measured, 1 << 12);
    assert_eq!(c.setup_evaluations, 1 << 12);
    assert_eq!(c.max_per_step, 11);
    assert!(c.outputs_correct);
    assert!(c.peak_stored <= 24);
    assert!(
        c.mean_per_step > 4.0 && c.mean_per_step < 6.0,
        "{}",
        c.mean_per_step
    );
}

#[test]
fn counted_real_function_matches_counting_function_costs() {
    let (mut a, _) = Traversal::new(
        Counted {
            inner: TeslaF,
            evaluations: 0,
        },
        ChainKey::from_bytes([1; 32]),
        300,
    )
    .expect("len");
    let (mut b, _) = Traversal::new(CountingFunction::default(), 0, 300).expect("len");
    while a.next().is_some() {
        b.next();
        assert_eq!(a.function().evaluations, b.function().evaluations);
    }
}

#[test]
fn measurement_of_long_chains_samples_windows() {
    let c = measure_traversal(21);
    assert_eq!(c.windows, 10);
    assert_eq!(c.steps_measured, MEASURE_HEAD + 9 * MEASURE_WINDOW);
    assert_eq!(c.setup_evaluations, 1 << 21);
    assert_eq!((c.peak_stored, c.max_per_step), (41, 20));
    assert!(c.outputs_correct);
}
