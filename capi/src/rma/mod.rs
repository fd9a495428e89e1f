//! One-sided communication (MPI 5.0 chapter 12): windows, put, get and
//! the accumulates, and the three kinds of synchronization.
//!
//! # How it works
//! A window has a communicator of its own (a duplicate of the one it was
//! made from). Every put, get or accumulate is a request message to the
//! target process ([`wire`]): a header, then the target layout and the
//! data. The target's library carries requests out in its agent
//! ([`target`]), which the `mpi` crate runs whenever that process waits
//! for anything: in any blocking MPI call, and in the test calls. So over
//! every transport a passive target makes progress while it is inside
//! MPI; one that computes for a long time without calling MPI delays its
//! origins until it next does (§12.7 "Progress" allows this).
//!
//! The origin side (`ops.rs`, `sync.rs`) packs what it sends, posts the
//! receive of every reply before it asks, and counts on the order of
//! messages between two processes (§3.5): a target answers a flush, an
//! unlock or a fence only after everything the origin asked before it.
//!
//! - Fence (§12.5.1): every member tells every member it entered the
//!   fence (after its accesses), waits for its gets, and waits until it
//!   has heard from all: then everything aimed at it is done.
//! - Post, start, complete, wait (§12.5.2): `post` sends each origin a
//!   notice, `start` waits for the notices of its targets, `complete`
//!   tells each target after the accesses, and `wait` counts those.
//! - Lock, unlock, flush (§12.5.3, §12.5.4): the target grants locks
//!   first come first served; an origin does not wait for the grant of
//!   another process's lock (its later requests wait at the target behind
//!   it); unlock and flush are answered once everything before them is
//!   done, with any request of the origin's that the target refused.
//!
//! Every request carries the number of fences its origin had completed;
//! a target carries it out only once it has completed as many, so that
//! nothing sent after a fence overtakes what that fence ends there.
//!
//! The memory model is `MPI_WIN_UNIFIED`: the agent writes the window's
//! memory itself.
//!
//! Over `o2g`, a window's memory is also registered with the kernel
//! module, which then serves passive-target epochs on it by itself: the
//! lock, the puts, the flush and the unlock never need the target process
//! ([`module`]).
//!
//! # Checks
//! An origin checks what it can before it sends (target rank, the
//! target's window size for the static kinds, the epoch, datatypes); a
//! target checks every request again (`target.rs`), so that a peer's
//! mistake is refused and reported, never written outside the window.

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::comm::CommMeta;
use crate::error::{Code, Res, MPI_ERR_OTHER, MPI_ERR_RANK, MPI_ERR_RMA_SYNC, MPI_ERR_WIN};
use crate::handles::{self, ErrMode, Handle};

mod attrs;
mod module;
mod ops;
mod shared;
mod sync;
mod target;
mod window;
mod wire;

pub(crate) use target::Target;

/// `MPI_WIN_NULL`.
pub(crate) const WIN_NULL: usize = 0x110;

/// `MPI_PROC_NULL`.
const PROC_NULL: c_int = -3;

/// How a window was made (`MPI_WIN_CREATE_FLAVOR`, §12.2.6).
pub(crate) const FLAVOR_CREATE: c_int = 311;
pub(crate) const FLAVOR_ALLOCATE: c_int = 312;
pub(crate) const FLAVOR_DYNAMIC: c_int = 313;
pub(crate) const FLAVOR_SHARED: c_int = 314;
/// `MPI_WIN_UNIFIED`.
const MODEL_UNIFIED: c_int = 321;

/// A lock this process holds on one target (§12.5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    None,
    Shared,
    Exclusive,
    /// Taken with `MPI_MODE_NOCHECK`: no lock was asked for.
    Unchecked,
}

/// The origin side of a window: its epochs and what is in flight.
pub(crate) struct Origin {
    next_tag: i32,
    /// Gets whose data have not arrived: target, receive.
    pub(crate) gets: Vec<(usize, mpi::Request<'static>)>,
    /// Request-based gets (`MPI_Rget`, `MPI_Rget_accumulate`) by handle
    /// value, with their target: a flush or unlock completes them.
    pub(crate) rgets: Vec<(usize, usize)>,
    /// The lock held on each target.
    pub(crate) held: Vec<Held>,
    /// Inside `MPI_Win_lock_all` … `MPI_Win_unlock_all`.
    pub(crate) lock_all: Option<Held>,
    /// Fences entered so far.
    pub(crate) fences: u64,
    /// Between two fences (the last not `MPI_MODE_NOSUCCEED`).
    pub(crate) fenced: bool,
    /// The targets of the access epoch `MPI_Win_start` opened.
    pub(crate) started: Option<Vec<usize>>,
    /// Completion notices that end the exposure epochs posted so far.
    pub(crate) expected_completes: u64,
    /// Inside an exposure epoch (`MPI_Win_post` … `MPI_Win_wait`).
    pub(crate) posted: bool,
    /// By target: the lock held is its module's ([`module`]).
    pub(crate) module_held: Vec<bool>,
    /// By target, under a module lock: a get or accumulate went to its
    /// library since the last flush.
    pub(crate) agent_pending: Vec<bool>,
    /// By target: a get through its module waits for its answer.
    pub(crate) module_get: Vec<bool>,
}

/// Values of the predefined window attributes (§12.2.6), at addresses
/// that live as long as the window.
#[derive(Default)]
pub(crate) struct Attrs {
    pub(crate) size: isize,
    pub(crate) disp_unit: c_int,
    pub(crate) flavor: c_int,
    pub(crate) model: c_int,
}

/// A window.
pub(crate) struct Win {
    pub(crate) comm: mpi::Communicator,
    pub(crate) errh: Cell<ErrMode>,
    /// Name, attributes and info hints.
    pub(crate) meta: Arc<CommMeta>,
    pub(crate) target: Rc<RefCell<Target>>,
    pub(crate) origin: RefCell<Origin>,
    /// This process's window memory (null for a dynamic window).
    pub(crate) base: usize,
    pub(crate) attrs: Box<Attrs>,
    /// Every member's window: bytes and displacement unit (`None` for a
    /// dynamic window, whose regions only their owner knows).
    pub(crate) extents: Option<Vec<(u64, u32)>>,
    /// Memory the library allocated for the window, freed with it.
    pub(crate) owned: RefCell<Option<shared::Owned>>,
    /// This process's window as the o2g module knows it (its id), if the
    /// module serves it.
    pub(crate) module: Cell<Option<u32>>,
    /// By member: its module serves its window.
    pub(crate) served: Vec<bool>,
}

impl Win {
    pub(crate) fn size(&self) -> usize {
        self.comm.size() as usize
    }

    /// The next reply tag of this window.
    pub(crate) fn reply_tag(&self) -> i32 {
        let mut o = self.origin.borrow_mut();
        let t = o.next_tag;
        o.next_tag = if t == mpi::TAG_UB {
            wire::FIRST_REPLY_TAG
        } else {
            t + 1
        };
        t
    }

    /// Fails if the target side cannot go on.
    pub(crate) fn check_failed(&self) -> Res<()> {
        match self.target.borrow().failed.clone() {
            None => Ok(()),
            Some(why) => Err(crate::error::explained(MPI_ERR_OTHER, &why)),
        }
    }

    /// Waits, serving requests meanwhile, until `done` holds of the
    /// target side; `done` names a member whose death ends the wait.
    pub(crate) fn wait_target(&self, done: impl Fn(&Target) -> Result<(), usize>) -> Res<()> {
        loop {
            mpi::raw::advance(&self.comm);
            self.check_failed()?;
            let missing = match done(&self.target.borrow()) {
                Ok(()) => return Ok(()),
                Err(m) => m,
            };
            if let Some(why) = mpi::raw::peer_failure(&self.comm, missing as c_int) {
                let why = format!("rank {missing} of the window died: {why}");
                return Err(crate::error::explained(MPI_ERR_OTHER, &why));
            }
            self.comm.poll(Duration::from_millis(50))?;
        }
    }

    /// Waits for `r` (a reply this process asked for), serving requests
    /// meanwhile; fails if the window cannot go on.
    pub(crate) fn wait_request(&self, mut r: mpi::Request<'static>) -> Res<mpi::Status> {
        loop {
            mpi::raw::advance(&self.comm);
            if let Some(st) = mpi::raw::check(&mut r)? {
                return Ok(st);
            }
            self.check_failed()?;
            self.comm.poll(Duration::from_millis(50))?;
        }
    }

    /// Reports (and forgets) a request of another process's that this
    /// one refused.
    pub(crate) fn local_error(&self) -> Res<()> {
        match self.target.borrow_mut().local_error.take() {
            None => Ok(()),
            Some(why) => Err(crate::error::explained(
                crate::error::MPI_ERR_RMA_RANGE,
                &why,
            )),
        }
    }
}

/// The window behind `h`.
pub(crate) fn win(h: Handle) -> Res<Rc<Win>> {
    handles::running()?;
    handles::win(h).ok_or_else(|| {
        crate::error::explained(MPI_ERR_WIN, "not a window (freed, or never created)")
    })
}

/// The error mode of window `h` (§12.6), `MPI_COMM_WORLD`'s if `h` is
/// not one.
pub(crate) fn errmode(h: Handle) -> ErrMode {
    match handles::running().ok().and_then(|()| handles::win(h)) {
        Some(w) => w.errh.get(),
        None => handles::errmode(std::ptr::null_mut()),
    }
}

/// Whether `op` (a handle value) may be an accumulate's operation
/// (§12.3.4): a predefined reduction, `MPI_REPLACE` or `MPI_NO_OP`.
pub(crate) fn is_accumulate_op(op: u32) -> bool {
    matches!(op, 0x21..=0x24 | 0x28..=0x2a | 0x30..=0x32 | 0x38 | 0x39 | 0x3c | 0x3d)
}

/// The target rank `rank` of window `w`: `None` for `MPI_PROC_NULL`,
/// `MPI_ERR_RANK` outside the window's group.
pub(crate) fn target_rank(w: &Win, rank: c_int) -> Res<Option<usize>> {
    if rank == PROC_NULL {
        return Ok(None);
    }
    usize::try_from(rank)
        .ok()
        .filter(|&r| r < w.size())
        .map(Some)
        .ok_or_else(|| {
            let why = format!(
                "target rank {rank} is not in the window's group of {}",
                w.size()
            );
            crate::error::explained(MPI_ERR_RANK, &why)
        })
}

/// `MPI_ERR_RMA_SYNC`, saying why.
pub(crate) fn sync_error(why: &str) -> Code {
    crate::error::explained(MPI_ERR_RMA_SYNC, why)
}

impl Origin {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            next_tag: wire::FIRST_REPLY_TAG,
            gets: Vec::new(),
            rgets: Vec::new(),
            held: vec![Held::None; n],
            lock_all: None,
            fences: 0,
            fenced: false,
            started: None,
            expected_completes: 0,
            posted: false,
            module_held: vec![false; n],
            agent_pending: vec![false; n],
            module_get: vec![false; n],
        }
    }

    /// Whether only a fence epoch allows an access to `target` (no lock
    /// or start covers it).
    pub(crate) fn fence_only(&self, target: usize) -> bool {
        self.fenced
            && self.lock_all.is_none()
            && self.held.get(target).is_none_or(|h| *h == Held::None)
            && !self.started.as_ref().is_some_and(|s| s.contains(&target))
    }

    /// Whether an access to `target` is inside an epoch that allows it.
    pub(crate) fn may_access(&self, target: usize) -> bool {
        self.fenced
            || self.lock_all.is_some()
            || self.held.get(target).is_some_and(|h| *h != Held::None)
            || self.started.as_ref().is_some_and(|s| s.contains(&target))
    }
}

/// The attributes of a new window.
pub(crate) fn attrs(size: usize, disp_unit: c_int, flavor: c_int) -> Box<Attrs> {
    Box::new(Attrs {
        size: isize::try_from(size).unwrap_or(isize::MAX),
        disp_unit,
        flavor,
        model: MODEL_UNIFIED,
    })
}
