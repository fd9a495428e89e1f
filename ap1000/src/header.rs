//! The 32-byte message header of Table 1 (L147-163): the only part the
//! hardware reads is the routing header; the rest is the library's.

use crate::error::{Error, Result};

/// Bytes of a header: two lines.
pub const HEADER: usize = 32;
/// Most payload a message carries (Table 1, note a: 512 KB).
pub const MAX_MESSAGE: usize = 512 << 10;

/// The header's fields (words of 4 bytes, little-endian here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Offset 0, routing header: the destination cell (the router's only
    /// input).
    pub dest: u32,
    /// Offset 4: payload length in bytes.
    pub len: u32,
    /// Offset 8: where the payload starts after the header, 0..=15 (the
    /// sender's buffer need not be line-aligned).
    pub align: u32,
    /// Offset 12: the sender (cell id x; offset 16, y, is 0 here: cells are
    /// numbered, not placed on a torus).
    pub src: u32,
    /// Offset 20, "not used" by the paper: recvs marks a message USED here.
    pub used: u32,
    /// Offset 24: message id for tracing.
    pub id: u32,
    /// Offset 28: message type, what a receive selects on.
    pub tag: u32,
}

impl Header {
    /// The header as it is stored in memory.
    pub fn to_bytes(&self) -> [u8; HEADER] {
        let mut b = [0u8; HEADER];
        let words = [
            self.dest, self.len, self.align, self.src, 0, self.used, self.id, self.tag,
        ];
        for (i, w) in words.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Reads a header back.
    pub fn from_bytes(b: &[u8; HEADER]) -> Self {
        let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        Self {
            dest: w(0),
            len: w(1),
            align: w(2),
            src: w(3),
            used: w(5),
            id: w(6),
            tag: w(7),
        }
    }

    /// Lines of payload the message carries after its header: at least one,
    /// since `send()` always ends with an `LSENDE` of a body line (§4.1).
    pub fn body_lines(&self) -> usize {
        (self.align as usize + self.len as usize)
            .div_ceil(crate::LINE)
            .max(1)
    }

    /// Bytes the whole message takes on the wire and in a ring.
    pub fn message_bytes(&self) -> usize {
        HEADER + crate::LINE * self.body_lines()
    }

    /// Checks what the sender wrote: alignment and length.
    ///
    /// # Errors
    ///
    /// [`Error::BadMessage`] or [`Error::TooLarge`].
    pub fn check(&self) -> Result<()> {
        if self.align as usize >= crate::LINE {
            return Err(Error::BadMessage(format!("alignment {}", self.align)));
        }
        if self.len as usize > MAX_MESSAGE {
            return Err(Error::TooLarge {
                len: self.len as usize,
                max: MAX_MESSAGE,
            });
        }
        Ok(())
    }
}

/// The offset of the USED mark in a header.
pub(crate) const USED_AT: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_where_table_1_puts_them() {
        let h = Header {
            dest: 3,
            len: 10,
            align: 4,
            src: 1,
            used: 0,
            id: 9,
            tag: 7,
        };
        let b = h.to_bytes();
        assert_eq!(&b[0..4], &3u32.to_le_bytes());
        assert_eq!(&b[4..8], &10u32.to_le_bytes());
        assert_eq!(&b[28..32], &7u32.to_le_bytes());
        assert_eq!(Header::from_bytes(&b), h);
        assert_eq!(h.body_lines(), 1);
        assert_eq!(
            Header {
                len: 13,
                align: 4,
                ..h
            }
            .body_lines(),
            2
        );
        assert_eq!(
            Header {
                len: 0,
                align: 0,
                ..h
            }
            .message_bytes(),
            48
        );
    }
}
