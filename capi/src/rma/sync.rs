//! Synchronization (§12.5): fence; post, start, complete, wait and test;
//! lock, unlock, flush and sync. How each works is in `rma/mod.rs`.

use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;

use super::wire::{self, Header, Kind};
use super::{module, sync_error, target_rank, win, Held, Win};
use crate::error::{boundary_win, explained, Res, MPI_ERR_LOCKTYPE, MPI_ERR_RMA_RANGE};
use crate::ffi;
use crate::handles::{self, Handle, ReqEntry};

/// `MPI_LOCK_EXCLUSIVE`, `MPI_LOCK_SHARED`.
const LOCK_EXCLUSIVE: c_int = 301;
const LOCK_SHARED: c_int = 302;
/// `MPI_MODE_NOCHECK`, `MPI_MODE_NOSUCCEED`.
const MODE_NOCHECK: c_int = 1024;
const MODE_NOSUCCEED: c_int = 16384;
/// Every assert bit of §12.5.5.
const MODES: c_int = 1024 | 2048 | 4096 | 8192 | 16384;

fn check_assert(assert: c_int) -> Res<()> {
    if assert & !MODES == 0 {
        Ok(())
    } else {
        Err(explained(
            crate::error::MPI_ERR_ASSERT,
            &format!("assert {assert:#x} is not a combination of MPI_MODE_* bits"),
        ))
    }
}

/// Waits for the gets (plain and request-based) this process made to
/// `target` (every target for `None`): their data are in place after.
pub(crate) fn finish_gets(w: &Win, target: Option<usize>) -> Res<()> {
    let mine = |t: usize| target.is_none_or(|x| x == t);
    let (gets, rgets) = {
        let mut o = w.origin.borrow_mut();
        let (g, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut o.gets)
            .into_iter()
            .partition(|(t, _)| mine(*t));
        o.gets = keep;
        let (rg, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut o.rgets)
            .into_iter()
            .partition(|(_, t)| mine(*t));
        o.rgets = keep;
        (g, rg)
    };
    let mut first = Ok(());
    for (_, r) in gets {
        if let Err(e) = w.wait_request(r) {
            first = first.and(Err(e));
        }
    }
    for (h, _) in rgets {
        // A request the program completed or freed already is gone.
        let hh = handles::handle(h);
        match handles::take_request(hh) {
            Ok(Some(ReqEntry::Live(mut r, m))) => {
                let done = loop {
                    match mpi::raw::check(&mut r) {
                        Ok(Some(st)) => break Ok(st),
                        Err(e) => break Err(e),
                        Ok(None) => {}
                    }
                    mpi::raw::advance(&w.comm);
                    if let Err(e) = w.check_failed() {
                        handles::put_request(hh, ReqEntry::Live(r, m))?;
                        return Err(e);
                    }
                    w.comm.poll(std::time::Duration::from_millis(50))?;
                };
                let (st, res) = crate::p2p::recv_outcome(done);
                let code = res.err().map_or(crate::error::MPI_SUCCESS, |c| c.0);
                handles::put_request(hh, ReqEntry::Done(st, code, m))?;
            }
            Ok(Some(other)) => handles::put_request(hh, other)?,
            _ => {}
        }
    }
    first
}

/// An answer asked for: its receive, and the bytes it brought.
type Asked = (mpi::Request<'static>, Rc<RefCell<Vec<u8>>>);

/// Sends a request of `kind` with no data to `target`.
fn notify(w: &Win, target: usize, kind: Kind, flags: u8, reply: c_int) -> Res<()> {
    let mut h = Header::new(kind);
    h.epoch = w.origin.borrow().fences;
    h.flags = flags;
    h.reply = reply;
    w.comm
        .send(&h.encode(), target as c_int, wire::TAG_HEADER)?;
    Ok(())
}

/// Posts the receive of an answer from `target`, then asks.
fn ask(w: &Win, target: usize, kind: Kind, flags: u8) -> Res<Asked> {
    let tag = w.reply_tag();
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = got.clone();
    let r = mpi::raw::irecv_staged(
        &w.comm,
        4 + wire::MAX_ACK_TEXT,
        target as c_int,
        tag,
        Box::new(move |b| *g.borrow_mut() = b.to_vec()),
    )?;
    notify(w, target, kind, flags, tag)?;
    Ok((r, got))
}

/// Waits for every answer; the first failure, or refusal an
/// acknowledgement reports, becomes the error.
fn answers(w: &Win, asked: Vec<Asked>) -> Res<()> {
    let mut first = Ok(());
    for (r, got) in asked {
        let r = w.wait_request(r);
        let (code, text) = wire::decode_ack(&got.borrow());
        let this = match r {
            Err(e) => Err(e),
            Ok(_) if code != 0 => Err(explained(MPI_ERR_RMA_RANGE, &text)),
            Ok(_) => Ok(()),
        };
        first = first.and(this);
    }
    first
}

/// Asks `target`'s library to flush (its answer follows everything this
/// process sent it before) and waits for the answer.
pub(crate) fn flush_library(w: &Win, target: usize) -> Res<()> {
    let asked = ask(w, target, Kind::Flush, 0)?;
    answers(w, vec![asked])
}

/// `MPI_Win_fence` (§12.5.1): ends the epoch before (everything this
/// process asked is done at its target, everything asked of it is done
/// here), and starts one unless `MPI_MODE_NOSUCCEED`. Collective.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_fence(assert: c_int, win: Handle) -> c_int {
    boundary_win("MPI_Win_fence", win, || {
        let w = self::win(win)?;
        check_assert(assert)?;
        {
            let o = w.origin.borrow();
            if o.lock_all.is_some()
                || o.started.is_some()
                || o.posted
                || o.held.iter().any(|h| *h != Held::None)
            {
                return Err(sync_error(
                    "MPI_Win_fence inside a lock or post/start epoch",
                ));
            }
        }
        for t in 0..w.size() {
            notify(&w, t, Kind::Fence, 0, 0)?;
        }
        let n = {
            let mut o = w.origin.borrow_mut();
            o.fences += 1;
            o.fences
        };
        // The accesses of the epoch this fence ends may now be carried out.
        w.target.borrow_mut().entered = n;
        let gets = finish_gets(&w, None);
        w.wait_target(|t| match t.fences.iter().position(|&f| f < n) {
            None => Ok(()),
            Some(r) => Err(r),
        })?;
        w.target.borrow_mut().completed = n;
        if let Some(id) = w.module.get() {
            // Locks asked for after this fence may be granted now.
            mpi::raw::window::set_epoch(&w.comm, id, n)?;
        }
        w.origin.borrow_mut().fenced = assert & MODE_NOSUCCEED == 0;
        gets?;
        w.local_error()
    })
}

/// The window ranks of the members of `group`.
fn group_ranks(w: &Win, group: Handle) -> Res<Vec<usize>> {
    let g = crate::group::lookup(group)?;
    let members = mpi::raw::world_ranks(&w.comm);
    g.world_ranks()
        .iter()
        .map(|wr| {
            members.iter().position(|m| m == wr).ok_or_else(|| {
                explained(
                    crate::error::MPI_ERR_GROUP,
                    "a process of the group is not in the window's group",
                )
            })
        })
        .collect()
}

/// `MPI_Win_post` (§12.5.2): exposes the window to the processes of
/// `group` until `MPI_Win_wait`; tells each of them.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_post(group: Handle, assert: c_int, win: Handle) -> c_int {
    boundary_win("MPI_Win_post", win, || {
        let w = self::win(win)?;
        check_assert(assert)?;
        let origins = group_ranks(&w, group)?;
        if w.origin.borrow().posted {
            return Err(sync_error("MPI_Win_post while an exposure epoch is open"));
        }
        // With MPI_MODE_NOCHECK the origins' starts wait for no notice
        // (§12.5.5: both sides say so, or neither).
        if assert & MODE_NOCHECK == 0 {
            for &o in &origins {
                w.comm.send::<u8>(&[], o as c_int, wire::TAG_POST)?;
            }
        }
        let mut o = w.origin.borrow_mut();
        o.expected_completes += origins.len() as u64;
        o.posted = true;
        Ok(())
    })
}

/// `MPI_Win_start` (§12.5.2): an access epoch to the processes of
/// `group`, once each has posted (at once with `MPI_MODE_NOCHECK`).
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_start(group: Handle, assert: c_int, win: Handle) -> c_int {
    boundary_win("MPI_Win_start", win, || {
        let w = self::win(win)?;
        check_assert(assert)?;
        let targets = group_ranks(&w, group)?;
        if w.origin.borrow().started.is_some() {
            return Err(sync_error("MPI_Win_start while an access epoch is open"));
        }
        if assert & MODE_NOCHECK == 0 {
            let mut posts = Vec::new();
            for &t in &targets {
                posts.push(mpi::raw::irecv_staged(
                    &w.comm,
                    0,
                    t as c_int,
                    wire::TAG_POST,
                    Box::new(|_| ()),
                )?);
            }
            for r in posts {
                w.wait_request(r)?;
            }
        }
        w.origin.borrow_mut().started = Some(targets);
        Ok(())
    })
}

/// `MPI_Win_complete` (§12.5.2): ends the access epoch `MPI_Win_start`
/// opened; the accesses are complete here, and each target hears of it.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_complete(win: Handle) -> c_int {
    boundary_win("MPI_Win_complete", win, || {
        let w = self::win(win)?;
        let targets = w
            .origin
            .borrow_mut()
            .started
            .take()
            .ok_or_else(|| sync_error("MPI_Win_complete without MPI_Win_start"))?;
        for &t in &targets {
            notify(&w, t, Kind::Complete, 0, 0)?;
        }
        for &t in &targets {
            finish_gets(&w, Some(t))?;
        }
        Ok(())
    })
}

/// Whether every origin of the exposure epoch has completed.
fn exposure_done(w: &Win) -> bool {
    w.target.borrow().completes >= w.origin.borrow().expected_completes
}

/// `MPI_Win_wait` (§12.5.2): waits until every origin of the exposure
/// epoch `MPI_Win_post` opened has called `MPI_Win_complete`, and ends it.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_wait(win: Handle) -> c_int {
    boundary_win("MPI_Win_wait", win, || {
        let w = self::win(win)?;
        if !w.origin.borrow().posted {
            return Err(sync_error("MPI_Win_wait without MPI_Win_post"));
        }
        let want = w.origin.borrow().expected_completes;
        w.wait_target(|t| {
            if t.completes >= want {
                Ok(())
            } else {
                Err(usize::MAX)
            }
        })?;
        w.origin.borrow_mut().posted = false;
        w.local_error()
    })
}

/// `MPI_Win_test` (§12.5.2): `MPI_Win_wait` that does not wait: `*flag`
/// says whether the epoch ended.
///
/// # Safety
///
/// `flag` is valid for a write of one `int`.
#[o2g_mpi_abi_macros::export]
pub(crate) unsafe extern "C" fn MPI_Win_test(win: Handle, flag: *mut c_int) -> c_int {
    boundary_win("MPI_Win_test", win, || {
        let w = self::win(win)?;
        if !w.origin.borrow().posted {
            return Err(sync_error("MPI_Win_test without MPI_Win_post"));
        }
        mpi::raw::advance(&w.comm);
        w.comm.poll(std::time::Duration::ZERO)?;
        mpi::raw::advance(&w.comm);
        w.check_failed()?;
        let done = exposure_done(&w);
        if done {
            w.origin.borrow_mut().posted = false;
        }
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(done)) }?;
        if done {
            w.local_error()?;
        }
        Ok(())
    })
}

/// Asks for the lock of `target` as `held`; the answer to wait for, if
/// any.
///
/// The lock of another process is asked for and not waited for: the
/// target takes the accesses that follow only once it has granted it
/// (`target.rs`), so an epoch of one put costs one round trip, the
/// unlock's. The lock of this process's own window is waited for, since
/// the program may then load and store its window directly (§12.5.3).
fn lock_one(w: &Win, target: usize, held: Held) -> Res<Option<Asked>> {
    let flags = match held {
        Held::Exclusive => wire::LOCK_EXCLUSIVE,
        Held::Shared => 0,
        _ => return Ok(None),
    };
    if target != w.comm.rank() as usize {
        notify(w, target, Kind::Lock, flags, 0)?;
        return Ok(None);
    }
    ask(w, target, Kind::Lock, flags).map(Some)
}

/// `MPI_Win_lock` (§12.5.3): a passive-target access epoch to `rank`,
/// under an exclusive or shared lock of its window (none is asked for
/// with `MPI_MODE_NOCHECK`). Returns at once for another process (its
/// accesses wait at the target for the lock), once the lock is granted
/// for this one.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_lock(
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: Handle,
) -> c_int {
    boundary_win("MPI_Win_lock", win, || {
        let w = self::win(win)?;
        let held = match lock_type {
            LOCK_EXCLUSIVE => Held::Exclusive,
            LOCK_SHARED => Held::Shared,
            _ => {
                return Err(explained(
                    MPI_ERR_LOCKTYPE,
                    &format!("lock type {lock_type}: MPI_LOCK_EXCLUSIVE or MPI_LOCK_SHARED"),
                ))
            }
        };
        check_assert(assert)?;
        let Some(t) = target_rank(&w, rank)? else {
            return Ok(());
        };
        {
            let o = w.origin.borrow();
            if o.held[t] != Held::None || o.lock_all.is_some() {
                return Err(sync_error(&format!("rank {t} is locked already")));
            }
            if o.started.is_some() {
                return Err(sync_error("MPI_Win_lock inside a start epoch"));
            }
        }
        let held = if assert & MODE_NOCHECK != 0 {
            Held::Unchecked
        } else {
            held
        };
        match module::lock_of(held).filter(|_| w.served[t]) {
            Some(op) => module::lock(&w, &[t], op)?,
            None => {
                if let Some(asked) = lock_one(&w, t, held)? {
                    answers(&w, vec![asked])?;
                }
            }
        }
        w.origin.borrow_mut().held[t] = held;
        Ok(())
    })
}

/// `MPI_Win_lock_all` (§12.5.3): a shared lock of every member's window.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_lock_all(assert: c_int, win: Handle) -> c_int {
    boundary_win("MPI_Win_lock_all", win, || {
        let w = self::win(win)?;
        check_assert(assert)?;
        {
            let o = w.origin.borrow();
            if o.lock_all.is_some() || o.held.iter().any(|h| *h != Held::None) {
                return Err(sync_error("MPI_Win_lock_all while a lock is held"));
            }
            if o.started.is_some() {
                return Err(sync_error("MPI_Win_lock_all inside a start epoch"));
            }
        }
        let held = if assert & MODE_NOCHECK != 0 {
            Held::Unchecked
        } else {
            Held::Shared
        };
        let by_module = |t: usize| w.served[t] && module::lock_of(held).is_some();
        let mut asked = Vec::new();
        for t in (0..w.size()).filter(|&t| !by_module(t)) {
            asked.extend(lock_one(&w, t, held)?);
        }
        let served: Vec<usize> = (0..w.size()).filter(|&t| by_module(t)).collect();
        if let Some(op) = module::lock_of(held) {
            module::lock(&w, &served, op)?;
        }
        answers(&w, asked)?;
        w.origin.borrow_mut().lock_all = Some(held);
        Ok(())
    })
}

/// Ends the epoch on `target` (unlocking it unless `held` is
/// [`Held::Unchecked`]): once answered, everything asked of it is done.
fn release(w: &Win, target: usize, held: Held) -> Res<Asked> {
    let kind = if held == Held::Unchecked {
        Kind::Flush
    } else {
        Kind::Unlock
    };
    ask(w, target, kind, 0)
}

/// `MPI_Win_unlock` (§12.5.3): ends the epoch on `rank`; everything asked
/// of it is done there on return, and the lock released.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
    boundary_win("MPI_Win_unlock", win, || {
        let w = self::win(win)?;
        let Some(t) = target_rank(&w, rank)? else {
            return Ok(());
        };
        let held = w.origin.borrow().held[t];
        if held == Held::None {
            return Err(sync_error(&format!(
                "MPI_Win_unlock of rank {t}, which this process has not locked"
            )));
        }
        if w.origin.borrow().module_held[t] {
            let asked = module::release(&w, t, true)?;
            w.origin.borrow_mut().held[t] = Held::None;
            let gets = finish_gets(&w, Some(t));
            module::answers(&w, asked)?;
            return gets;
        }
        let asked = release(&w, t, held)?;
        w.origin.borrow_mut().held[t] = Held::None;
        let gets = finish_gets(&w, Some(t));
        answers(&w, vec![asked])?;
        gets
    })
}

/// `MPI_Win_unlock_all` (§12.5.3).
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_unlock_all(win: Handle) -> c_int {
    boundary_win("MPI_Win_unlock_all", win, || {
        let w = self::win(win)?;
        let held = w
            .origin
            .borrow_mut()
            .lock_all
            .take()
            .ok_or_else(|| sync_error("MPI_Win_unlock_all without MPI_Win_lock_all"))?;
        let (mut asked, mut by_module) = (Vec::new(), Vec::new());
        for t in 0..w.size() {
            if w.origin.borrow().module_held[t] {
                by_module.extend(module::release(&w, t, true)?);
            } else {
                asked.push(release(&w, t, held)?);
            }
        }
        let gets = finish_gets(&w, None);
        answers(&w, asked)?;
        module::answers(&w, by_module)?;
        gets
    })
}

/// The targets a flush of `rank` (all for `None`) covers, checked to be
/// in a passive-target epoch.
fn flushed(w: &Win, rank: Option<c_int>) -> Res<Vec<usize>> {
    let o = w.origin.borrow();
    let locked = |t: usize| o.lock_all.is_some() || o.held[t] != Held::None;
    match rank {
        Some(r) => match target_rank(w, r)? {
            None => Ok(Vec::new()),
            Some(t) if locked(t) => Ok(vec![t]),
            Some(t) => Err(sync_error(&format!(
                "a flush of rank {t} outside a lock epoch on it"
            ))),
        },
        None => {
            if o.lock_all.is_none() && o.held.iter().all(|h| *h == Held::None) {
                return Err(sync_error("a flush outside a lock epoch"));
            }
            Ok((0..w.size()).filter(|&t| locked(t)).collect())
        }
    }
}

/// `MPI_Win_flush` and `MPI_Win_flush_all` (`rank` `None`).
fn flush(name: &str, win: Handle, rank: Option<c_int>) -> c_int {
    boundary_win(name, win, || {
        let w = self::win(win)?;
        let targets = flushed(&w, rank)?;
        let (mut asked, mut by_module) = (Vec::new(), Vec::new());
        for &t in &targets {
            if w.origin.borrow().module_held[t] {
                by_module.extend(module::release(&w, t, false)?);
            } else {
                asked.push(ask(&w, t, Kind::Flush, 0)?);
            }
        }
        for &t in &targets {
            finish_gets(&w, Some(t))?;
        }
        answers(&w, asked)?;
        module::answers(&w, by_module)
    })
}

/// `MPI_Win_flush` (§12.5.4): everything this process asked of `rank` is
/// done there on return.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_flush(rank: c_int, win: Handle) -> c_int {
    flush("MPI_Win_flush", win, Some(rank))
}

/// `MPI_Win_flush_all` (§12.5.4): `MPI_Win_flush` of every target.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_flush_all(win: Handle) -> c_int {
    flush("MPI_Win_flush_all", win, None)
}

/// `MPI_Win_flush_local` and `_all`: puts and accumulates are complete
/// here when they return, so only gets are waited for.
fn flush_local(name: &str, win: Handle, rank: Option<c_int>) -> c_int {
    boundary_win(name, win, || {
        let w = self::win(win)?;
        for t in flushed(&w, rank)? {
            finish_gets(&w, Some(t))?;
        }
        Ok(())
    })
}

/// `MPI_Win_flush_local` (§12.5.4): the accesses to `rank` are complete
/// at this process (its buffers may be reused, its gets have arrived).
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_flush_local(rank: c_int, win: Handle) -> c_int {
    flush_local("MPI_Win_flush_local", win, Some(rank))
}

/// `MPI_Win_flush_local_all` (§12.5.4).
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_flush_local_all(win: Handle) -> c_int {
    flush_local("MPI_Win_flush_local_all", win, None)
}

/// `MPI_Win_sync` (§12.5.4): in the unified model the window's memory is
/// one copy, so this is a memory barrier, and a chance for the agent to
/// serve what has arrived.
#[o2g_mpi_abi_macros::export]
pub(crate) extern "C" fn MPI_Win_sync(win: Handle) -> c_int {
    boundary_win("MPI_Win_sync", win, || {
        let w = self::win(win)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        mpi::raw::advance(&w.comm);
        Ok(())
    })
}
