//! How many bytes the stream targets offer the reassembler at a time, as
//! TCP would hand them over: mostly small pieces, sometimes everything at
//! once. The sequence (xorshift64) follows from the input's first two
//! bytes, so a failing input replays exactly.

pub(crate) struct Cuts {
    state: u64,
    /// Small pieces are `1..=small` bytes…
    small: usize,
    /// …and the others `1..=large`.
    large: usize,
}

impl Cuts {
    /// The cuts for an input whose first two bytes are `mode` and `seed`.
    pub(crate) fn new(mode: u8, seed: u8, small: usize, large: usize) -> Self {
        Self {
            state: u64::from(mode) << 8 | u64::from(seed) | 1 << 40,
            small,
            large,
        }
    }

    pub(crate) fn next(&mut self) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        match self.state % 8 {
            0 => usize::MAX,
            1..=4 => 1 + (self.state >> 8) as usize % self.small,
            _ => 1 + (self.state >> 8) as usize % self.large,
        }
    }
}
