//! Collective operations (MPI 4.1 chapter 6), built on point-to-point
//! messages in the communicator's collective context (so they never match
//! user messages).
//!
//! # Algorithms
//!
//! Each collective chooses its algorithm by the length of its buffers and
//! the number of processes p, as MPICH and Open MPI's `tuned` component
//! do. Every algorithm is correct for any p (not only powers of two), any
//! root and any length, zero included. Where two algorithms would not
//! match each other's messages, the choice depends only on p and on
//! lengths every member passes alike, so all members make the same one.
//!
//! The thresholds come from the usual cost model: a message of m bytes
//! costs α + mβ. On loopback TCP (issue 22's measurements) α ≈ 8 µs and
//! 1/β ≈ 1.5 GB/s, so one more message on the critical path costs as much
//! as about 12 KiB more data. The crossovers this gives are quoted below;
//! the thresholds are round values near them, on the side of fewer
//! messages where the model is unsure (it leaves out combining and
//! copying). Timing them on this shared 2-core host would mean little;
//! each is one constant here, to tune with measurements on quiet hardware.
//!
//! - barrier (§6.3): dissemination, ⌈log2 p⌉ rounds; over the whole
//!   world, the transport's hardware barrier where it has one.
//! - bcast (§6.4):
//!   - binomial tree: ⌈log2 p⌉ rounds, each passing the whole buffer on;
//!   - from `BCAST_LARGE` (128 KiB) and `RING_MIN_BLOCK` (4 KiB) per
//!     process, for p ≥ 3, van de Geijn's scatter-allgather: a binomial
//!     scatter of p blocks, then a ring allgather in which nobody is sent
//!     a block the scatter left with it. Its critical path carries about
//!     2n bytes in ⌈log2 p⌉ + p − 1 rounds, the binomial tree's n⌈log2 p⌉
//!     in ⌈log2 p⌉; the model's crossover is 36 KiB for p = 3, 72 KiB for
//!     4, 85 KiB for 16, 190 KiB for 64. With 2 processes the binomial tree
//!     is a single message, which nothing beats.
//! - reduce (§6.9.1):
//!   - binomial tree towards the root;
//!   - for the vectors allreduce splits (below), allreduce's reduce-scatter
//!     then a gather of the p reduced blocks to the root, which receives
//!     2(p−1)/p·n bytes and combines (p−1)/p·n instead of receiving and
//!     combining n⌈log2 p⌉ (the model's crossover: 24 KiB for p = 4, 37
//!     KiB for 7, 170 KiB for 63; with 2 processes the bytes are the same
//!     and the root combines half).
//! - allreduce (§6.9.6), with `op` applied in an order that gives every
//!   member the same bits (floating-point sums depend on the order, and
//!   even `Max` does: of +0.0 and −0.0 it keeps the one it holds):
//!   - recursive doubling: ⌊log2 p⌋ exchanges of the whole vector, plus
//!     one message before and one after for the extra processes of a
//!     non-power-of-two p, which are folded into partners; both partners
//!     of an exchange compute op(upper, lower), `upper` being the vector of
//!     the one with the higher rank;
//!   - from `REDUCE_LARGE` (64 KiB), with at least one element per
//!     process, when p is a power of two: Rabenseifner's algorithm, a
//!     reduce-scatter by recursive halving then an allgather by recursive
//!     doubling: 2 log2 p exchanges moving 2(p−1)/p·n bytes per process
//!     instead of n log2 p, each block combined by one process only (the
//!     model's crossover: 48 KiB for p = 4, 23 KiB for 16; with 2
//!     processes the bytes are the same and each combines half);
//!   - from the same size, and from `RING_MIN_BLOCK` per process, for
//!     other p: a ring reduce-scatter then a ring allgather, 2(p−1)
//!     exchanges of n/p bytes, each block combined along one path.
//!     Rabenseifner's algorithm would first fold the extra processes in
//!     with whole vectors, 2n more bytes on its critical path; the ring
//!     needs no folding (the model's crossover against recursive doubling:
//!     7 KiB for p = 3, 42 KiB for 7, 280 KiB for 63);
//!   - blocks are cut only between whole elements of the operation
//!     ([`Operation::grain`] items each, 1 unless it says otherwise), and
//!     a vector that is not whole elements is never split: the C ABI
//!     passes every reduction as bytes with an operation that knows the
//!     real datatype, and gives the datatype's extent as the grain.
//! - gather(v) (§6.5): the root posts every receive at once.
//! - scatter(v) (§6.6): the root starts every send at once.
//! - allgather(v) (§6.7): ring, p−1 steps of one send and one receive.
//! - alltoall(v) (§6.8):
//!   - up to `ALLTOALL_EAGER` (256 KiB) sent plus received by a process
//!     (its own block aside): every receive, then every send, posted at
//!     once, so the p−1 messages cost about one latency instead of p−1 in
//!     a row;
//!   - above it, pairwise exchange: step s sends to rank+s and receives
//!     from rank−s, so no peer is a hot spot and each process has one
//!     message in flight each way. The (p−2)α that posting everything
//!     saves does not grow with the data, while what the transports must
//!     buffer at once does (the socket transports copy what the kernel
//!     does not take), hence a bound on the total.
//!
//!   The two interoperate (each process sends each peer one message, and
//!   one posting everything sends before it waits), so each process
//!   chooses by its own counts, which alltoallv allows to differ.
//!
//! - scan and exscan (§6.11): recursive doubling, ⌈log2 p⌉ exchanges of
//!   the whole vector.
//! - reduce_scatter(_block) (§6.10): reduce to rank 0, then scatterv.
//! - alltoallw (§6.8) is alltoallv over bytes, with byte displacements.
//! - the neighborhood collectives (MPI 5.0 §8.6, `neighbor.rs`): every
//!   receive from a source, then every send to a destination, posted at
//!   once (neighbourhoods are small); nonblocking (§8.7), one round of a
//!   schedule. A process may appear several times among the neighbours:
//!   the receives are posted in the order that pairs them with the
//!   sender's blocks (`Neighborhood::receive_order`).
//! - the nonblocking collectives (§6.12, `nonblocking.rs`): each is a
//!   [`schedule`](self) of rounds of sends and receives with local steps
//!   between them, which a request runs as it is tested or waited for
//!   (and any other wait of the process advances); simple algorithms,
//!   each message tagged with the collective's sequence number on the
//!   communicator, so that several may be outstanding at once.
//!
//! - on inter-communicators (§6.2.2, `inter.rs`, and
//!   `inter_nonblocking.rs` for the nonblocking ones): the collectives
//!   but scan and exscan, from the local group's own collectives and
//!   messages between the groups' leaders or straight between the groups.
//!
//! Counts and displacements of the `v` variants are in elements.
//!
//! Operations that do not commute ([`Operation::commutes`]) are applied in
//! rank order: reductions never split the vector for them, allreduce's
//! recursive doubling always puts the lower partner's vector on the left
//! (for every operation, so that both partners get the same bits), reduce
//! uses a binomial tree rooted at rank 0 whose members append the result
//! of the ranks above them on the right, and then hands the result to the
//! root; scan's doubling keeps ranges of ranks in order too.
//!
//! # Buffers lent to the transport
//!
//! A collective's nonblocking sends lend their data to the transport
//! (`Communicator::cisend`): the socket transports send what the kernel
//! does not take at once straight from it as room frees up, rather than
//! copying it. Its nonblocking receives into memory it holds for the
//! whole call (the caller's buffer or its own scratch) let the transport
//! write the message in place (`Communicator::cirecv`); blocking receives
//! always do. Both are sound because a collective never leaks a request:
//! each is waited for, or dropped (on every path, early returns and
//! unwinding included), before the collective returns; and the requests
//! borrow their buffers, so nothing writes what is being sent or touches
//! what is being received meanwhile. Where a block to send and one to
//! receive could overlap (an allgatherv's, erroneous in MPI), the send
//! copies instead.

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod gather;
mod inter;
mod inter_nonblocking;
mod neighbor;
mod nonblocking;
mod reduce;
mod reduce_scatter;
mod scan;
pub(crate) mod schedule;

use std::ops::Range;

use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, Equivalence};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::point_to_point::{Process, Status};
use crate::request::Request;

const TAG_BARRIER: u32 = 1;
const TAG_BCAST: u32 = 2;
const TAG_REDUCE: u32 = 3;
const TAG_ALLREDUCE: u32 = 4;
const TAG_GATHER: u32 = 5;
const TAG_SCATTER: u32 = 6;
const TAG_ALLGATHER: u32 = 7;
const TAG_ALLTOALL: u32 = 8;
const TAG_BCAST_SCATTER: u32 = 9;
const TAG_REDUCE_GATHER: u32 = 10;
const TAG_SCAN: u32 = 11;
/// `Communicator::create_group`'s context agreement (the user's tag
/// travels in the payload: tags above 11 would meet the nonblocking
/// collectives' and the synchronous acknowledgements' ranges).
pub(crate) const TAG_CREATE_GROUP: u32 = 12;
const TAG_NEIGHBOR: u32 = 13;

/// Bytes from which a broadcast scatters and allgathers.
const BCAST_LARGE: usize = 128 << 10;
/// Bytes from which allreduce and reduce split the vector into blocks.
const REDUCE_LARGE: usize = 64 << 10;
/// Fewest bytes per process for a ring algorithm: its p − 1 rounds must
/// each carry enough to be worth their latency.
const RING_MIN_BLOCK: usize = 4 << 10;
/// Most bytes a process sends plus receives in an alltoall that posts
/// everything at once.
const ALLTOALL_EAGER: usize = 256 << 10;

/// Fails unless the receive that ended with `st` brought `want` bytes
/// (from `src`): a collective's members must agree on every count.
fn exactly(st: &Status, want: usize, src: usize) -> Result<()> {
    if st.count_bytes() != want {
        return Err(bad(format!(
            "collective message from rank {src} has {} bytes, {want} expected: \
             the processes disagree on counts",
            st.count_bytes()
        )));
    }
    Ok(())
}

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The element range `[displ, displ + count)` of a buffer of `len`.
fn block(len: usize, count: usize, displ: usize, what: &str) -> Result<Range<usize>> {
    let end = displ
        .checked_add(count)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            bad(format!(
                "{what}: block {displ}+{count} beyond a buffer of {len}"
            ))
        })?;
    Ok(displ..end)
}

/// Counts and displacements for `p` equal blocks of `n`.
fn uniform(p: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (vec![n; p], (0..p).map(|i| i * n).collect())
}

/// Blocks `blocks` of `n` items cut into `p` blocks as equal as can be
/// (the first `n % p` one longer), as one range: they are contiguous.
fn parts(n: usize, p: usize, blocks: Range<usize>) -> Range<usize> {
    let start = |i: usize| i * (n / p) + i.min(n % p);
    start(blocks.start)..start(blocks.end)
}

/// Block `i` of `n` items cut into `p` blocks (see [`parts`]).
fn part(n: usize, p: usize, i: usize) -> Range<usize> {
    parts(n, p, i..i + 1)
}

/// `buf[out]` to read and `buf[inn]` to write at the same time (each
/// within `buf`); `None` if the two overlap. An empty range overlaps
/// nothing.
fn disjoint<T>(buf: &mut [T], out: Range<usize>, inn: Range<usize>) -> Option<(&[T], &mut [T])> {
    if inn.is_empty() {
        return Some((&buf[out], Default::default()));
    }
    if out.is_empty() {
        return Some((&[], &mut buf[inn]));
    }
    if out.end <= inn.start {
        let (low, high) = buf.split_at_mut(inn.start);
        Some((&low[out], &mut high[..inn.len()]))
    } else if inn.end <= out.start {
        let (low, high) = buf.split_at_mut(out.start);
        Some((&high[..out.len()], &mut low[inn]))
    } else {
        None
    }
}

impl Communicator {
    fn coll(&self) -> u32 {
        self.context + 1
    }

    fn csend(&self, data: &[u8], dest: usize, tag: u32) -> Result<()> {
        self.send_bytes(data, dest as i32, tag, self.coll())
    }

    /// Receives exactly `buf.len()` bytes from `src`.
    fn crecv(&self, buf: &mut [u8], src: usize, tag: u32) -> Result<()> {
        let want = buf.len();
        let st = self.recv_bytes(buf, src as i32, tag as i32, self.coll())?;
        exactly(&st, want, src)
    }

    /// Starts sending `data` to `dest`, lending it to the transport: the
    /// socket transports send what the kernel does not take at once
    /// straight from `data` as room frees up, instead of copying it (see
    /// `Communicator::isend_bytes_lent`). The request borrows `data`, so
    /// the borrow checker keeps it allocated and unchanged while the
    /// request lives.
    ///
    /// # Safety
    ///
    /// The request is waited for or dropped, never leaked (`mem::forget`,
    /// a reference cycle): once it is gone, `data` may change.
    unsafe fn cisend<'b>(&self, data: &'b [u8], dest: usize, tag: u32) -> Result<Request<'b>> {
        // SAFETY: `isend_bytes_lent` needs `data` allocated and unchanged
        // until the request completes or its drop returns, and the request
        // not leaked. The request returned borrows `data` (shared) for
        // 'b, so nothing can free or write it while the request lives; and
        // it is not leaked, by this function's contract.
        unsafe { self.isend_bytes_lent(data, dest as i32, tag, self.coll()) }
    }

    /// Posts a receive of `buf.len()` bytes from `src` that the transport
    /// may write straight into `buf` as the message arrives (see
    /// `Communicator::irecv_bytes_direct`) instead of copying it there at
    /// completion. The request borrows `buf` exclusively, so nothing else
    /// reads or writes it while the request lives.
    ///
    /// # Safety
    ///
    /// The request is waited for or dropped, never leaked (`mem::forget`,
    /// a reference cycle).
    unsafe fn cirecv<'b>(&self, buf: &'b mut [u8], src: usize, tag: u32) -> Result<Request<'b>> {
        // SAFETY: `irecv_bytes_direct` needs the memory valid for writes,
        // neither read nor written nor referenced elsewhere until the
        // request completes or is dropped, and the request not leaked. The
        // request returned holds the exclusive borrow of `buf` for 'b, and
        // `buf` is not used here after its pointer is taken; it is not
        // leaked, by this function's contract.
        unsafe {
            self.irecv_bytes_direct(
                buf.as_mut_ptr(),
                buf.len(),
                src as i32,
                tag as i32,
                self.coll(),
            )
        }
    }

    /// Sends to `dest` and receives exactly `recv.len()` bytes from `src`
    /// at the same time. The receive is posted first, as a sendrecv
    /// does: a partner that sends at the same moment then finds it
    /// waiting, and its message goes straight into `recv` rather than
    /// into the transport's store of messages nobody waits for yet (over
    /// `o2g`, its dump area, one more copy of the whole message).
    fn cexchange(
        &self,
        send: &[u8],
        dest: usize,
        recv: &mut [u8],
        src: usize,
        tag: u32,
    ) -> Result<()> {
        let want = recv.len();
        // SAFETY: `r` and `s` are waited for below, or dropped when an
        // earlier step fails (the `?`s) or unwinds: never leaked.
        let r = unsafe { self.cirecv(recv, src, tag) }?;
        // SAFETY: as for `r`.
        let s = unsafe { self.cisend(send, dest, tag) }?;
        exactly(&r.wait()?, want, src)?;
        s.wait().map(drop)
    }

    fn check_root(&self, root: i32) -> Result<usize> {
        self.world_rank(root)?;
        Ok(root as usize)
    }

    fn p_r(&self) -> (usize, usize) {
        (self.members.len(), self.rank as usize)
    }

    /// Sends `buf[out]` to `dest` while receiving `buf[inn]` (exactly)
    /// from `src`, either of them left out when `None`.
    fn cexchange_within<T: Equivalence>(
        &self,
        buf: &mut [T],
        out: Option<(Range<usize>, usize)>,
        inn: Option<(Range<usize>, usize)>,
        tag: u32,
    ) -> Result<()> {
        let range = |x: &Option<(Range<usize>, usize)>| x.as_ref().map_or(0..0, |x| x.0.clone());
        let Some((data, room)) = disjoint(buf, range(&out), range(&inn)) else {
            // Overlapping blocks (only an allgatherv's blocks can overlap,
            // erroneous in MPI): the receive would change what is being
            // sent, so the send copies it.
            let send = match out {
                Some((range, dest)) => {
                    let data = as_bytes(&buf[range]);
                    Some(self.isend_bytes(data, dest as i32, tag, self.coll())?)
                }
                None => None,
            };
            if let Some((range, src)) = inn {
                self.crecv(as_bytes_mut(&mut buf[range]), src, tag)?;
            }
            return send.map_or(Ok(()), |s| s.wait().map(drop));
        };
        match (out, inn) {
            (Some((_, dest)), Some((_, src))) => {
                self.cexchange(as_bytes(data), dest, as_bytes_mut(room), src, tag)
            }
            // Lent, not `csend`: a blocking send may hand the transport a
            // copy when its partner is slow to take it.
            // SAFETY: waited for at once: never leaked.
            (Some((_, dest)), None) => unsafe { self.cisend(as_bytes(data), dest, tag) }?
                .wait()
                .map(drop),
            (None, Some((_, src))) => self.crecv(as_bytes_mut(room), src, tag),
            (None, None) => Ok(()),
        }
    }

    /// Ring allgather in place: the member at ring position `i` (rank
    /// `(i + shift) % p`) holds block `i` of `buf` (the element range
    /// `block(i)`), and ends with every block. In step `s` each position
    /// passes block `i − s` to its right and takes block `i − s − 1` from
    /// its left, unless `held(position, block)` says the receiver has that
    /// block already: then neither side sends or receives it.
    fn ring_allgather<T: Equivalence>(
        &self,
        buf: &mut [T],
        block: impl Fn(usize) -> Range<usize>,
        shift: usize,
        held: impl Fn(usize, usize) -> bool,
        tag: u32,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let me = (r + p - shift) % p;
        let (right, left) = ((me + 1) % p, (me + p - 1) % p);
        let rank = |pos: usize| (pos + shift) % p;
        for s in 0..p.saturating_sub(1) {
            let (out, inn) = ((me + p - s) % p, (me + 2 * p - s - 1) % p);
            let out = (!held(right, out)).then(|| (block(out), rank(right)));
            let inn = (!held(me, inn)).then(|| (block(inn), rank(left)));
            self.cexchange_within(buf, out, inn, tag)?;
        }
        Ok(())
    }
}

/// Rooted collectives in rsmpi's shape: `world.process_at_rank(root)?`
/// then `broadcast_into`, `reduce_into_root` (at the root) or
/// `reduce_into` (elsewhere), and so on.
impl Process<'_> {
    /// `MPI_Bcast` from this process (§6.4).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::broadcast_into`].
    pub fn broadcast_into<T: Equivalence>(&self, buf: &mut [T]) -> Result<()> {
        self.communicator().broadcast_into(buf, self.rank())
    }

    /// `MPI_Reduce` to this process, called by this process (§6.9.1).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_into`].
    pub fn reduce_into_root<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        self.communicator()
            .reduce_into(send, Some(recv), op, self.rank())
    }

    /// `MPI_Reduce` to this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_into`].
    pub fn reduce_into<T: Equivalence, O: Operation<T>>(&self, send: &[T], op: &O) -> Result<()> {
        self.communicator().reduce_into(send, None, op, self.rank())
    }

    /// `MPI_Gather` to this process, called by this process (§6.5).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_into`].
    pub fn gather_into_root<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.communicator()
            .gather_into(send, Some(recv), self.rank())
    }

    /// `MPI_Gather` to this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_into`].
    pub fn gather_into<T: Equivalence>(&self, send: &[T]) -> Result<()> {
        self.communicator().gather_into(send, None, self.rank())
    }

    /// `MPI_Scatter` from this process, called by this process (§6.6).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_into`].
    pub fn scatter_into_root<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.communicator()
            .scatter_into(Some(send), recv, self.rank())
    }

    /// `MPI_Scatter` from this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_into`].
    pub fn scatter_into<T: Equivalence>(&self, recv: &mut [T]) -> Result<()> {
        self.communicator().scatter_into(None, recv, self.rank())
    }
}

#[cfg(test)]
mod tests {
    use super::{disjoint, part, parts};

    #[test]
    fn disjoint_blocks_or_none() {
        let mut buf = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let (out, inn) = disjoint(&mut buf, 1..3, 3..6).unwrap();
        assert_eq!((out, &*inn), (&[1, 2][..], &[3, 4, 5][..]));
        let (out, inn) = disjoint(&mut buf, 6..8, 0..2).unwrap();
        assert_eq!((out, &*inn), (&[6, 7][..], &[0, 1][..]));
        let (out, inn) = disjoint(&mut buf, 2..6, 4..4).unwrap();
        assert_eq!((out, inn.len()), (&[2, 3, 4, 5][..], 0));
        let (out, inn) = disjoint(&mut buf, 3..3, 0..8).unwrap();
        assert_eq!((out.len(), inn.len()), (0, 8));
        assert!(disjoint(&mut buf, 0..3, 2..4).is_none());
        assert!(disjoint(&mut buf, 2..4, 0..3).is_none());
        assert!(disjoint(&mut buf, 1..2, 1..2).is_none());
    }

    #[test]
    fn blocks_cover_every_item_once_and_differ_by_at_most_one() {
        for p in 1..=17 {
            for n in [0, 1, p - 1, p, p + 1, 3 * p + 1, 1000] {
                let lens: Vec<usize> = (0..p).map(|i| part(n, p, i).len()).collect();
                assert_eq!(parts(n, p, 0..p), 0..n, "n {n}, p {p}");
                assert!((1..p).all(|i| part(n, p, i - 1).end == part(n, p, i).start));
                assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1);
                assert_eq!(parts(n, p, 0..p / 2).len(), lens[..p / 2].iter().sum());
            }
        }
    }
}
