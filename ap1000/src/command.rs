//! Line sending as the CPU starts it: an ordinary store whose top 6
//! address bits are the command and whose low 26 bits the line's address
//! (§3.1 L99, §4.1 L191-194).

use crate::error::{Error, Result};

/// `LSEND`: send the line, more follow (§4.1 L192: `%r2 == 0xec000000`).
pub const LSEND: u32 = 0xec00_0000;
/// `LSENDE`: send the line with the end bit: the message ends (L194).
pub const LSENDE: u32 = 0xf000_0000;

const COMMAND: u32 = 0xfc00_0000;

/// A decoded line-sending store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCommand {
    /// The line's address in the cell's memory (the low 26 bits).
    pub addr: u32,
    /// Whether it carries the end bit (`LSENDE`).
    pub end: bool,
}

/// Decodes the address of a store.
///
/// # Errors
///
/// [`Error::BadCommand`] when the top 6 bits are neither command.
pub fn decode(store_addr: u32) -> Result<LineCommand> {
    let addr = store_addr & !COMMAND;
    match store_addr & COMMAND {
        LSEND => Ok(LineCommand { addr, end: false }),
        LSENDE => Ok(LineCommand { addr, end: true }),
        _ => Err(Error::BadCommand(store_addr)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_s_two_commands_and_nothing_else() {
        assert_eq!(
            decode(LSEND + 0x1230).unwrap(),
            LineCommand {
                addr: 0x1230,
                end: false
            }
        );
        assert_eq!(
            decode(LSENDE | 0x3ff_fff0).unwrap(),
            LineCommand {
                addr: 0x3ff_fff0,
                end: true
            }
        );
        // The top 6 bits are the command: 0b111011 and 0b111100.
        assert_eq!(LSEND >> 26, 0b11_1011);
        assert_eq!(LSENDE >> 26, 0b11_1100);
        assert!(decode(0x1230).is_err());
        assert!(decode(0xe800_0000).is_err());
    }
}
