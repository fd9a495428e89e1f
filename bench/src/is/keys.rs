//! NPB's key sequence: a linear congruential generator modulo 2^46,
//! `x' = a * x mod 2^46`, with `a = 5^13` and seed 314159265, each key the
//! scaled sum of four consecutive numbers.
//!
//! NPB computes the product in split double precision so that it is exact
//! on any machine with 48 mantissa bits; the same exact product in 128-bit
//! integers gives the same numbers. Each rank starts at its own offset in
//! the one global sequence, so the keys do not depend on the process count.

/// `2^46`: the generator's modulus.
const MODULUS: u64 = 1 << 46;
/// NPB's multiplier, `5^13`.
pub const MULTIPLIER: u64 = 1_220_703_125;
/// NPB's seed.
pub const SEED: u64 = 314_159_265;

fn mul_mod(a: u64, b: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(MODULUS)) as u64
}

fn pow_mod(mut base: u64, mut exp: u64) -> u64 {
    let mut acc = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul_mod(acc, base);
        }
        base = mul_mod(base, base);
        exp >>= 1;
    }
    acc
}

/// The generator state: the last number drawn, times 2^46.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lcg(u64);

impl Lcg {
    /// The state after `skip` draws from NPB's seed.
    pub fn skipped(skip: u64) -> Self {
        Lcg(mul_mod(SEED, pow_mod(MULTIPLIER, skip)))
    }

    /// The next number, uniform in (0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = mul_mod(self.0, MULTIPLIER);
        // Exact: the state has at most 46 significant bits.
        self.0 as f64 / MODULUS as f64
    }
}

/// The keys of rank `rank` of `ranks`, when `total` keys are spread
/// evenly, each below `max_key`.
pub fn keys_for(rank: usize, ranks: usize, total: usize, max_key: i32) -> Vec<i32> {
    let per_rank = total / ranks;
    // Four draws per key: rank r starts after the draws of ranks 0..r.
    let mut g = Lcg::skipped(4 * (rank * per_rank) as u64);
    let scale = f64::from(max_key / 4);
    (0..per_rank)
        .map(|_| {
            let mut x = g.next_f64();
            x += g.next_f64();
            x += g.next_f64();
            x += g.next_f64();
            (scale * x) as i32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_equals_drawing() {
        let mut g = Lcg::skipped(0);
        for _ in 0..1000 {
            g.next_f64();
        }
        assert_eq!(g, Lcg::skipped(1000));
    }

    #[test]
    fn slices_of_one_sequence() {
        let whole = keys_for(0, 1, 4096, 2048);
        let mut parts = keys_for(0, 4, 4096, 2048);
        for r in 1..4 {
            parts.extend(keys_for(r, 4, 4096, 2048));
        }
        assert_eq!(whole, parts);
    }

    #[test]
    fn keys_stay_in_range_and_bunch_in_the_middle() {
        let keys = keys_for(0, 1, 1 << 16, 2048);
        assert!(keys.iter().all(|&k| (0..2048).contains(&k)));
        let mid = keys.iter().filter(|&&k| (512..1536).contains(&k)).count();
        // A sum of four uniforms: most keys sit in the middle half.
        assert!(mid > keys.len() * 3 / 4, "{mid}");
    }

    #[test]
    fn numbers_are_in_the_open_unit_interval() {
        let mut g = Lcg::skipped(7);
        for _ in 0..10_000 {
            let x = g.next_f64();
            assert!(x > 0.0 && x < 1.0);
        }
    }
}
