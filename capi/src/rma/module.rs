//! Passive-target epochs on a window the target's o2g module serves
//! (`mpi::raw::window`, `docs/protocol.md`, Windows): the lock, the puts
//! and the flush and unlock go to the module, which handles them in its
//! protocol handler, so the epoch completes while the target process
//! computes outside MPI, even asleep in a system call.
//!
//! - `MPI_Win_lock` asks the target's module and waits for the grant (one
//!   round trip, where the library's own agent lets the origin go on at
//!   once: the module's grant needs no help from the target).
//! - A put becomes one `Put` frame per contiguous run of the target
//!   layout, which the module writes straight into the window.
//! - A get of one contiguous run becomes a `Get` frame, which the module
//!   answers with the window's bytes from its send work. The module takes
//!   one request per origin and window at a time, so a get waits for the
//!   answer of the one before it to the same target.
//! - Accumulates (and gets of several runs) still go to the target's
//!   library (`target.rs`), which needs the target inside MPI; the origin
//!   notes that it sent one, and the next flush or unlock of that target
//!   first asks the library, whose answer comes after everything before
//!   it (puts included: one connection, read in order). All accumulates
//!   of a window run in one place, the library, since MPI makes
//!   concurrent accumulates to one location atomic and floating-point
//!   ones cannot run in the protocol handler (no FPU state in softirq):
//!   the library is the one place every accumulate can run.
//! - `MPI_Win_flush` and `MPI_Win_unlock` are answered by the module once
//!   every put before them is in the window; the answer counts the puts it
//!   refused (none for a correct program), which becomes the error.
//!
//! A window is served where its memory was registered with the module
//! (`MPI_Win_create` and `MPI_Win_allocate` over `o2g`, unless
//! `O2G_WIN_MODULE=0`); each member knows which of the others are.

use std::cell::RefCell;
use std::rc::Rc;

use mpi::raw::window::{self as module_window, lock_op, LockAnswer};

use super::{Held, Win};
use crate::error::{explained, Res, MPI_ERR_RMA_RANGE, MPI_ERR_RMA_SYNC};

/// An answer asked of a module: its receive, and the bytes it brought.
pub(crate) struct Asked {
    target: usize,
    r: mpi::Request<'static>,
    got: Rc<RefCell<Vec<u8>>>,
}

/// Posts the receive of the module's answer from `target`, then asks it
/// `op`.
pub(crate) fn ask(w: &Win, target: usize, op: u32) -> Res<Asked> {
    let tag = w.reply_tag();
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = got.clone();
    settle_get(w, target)?;
    let r = module_window::answer(
        &w.comm,
        target as i32,
        tag,
        LockAnswer::LEN,
        Box::new(move |b| *g.borrow_mut() = b.to_vec()),
    )?;
    // A lock waits at the module until the target has completed the
    // fences this process has: the epoch then sees what they ended.
    let epoch = w.origin.borrow().fences;
    // The frame's send completes as it goes out; nothing waits for it.
    drop(module_window::request(
        &w.comm,
        target as i32,
        op,
        tag,
        epoch,
    )?);
    Ok(Asked { target, r, got })
}

/// Waits for every answer; the first refusal becomes the error.
pub(crate) fn answers(w: &Win, asked: Vec<Asked>) -> Res<()> {
    let mut first = Ok(());
    for a in asked {
        let this = w.wait_request(a.r).and_then(|_| {
            let got = a.got.borrow();
            let bytes: [u8; LockAnswer::LEN] = got.as_slice().try_into().unwrap_or([0xff; 8]);
            check(a.target, LockAnswer::decode(&bytes))
        });
        first = first.and(this);
    }
    first
}

/// What an answer of `target`'s module says.
fn check(target: usize, a: LockAnswer) -> Res<()> {
    if a.status != 0 {
        return Err(explained(
            MPI_ERR_RMA_SYNC,
            &format!(
                "rank {target}'s o2g module refused a lock request (status {})",
                a.status
            ),
        ));
    }
    if a.refused_puts != 0 {
        return Err(explained(
            MPI_ERR_RMA_RANGE,
            &format!(
                "rank {target}'s o2g module refused {} put(s) of this process: outside its window",
                a.refused_puts
            ),
        ));
    }
    Ok(())
}

/// The operation that takes `held`, if the module can.
pub(crate) fn lock_of(held: Held) -> Option<u32> {
    match held {
        Held::Shared => Some(lock_op::SHARED),
        Held::Exclusive => Some(lock_op::EXCLUSIVE),
        Held::None | Held::Unchecked => None,
    }
}

/// Locks `targets` through their modules (all asked, then all waited
/// for) and records the locks.
pub(crate) fn lock(w: &Win, targets: &[usize], op: u32) -> Res<()> {
    let mut asked = Vec::new();
    for &t in targets {
        asked.push(ask(w, t, op)?);
    }
    answers(w, asked)?;
    let mut o = w.origin.borrow_mut();
    for &t in targets {
        o.module_held[t] = true;
    }
    Ok(())
}

/// Flushes (`unlock` false) or unlocks `target`'s module lock: first the
/// target's library, if it was sent a get or accumulate since the last
/// flush, then the module. Returns the answers to wait for.
pub(crate) fn release(w: &Win, target: usize, unlock: bool) -> Res<Vec<Asked>> {
    let library = std::mem::take(&mut w.origin.borrow_mut().agent_pending[target]);
    if library {
        super::sync::flush_library(w, target)?;
    }
    if unlock {
        w.origin.borrow_mut().module_held[target] = false;
    }
    let op = if unlock {
        lock_op::UNLOCK
    } else {
        lock_op::FLUSH
    };
    Ok(vec![ask(w, target, op)?])
}

/// Waits for the answer to the module get to `target` still out, if any:
/// the module takes one request per origin and window at a time.
fn settle_get(w: &Win, target: usize) -> Res<()> {
    if std::mem::take(&mut w.origin.borrow_mut().module_get[target]) {
        super::sync::finish_gets(w, Some(target))?;
    }
    Ok(())
}

/// Starts a get of `len` bytes at byte `at` of `target`'s window through
/// its module: the answer's bytes go to `unpack`. Returns the receive to
/// wait for.
pub(crate) fn get(
    w: &Win,
    target: usize,
    at: u32,
    len: usize,
    unpack: mpi::raw::Unpack,
) -> Res<mpi::Request<'static>> {
    settle_get(w, target)?;
    let tag = w.reply_tag();
    let r = module_window::answer(&w.comm, target as i32, tag, len, unpack)?;
    drop(module_window::get(
        &w.comm,
        target as i32,
        at,
        len as u64,
        tag,
    )?);
    w.origin.borrow_mut().module_get[target] = true;
    Ok(r)
}

/// Puts `data` into `target`'s window along `runs` (offsets from
/// `base`, the displacement in bytes): one frame per run. `false` (and
/// nothing sent) when an offset does not fit the frame's 32 bits.
pub(crate) fn put(
    w: &Win,
    target: usize,
    base: i64,
    runs: &[(i64, u64)],
    data: &[u8],
) -> Res<bool> {
    let mut frames = Vec::with_capacity(runs.len());
    let mut pos = 0usize;
    for &(off, len) in runs {
        let Some(at) = base.checked_add(off).and_then(|a| u32::try_from(a).ok()) else {
            return Ok(false);
        };
        let len = len as usize;
        let Some(piece) = data.get(pos..pos + len) else {
            return Ok(false);
        };
        frames.push((at, piece));
        pos += len;
    }
    for (at, piece) in frames {
        // Copied if the socket does not take it at once: the caller's
        // buffer is free on return, as for every put here.
        drop(module_window::put(&w.comm, target as i32, at, piece)?);
    }
    Ok(true)
}
