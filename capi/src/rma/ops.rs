//! The communication calls (§12.3): put, get, the accumulates, and their
//! request-based forms. Each checks its arguments and epoch, then sends
//! its request to the target (`wire.rs`); what it fetches lands through a
//! receive posted before the request went out.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::wire::{self, Header, Kind};
use super::{target_rank, win, Win, FLAVOR_DYNAMIC};
use crate::buffer;
use crate::coll_stage::with_c;
use crate::datatype::{self, Datatype, TypeRef};
use crate::error::{
    boundary_win, explained, Code, Res, MPI_ERR_OP, MPI_ERR_RMA_RANGE, MPI_ERR_TYPE,
};
use crate::ffi;
use crate::handles::{self, Handle, ReqEntry};
use crate::status::Status;

/// The target side of an access: where and what.
struct TargetSpec {
    rank: usize,
    disp: isize,
    d: Arc<Datatype>,
    n: usize,
    /// Only a fence epoch allows the access.
    fence_epoch: bool,
    /// Fences the origin has completed.
    epoch: u64,
}

impl TargetSpec {
    /// Bytes of data the access moves.
    fn len(&self) -> usize {
        self.d.map.size() * self.n
    }

    /// The runs of the target layout, adjacent ones merged, empty ones
    /// dropped.
    fn runs(&self) -> Vec<(i64, u64)> {
        let mut runs: Vec<(i64, u64)> = Vec::new();
        self.d.map.for_each_run(self.n, self.len(), |off, r| {
            let (off, len) = (off as i64, r.len() as u64);
            if len == 0 {
                return;
            }
            match runs.last_mut() {
                Some(last) if last.0 + last.1 as i64 == off => last.1 += len,
                _ => runs.push((off, len)),
            }
        });
        runs
    }

    /// A header of `kind` for this access, and the runs to send first
    /// when the layout is not one run at the displacement.
    fn header(&self, kind: Kind) -> (Header, Vec<u8>) {
        let mut h = Header::new(kind);
        h.epoch = self.epoch;
        if self.fence_epoch {
            h.flags |= wire::FENCE_EPOCH;
        }
        h.disp = self.disp as i64;
        h.len = self.len() as u64;
        let runs = self.runs();
        let mut first = Vec::new();
        if !(runs.is_empty() || (runs.len() == 1 && runs[0].0 == 0)) {
            h.flags |= wire::RUNS_IN_DATA;
            h.runs = runs.len() as u32;
            wire::encode_runs(&runs, &mut first);
        }
        (h, first)
    }
}

/// Checks a target rank, displacement and (count, datatype) against the
/// window and the epoch: `None` for `MPI_PROC_NULL`.
fn target_spec<N: crate::datatype::Count>(
    w: &Win,
    rank: c_int,
    disp: isize,
    n: N,
    dt: Handle,
) -> Res<Option<TargetSpec>> {
    let (d, n) = buffer::typed(n, dt)?;
    let Some(rank) = target_rank(w, rank)? else {
        return Ok(None);
    };
    w.check_failed()?;
    if !w.origin.borrow().may_access(rank) {
        return Err(super::sync_error(&format!(
            "an access to rank {rank} outside an epoch that allows it (fence, start or lock)"
        )));
    }
    if w.attrs.flavor != FLAVOR_DYNAMIC && disp < 0 {
        return Err(explained(
            MPI_ERR_RMA_RANGE,
            &format!("a negative target displacement {disp}"),
        ));
    }
    let t = TargetSpec {
        rank,
        disp,
        d,
        n,
        fence_epoch: w.origin.borrow().fence_only(rank),
        epoch: w.origin.borrow().fences,
    };
    if let Some(ext) = &w.extents {
        let (size, unit) = ext[rank];
        let (lo, hi) = t.d.map.span(t.n).map_err(|_| Code(MPI_ERR_TYPE))?;
        let start = (disp as i128) * (unit as i128);
        if t.len() > 0 && (start + (lo as i128) < 0 || start + (hi as i128) > size as i128) {
            let why = format!(
                "bytes {}..{} of rank {rank}'s window of {size} bytes (displacement {disp}, unit {unit})",
                start + lo as i128,
                start + hi as i128
            );
            return Err(explained(MPI_ERR_RMA_RANGE, &why));
        }
    }
    Ok(Some(t))
}

/// Fails unless an origin buffer of `have` bytes matches a target's
/// `want` (their type signatures must, §12.3).
fn same_size(have: usize, want: usize) -> Res<()> {
    if have == want {
        Ok(())
    } else {
        Err(explained(
            MPI_ERR_TYPE,
            &format!("the origin has {have} bytes of data, the target layout {want}"),
        ))
    }
}

/// The predefined type the elements of `dt` are made of (accumulates
/// need one, §12.3.4).
fn element_type(dt: Handle) -> Res<usize> {
    fn of(r: &TypeRef) -> Option<usize> {
        match r {
            TypeRef::Named(v) => Some(datatype::f90_named(*v).unwrap_or(*v)),
            TypeRef::Derived(d) => of_derived(d),
        }
    }
    fn of_derived(d: &Datatype) -> Option<usize> {
        let c = d.contents.as_ref()?;
        let mut found = None;
        for t in &c.types {
            let e = of(t)?;
            if *found.get_or_insert(e) != e {
                return None;
            }
        }
        found
    }
    let v = handles::value(dt);
    if datatype::is_predefined(v) {
        return Ok(datatype::f90_named(v).unwrap_or(v));
    }
    let d = datatype::resolve_committed(dt)?;
    of_derived(&d).ok_or_else(|| {
        explained(
            MPI_ERR_TYPE,
            "an accumulate's datatype must be made of one predefined type",
        )
    })
}

/// Checks an accumulate's operation against its element type: a
/// predefined one (§12.3.4) that the type allows.
fn accumulate_op(op: Handle, elem: usize) -> Res<u32> {
    let v = u32::try_from(handles::value(op)).unwrap_or(0);
    if !super::is_accumulate_op(v) {
        return Err(explained(
            MPI_ERR_OP,
            "accumulates take predefined operations only (§12.3.4)",
        ));
    }
    if !matches!(v, 0x3c | 0x3d) {
        let dt = handles::handle(elem);
        let d = datatype::resolve(dt)?;
        crate::op::reducer(op, d.info(), dt).map(drop)?;
    }
    Ok(v)
}

/// Puts `data` through the target's module when this process holds its
/// module lock (`module.rs`); `false` when the library must carry it.
fn module_put(w: &Win, t: &TargetSpec, data: &[u8]) -> Res<bool> {
    if !w.origin.borrow().module_held[t.rank] {
        return Ok(false);
    }
    let unit = w.extents.as_ref().map_or(1, |e| e[t.rank].1);
    let Some(base) = (t.disp as i64).checked_mul(i64::from(unit)) else {
        return Ok(false);
    };
    super::module::put(w, t.rank, base, &t.runs(), data)
}

/// Notes a request for a target's library under its module lock: the
/// next flush or unlock asks the library first (`module.rs`).
fn to_library(w: &Win, rank: usize) {
    let mut o = w.origin.borrow_mut();
    if o.module_held[rank] {
        o.agent_pending[rank] = true;
    }
}

/// Sends request `h` to `t.rank`, then its runs and data (if any).
fn send(w: &Win, t: &TargetSpec, h: &Header, first: &[u8], data: &[u8]) -> Res<()> {
    to_library(w, t.rank);
    let dest = t.rank as c_int;
    w.comm.send(&h.encode(), dest, wire::TAG_HEADER)?;
    if h.kind.has_data(h) {
        if first.is_empty() {
            w.comm.send(data, dest, wire::TAG_DATA)?;
        } else {
            let mut all = Vec::with_capacity(first.len() + data.len());
            all.extend_from_slice(first);
            all.extend_from_slice(data);
            w.comm.send(&all, dest, wire::TAG_DATA)?;
        }
    }
    Ok(())
}

/// Posts the receive of a reply to `tag` from `rank` into `n` elements of
/// `dt` at `buf`.
///
/// # Safety
///
/// `buf` is valid for writes of `n` elements of `dt`, and left alone
/// until the receive completes.
unsafe fn expect(
    w: &Win,
    rank: usize,
    tag: c_int,
    buf: *mut c_void,
    d: Arc<Datatype>,
    n: usize,
) -> Res<mpi::Request<'static>> {
    // SAFETY: by this function's contract.
    unsafe { buffer::irecv_typed(&w.comm, buf, d, n, rank as c_int, tag) }
}

/// Where a fetched reply lands: a plain get's is waited for by the next
/// synchronization; a request-based one's becomes the request `req`.
enum Fetch {
    Plain,
    Request(*mut Handle),
}

impl Fetch {
    fn keep(self, w: &Win, rank: usize, r: mpi::Request<'static>) -> Res<()> {
        match self {
            Fetch::Plain => {
                w.origin.borrow_mut().gets.push((rank, r));
                Ok(())
            }
            Fetch::Request(out) => {
                let h = handles::new_request(ReqEntry::Live(r, w.errh.get()))?;
                let mut o = w.origin.borrow_mut();
                // Those the program completed meanwhile are gone.
                o.rgets.retain(|&(g, _)| handles::has_request(g));
                o.rgets.push((handles::value(h), rank));
                // SAFETY: the caller of the request-based call passes a
                // valid output pointer.
                unsafe { ffi::out(out, h) }
            }
        }
    }
}

/// Checks what every request-based call needs: somewhere to write the
/// request (`MPI_ERR_ARG`), and, unless `rank` is `MPI_PROC_NULL`, a
/// passive-target epoch on it (§12.3.5 allows them only there).
fn request_based(win: Handle, rank: c_int, request: *mut Handle) -> Res<()> {
    if request.is_null() {
        return Err(Code(crate::error::MPI_ERR_ARG));
    }
    let w = self::win(win)?;
    let Some(t) = target_rank(&w, rank)? else {
        return Ok(());
    };
    let o = w.origin.borrow();
    if o.lock_all.is_some() || o.held[t] != super::Held::None {
        Ok(())
    } else {
        Err(super::sync_error(
            "request-based RMA calls are only allowed in a passive-target (lock) epoch",
        ))
    }
}

/// Writes a request that is complete already (a request-based put or
/// accumulate, whose data were handed over; an access to
/// `MPI_PROC_NULL`).
///
/// # Safety
///
/// `req` is valid for a write of one handle.
unsafe fn done_request(w: &Win, req: *mut Handle) -> Res<()> {
    let h = handles::new_request(ReqEntry::Done(
        Status::empty(),
        crate::error::MPI_SUCCESS,
        w.errh.get(),
    ))?;
    // SAFETY: by this function's contract.
    unsafe { ffi::out(req, h) }
}

/// `MPI_Put` and its forms: `req` for `MPI_Rput`.
///
/// # Safety
///
/// `obuf` holds `on` elements of `odt`; `req` is null or valid for a
/// write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn put<N: crate::datatype::Count>(
    win: Handle,
    obuf: *const c_void,
    on: N,
    odt: Handle,
    rank: c_int,
    disp: isize,
    tn: N,
    tdt: Handle,
    req: *mut Handle,
) -> Res<()> {
    let w = self::win(win)?;
    buffer::check(on, odt)?;
    if let Some(t) = target_spec(&w, rank, disp, tn, tdt)? {
        // SAFETY: by this function's contract.
        let data: Cow<'_, [u8]> = unsafe { buffer::send(obuf, on, odt) }?;
        same_size(data.len(), t.len())?;
        if !module_put(&w, &t, &data)? {
            let (h, first) = t.header(Kind::Put);
            send(&w, &t, &h, &first, &data)?;
        }
    }
    if !req.is_null() {
        // SAFETY: by this function's contract.
        unsafe { done_request(&w, req) }?;
    }
    Ok(())
}

/// `MPI_Get` and its forms.
///
/// # Safety
///
/// `obuf` is valid for writes of `on` elements of `odt` until the get
/// completes; `req` as for [`put`].
#[allow(clippy::too_many_arguments)]
unsafe fn get<N: crate::datatype::Count>(
    win: Handle,
    obuf: *mut c_void,
    on: N,
    odt: Handle,
    rank: c_int,
    disp: isize,
    tn: N,
    tdt: Handle,
    req: *mut Handle,
) -> Res<()> {
    let w = self::win(win)?;
    let (od, on) = buffer::typed(on, odt)?;
    let Some(t) = target_spec(&w, rank, disp, tn, tdt)? else {
        if !req.is_null() {
            // SAFETY: by this function's contract.
            unsafe { done_request(&w, req) }?;
        }
        return Ok(());
    };
    same_size(od.map.size() * on, t.len())?;
    let mut fetch = Fetch::Plain;
    if !req.is_null() {
        fetch = Fetch::Request(req);
    }
    // SAFETY: by this function's contract.
    if let Some(r) = unsafe { module_get(&w, &t, obuf, od.clone(), on) }? {
        return fetch.keep(&w, t.rank, r);
    }
    let (mut h, first) = t.header(Kind::Get);
    h.reply = w.reply_tag();
    // SAFETY: by this function's contract.
    let r = unsafe { expect(&w, t.rank, h.reply, obuf, od, on) }?;
    send(&w, &t, &h, &first, &[])?;
    fetch.keep(&w, t.rank, r)
}

/// Gets through the target's module when this process holds its module
/// lock and the target layout is one run (`module.rs`): the receive to
/// wait for, or `None` when the library must carry it.
///
/// # Safety
///
/// As for [`get`]: `obuf` takes `n` elements of `d` until the receive
/// completes.
unsafe fn module_get(
    w: &Win,
    t: &TargetSpec,
    obuf: *mut c_void,
    d: Arc<Datatype>,
    n: usize,
) -> Res<Option<mpi::Request<'static>>> {
    if !w.origin.borrow().module_held[t.rank] {
        return Ok(None);
    }
    let runs = t.runs();
    let unit = w.extents.as_ref().map_or(1, |e| e[t.rank].1);
    let at = match runs.as_slice() {
        [(off, _)] => (t.disp as i64)
            .checked_mul(i64::from(unit))
            .and_then(|b| b.checked_add(*off))
            .and_then(|a| u32::try_from(a).ok()),
        _ => None,
    };
    let Some(at) = at else {
        return Ok(None);
    };
    // SAFETY: by this function's contract (the slice is not kept).
    let unpack: mpi::raw::Unpack = match unsafe { buffer::recv_typed(d, n, obuf) }? {
        buffer::Recv::Direct(b) => {
            let (p, len) = (b.as_mut_ptr() as usize, b.len());
            Box::new(move |data: &[u8]| {
                let k = data.len().min(len);
                // SAFETY: the caller keeps the `len` bytes at `p` for this
                // get until it completes (MPI §12.3), which is when this
                // runs.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u8, k) };
            })
        }
        buffer::Recv::Staged(_, u) => Box::new(move |data: &[u8]| u.apply(data)),
    };
    super::module::get(w, t.rank, at, t.len(), unpack).map(Some)
}

/// `MPI_Accumulate`, `MPI_Get_accumulate` and their forms: `result`
/// (buffer, count, datatype) for the fetching ones.
///
/// # Safety
///
/// `obuf` holds `on` elements of `odt` (unless the operation is
/// `MPI_NO_OP`); a result buffer is valid for writes until the access
/// completes; `req` as for [`put`].
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate<N: crate::datatype::Count>(
    win: Handle,
    obuf: *const c_void,
    on: N,
    odt: Handle,
    result: Option<(*mut c_void, N, Handle)>,
    rank: c_int,
    disp: isize,
    tn: N,
    tdt: Handle,
    op: Handle,
    req: *mut Handle,
) -> Res<()> {
    let w = self::win(win)?;
    let no_op = handles::value(op) == 0x3d;
    let res = match result {
        Some((buf, n, dt)) => Some((buf, buffer::typed(n, dt)?)),
        None => None,
    };
    if !no_op {
        buffer::check(on, odt)?;
    }
    let Some(t) = target_spec(&w, rank, disp, tn, tdt)? else {
        if !req.is_null() {
            // SAFETY: by this function's contract.
            unsafe { done_request(&w, req) }?;
        }
        return Ok(());
    };
    let elem = element_type(tdt)?;
    let opv = accumulate_op(op, elem)?;
    let data: Cow<'_, [u8]> = if no_op {
        Cow::Owned(vec![0u8; t.len()])
    } else {
        if element_type(odt)? != elem {
            return Err(explained(
                MPI_ERR_TYPE,
                "the origin and target datatypes are made of different types",
            ));
        }
        // SAFETY: by this function's contract.
        unsafe { buffer::send(obuf, on, odt) }?
    };
    same_size(data.len(), t.len())?;
    let kind = if res.is_some() {
        Kind::GetAccumulate
    } else {
        Kind::Accumulate
    };
    let (mut h, first) = t.header(kind);
    h.op = opv;
    h.elem = elem as u32;
    let mut posted = None;
    if let Some((buf, (rd, rn))) = res {
        same_size(rd.map.size() * rn, t.len())?;
        h.reply = w.reply_tag();
        // SAFETY: by this function's contract.
        posted = Some(unsafe { expect(&w, t.rank, h.reply, buf, rd, rn) }?);
    }
    send(&w, &t, &h, &first, &data)?;
    match posted {
        Some(r) => {
            let fetch = if req.is_null() {
                Fetch::Plain
            } else {
                Fetch::Request(req)
            };
            fetch.keep(&w, t.rank, r)
        }
        None if !req.is_null() => {
            // SAFETY: by this function's contract.
            unsafe { done_request(&w, req) }
        }
        None => Ok(()),
    }
}

with_c! {
    /// `MPI_Put` (§12.3.1): the origin's data go to the target window at
    /// `target_disp` (in its displacement units), laid out by
    /// `target_datatype`. Complete at the origin on return.
    ///
    /// # Safety
    ///
    /// `origin_addr` holds `origin_count` elements of `origin_datatype`.
    fn MPI_Put, MPI_Put_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, win: Handle) as name => {
        boundary_win(name, win, || {
            // SAFETY: the caller's buffer; no request.
            unsafe { put(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, std::ptr::null_mut()) }
        })
    }
}

with_c! {
    /// `MPI_Rput` (§12.3.5): `MPI_Put` with a request, complete at once
    /// (the data were handed over; a flush or unlock completes the put
    /// at the target).
    ///
    /// # Safety
    ///
    /// As for `MPI_Put`; `request` valid for a write of one handle.
    fn MPI_Rput, MPI_Rput_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, win: Handle, request: *mut Handle) as name => {
        boundary_win(name, win, || {
            request_based(win, target_rank, request)?;
            // SAFETY: the caller's buffer and request pointer.
            unsafe { put(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, request) }
        })
    }
}

with_c! {
    /// `MPI_Get` (§12.3.2): the target window's data at `target_disp`
    /// come into the origin buffer by the end of the epoch (or a flush).
    ///
    /// # Safety
    ///
    /// `origin_addr` is valid for writes of `origin_count` elements of
    /// `origin_datatype` until the get completes.
    fn MPI_Get, MPI_Get_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, win: Handle) as name => {
        boundary_win(name, win, || {
            // SAFETY: the caller's buffer; no request.
            unsafe { get(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, std::ptr::null_mut()) }
        })
    }
}

with_c! {
    /// `MPI_Rget` (§12.3.5): `MPI_Get` with a request that completes when
    /// the data have arrived (a flush or unlock completes it too).
    ///
    /// # Safety
    ///
    /// As for `MPI_Get`; `request` valid for a write of one handle.
    fn MPI_Rget, MPI_Rget_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, win: Handle, request: *mut Handle) as name => {
        boundary_win(name, win, || {
            request_based(win, target_rank, request)?;
            // SAFETY: the caller's buffer and request pointer.
            unsafe { get(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, request) }
        })
    }
}

with_c! {
    /// `MPI_Accumulate` (§12.3.4): combines the origin's data into the
    /// target window with a predefined operation (or `MPI_REPLACE`),
    /// element by element, atomically per element with respect to other
    /// accumulates (the target applies them one at a time, in order from
    /// each origin).
    ///
    /// # Safety
    ///
    /// As for `MPI_Put`.
    fn MPI_Accumulate, MPI_Accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, op: Handle, win: Handle) as name => {
        boundary_win(name, win, || {
            // SAFETY: the caller's buffer; no request.
            unsafe { accumulate(win, origin_addr, origin_count, origin_datatype, None, target_rank, target_disp, target_count, target_datatype, op, std::ptr::null_mut()) }
        })
    }
}

with_c! {
    /// `MPI_Raccumulate` (§12.3.5): `MPI_Accumulate` with a request,
    /// complete at once.
    ///
    /// # Safety
    ///
    /// As for `MPI_Rput`.
    fn MPI_Raccumulate, MPI_Raccumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) as name => {
        boundary_win(name, win, || {
            request_based(win, target_rank, request)?;
            // SAFETY: the caller's buffer and request pointer.
            unsafe { accumulate(win, origin_addr, origin_count, origin_datatype, None, target_rank, target_disp, target_count, target_datatype, op, request) }
        })
    }
}

with_c! {
    /// `MPI_Get_accumulate` (§12.3.4): fetches the target's data into the
    /// result buffer, then accumulates the origin's into them, as one
    /// atomic step (`MPI_NO_OP` only fetches).
    ///
    /// # Safety
    ///
    /// As for `MPI_Accumulate`, and the result buffer as for `MPI_Get`.
    fn MPI_Get_accumulate, MPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, result_addr: *mut c_void, result_count: Count, result_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, op: Handle, win: Handle) as name => {
        boundary_win(name, win, || {
            let result = Some((result_addr, result_count, result_datatype));
            // SAFETY: the caller's buffers; no request.
            unsafe { accumulate(win, origin_addr, origin_count, origin_datatype, result, target_rank, target_disp, target_count, target_datatype, op, std::ptr::null_mut()) }
        })
    }
}

with_c! {
    /// `MPI_Rget_accumulate` (§12.3.5): `MPI_Get_accumulate` with a
    /// request that completes when the fetched data have arrived.
    ///
    /// # Safety
    ///
    /// As for `MPI_Get_accumulate`; `request` valid for a write of one
    /// handle.
    fn MPI_Rget_accumulate, MPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, result_addr: *mut c_void, result_count: Count, result_datatype: Handle, target_rank: c_int, target_disp: isize, target_count: Count, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) as name => {
        boundary_win(name, win, || {
            request_based(win, target_rank, request)?;
            let result = Some((result_addr, result_count, result_datatype));
            // SAFETY: the caller's buffers and request pointer.
            unsafe { accumulate(win, origin_addr, origin_count, origin_datatype, result, target_rank, target_disp, target_count, target_datatype, op, request) }
        })
    }
}

/// `MPI_Fetch_and_op` (§12.3.4): `MPI_Get_accumulate` of one element of
/// a predefined `datatype`.
///
/// # Safety
///
/// `origin_addr` holds one element (unless `op` is `MPI_NO_OP`),
/// `result_addr` has room for one until the access completes.
#[o2g_mpi_abi_macros::export]
pub(crate) unsafe extern "C" fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: Handle,
    target_rank: c_int,
    target_disp: isize,
    op: Handle,
    win: Handle,
) -> c_int {
    boundary_win("MPI_Fetch_and_op", win, || {
        // SAFETY: the caller's buffers; no request.
        unsafe {
            accumulate(
                win,
                origin_addr,
                1,
                datatype,
                Some((result_addr, 1, datatype)),
                target_rank,
                target_disp,
                1,
                datatype,
                op,
                std::ptr::null_mut(),
            )
        }
    })
}

/// `MPI_Compare_and_swap` (§12.3.4): atomically, the target element's
/// old value goes to `result_addr`, and `origin_addr`'s replaces it if
/// it equals `compare_addr`'s. One element of a predefined integer,
/// logical, byte or address type.
///
/// # Safety
///
/// `origin_addr` and `compare_addr` hold one element each; `result_addr`
/// has room for one until the access completes.
#[o2g_mpi_abi_macros::export]
pub(crate) unsafe extern "C" fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: Handle,
    target_rank: c_int,
    target_disp: isize,
    win: Handle,
) -> c_int {
    boundary_win("MPI_Compare_and_swap", win, || {
        let w = self::win(win)?;
        let cas_type = datatype::is_predefined(handles::value(datatype))
            && datatype::lookup(datatype).is_ok_and(|t| {
                use crate::datatype::Kind::*;
                matches!(
                    t.kind,
                    I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64 | Bool | Byte
                )
            });
        if !cas_type {
            return Err(explained(
                MPI_ERR_TYPE,
                "MPI_Compare_and_swap takes one element of a predefined integer, logical or byte type",
            ));
        }
        let Some(t) = target_spec(&w, target_rank, target_disp, 1, datatype)? else {
            return Ok(());
        };
        let (d, _) = buffer::typed(1, datatype)?;
        // SAFETY: the caller's elements.
        let new = unsafe { buffer::send(origin_addr, 1, datatype) }?;
        // SAFETY: as above.
        let compare = unsafe { buffer::send(compare_addr, 1, datatype) }?;
        let mut data = new.into_owned();
        data.extend_from_slice(&compare);
        let (mut h, first) = t.header(Kind::CompareAndSwap);
        h.reply = w.reply_tag();
        // SAFETY: the caller's result element.
        let r = unsafe { expect(&w, t.rank, h.reply, result_addr, d, 1) }?;
        send(&w, &t, &h, &first, &data)?;
        Fetch::Plain.keep(&w, t.rank, r)
    })
}
