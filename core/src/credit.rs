//! Eager credit: how many eager bytes and messages one sender may leave
//! stored at one receiver.
//!
//! The receiver grants a [`Window`] per connection and keeps a [`Grant`]
//! for it; the sender keeps an [`Allowance`]. Each eager message spends
//! its length and one message of the allowance; the receiver gives the
//! credit back once it no longer holds the message (placed in a receive,
//! or released from its store), batched into [`Credit`] messages of at
//! least half a window. A sender with too little credit sends a
//! rendezvous request instead, which costs the receiver no payload room.
//!
//! So the eager bytes a receiver holds from one peer never exceed the
//! window it granted: the dump area can be sized from the windows, and a
//! peer that sends more eager bytes than it was granted breaks the
//! protocol ([`OverCredit`]).
//!
//! The first credit is a [`Credit`] message of a whole window, the first
//! thing a receiver sends on a connection; a sender starts with none.

/// What a receiver lets one peer keep stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// Eager payload bytes.
    pub bytes: u64,
    /// Eager messages.
    pub msgs: u32,
    /// The longest eager message accepted (a receiver that stores each
    /// payload in a fixed slot accepts none longer than a slot).
    pub largest: u64,
}

/// Credit handed to a sender: what a [`super::wire::Kind::Credit`]
/// message carries (`length` bytes, `reference` messages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Credit {
    /// Eager payload bytes.
    pub bytes: u64,
    /// Eager messages.
    pub msgs: u32,
}

/// A peer sent an eager message its credit did not cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OverCredit {
    /// The message's length.
    pub len: u64,
    /// Bytes of credit the peer had left.
    pub bytes_left: u64,
    /// Messages of credit the peer had left.
    pub msgs_left: u32,
}

/// The receiving side's account of one connection's eager credit.
///
/// # Invariant
///
/// `held + open + due == window` in bytes and in messages, where `held`
/// is what the peer sent and the receiver still holds: so the receiver
/// never holds more than the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    window: Window,
    /// Credit the peer has: granted and not spent.
    open: Credit,
    /// Credit freed and not granted again yet.
    due: Credit,
}

impl Grant {
    /// A fresh connection's account: the whole window is due, so the
    /// first [`Grant::due`] hands it out.
    pub const fn new(window: Window) -> Self {
        Self {
            window,
            open: Credit { bytes: 0, msgs: 0 },
            due: Credit {
                bytes: window.bytes,
                msgs: window.msgs,
            },
        }
    }

    /// The window granted.
    pub const fn window(&self) -> Window {
        self.window
    }

    /// Eager bytes the peer sent that the receiver still holds.
    pub const fn held_bytes(&self) -> u64 {
        self.window
            .bytes
            .saturating_sub(self.open.bytes)
            .saturating_sub(self.due.bytes)
    }

    /// An eager message of `len` bytes arrived: spends the peer's credit.
    ///
    /// # Errors
    ///
    /// [`OverCredit`] if its credit does not cover the message; nothing
    /// changes.
    pub fn spend(&mut self, len: u64) -> Result<(), OverCredit> {
        if len > self.window.largest {
            return Err(OverCredit {
                len,
                bytes_left: self.open.bytes,
                msgs_left: self.open.msgs,
            });
        }
        match (
            self.open.bytes.checked_sub(len),
            self.open.msgs.checked_sub(1),
        ) {
            (Some(bytes), Some(msgs)) => {
                self.open = Credit { bytes, msgs };
                Ok(())
            }
            _ => Err(OverCredit {
                len,
                bytes_left: self.open.bytes,
                msgs_left: self.open.msgs,
            }),
        }
    }

    /// The receiver let go of an eager message of `len` bytes.
    pub fn give_back(&mut self, len: u64) {
        self.give_back_all(Credit {
            bytes: len,
            msgs: 1,
        });
    }

    /// The receiver let go of `returned` eager bytes and messages at
    /// once (as a store counts them: see `sender_rings::SenderRings`).
    pub fn give_back_all(&mut self, returned: Credit) {
        // Bounded by the window as long as only spent messages come back;
        // the minimum keeps the invariant if a caller errs.
        let held_msgs = self
            .window
            .msgs
            .saturating_sub(self.open.msgs)
            .saturating_sub(self.due.msgs);
        self.due.bytes = self
            .due
            .bytes
            .saturating_add(returned.bytes.min(self.held_bytes()));
        self.due.msgs = self.due.msgs.saturating_add(returned.msgs.min(held_msgs));
    }

    /// Credit to send now, if at least half a window (in bytes or in
    /// messages) is due; it counts as the peer's from here on.
    pub fn due(&mut self) -> Option<Credit> {
        let half_bytes = self.window.bytes / 2;
        let half_msgs = self.window.msgs / 2;
        let worth = (self.due.bytes > 0 && self.due.bytes >= half_bytes)
            || (self.due.msgs > 0 && self.due.msgs >= half_msgs);
        if !worth {
            return None;
        }
        let credit = self.due;
        self.open.bytes = self.open.bytes.saturating_add(credit.bytes);
        self.open.msgs = self.open.msgs.saturating_add(credit.msgs);
        self.due = Credit::default();
        Some(credit)
    }
}

/// The sending side's credit on one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allowance {
    left: Credit,
}

impl Allowance {
    /// No credit yet: everything goes by rendezvous until the receiver's
    /// first [`Credit`].
    pub const fn new() -> Self {
        Self {
            left: Credit { bytes: 0, msgs: 0 },
        }
    }

    /// What is left.
    pub const fn left(&self) -> Credit {
        self.left
    }

    /// Credit arrived.
    pub fn add(&mut self, credit: Credit) {
        self.left.bytes = self.left.bytes.saturating_add(credit.bytes);
        self.left.msgs = self.left.msgs.saturating_add(credit.msgs);
    }

    /// Spends credit for an eager message of `len` bytes, if there is
    /// enough; otherwise the message must go by rendezvous.
    pub fn spend(&mut self, len: u64) -> bool {
        match (
            self.left.bytes.checked_sub(len),
            self.left.msgs.checked_sub(1),
        ) {
            (Some(bytes), Some(msgs)) => {
                self.left = Credit { bytes, msgs };
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window = Window {
        bytes: 100,
        msgs: 4,
        largest: 100,
    };

    #[test]
    fn the_first_due_is_the_whole_window() {
        let mut g = Grant::new(W);
        assert_eq!(g.spend(1).map_err(|e| e.bytes_left), Err(0));
        assert_eq!(
            g.due(),
            Some(Credit {
                bytes: 100,
                msgs: 4
            })
        );
        assert_eq!(g.due(), None);
        assert!(g.spend(100).is_ok());
        assert_eq!(g.held_bytes(), 100);
    }

    #[test]
    fn credit_returns_in_half_windows_and_bounds_what_is_held() {
        let mut g = Grant::new(W);
        let mut a = Allowance::new();
        a.add(g.due().expect("initial"));
        for _ in 0..4 {
            assert!(a.spend(10));
            assert!(g.spend(10).is_ok());
        }
        // Out of messages: the sender must use rendezvous.
        assert!(!a.spend(0));
        let over = g.spend(0).expect_err("no message credit");
        assert_eq!((over.bytes_left, over.msgs_left), (60, 0));
        g.give_back(10);
        assert_eq!(g.due(), None, "one message is less than half a window");
        g.give_back(10);
        let c = g.due().expect("half the messages");
        assert_eq!(c, Credit { bytes: 20, msgs: 2 });
        a.add(c);
        assert_eq!(a.left(), Credit { bytes: 80, msgs: 2 });
        assert_eq!(g.held_bytes(), 20);
    }

    #[test]
    fn a_bigger_give_back_than_held_keeps_the_bound() {
        let mut g = Grant::new(W);
        g.due();
        g.spend(10).expect("covered");
        g.spend(10).expect("covered");
        for _ in 0..3 {
            g.give_back(1000);
        }
        let c = g.due().expect("due");
        assert_eq!(c, Credit { bytes: 20, msgs: 2 });
        assert_eq!(g.held_bytes(), 0);
    }

    #[test]
    fn a_message_longer_than_the_largest_is_over_credit() {
        let mut g = Grant::new(Window { largest: 50, ..W });
        g.due();
        let over = g.spend(51).expect_err("too long");
        assert_eq!((over.len, over.bytes_left, over.msgs_left), (51, 100, 4));
        assert!(g.spend(50).is_ok());
    }

    #[test]
    fn returns_in_bulk_keep_the_bound() {
        let mut g = Grant::new(W);
        g.due();
        for _ in 0..3 {
            g.spend(10).expect("covered");
        }
        g.give_back_all(Credit { bytes: 15, msgs: 2 });
        g.give_back_all(Credit {
            bytes: 1000,
            msgs: 9,
        });
        assert_eq!(g.due(), Some(Credit { bytes: 30, msgs: 3 }));
        assert_eq!(g.held_bytes(), 0);
    }
}
