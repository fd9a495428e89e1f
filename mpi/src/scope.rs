//! Scoped nonblocking operations: sends and receives that the transport
//! runs straight from and into the caller's buffers, with no copy.
//!
//! A plain [`Request`](crate::Request) borrows its buffer, but a borrow alone cannot let
//! the transport keep a pointer into it: `mem::forget` ends the borrow
//! without running the request's drop, and the buffer could then be freed
//! while the transport still reads or writes it. So [`Communicator::isend`]
//! copies what the socket does not take at once and
//! [`Communicator::irecv`] receives into the library's memory, copying at
//! completion.
//!
//! A [`Scope`] closes that hole the way rsmpi does: buffers lent within
//! [`scope`] are borrowed for the whole call, and when the closure returns
//! (or unwinds) every operation still pending is released, which for a
//! send copies what has not gone out and for a receive makes the
//! transport drop the rest of its message. Only then does `scope` return
//! and the borrows end. A forgotten request is therefore harmless here
//! too, and the operations that are waited for move no extra copy.
//!
//! ```no_run
//! # fn main() -> mpi::Result<()> {
//! let universe = mpi::initialize()?;
//! let world = universe.world();
//! let (send, mut recv) = (vec![1u8; 1 << 20], vec![0u8; 1 << 20]);
//! let peer = 1 - world.rank();
//! mpi::scope::scope(|s| -> mpi::Result<()> {
//!     let r = world.irecv_scoped(s, &mut recv, peer, 0)?;
//!     let w = world.isend_scoped(s, &send, peer, 0)?;
//!     mpi::request::wait_all(vec![r, w]).map(drop)
//! })?;
//! # Ok(())
//! # }
//! ```
//!
//! [`Communicator::isend`]: crate::Communicator::isend
//! [`Communicator::irecv`]: crate::Communicator::irecv

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::Rc;

use crate::environment::Runtime;
use crate::transport::{RecvToken, SendToken};

/// An operation of the scope, until its request completes or is dropped.
pub(crate) enum Lent {
    Send(SendToken),
    Recv(RecvToken),
}

struct Pending {
    rt: Rc<Runtime>,
    op: Lent,
    /// Set by the request once the transport no longer holds the token.
    settled: Rc<Cell<bool>>,
}

/// Where scoped operations are registered; see the module documentation.
/// `'buf` is invariant, so only buffers that outlive the whole [`scope`]
/// call can be lent.
pub struct Scope<'buf> {
    pending: RefCell<Vec<Pending>>,
    _buffers: PhantomData<fn(&'buf ()) -> &'buf ()>,
}

impl Scope<'_> {
    /// Registers `op`; the flag returned is the request's to set.
    pub(crate) fn register(&self, rt: Rc<Runtime>, op: Lent) -> Rc<Cell<bool>> {
        let settled = Rc::new(Cell::new(false));
        let mut pending = self.pending.borrow_mut();
        // Keep the list short in long loops: forget what has settled.
        pending.retain(|p| !p.settled.get());
        pending.push(Pending {
            rt,
            op,
            settled: settled.clone(),
        });
        settled
    }
}

impl Drop for Scope<'_> {
    /// Releases what is still pending: copies of unsent bytes are taken,
    /// and receives stop writing the caller's memory, before the buffers'
    /// borrows end.
    fn drop(&mut self) {
        for p in self.pending.get_mut().drain(..) {
            if p.settled.get() {
                continue;
            }
            let _ = p.rt.with(|t| {
                match p.op {
                    Lent::Send(token) => t.release_send(token),
                    Lent::Recv(token) => t.release_recv(token),
                }
                Ok(())
            });
        }
    }
}

/// Runs `f` with a [`Scope`] in which nonblocking operations lend their
/// buffers to the transport ([`crate::Communicator::isend_scoped`],
/// [`crate::Communicator::irecv_scoped`]); returns what `f` returns, once
/// no operation of the scope holds a buffer any more.
pub fn scope<'buf, R>(f: impl FnOnce(&Scope<'buf>) -> R) -> R {
    let s = Scope {
        pending: RefCell::new(Vec::new()),
        _buffers: PhantomData,
    };
    // `s` is dropped (releasing what is pending) on return and on unwind.
    f(&s)
}

/// Marks a scoped request's operation as no longer held by the transport.
pub(crate) fn settle(flag: &Option<Rc<Cell<bool>>>) {
    if let Some(f) = flag {
        f.set(true);
    }
}
