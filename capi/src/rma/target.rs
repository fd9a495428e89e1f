//! The target side of a window: the agent that serves other processes'
//! requests (and this process's own) whenever this process is inside MPI.
//!
//! Context: the agent runs from the `mpi` crate's wait loops
//! (`mpi::raw::add_agent`), in the thread that called MPI, never nested
//! in itself, and never waits: it takes the headers and data that have
//! arrived, carries out each origin's requests in the order that origin
//! sent them (§12.7's ordering of accumulates, and everything before a
//! flush, an unlock or a fence is done before it is answered), and
//! answers with blocking sends of what is asked (a send returns once its
//! bytes are handed to the transport, which keeps receiving meanwhile).
//!
//! Nothing a peer says is taken on trust: every run must lie inside the
//! window (inside one attached region of a dynamic window), the
//! operation and element type of an accumulate must be predefined ones
//! that go together, and a header that does not parse fails the window.
//! A request that asks for memory outside the window is refused and
//! reported to its origin at its next flush or unlock, and to this
//! process at its next synchronization (fence, wait, free).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::wire::{self, Header, Kind};
use crate::datatype::{self, TypeInfo};
use crate::error::MPI_ERR_RMA_RANGE;
use crate::handles;

/// The memory a window exposes.
pub(crate) enum Memory {
    /// `size` bytes at `base` (`MPI_Win_create`, `_allocate`,
    /// `_allocate_shared`); displacements count in `disp_unit` bytes.
    Fixed {
        base: usize,
        size: usize,
        disp_unit: usize,
    },
    /// `MPI_Win_create_dynamic`: the regions attached so far (address,
    /// bytes); displacements are addresses.
    Dynamic(Vec<(usize, usize)>),
}

impl Memory {
    /// The address of `len` bytes at `off` bytes from displacement
    /// `disp`, if they lie inside the window.
    fn locate(&self, disp: i64, off: i64, len: u64) -> Result<usize, String> {
        let outside = || {
            format!(
                "{len} bytes at displacement {disp} (+{off} bytes) lie outside the target window"
            )
        };
        let len = usize::try_from(len).map_err(|_| outside())?;
        match self {
            Memory::Fixed {
                base,
                size,
                disp_unit,
            } => {
                let start = i64::try_from(*disp_unit)
                    .ok()
                    .and_then(|u| disp.checked_mul(u))
                    .and_then(|d| d.checked_add(off))
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(outside)?;
                match start.checked_add(len) {
                    Some(end) if end <= *size => Ok(base + start),
                    _ => Err(outside()),
                }
            }
            Memory::Dynamic(regions) => {
                let addr = disp
                    .checked_add(off)
                    .and_then(|a| usize::try_from(a).ok())
                    .ok_or_else(outside)?;
                let end = addr.checked_add(len).ok_or_else(outside)?;
                regions
                    .iter()
                    .any(|&(b, l)| addr >= b && end <= b + l)
                    .then_some(addr)
                    .ok_or_else(|| {
                        format!(
                            "{len} bytes at address {addr:#x} are not inside one region attached to \
                             the target's dynamic window"
                        )
                    })
            }
        }
    }

    /// The most bytes one request can touch: a bound on what a peer may
    /// make this process allocate for it.
    fn span(&self) -> usize {
        match self {
            Memory::Fixed { size, .. } => *size,
            Memory::Dynamic(regions) => regions.iter().map(|r| r.1).sum(),
        }
    }
}

/// Who holds the window's lock (§12.5.3) and who waits for it.
#[derive(Default)]
struct Locks {
    exclusive: Option<usize>,
    /// The origins holding it shared.
    shared: Vec<usize>,
    /// Origins waiting, first come first served: (origin, exclusive,
    /// reply tag).
    waiting: VecDeque<(usize, bool, i32)>,
}

impl Locks {
    fn grantable(&self, exclusive: bool) -> bool {
        self.exclusive.is_none() && (!exclusive || self.shared.is_empty())
    }

    fn take(&mut self, origin: usize, exclusive: bool) {
        if exclusive {
            self.exclusive = Some(origin);
        } else {
            self.shared.push(origin);
        }
    }

    /// Releases the lock `origin` holds; `false` if it holds none.
    fn release(&mut self, origin: usize) -> bool {
        if self.exclusive == Some(origin) {
            self.exclusive = None;
            return true;
        }
        match self.shared.iter().position(|&o| o == origin) {
            Some(i) => {
                self.shared.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

/// A received slot: the receive's bytes once it completes.
type Slot = Rc<RefCell<Option<Vec<u8>>>>;

/// A receive the agent has posted, and where its bytes land.
struct Posted {
    req: mpi::Request<'static>,
    /// `None` when the bytes land in the window itself.
    slot: Option<Slot>,
}

/// A request whose header has arrived.
struct Pending {
    hdr: Header,
    data: Option<Posted>,
}

/// The target side of one window, shared by the window handle and its
/// agent.
pub(crate) struct Target {
    comm: mpi::Communicator,
    pub(crate) mem: Memory,
    header: Option<(Posted, Slot)>,
    /// Each origin's requests, in the order it sent them.
    queues: Vec<VecDeque<Pending>>,
    locks: Locks,
    /// Fences entered by each origin.
    pub(crate) fences: Vec<u64>,
    /// Fences this process has entered.
    pub(crate) entered: u64,
    /// Fences this process has completed.
    pub(crate) completed: u64,
    /// `MPI_Win_complete` notices received.
    pub(crate) completes: u64,
    /// A refused request of each origin, to report at its next flush or
    /// unlock.
    errors: Vec<Option<String>>,
    /// A refused request, to report to this process at its next
    /// synchronization.
    pub(crate) local_error: Option<String>,
    /// Why the window cannot go on (a peer's protocol error, a dead
    /// peer).
    pub(crate) failed: Option<String>,
    /// Set by `MPI_Win_free`: the agent lets go.
    pub(crate) freed: bool,
    /// Headers taken and requests carried out so far (did a round work?).
    steps: u64,
}

impl Target {
    pub(crate) fn new(comm: mpi::Communicator, mem: Memory) -> Self {
        let n = usize::try_from(comm.size()).unwrap_or(0);
        Self {
            comm,
            mem,
            header: None,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            locks: Locks::default(),
            fences: vec![0; n],
            entered: 0,
            completed: 0,
            completes: 0,
            errors: vec![None; n],
            local_error: None,
            failed: None,
            freed: false,
            steps: 0,
        }
    }

    /// Starts the agent of `target` (a new window's).
    pub(crate) fn start(target: &Rc<RefCell<Target>>) {
        let t = target.clone();
        let comm = mpi::raw::another_handle(&target.borrow().comm);
        mpi::raw::add_agent(
            &comm,
            Box::new(move || match t.try_borrow_mut() {
                Ok(mut t) => t.advance(),
                // In use by the window's own call further up the stack.
                Err(_) => mpi::raw::AgentStep::Idle,
            }),
        );
    }

    /// One round of the agent.
    fn advance(&mut self) -> mpi::raw::AgentStep {
        use mpi::raw::AgentStep;
        if self.freed {
            // Dropping the header receive cancels it.
            self.header = None;
            return AgentStep::Finished;
        }
        if self.failed.is_some() {
            return AgentStep::Idle;
        }
        let before = self.steps;
        if let Err(why) = self.take_headers().and_then(|()| self.run_queues()) {
            self.failed = Some(why);
            return AgentStep::Worked;
        }
        if self.steps != before {
            AgentStep::Worked
        } else {
            AgentStep::Idle
        }
    }

    /// Posts the receive of the next header.
    fn post_header(&mut self) -> Result<(), String> {
        let slot: Slot = Rc::default();
        let s = slot.clone();
        let req = mpi::raw::irecv_staged(
            &self.comm,
            wire::HEADER_LEN,
            mpi::ANY_SOURCE,
            wire::TAG_HEADER,
            Box::new(move |b| *s.borrow_mut() = Some(b.to_vec())),
        )
        .map_err(|e| format!("posting the window's header receive: {e}"))?;
        self.header = Some((Posted { req, slot: None }, slot));
        Ok(())
    }

    /// Takes every header that has arrived into its origin's queue,
    /// posting the receive of its data.
    fn take_headers(&mut self) -> Result<(), String> {
        loop {
            if self.header.is_none() {
                self.post_header()?;
            }
            let Some((posted, slot)) = self.header.as_mut() else {
                return Ok(());
            };
            let status = match mpi::raw::check(&mut posted.req) {
                Ok(None) => return Ok(()),
                Ok(Some(s)) => s,
                Err(e) => return Err(format!("receiving an RMA request: {e}")),
            };
            let bytes = slot.borrow_mut().take().unwrap_or_default();
            self.header = None;
            self.steps += 1;
            let origin = usize::try_from(status.source_rank())
                .ok()
                .filter(|&o| o < self.queues.len())
                .ok_or("an RMA request from no member of the window")?;
            let hdr = Header::decode(&bytes).map_err(|e| format!("rank {origin} sent {e}"))?;
            self.queues[origin].push_back(Pending { hdr, data: None });
        }
    }

    /// Posts the receive of what follows `hdr` from `origin` (a request
    /// at the head of its queue, so one buffer per origin at most):
    /// straight into the window for a put of one run into fixed memory
    /// (checked first; a dynamic window's region could be detached before
    /// the data come), else into a buffer of its exact length.
    fn post_data(&mut self, origin: usize, hdr: &Header) -> Result<Posted, String> {
        let in_place = matches!(self.mem, Memory::Fixed { .. });
        let bad = || format!("rank {origin} announced an RMA request larger than the window");
        let span = self.mem.span() as u64;
        let data = match hdr.kind {
            Kind::Get => 0,
            Kind::CompareAndSwap => hdr.len.checked_mul(2).ok_or_else(bad)?,
            _ => hdr.len,
        };
        let runs = u64::from(hdr.runs);
        if hdr.len > span || (hdr.explicit() && runs > hdr.len.max(1)) {
            return Err(bad());
        }
        let src = i32::try_from(origin).unwrap_or(i32::MAX);
        if in_place && hdr.kind == Kind::Put && !hdr.explicit() {
            if let Ok(addr) = self.mem.locate(hdr.disp, 0, hdr.len) {
                // SAFETY: `addr..addr + len` lies in the window's memory
                // (checked just above), which the program keeps for the
                // window until it is freed (§12.2), and which it may not
                // access while a put to it is pending (§12.7).
                let req = unsafe {
                    mpi::raw::irecv(
                        &self.comm,
                        std::ptr::with_exposed_provenance_mut(addr),
                        hdr.len as usize,
                        src,
                        wire::TAG_DATA,
                    )
                }
                .map_err(|e| format!("receiving a put: {e}"))?;
                return Ok(Posted { req, slot: None });
            }
        }
        let len = runs
            .checked_mul(if hdr.explicit() {
                wire::RUN_LEN as u64
            } else {
                0
            })
            .and_then(|r| r.checked_add(data))
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(bad)?;
        let slot: Slot = Rc::default();
        let s = slot.clone();
        let req = mpi::raw::irecv_staged(
            &self.comm,
            len,
            src,
            wire::TAG_DATA,
            Box::new(move |b| *s.borrow_mut() = Some(b.to_vec())),
        )
        .map_err(|e| format!("receiving an RMA request's data: {e}"))?;
        Ok(Posted {
            req,
            slot: Some(slot),
        })
    }

    /// Carries out the requests at the head of every origin's queue whose
    /// data have arrived, passing over the queues until a pass does
    /// nothing (an unlock lets an origin passed over before take the
    /// lock).
    fn run_queues(&mut self) -> Result<(), String> {
        loop {
            let before = self.steps;
            self.run_queues_once()?;
            if self.steps == before {
                return Ok(());
            }
        }
    }

    /// One pass of [`Target::run_queues`].
    fn run_queues_once(&mut self) -> Result<(), String> {
        for origin in 0..self.queues.len() {
            while let Some(front) = self.queues[origin].front_mut() {
                if front.hdr.epoch > self.completed {
                    // Sent after a fence this process has not completed.
                    break;
                }
                if front.hdr.kind == Kind::Lock {
                    let hdr = front.hdr;
                    if !self.lock(origin, &hdr)? {
                        break;
                    }
                    self.queues[origin].pop_front();
                    self.steps += 1;
                    continue;
                }
                if front.hdr.flags & wire::FENCE_EPOCH != 0 && self.entered <= self.fences[origin] {
                    // The next fence epoch's: not before this process
                    // enters the fence that ends it.
                    break;
                }
                if front.data.is_none() && front.hdr.kind.has_data(&front.hdr) {
                    let hdr = front.hdr;
                    let posted = self.post_data(origin, &hdr)?;
                    if let Some(front) = self.queues[origin].front_mut() {
                        front.data = Some(posted);
                    }
                }
                let Some(front) = self.queues[origin].front_mut() else {
                    break;
                };
                let data = match &mut front.data {
                    None => None,
                    Some(p) => match mpi::raw::check(&mut p.req) {
                        Ok(None) => break,
                        Ok(Some(_)) => Some(p.slot.as_ref().and_then(|s| s.borrow_mut().take())),
                        Err(e) => return Err(format!("receiving rank {origin}'s RMA data: {e}")),
                    },
                };
                let Some(p) = self.queues[origin].pop_front() else {
                    break;
                };
                self.steps += 1;
                // `Some(None)`: a put that landed in place.
                let landed = matches!(data, Some(None));
                let data = data.flatten().unwrap_or_default();
                self.execute(origin, &p.hdr, &data, landed)?;
            }
        }
        Ok(())
    }

    /// Replies `bytes` to `origin` on `tag`.
    fn reply(&self, origin: usize, tag: i32, bytes: &[u8]) -> Result<(), String> {
        let dest = i32::try_from(origin).unwrap_or(i32::MAX);
        self.comm
            .send(bytes, dest, tag)
            .map_err(|e| format!("answering rank {origin}'s RMA request: {e}"))
    }

    /// Carries out one request of `origin` whose data (if any) are
    /// `data` (`landed`: already in place).
    fn execute(
        &mut self,
        origin: usize,
        h: &Header,
        data: &[u8],
        landed: bool,
    ) -> Result<(), String> {
        match h.kind {
            // Taken at the head of the queue (`lock`).
            Kind::Lock => {}
            Kind::Unlock => {
                if !self.locks.release(origin) {
                    return Err(format!("rank {origin} unlocked a window it had not locked"));
                }
                self.acknowledge(origin, h.reply)?;
            }
            Kind::Flush => self.acknowledge(origin, h.reply)?,
            Kind::Fence => self.fences[origin] += 1,
            Kind::Complete => self.completes += 1,
            _ if landed => {}
            _ => {
                if let Err(why) = self.access(origin, h, data) {
                    let why = format!("rank {origin}'s RMA request refused: {why}");
                    self.local_error.get_or_insert_with(|| why.clone());
                    self.errors[origin].get_or_insert(why);
                }
            }
        }
        Ok(())
    }

    /// Takes the lock `h` asks for on behalf of `origin` if it is free
    /// and no one asked before (then answers, if an answer is wanted);
    /// else queues the origin, whose later requests wait behind the lock
    /// (an origin need not wait for the grant: §12.5.3 only asks that its
    /// accesses happen under the lock). `true` once taken.
    fn lock(&mut self, origin: usize, h: &Header) -> Result<bool, String> {
        let excl = h.flags & wire::LOCK_EXCLUSIVE != 0;
        let first = self.locks.waiting.front().map(|w| w.0);
        let queued = self.locks.waiting.iter().any(|w| w.0 == origin);
        if (first.is_none() || first == Some(origin)) && self.locks.grantable(excl) {
            if queued {
                self.locks.waiting.pop_front();
            }
            self.locks.take(origin, excl);
            if h.reply != 0 {
                self.reply(origin, h.reply, &[])?;
            }
            return Ok(true);
        }
        if !queued {
            self.locks.waiting.push_back((origin, excl, h.reply));
        }
        Ok(false)
    }

    /// Acknowledges everything `origin` asked so far, with its refused
    /// request if there was one.
    fn acknowledge(&mut self, origin: usize, tag: i32) -> Result<(), String> {
        let ack = match self.errors[origin].take() {
            None => wire::encode_ack(0, ""),
            Some(why) => wire::encode_ack(MPI_ERR_RMA_RANGE, &why),
        };
        self.reply(origin, tag, &ack)
    }

    /// A put, get or accumulate: reads and writes the window. Replies
    /// whatever a get must get, even when the request is refused (zeros
    /// then), so that the origin is not left waiting.
    fn access(&mut self, origin: usize, h: &Header, data: &[u8]) -> Result<(), String> {
        let fetches = matches!(
            h.kind,
            Kind::Get | Kind::GetAccumulate | Kind::CompareAndSwap
        );
        let located = if h.explicit() {
            wire::decode_runs(data, h.runs)
        } else {
            Ok((vec![(0, h.len)], data))
        }
        .and_then(|(runs, payload)| Ok((self.locate_all(h, &runs)?, payload)));
        let (addrs, payload) = match located {
            Ok(a) => a,
            Err(why) => {
                if fetches {
                    self.reply(origin, h.reply, &vec![0; h.len as usize])?;
                }
                return Err(why);
            }
        };
        let old = if fetches || h.kind == Kind::Accumulate {
            gather(&addrs)
        } else {
            Vec::new()
        };
        if fetches {
            self.reply(origin, h.reply, &old)?;
        }
        match h.kind {
            Kind::Put => {
                check_len(payload, h.len)?;
                scatter(&addrs, payload);
            }
            Kind::Get => {}
            Kind::CompareAndSwap => {
                check_len(payload, h.len * 2)?;
                let (new, compare) = payload.split_at(h.len as usize);
                if old == compare {
                    scatter(&addrs, new);
                }
            }
            Kind::Accumulate | Kind::GetAccumulate if h.op == OP_NO_OP => {}
            Kind::Accumulate | Kind::GetAccumulate => {
                check_len(payload, h.len)?;
                let mut now = old;
                combine(h.op, h.elem, payload, &mut now)?;
                scatter(&addrs, &now);
            }
            _ => {}
        }
        Ok(())
    }

    /// The address and length of every run, all checked.
    fn locate_all(&self, h: &Header, runs: &[(i64, u64)]) -> Result<Vec<(usize, usize)>, String> {
        let mut total = 0u64;
        let addrs = runs
            .iter()
            .map(|&(off, len)| {
                total = total.saturating_add(len);
                Ok((self.mem.locate(h.disp, off, len)?, len as usize))
            })
            .collect::<Result<Vec<_>, String>>()?;
        if total != h.len {
            return Err(format!("runs of {total} bytes for a request of {}", h.len));
        }
        Ok(addrs)
    }
}

/// Fails unless `data` is `len` bytes.
fn check_len(data: &[u8], len: u64) -> Result<(), String> {
    if data.len() as u64 == len {
        Ok(())
    } else {
        Err(format!(
            "{} bytes of data for a request of {len}",
            data.len()
        ))
    }
}

/// The bytes of the runs, in order.
fn gather(addrs: &[(usize, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(addrs.iter().map(|a| a.1).sum());
    for &(a, l) in addrs {
        let start = out.len();
        out.resize(start + l, 0);
        // SAFETY: each run was checked to lie in the window's memory
        // (`Memory::locate`), valid while the window lives; the program
        // may not store into it during the access (§12.7), and it is read
        // as bytes, never as a reference to typed data.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::with_exposed_provenance::<u8>(a),
                out[start..].as_mut_ptr(),
                l,
            )
        };
    }
    out
}

/// Writes `data` over the runs, in order (`data` holds their bytes).
fn scatter(addrs: &[(usize, usize)], data: &[u8]) {
    let mut at = 0;
    for &(a, l) in addrs {
        // SAFETY: as in `gather`; `data` has the runs' total length
        // (checked by the caller).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data[at..at + l].as_ptr(),
                std::ptr::with_exposed_provenance_mut::<u8>(a),
                l,
            )
        };
        at += l;
    }
}

/// `MPI_REPLACE` and `MPI_NO_OP` (§12.3.4).
const OP_REPLACE: u32 = 0x3c;
const OP_NO_OP: u32 = 0x3d;

/// `now = data op now`, element by element, for the predefined
/// operation `op` on the predefined type `elem` (handle values a peer
/// sent: both checked).
fn combine(op: u32, elem: u32, data: &[u8], now: &mut [u8]) -> Result<(), String> {
    match op {
        OP_REPLACE => now.copy_from_slice(data),
        OP_NO_OP => {}
        _ => {
            let bad = || format!("operation {op:#x} on type {elem:#x} is not an accumulate");
            let v = elem as usize;
            if !datatype::is_predefined(v) || !super::is_accumulate_op(op) {
                return Err(bad());
            }
            let dt = handles::handle(v);
            let d = datatype::resolve(dt).map_err(|_| bad())?;
            let info: TypeInfo = d.info();
            if info.size == 0 || data.len() % info.size != 0 {
                return Err(bad());
            }
            let f =
                crate::op::reducer(handles::handle(op as usize), info, dt).map_err(|_| bad())?;
            if info.extent == info.size {
                f(data, now);
            } else {
                // A pair type with padding (`MPI_DOUBLE_INT`): the
                // operation works on elements laid out as in memory.
                let n = data.len() / info.size;
                let (mut a, mut b) = (vec![0u8; n * info.extent], vec![0u8; n * info.extent]);
                d.map.for_each_run(n, data.len(), |off, r| {
                    let at = off as usize;
                    a[at..at + r.len()].copy_from_slice(&data[r.clone()]);
                    b[at..at + r.len()].copy_from_slice(&now[r]);
                });
                f(&a, &mut b);
                d.map.for_each_run(n, data.len(), |off, r| {
                    let at = off as usize;
                    now[r.clone()].copy_from_slice(&b[at..at + r.len()]);
                });
            }
        }
    }
    Ok(())
}
