//! Problem classes of NPB IS and their partial-verification values.

use std::fmt;
use std::str::FromStr;

/// Number of keys whose rank is checked every iteration.
pub const TEST_KEYS: usize = 5;
/// Timed iterations.
pub const ITERATIONS: i32 = 10;

/// An NPB IS problem class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// 2^16 keys below 2^11, 2^9 buckets.
    S,
    /// 2^20 keys below 2^16, 2^10 buckets.
    W,
    /// 2^23 keys below 2^19, 2^10 buckets.
    A,
    /// 2^25 keys below 2^21, 2^10 buckets.
    B,
    /// 2^27 keys below 2^23, 2^10 buckets.
    C,
}

impl Class {
    /// (log2 of the total keys, log2 of the key range, log2 of the buckets).
    pub fn logs(self) -> (u32, u32, u32) {
        match self {
            Class::S => (16, 11, 9),
            Class::W => (20, 16, 10),
            Class::A => (23, 19, 10),
            Class::B => (25, 21, 10),
            Class::C => (27, 23, 10),
        }
    }

    /// Keys over all processes.
    pub fn total_keys(self) -> usize {
        1 << self.logs().0
    }

    /// Every key is below this.
    pub fn max_key(self) -> i32 {
        1 << self.logs().1
    }

    /// Buckets the keys are counted into.
    pub fn buckets(self) -> usize {
        1 << self.logs().2
    }

    /// Global positions of the keys checked every iteration (NPB's
    /// `test_index_array`).
    pub fn test_index(self) -> [usize; TEST_KEYS] {
        match self {
            Class::S => [48427, 17148, 23627, 62548, 4431],
            Class::W => [357773, 934767, 875723, 898999, 404505],
            Class::A => [2112377, 662041, 5336171, 3642833, 4250760],
            Class::B => [41869, 812306, 5102857, 18232239, 26860214],
            Class::C => [44172927, 72999161, 74326391, 129606274, 21736814],
        }
    }

    /// The rank key `i` of [`Class::test_index`] must have after
    /// iteration `it` (NPB's `test_rank_array` with its per-class shift:
    /// the two keys each iteration plants move some ranks up or down).
    pub fn expected_rank(self, i: usize, it: i32) -> i64 {
        let base: [i64; TEST_KEYS] = match self {
            Class::S => [0, 18, 346, 64917, 65463],
            Class::W => [1249, 11698, 1039987, 1043896, 1048018],
            Class::A => [104, 17523, 123928, 8288932, 8388264],
            Class::B => [33422937, 10244, 59149, 33135281, 99],
            Class::C => [61147, 882988, 266290, 133997595, 133525895],
        };
        let it = i64::from(it);
        let shift = match self {
            Class::S | Class::C if i <= 2 => it,
            Class::S | Class::C => -it,
            Class::W if i < 2 => it - 2,
            Class::W => -it,
            Class::A if i <= 2 => it - 1,
            Class::A => -(it - 1),
            Class::B if matches!(i, 1 | 2 | 4) => it,
            Class::B => -it,
        };
        base[i] + shift
    }

    /// NPB's figure of merit: keys ranked per second, in millions.
    pub fn mops(self, seconds: f64) -> f64 {
        f64::from(ITERATIONS) * self.total_keys() as f64 / seconds / 1e6
    }
}

impl FromStr for Class {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "S" | "s" => Ok(Class::S),
            "W" | "w" => Ok(Class::W),
            "A" | "a" => Ok(Class::A),
            "B" | "b" => Ok(Class::B),
            "C" | "c" => Ok(Class::C),
            _ => Err(format!("{s:?}: the classes are S, W, A, B and C")),
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_logs() {
        assert_eq!(Class::S.total_keys(), 65536);
        assert_eq!(Class::S.max_key(), 2048);
        assert_eq!(Class::B.buckets(), 1024);
        assert!((Class::S.mops(1.0) - 0.65536).abs() < 1e-12);
    }

    #[test]
    fn test_keys_lie_inside_the_problem() {
        for c in [Class::S, Class::W, Class::A, Class::B, Class::C] {
            for i in 0..TEST_KEYS {
                assert!(c.test_index()[i] < c.total_keys());
                for it in 1..=ITERATIONS {
                    let r = c.expected_rank(i, it);
                    assert!(r >= 0 && r < c.total_keys() as i64, "{c} {i} {it}");
                }
            }
        }
    }

    #[test]
    fn classes_parse() {
        assert_eq!("a".parse::<Class>(), Ok(Class::A));
        assert!("D".parse::<Class>().is_err());
    }
}
