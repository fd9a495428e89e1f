//! Medians with 95% confidence intervals, and verdicts between two
//! libraries that say whether a difference is larger than the noise.
//!
//! The intervals come from the percentile bootstrap: resample the
//! repetitions with replacement many times, take the statistic of each
//! resample, and keep its 2.5th and 97.5th percentiles. It assumes nothing
//! about the shape of the noise, which on a 2-core machine running QEMU is
//! anything but normal (runs are often bimodal). The generator is seeded,
//! so a CSV always gives the same interval.

use rand_core::{Rng as _, SeedableRng};
use rand_xorshift::XorShiftRng;

/// Resamples per interval: enough that the percentiles stop moving in
/// the second digit.
const RESAMPLES: usize = 2000;
const SEED: u64 = 0x6f32_6721;

/// The median of a set of repetitions and its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Median of the repetitions.
    pub median: f64,
    /// Lower end of the 95% interval of the median.
    pub low: f64,
    /// Upper end of the 95% interval of the median.
    pub high: f64,
    /// Repetitions it rests on.
    pub n: usize,
}

impl Sample {
    /// Summarises `values` (NaN for all fields when there are none).
    pub fn new(values: &[f64]) -> Self {
        let mut rng = XorShiftRng::seed_from_u64(SEED);
        let mut meds = bootstrap(&mut rng, RESAMPLES, |rng| median(&resample(rng, values)));
        let (low, high) = percentiles(&mut meds);
        Self {
            median: median(values),
            low,
            high,
            n: values.len(),
        }
    }
}

/// How `ours` compares with another library, for a measure where more is
/// better (Mop/s, MB/s) or less is better (microseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Better, and the whole 95% interval of the ratio says so.
    Faster,
    /// Worse, and the whole interval says so.
    Slower,
    /// The interval of the ratio contains 1: the noise hides the answer.
    CannotTell,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::CannotTell => "cannot tell",
        })
    }
}

/// The ratio of two medians (ours / theirs), its 95% interval and what
/// that means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// median(ours) / median(theirs).
    pub ratio: f64,
    /// Lower end of the 95% interval of the ratio.
    pub low: f64,
    /// Upper end of the 95% interval of the ratio.
    pub high: f64,
    /// What the interval says.
    pub verdict: Verdict,
}

impl Comparison {
    /// Compares two sets of independent repetitions. `higher_is_better`
    /// says which way "faster" points.
    pub fn new(ours: &[f64], theirs: &[f64], higher_is_better: bool) -> Self {
        let mut rng = XorShiftRng::seed_from_u64(SEED);
        let mut ratios = bootstrap(&mut rng, RESAMPLES, |rng| {
            median(&resample(rng, ours)) / median(&resample(rng, theirs))
        });
        let (low, high) = percentiles(&mut ratios);
        let better = |r: f64| if higher_is_better { r > 1.0 } else { r < 1.0 };
        let verdict = if low.is_nan() || high.is_nan() {
            Verdict::CannotTell
        } else if better(low) && better(high) {
            Verdict::Faster
        } else if !better(low) && !better(high) && low != 1.0 && high != 1.0 {
            Verdict::Slower
        } else {
            Verdict::CannotTell
        };
        Self {
            ratio: median(ours) / median(theirs),
            low,
            high,
            verdict,
        }
    }
}

/// The median (NaN for no values).
pub fn median(values: &[f64]) -> f64 {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn resample(rng: &mut XorShiftRng, values: &[f64]) -> Vec<f64> {
    (0..values.len())
        .map(|_| values[(rng.next_u64() % values.len() as u64) as usize])
        .collect()
}

fn bootstrap(
    rng: &mut XorShiftRng,
    times: usize,
    mut statistic: impl FnMut(&mut XorShiftRng) -> f64,
) -> Vec<f64> {
    (0..times).map(|_| statistic(rng)).collect()
}

/// The 2.5th and 97.5th percentiles (NaN for none, or if any is NaN).
fn percentiles(values: &mut [f64]) -> (f64, f64) {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return (f64::NAN, f64::NAN);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_median_and_lies_within_the_data() {
        let v = [10.0, 11.0, 9.5, 10.2, 30.0, 10.1, 9.9, 10.4, 10.0, 9.8];
        let s = Sample::new(&v);
        assert_eq!(s.median, 10.05);
        assert!(s.low <= s.median && s.median <= s.high, "{s:?}");
        assert!(s.low >= 9.5 && s.high <= 30.0, "{s:?}");
        // One outlier of ten does not drag the interval of the median to it.
        assert!(s.high < 11.0, "{s:?}");
    }

    #[test]
    fn a_single_value_has_a_zero_width_interval() {
        let s = Sample::new(&[4.0]);
        assert_eq!((s.median, s.low, s.high, s.n), (4.0, 4.0, 4.0, 1));
        assert!(Sample::new(&[]).median.is_nan());
    }

    #[test]
    fn clear_differences_get_verdicts_and_overlap_does_not() {
        let fast = [20.0, 21.0, 19.5, 20.5, 20.2, 19.8, 20.1, 20.3, 19.9, 20.0];
        let slow = [10.0, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.3, 10.0, 10.4];
        let c = Comparison::new(&fast, &slow, true);
        assert_eq!(c.verdict, Verdict::Faster);
        assert!(c.low > 1.5 && c.high < 2.5, "{c:?}");
        assert_eq!(Comparison::new(&slow, &fast, true).verdict, Verdict::Slower);
        // Times: less is better, so the same numbers flip.
        assert_eq!(
            Comparison::new(&fast, &slow, false).verdict,
            Verdict::Slower
        );
        // Bimodal runs that straddle each other: no verdict.
        let a = [10.0, 20.0, 10.5, 19.0, 11.0, 21.0, 10.2, 20.5, 9.8, 19.5];
        let b = [15.0, 14.0, 16.0, 15.5, 14.5, 15.2, 14.8, 15.1, 16.2, 13.9];
        assert_eq!(Comparison::new(&a, &b, true).verdict, Verdict::CannotTell);
    }
}
