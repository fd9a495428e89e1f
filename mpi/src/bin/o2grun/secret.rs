//! The job's secret: what lets a connection speak for a rank.
//!
//! o2grun puts it in every rank's environment as `O2G_JOB_SECRET`: 32
//! lowercase hexadecimal digits, 128 bits from `/dev/urandom`, fresh for
//! each job. The ranks' PMI client sends it with its `initack`
//! (`mpi/src/pmi.rs`), and the transports use it to authenticate the
//! connections between ranks. A job split across several o2gruns (as
//! across machines) shares one secret, which the user gives every o2grun
//! in the same variable.

use std::fmt;
use std::io::Read;

/// The environment variable that carries the secret.
pub(crate) const ENV: &str = "O2G_JOB_SECRET";

/// Hexadecimal digits in a secret.
const LEN: usize = 32;

/// A job secret.
///
/// # Invariants
///
/// Holds exactly 32 lowercase hexadecimal digits.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    /// A fresh secret from the kernel's random pool.
    pub(crate) fn generate() -> std::io::Result<Self> {
        let mut bytes = [0u8; LEN / 2];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        // INVARIANT: two lowercase hex digits per byte, 16 bytes.
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A secret the user gave; refuses anything but 32 lowercase hex
    /// digits, so that every o2grun and every rank agrees on one spelling.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        if s.len() == LEN && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            // INVARIANT: just checked.
            Ok(Self(s.to_owned()))
        } else {
            Err(format!("{ENV} must be {LEN} lowercase hexadecimal digits"))
        }
    }

    /// The secret as it goes into the environment.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `offered` is this secret. Takes the same time whatever
    /// prefix of it matches, so that timing tells a guesser nothing.
    pub(crate) fn matches(&self, offered: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secrets_are_well_formed_and_differ() {
        let a = Secret::generate().expect("urandom");
        let b = Secret::generate().expect("urandom");
        assert!(Secret::parse(a.as_str()).is_ok(), "{}", a.as_str());
        assert_ne!(a.as_str(), b.as_str());
    }

    #[test]
    fn only_32_lowercase_hex_digits_parse() {
        assert!(Secret::parse(&"0123456789abcdef".repeat(2)).is_ok());
        for bad in [
            "",
            &"0123456789ABCDEF".repeat(2),
            &"0".repeat(31),
            &"0".repeat(33),
            &"g".repeat(32),
        ] {
            assert!(Secret::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn matches_only_itself() {
        let s = Secret::parse(&"ab".repeat(16)).expect("valid");
        assert!(s.matches(&"ab".repeat(16)));
        assert!(!s.matches(&"ab".repeat(15)));
        assert!(!s.matches(&format!("{}ac", "ab".repeat(15))));
        assert!(!s.matches(""));
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }
}
