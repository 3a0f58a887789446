//! Distinct-count estimation in fixed memory: a HyperLogLog of 4096
//! one-byte registers (4 KiB), fed 64-bit hashes.
//!
//! Error: the relative standard error of HyperLogLog with `m` registers is
//! about `1.04 / sqrt(m)`, 1.6 % here. Below `2.5 m` (10,240) distinct items
//! the estimate is linear counting over the empty registers, whose standard
//! error is `sqrt(m (e^t - t - 1)) / n` with `t = n / m`: about 1.1 % at 100
//! items, 1.4 % at 5,000, 1.8 % at 10,000; sets of a few items come out
//! exact unless two of them fall into one register (a chance of about
//! n²/2m: 5 % at 21 items), when the estimate is one short. Estimates of sets merged with [`Distinct::merge`] are those of
//! their union.

/// Index bits: 2^12 registers.
const P: u32 = 12;
const M: usize = 1 << P;

/// A HyperLogLog sketch.
#[derive(Clone)]
pub struct Distinct {
    registers: Box<[u8; M]>,
}

impl std::fmt::Debug for Distinct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Distinct(~{:.0})", self.estimate())
    }
}

impl Default for Distinct {
    fn default() -> Self {
        Self {
            registers: Box::new([0; M]),
        }
    }
}

impl Distinct {
    /// Adds the item whose (well-mixed) 64-bit hash is `hash`.
    pub fn insert(&mut self, hash: u64) {
        let index = (hash >> (64 - P)) as usize;
        // The rank of the first set bit of the remaining 52 bits (1-based),
        // capped by a sentinel bit.
        let rest = (hash << P) | (1 << (P - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if let Some(r) = self.registers.get_mut(index)
            && rank > *r
        {
            *r = rank;
        }
    }

    /// Takes in every item of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (r, o) in self.registers.iter_mut().zip(other.registers.iter()) {
            *r = (*r).max(*o);
        }
    }

    /// Forgets every item.
    pub fn clear(&mut self) {
        self.registers.fill(0);
    }

    /// The estimated number of distinct items.
    #[must_use]
    pub fn estimate(&self) -> f64 {
        let m = M as f64;
        let mut sum = 0.0;
        let mut zeros = 0u32;
        for &r in self.registers.iter() {
            sum += f64::from(-i32::from(r)).exp2();
            if r == 0 {
                zeros += 1;
            }
        }
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let raw = alpha * m * m / sum;
        if raw <= 2.5 * m && zeros > 0 {
            // Linear counting.
            m * (m / f64::from(zeros)).ln()
        } else {
            raw
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a well-mixed hash of a counter.
    fn mix(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    fn estimate_of(n: u64, salt: u64) -> f64 {
        let mut d = Distinct::default();
        for i in 0..n {
            d.insert(mix(i ^ (salt << 40)));
        }
        d.estimate()
    }

    #[test]
    fn estimates_are_within_the_stated_error() {
        assert!(Distinct::default().estimate().abs() < f64::EPSILON);
        // Tiny sets: exact (after rounding).
        for n in [1u64, 2, 5, 10] {
            assert!((estimate_of(n, 1) - n as f64).abs() < 0.5, "{n}");
        }
        // Linear counting: within 3 standard errors (3.3-5.4 %).
        for n in [100u64, 1_000, 5_000, 10_000] {
            let e = estimate_of(n, 1);
            assert!((e / n as f64 - 1.0).abs() < 0.05, "{n}: {e}");
        }
        // Large sets: within 3 standard errors (4.9 %) over several salts,
        // and the mean error over them within 2 %.
        for n in [20_000u64, 100_000, 1_000_000] {
            let errors: Vec<f64> = (0..4)
                .map(|salt| estimate_of(n, salt + 2) / n as f64 - 1.0)
                .collect();
            for e in &errors {
                assert!(e.abs() < 0.049, "{n}: {errors:?}");
            }
            let mean = errors.iter().sum::<f64>() / errors.len() as f64;
            assert!(mean.abs() < 0.02, "{n}: {errors:?}");
        }
    }

    #[test]
    fn repeats_do_not_count_and_merging_gives_the_union() {
        let mut a = Distinct::default();
        let mut b = Distinct::default();
        for round in 0..10 {
            for i in 0..3_000u64 {
                a.insert(mix(i));
                if round == 0 {
                    b.insert(mix(i + 2_000));
                }
            }
        }
        assert!((a.estimate() - 3_000.0).abs() < 150.0, "{a:?}");
        let alone = a.estimate();
        a.merge(&b);
        assert!((a.estimate() - 5_000.0).abs() < 250.0, "{a:?}");
        assert!(a.estimate() > alone);
        a.clear();
        assert!(a.estimate().abs() < f64::EPSILON);
    }
}
