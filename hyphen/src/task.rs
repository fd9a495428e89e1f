//! [`TaskId`]: the 32-bit word a PB carries and an EXT returns.
//!
//! On the board a task id is whatever the program agrees on (often a code
//! address). The runtime gives it a shape: the high 16 bits name the
//! *kind* (which registered handler runs), the low 16 bits are the
//! handler's *argument* (a page, a chunk, a sender). Kinds from
//! [`FIRST_RESERVED_KIND`] up belong to the runtime (barrier, stop).

/// A PB task id: kind (high half) and argument (low half).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskId(pub u32);

/// Kinds from here up are the runtime's own.
pub const FIRST_RESERVED_KIND: u16 = 0xff00;

/// "I reached the barrier": sent to logical node 0, argument = epoch
/// parity.
pub(crate) const BARRIER_ARRIVE: u16 = 0xff00;
/// "Everyone reached it": sent by logical node 0, argument = epoch parity.
pub(crate) const BARRIER_RELEASE: u16 = 0xff01;
/// Ends [`crate::Runtime::run_until_stopped`].
pub(crate) const STOP: u16 = 0xff02;

impl TaskId {
    /// The id of a task of `kind` with `arg`.
    pub const fn new(kind: u16, arg: u16) -> Self {
        Self(((kind as u32) << 16) | arg as u32)
    }

    /// The task that stops a node's [`crate::Runtime::run_until_stopped`].
    pub const STOP: TaskId = TaskId::new(STOP, 0);

    /// Which handler runs it.
    pub const fn kind(self) -> u16 {
        (self.0 >> 16) as u16
    }

    /// The handler's argument.
    pub const fn arg(self) -> u16 {
        self.0 as u16
    }

    /// Whether the runtime handles it itself.
    pub const fn is_reserved(self) -> bool {
        self.kind() >= FIRST_RESERVED_KIND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_and_argument_round_trip() {
        let t = TaskId::new(0x1234, 0xabcd);
        assert_eq!(t.0, 0x1234_abcd);
        assert_eq!((t.kind(), t.arg()), (0x1234, 0xabcd));
        assert!(!t.is_reserved());
        assert!(TaskId::STOP.is_reserved());
    }
}
