//! Point-to-point cases: ordering, wildcards, zero-length, truncation,
//! invalid arguments, probe, cancel, request families, communicators,
//! 1 GiB messages and dead peers.

use mpi::request::{test_all, test_some, wait_all, wait_any, wait_some};
use mpi::traits::*;
use mpi::{Color, Communicator, Error, SystemOperation, ANY_SOURCE, ANY_TAG};

use crate::{ensure, Check};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
struct Particle {
    pos: [f64; 3],
    id: u64,
}
// SAFETY: repr(C), four 8-byte fields (no padding), any bit pattern valid.
unsafe impl Equivalence for Particle {}

/// Runs on every rank; ranks 0 and 1 do most of the talking.
pub(crate) fn run() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    ensure!(size >= 2, "p2p needs two ranks");

    // Ordering (§3.5): one tag in order; two tags each in order.
    if rank == 0 {
        for i in 0..50u32 {
            world.send(&[i], 1, 7)?;
        }
        for i in 0..20u32 {
            world.send(&[i], 1, 1 + (i % 2) as i32)?;
        }
    } else if rank == 1 {
        for i in 0..50u32 {
            let mut v = [0u32];
            world.recv(&mut v, 0, 7)?;
            ensure!(v[0] == i, "tag 7: got {} expected {i}", v[0]);
        }
        for want in [2, 1] {
            for k in 0..10u32 {
                let mut v = [0u32];
                let st = world.recv(&mut v, 0, want as i32)?;
                ensure!(v[0] == 2 * k + want - 1, "tag {want}: got {}", v[0]);
                ensure!(st.tag() == want as i32, "status tag");
            }
        }
    }

    // Wildcards (§3.2.4): everyone reports to rank 0.
    if rank == 0 {
        let mut seen = vec![false; size as usize];
        for _ in 1..size {
            let mut v = [0i32];
            let st = world.recv(&mut v, ANY_SOURCE, ANY_TAG)?;
            ensure!(
                st.source_rank() == v[0] && st.tag() == v[0] + 100,
                "wildcard status {st:?} for {v:?}"
            );
            seen[v[0] as usize] = true;
        }
        ensure!(seen[1..].iter().all(|s| *s), "missing senders: {seen:?}");
    } else {
        world.send(&[rank], 0, rank + 100)?;
    }
    // Later traffic must not meet rank 0's ANY_TAG receives.
    world.barrier()?;

    // Zero-length messages, and truncation (§3.2.4).
    if rank == 0 {
        world.send::<u8>(&[], 1, 3)?;
        world.send::<u8>(&[], 1, 3)?;
        world.send(&[1u32, 2, 3, 4, 5, 6, 7, 8], 1, 4)?;
        world.send(&[9u32], 1, 5)?;
    } else if rank == 1 {
        let st = world.recv::<u8>(&mut [], 0, 3)?;
        ensure!(st.count::<u8>() == Some(0), "zero-length count");
        let mut big = [7u64; 4];
        let st = world.recv(&mut big, 0, 3)?;
        ensure!(
            st.count::<u64>() == Some(0) && big == [7; 4],
            "zero-length into a buffer"
        );
        let mut small = [0u32; 4];
        match world.recv(&mut small, 0, 4) {
            Err(Error::Truncated {
                len: 32,
                capacity: 16,
                source_rank: 0,
                tag: 4,
            }) => {}
            other => return Err(format!("expected truncation, got {other:?}").into()),
        }
        ensure!(small == [1, 2, 3, 4], "truncated prefix {small:?}");
        let mut v = [0u32];
        world.recv(&mut v, 0, 5)?;
        ensure!(v == [9], "traffic after a truncation");
    }

    // Invalid arguments are errors, not panics.
    ensure!(
        matches!(world.send(&[1u8], size, 0), Err(Error::InvalidRank { .. })),
        "send to rank size"
    );
    ensure!(
        matches!(world.send(&[1u8], 0, -5), Err(Error::InvalidTag(-5))),
        "negative tag"
    );
    ensure!(
        matches!(
            world.recv(&mut [0u8], 99, 0),
            Err(Error::InvalidRank { .. })
        ),
        "recv from 99"
    );
    ensure!(world.process_at_rank(-1).is_err(), "process_at_rank(-1)");

    // Probe (§3.8.1), get_count, receive_vec; user structs.
    if rank == 0 {
        world.send(&[1.5f64, 2.5, 3.5, 4.5, 5.5], 1, 9)?;
        let p = [Particle {
            pos: [1.0, 2.0, 3.0],
            id: 42,
        }; 3];
        world.process_at_rank(1)?.send_with_tag(&p, 10)?;
    } else if rank == 1 {
        let st = world.probe(0, ANY_TAG)?;
        ensure!(
            st.tag() == 9 && st.count::<f64>() == Some(5) && st.count::<[u8; 3]>().is_none(),
            "probe {st:?}"
        );
        let (v, _) = world.any_process().receive_vec::<f64>()?;
        ensure!(v == [1.5, 2.5, 3.5, 4.5, 5.5], "receive_vec {v:?}");
        let mut p = [Particle::default(); 3];
        let st = world
            .process_at_rank(0)?
            .receive_into_with_tag(&mut p, 10)?;
        ensure!(
            st.count::<Particle>() == Some(3) && p[2].id == 42 && p[1].pos[2] == 3.0,
            "struct {p:?}"
        );
    }

    // Cancel of a receive (§3.8.4); iprobe finds nothing.
    let mut never = [0u8; 4];
    let mut req = world.irecv(&mut never, ANY_SOURCE, 1000)?;
    req.cancel()?;
    ensure!(req.wait()?.is_cancelled(), "cancelled status");
    ensure!(
        world.iprobe(ANY_SOURCE, 1000)?.is_none(),
        "iprobe found a ghost"
    );

    // Ring with isend/irecv and the wait/test families (§3.7).
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let out: Vec<i64> = (0..1000).map(|i| i64::from(rank) * 10_000 + i).collect();
    let mut a = vec![0i64; 1000];
    let mut b = vec![0i64; 1000];
    {
        let mut reqs = vec![
            Some(world.irecv(&mut a, prev, 20)?),
            Some(world.isend(&out, next, 20)?),
        ];
        let mut done = 0;
        while let Some((i, _)) = wait_any(&mut reqs)? {
            ensure!(reqs[i].is_none(), "wait_any left the slot");
            done += 1;
        }
        ensure!(done == 2, "wait_any completed {done}");
    }
    ensure!(
        a[999] == i64::from(prev) * 10_000 + 999,
        "ring via wait_any"
    );
    {
        let mut reqs = vec![world.irecv(&mut b, prev, 21)?, world.isend(&out, next, 21)?];
        let mut spins = 0u64;
        while test_all(&mut reqs)?.is_none() {
            spins += 1;
            ensure!(spins < 50_000_000, "test_all never completed");
        }
    }
    ensure!(b == a, "ring via test_all");

    // Sendrecv (§3.10) of 1 MiB both ways around the ring: no deadlock.
    let big_out = vec![rank as u8; 1 << 20];
    let mut big_in = vec![0u8; 1 << 20];
    let st = world.sendrecv(&big_out, next, 30, &mut big_in, prev, 30)?;
    ensure!(
        st.count::<u8>() == Some(1 << 20) && big_in.iter().all(|x| *x == prev as u8),
        "sendrecv"
    );

    // Many isends before the receiver looks: all queued, all delivered.
    let chunks: Vec<Vec<u32>> = (0..8).map(|i| vec![i; 100_000]).collect();
    let reqs = chunks
        .iter()
        .map(|c| world.isend(c, next, 31))
        .collect::<Result<Vec<_>, _>>()?;
    for i in 0..8u32 {
        let mut v = vec![0u32; 100_000];
        world.recv(&mut v, prev, 31)?;
        ensure!(v.iter().all(|x| *x == i), "queued isend {i}");
    }
    wait_all(reqs)?;

    communicators(&world)?;
    synchronous(&world)?;
    nonblocking_synchronous(&world)?;
    matched_probe(&world)?;
    some(&world)?;
    scoped(&world)?;
    clocks()?;
    universe.finalize()?;
    Ok(())
}

/// How many sends of [`LEAKED_LEN`] bytes `scoped` leaks at once (8 MiB
/// in all: more than the sockets buffer while the receiver sleeps).
const LEAKED_BURST: usize = 128;

/// Eager on every transport (the socket transports' limit).
const LEAKED_LEN: usize = 64 << 10;

/// Scoped nonblocking operations (`mpi::scope`): exchanges in place at
/// an eager and a rendezvous size, and requests leaked inside a scope,
/// which must neither send what the buffer holds after the scope nor
/// write a buffer the scope gave back.
fn scoped(world: &Communicator) -> Check {
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    for len in [1000usize, 3 << 20] {
        let out: Vec<u8> = (0..len).map(|i| (i as u8) ^ rank as u8).collect();
        let mut inp = vec![0u8; len];
        mpi::scope::scope(|s| -> Check {
            let r = world.irecv_scoped(s, &mut inp, prev, 40)?;
            let w = world.isend_scoped(s, &out, next, 40)?;
            wait_all(vec![r, w])?;
            Ok(())
        })?;
        ensure!(
            inp.iter()
                .enumerate()
                .all(|(i, &b)| b == (i as u8) ^ prev as u8),
            "scoped exchange of {len} bytes"
        );
    }
    if rank == 0 {
        // A leaked rendezvous send: the scope copies what has not gone
        // out before it returns, so overwriting the buffer afterwards
        // must not change the message. Rank 1 posts its receive only
        // after this overwrite.
        let mut out = vec![0x5au8; 3 << 20];
        mpi::scope::scope(|s| -> Check {
            std::mem::forget(world.isend_scoped(s, &out, 1, 41)?);
            Ok(())
        })?;
        out.fill(0xee);
        // Leaked eager-sized sends, more than the sockets take while rank
        // 1 sleeps: the rest waits in the sender's queue (or, past the
        // receiver's credit, as requests to send), which must copy it as
        // the scope ends.
        let mut burst: Vec<Vec<u8>> = (0..LEAKED_BURST)
            .map(|i| vec![i as u8; LEAKED_LEN])
            .collect();
        mpi::scope::scope(|s| -> Check {
            for b in &burst {
                std::mem::forget(world.isend_scoped(s, b, 1, 45)?);
            }
            Ok(())
        })?;
        burst.iter_mut().for_each(|b| b.fill(0xee));
        world.send::<u8>(&[], 1, 42)?;
        // A leaked receive: released at the scope's end, so the message
        // rank 1 sends afterwards must not land in `buf`.
        let mut buf = vec![1u8; 64];
        mpi::scope::scope(|s| -> Check {
            std::mem::forget(world.irecv_scoped(s, &mut buf, 1, 43)?);
            Ok(())
        })?;
        world.send::<u8>(&[], 1, 44)?;
        let mut other = vec![0u8; 64];
        world.recv(&mut other, 1, 43)?;
        ensure!(other.iter().all(|&b| b == 9), "tag 43 payload");
        ensure!(
            buf.iter().all(|&b| b == 1),
            "a released scoped receive wrote its buffer"
        );
    } else if rank == 1 {
        // Out of MPI, so that rank 0's leaked sends find no reader.
        std::thread::sleep(std::time::Duration::from_millis(300));
        world.recv::<u8>(&mut [], 0, 42)?;
        let mut inp = vec![0u8; 3 << 20];
        world.recv(&mut inp, 0, 41)?;
        ensure!(
            inp.iter().all(|&b| b == 0x5a),
            "a leaked scoped send carried bytes written after its scope"
        );
        let mut got = vec![0u8; LEAKED_LEN];
        for i in 0..LEAKED_BURST {
            world.recv(&mut got, 0, 45)?;
            ensure!(
                got.iter().all(|&b| b == i as u8),
                "leaked scoped eager send {i} carried bytes written after its scope"
            );
        }
        world.recv::<u8>(&mut [], 0, 44)?;
        world.send(&[9u8; 64], 0, 43)?;
    }
    Ok(())
}

/// `MPI_Ssend` (§3.4): it returns only after a receive matched.
fn synchronous(world: &Communicator) -> Check {
    let rank = world.rank();
    // Rank 1 posts its receive late; rank 0's ssend must not return
    // before that. Rank 0 says when its ssend returned; rank 1 looks for
    // that message for a while before it posts (an eager ssend would
    // have returned, and the message would be there).
    if rank == 0 {
        world.ssend(&[5u32, 6], 1, 20)?;
        world.send::<u8>(&[], 1, 21)?;
    } else if rank == 1 {
        not_returned_yet(world, 21)?;
        let mut v = [0u32; 2];
        world.recv(&mut v, 0, 20)?;
        ensure!(v == [5, 6], "ssend payload {v:?}");
        world.recv::<u8>(&mut [], 0, 21)?;
    }
    // Each posts a receive, then ssends to the other: the posted
    // receives match, so neither waits for the other's program order.
    if rank < 2 {
        let other = 1 - rank;
        let mut v = [0i32];
        let r = world.irecv(&mut v, other, 22)?;
        world.ssend(&[rank], other, 22)?;
        r.wait()?;
        ensure!(v == [other], "crossed ssend got {v:?}");
    }
    // To oneself, with the receive posted first.
    let mut v = [0i32];
    let r = world.irecv(&mut v, rank, 23)?;
    world.ssend(&[rank + 1], rank, 23)?;
    r.wait()?;
    ensure!(v == [rank + 1], "self ssend");
    // On a duplicate, taken by a wildcard receive after a probe.
    let dup = world.dup()?;
    if rank == 0 {
        dup.ssend(&[7u8; 3000], 1, 24)?;
    } else if rank == 1 {
        let st = dup.probe(ANY_SOURCE, ANY_TAG)?;
        ensure!(st.source_rank() == 0 && st.tag() == 24, "probe {st:?}");
        let mut v = [0u8; 3000];
        dup.recv(&mut v, ANY_SOURCE, ANY_TAG)?;
        ensure!(v.iter().all(|x| *x == 7), "ssend on a dup");
    }
    // Above the rendezvous threshold (a request to send, the data once
    // matched): the same promise, late receive or crossed, payload exact.
    let big: Vec<u32> = (0..LARGE_SSEND).collect();
    if rank == 0 {
        world.ssend(&big, 1, 25)?;
        world.send::<u8>(&[], 1, 26)?;
    } else if rank == 1 {
        not_returned_yet(world, 26)?;
        let mut v = vec![0u32; big.len()];
        world.recv(&mut v, 0, 25)?;
        ensure!(v == big, "large ssend payload");
        world.recv::<u8>(&mut [], 0, 26)?;
    }
    if rank < 2 {
        let other = 1 - rank;
        let mut v = vec![0u32; big.len()];
        let r = world.irecv(&mut v, other, 27)?;
        world.ssend(&big, other, 27)?;
        r.wait()?;
        ensure!(v == big, "crossed large ssend");
    }
    ensure!(
        matches!(world.ssend(&[0u8], 0, -1), Err(Error::InvalidTag(-1))),
        "ssend with a negative tag"
    );
    world.barrier()?;
    Ok(())
}

/// `MPI_Issend` (§3.7.2): the request completes only once a receive
/// matched; several in flight to one peer each complete with their own
/// message's receive, whatever the order; a request dropped before its
/// acknowledgement came never completes a later synchronous send.
fn nonblocking_synchronous(world: &Communicator) -> Check {
    let rank = world.rank();
    let wait_a_while = |r: &mut mpi::Request<'_>, what: &str| -> Check {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
        while std::time::Instant::now() < until {
            ensure!(r.test()?.is_none(), "{what} completed before its receive");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(())
    };
    if rank == 0 {
        let data = [1u32, 2];
        let mut r = world.issend(&data, 1, 40)?;
        wait_a_while(&mut r, "issend")?;
        world.send::<u8>(&[], 1, 41)?;
        r.wait()?;
        // Two in flight, received in the other order.
        let (x, y) = ([42u8; 10], vec![43u8; 1 << 20]);
        let mut r42 = world.issend(&x, 1, 42)?;
        let r43 = world.issend(&y, 1, 43)?;
        world.recv::<u8>(&mut [], 1, 44)?;
        r43.wait()?;
        wait_a_while(&mut r42, "the issend received second")?;
        world.send::<u8>(&[], 1, 45)?;
        r42.wait()?;
        // Dropped before its receive, then a blocking ssend with the tag.
        drop(world.issend(&[46u8], 1, 46)?);
        world.ssend(&[47u8], 1, 46)?;
        world.send::<u8>(&[], 1, 48)?;
    } else if rank == 1 {
        world.recv::<u8>(&mut [], 0, 41)?;
        let mut v = [0u32; 2];
        world.recv(&mut v, 0, 40)?;
        ensure!(v == [1, 2], "issend payload {v:?}");
        let mut y = vec![0u8; 1 << 20];
        world.recv(&mut y, 0, 43)?;
        ensure!(y.iter().all(|b| *b == 43), "large issend payload");
        world.send::<u8>(&[], 0, 44)?;
        world.recv::<u8>(&mut [], 0, 45)?;
        let mut x = [0u8; 10];
        world.recv(&mut x, 0, 42)?;
        ensure!(x == [42; 10], "issend payload {x:?}");
        let mut b = [0u8];
        world.recv(&mut b, 0, 46)?;
        ensure!(b == [46], "dropped issend's payload {b:?}");
        not_returned_yet(world, 48)?;
        world.recv(&mut b, 0, 46)?;
        ensure!(b == [47], "ssend's payload {b:?}");
        world.recv::<u8>(&mut [], 0, 48)?;
    }
    // To oneself, and with the receive posted first.
    let mut v = [0i32];
    let r = world.irecv(&mut v, rank, 49)?;
    world.issend(&[rank + 5], rank, 49)?.wait()?;
    r.wait()?;
    ensure!(v == [rank + 5], "self issend");
    world.barrier()?;
    Ok(())
}

/// Matched probe (§3.8.2, §3.8.3): the probed message is out of matching
/// (a receive after the probe takes the next one), received by
/// `Message::recv` or `irecv`, truncated like any receive, at eager and
/// rendezvous sizes, from any source.
fn matched_probe(world: &Communicator) -> Check {
    let (rank, size) = (world.rank(), world.size());
    if rank == 0 {
        world.send(&[1u32], 1, 50)?;
        world.send(&[2u32, 3], 1, 50)?;
        world.send(&[4u32, 5, 6, 7], 1, 51)?;
        let big: Vec<u32> = (0..LARGE_SSEND).collect();
        world.send(&big, 1, 52)?;
        world.send(&[8u32], 1, 53)?;
    } else if rank == 1 {
        let m = world.mprobe(0, 50)?;
        ensure!(
            m.status().count::<u32>() == Some(1),
            "mprobe {:?}",
            m.status()
        );
        let mut two = [0u32; 2];
        let st = world.recv(&mut two, ANY_SOURCE, 50)?;
        ensure!(
            two == [2, 3] && st.count::<u32>() == Some(2),
            "recv after mprobe {two:?}"
        );
        let mut one = [0u32; 2];
        let st = m.recv(&mut one)?;
        ensure!(
            one[0] == 1 && st.count::<u32>() == Some(1) && st.tag() == 50,
            "mrecv"
        );
        // Truncated: the prefix that fits, and the error.
        let m = loop {
            if let Some(m) = world.improbe(ANY_SOURCE, 51)? {
                break m;
            }
        };
        ensure!(m.status().source_rank() == 0, "improbe {:?}", m.status());
        let mut short = [0u32; 2];
        ensure!(
            matches!(m.recv(&mut short), Err(Error::Truncated { len: 16, .. })) && short == [4, 5],
            "truncated mrecv {short:?}"
        );
        // Above the rendezvous threshold, through irecv.
        let m = world.mprobe(0, ANY_TAG)?;
        ensure!(m.status().tag() == 52, "big mprobe {:?}", m.status());
        ensure!(
            world.iprobe(0, 52)?.is_none(),
            "a probed message is still visible"
        );
        let mut big = vec![0u32; LARGE_SSEND as usize];
        m.irecv(&mut big).wait()?;
        ensure!(
            big.iter().enumerate().all(|(i, x)| *x == i as u32),
            "big imrecv"
        );
        // Dropped without a receive: discarded.
        drop(world.mprobe(0, 53)?);
        ensure!(
            world.iprobe(0, 53)?.is_none(),
            "a dropped message came back"
        );
    }
    // From any source, every other rank's message exactly once.
    for r in (0..size).filter(|&r| r != rank) {
        world.send(&[rank, r], r, 54)?;
    }
    let mut seen = vec![false; size as usize];
    for _ in 1..size {
        let m = world.mprobe(ANY_SOURCE, 54)?;
        let from = m.status().source_rank();
        let mut v = [0i32; 2];
        m.recv(&mut v)?;
        ensure!(
            v == [from, rank] && !seen[from as usize],
            "any-source mrecv {v:?}"
        );
        seen[from as usize] = true;
    }
    world.barrier()?;
    Ok(())
}

/// `MPI_Waitsome`/`MPI_Testsome` (§3.7.5): every completed request comes
/// back once, with its index and outcome.
fn some(world: &Communicator) -> Check {
    let (rank, size) = (world.rank(), world.size());
    let n = size as usize;
    let mut bufs = vec![[0i32; 2]; n];
    let outs: Vec<[i32; 2]> = (0..size).map(|r| [rank, r]).collect();
    let mut reqs: Vec<Option<mpi::Request<'_>>> = Vec::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        reqs.push(Some(world.irecv(b, r as i32, 60)?));
    }
    for (r, o) in outs.iter().enumerate() {
        reqs.push(Some(world.isend(o, r as i32, 60)?));
    }
    let mut got = vec![false; 2 * n];
    let mut left = 2 * n;
    let mut tested = 0;
    while left > 0 {
        let done = if tested % 2 == 0 {
            wait_some(&mut reqs)?
        } else {
            test_some(&mut reqs)?
        };
        tested += 1;
        ensure!(
            tested % 2 == 0 || !done.is_empty(),
            "wait_some returned nothing"
        );
        for (i, outcome) in done {
            outcome?;
            ensure!(!got[i] && reqs[i].is_none(), "request {i} twice or left in");
            got[i] = true;
            left -= 1;
        }
    }
    ensure!(wait_some(&mut reqs)?.is_empty(), "wait_some on nothing");
    // MPI_Isendrecv (§3.10): one request for both, the receive's status.
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut got = [0i32; 2];
    let sent = [rank, 7];
    let st = world
        .isendrecv(&sent, next, 61, &mut got, prev, 61)?
        .wait()?;
    ensure!(
        got == [prev, 7] && st.source_rank() == prev && st.tag() == 61,
        "isendrecv {got:?} {st:?}"
    );
    ensure!(test_some(&mut reqs)?.is_empty(), "test_some on nothing");
    drop(reqs);
    for (r, b) in bufs.iter().enumerate() {
        ensure!(*b == [r as i32, rank], "waitsome payload {b:?}");
    }
    world.barrier()?;
    Ok(())
}

/// Elements of the large synchronous sends: 1 MiB, above the default
/// rendezvous threshold (64 KiB).
const LARGE_SSEND: u32 = 1 << 18;

/// Rank 1's side of a late receive: for a while, rank 0's note (tag `note`,
/// sent once its ssend returned) must not be there, since no receive was
/// posted for the ssend yet. Causal, so it holds across machines whose
/// clocks differ.
fn not_returned_yet(world: &Communicator, note: i32) -> Check {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < until {
        ensure!(
            world.iprobe(0, note)?.is_none(),
            "ssend returned before the receive was posted"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}

/// dup and split (§7.4.2): separate contexts, right ranks.
fn communicators(world: &Communicator) -> Check {
    let (rank, size) = (world.rank(), world.size());
    let dup = world.dup()?;
    ensure!(dup.rank() == rank && dup.size() == size, "dup shape");
    if rank == 0 {
        dup.send(&[1u8], 1, 1)?;
        world.send(&[2u8], 1, 1)?;
    } else if rank == 1 {
        let mut v = [0u8];
        world.recv(&mut v, 0, 1)?;
        ensure!(v == [2], "world received the dup's message");
        dup.recv(&mut v, 0, 1)?;
        ensure!(v == [1], "dup message");
    }
    let half = world
        .split(Color::With((rank % 2) as u32), -rank)?
        .ok_or("split gave None")?;
    let expect_size = (size + 1 - rank % 2) / 2;
    ensure!(
        half.size() == expect_size,
        "split size {} vs {expect_size}",
        half.size()
    );
    // Keys are -rank, so ranks are reversed within each half.
    ensure!(
        half.rank() == expect_size - 1 - rank / 2,
        "split rank {}",
        half.rank()
    );
    let mut sum = [0];
    half.all_reduce_into(&[rank], &mut sum, &SystemOperation::Sum)?;
    let want: i32 = (0..size).filter(|r| r % 2 == rank % 2).sum();
    ensure!(
        sum[0] == want,
        "allreduce in the split: {} vs {want}",
        sum[0]
    );
    let none = world.split(
        if rank == 0 {
            Color::Undefined
        } else {
            Color::With(0)
        },
        0,
    )?;
    ensure!(none.is_none() == (rank == 0), "MPI_UNDEFINED color");
    Ok(())
}

fn clocks() -> Check {
    let t0 = mpi::time();
    let t1 = mpi::wtime();
    ensure!(
        t1 >= t0 && mpi::wtick() > 0.0 && mpi::time_resolution() < 1.0,
        "clock"
    );
    Ok(())
}

/// A world of one sending to itself.
pub(crate) fn run_self() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    ensure!(world.size() == 1 && world.rank() == 0, "singleton shape");
    world.send(&[1u16, 2, 3], 0, 5)?;
    let req = world.isend(&[4u16], 0, 6)?;
    req.wait()?;
    let mut v = [0u16; 3];
    let st = world.recv(&mut v, ANY_SOURCE, 5)?;
    ensure!(v == [1, 2, 3] && st.source_rank() == 0, "self message");
    let mut w = [0u16];
    world.recv(&mut w, 0, ANY_TAG)?;
    ensure!(w == [4], "self isend");
    let r = world.irecv(&mut w, 0, 8)?;
    world.ssend(&[5u16], 0, 8)?;
    r.wait()?;
    ensure!(w == [5], "self ssend");
    // Nothing can ever arrive: a deadlock is reported, not waited out.
    ensure!(
        matches!(world.recv(&mut w, 0, 9), Err(Error::Deadlock(_))),
        "deadlock not detected"
    );
    universe.finalize()?;
    Ok(())
}

fn big_len() -> usize {
    std::env::var("O2G_CONF_BIG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30)
}

/// Marks every 4099th byte of `buf` with a pattern (fills in debug
/// builds would take seconds per GiB).
fn stamp(buf: &mut [u8]) {
    for i in (0..buf.len()).step_by(4099) {
        buf[i] = (i % 251) as u8 + 1;
    }
    if let Some(last) = buf.last_mut() {
        *last = 0xEE;
    }
}

fn stamped(buf: &[u8]) -> bool {
    (0..buf.len().saturating_sub(1))
        .step_by(4099)
        .all(|i| buf[i] == (i % 251) as u8 + 1)
        && buf.last().is_none_or(|b| *b == 0xEE)
}

/// A 1 GiB message from rank 0 to rank 1.
pub(crate) fn big() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let n = big_len();
    if world.rank() == 0 {
        let mut buf = vec![0u8; n];
        stamp(&mut buf);
        world.recv::<u8>(&mut [], 1, 0)?;
        world.send(&buf, 1, 1)?;
    } else if world.rank() == 1 {
        let mut buf = vec![0u8; n];
        world.send::<u8>(&[], 0, 0)?;
        let st = world.recv(&mut buf, 0, 1)?;
        ensure!(st.count_bytes() == n && stamped(&buf), "1 GiB content");
    }
    universe.finalize()?;
    Ok(())
}

/// A 1 GiB message from a process to itself.
pub(crate) fn big_self() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let n = big_len();
    let mut buf = vec![0u8; n];
    stamp(&mut buf);
    world.send(&buf, 0, 1)?;
    drop(buf);
    let mut got = vec![0u8; n];
    world.recv(&mut got, 0, 1)?;
    ensure!(stamped(&got), "1 GiB self content");
    Ok(())
}

/// Bytes of the large messages of `large_recv`: above the size up to which
/// the o2g transport receives through its ring, so its blocking receives
/// are posted straight into the caller's buffer.
pub(crate) const LARGE: usize = 256 << 10;

/// Blocking receives of large messages, which a transport may write
/// straight into the caller's memory: posted before the message, after
/// it arrived, truncated (bytes past the buffer stay untouched) and from
/// any source. Rank 0 sends, rank 1 receives.
pub(crate) fn large_recv() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let fill = |seed: usize, n: usize| -> Vec<u8> {
        (0..n).map(|i| ((i * 7 + seed) % 253) as u8).collect()
    };
    if world.rank() == 0 {
        // Posted first (very likely): rank 1 is already waiting.
        world.recv::<u8>(&mut [], 1, 9)?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        world.send(&fill(1, LARGE), 1, 1)?;
        // Arrived first: tag 3 is received before tag 2.
        world.send(&fill(2, 64 << 10), 1, 2)?;
        world.send(&[3u8], 1, 3)?;
        // Longer than the receive.
        world.send(&fill(4, LARGE), 1, 4)?;
        world.send(&fill(5, LARGE), 1, 5)?;
    } else if world.rank() == 1 {
        let mut buf = vec![0u8; LARGE];
        world.send::<u8>(&[], 0, 9)?;
        let st = world.recv(&mut buf, 0, 1)?;
        ensure!(
            st.count_bytes() == LARGE && buf == fill(1, LARGE),
            "posted first"
        );

        world.recv(&mut [0u8; 1], 0, 3)?;
        let st = world.recv(&mut buf, 0, 2)?;
        ensure!(
            st.count_bytes() == 64 << 10 && buf[..64 << 10] == fill(2, 64 << 10)[..],
            "arrived first"
        );

        // Only the first `cap` bytes of `buf` are the receive's.
        let cap = LARGE / 2 + 1;
        buf.fill(0xAB);
        match world.recv(&mut buf[..cap], 0, 4) {
            Err(Error::Truncated { len, capacity, .. })
                if len == LARGE as u64 && capacity == cap => {}
            other => return Err(format!("expected truncation, got {other:?}").into()),
        }
        ensure!(buf[..cap] == fill(4, LARGE)[..cap], "truncated prefix");
        ensure!(
            buf[cap..].iter().all(|&b| b == 0xAB),
            "bytes past the receive written"
        );

        let st = world.recv(&mut buf, ANY_SOURCE, ANY_TAG)?;
        ensure!(
            st.source_rank() == 0 && st.tag() == 5 && buf == fill(5, LARGE),
            "any source: {st:?}"
        );
    }
    universe.finalize()?;
    Ok(())
}

/// Bytes of each backlog message; `BACKLOG_AREA` of them would fill the
/// o2g module's dump area exactly.
const BACKLOG_MSG: usize = 4096;
/// The dump area the matrix runs `backlog` with (`O2G_DUMP_BYTES`).
pub(crate) const BACKLOG_AREA: usize = 64 << 10;

/// Rank 1 sends enough tag-1 messages to fill the receiver's area for
/// unexpected messages, then one tag-2 message; rank 0 receives the tag-2
/// message first. Over o2g the area holds one eager message per
/// connection, so the sender runs out of credit at once and the rest,
/// the tag-2 message too, go as requests to send, which the receiving
/// module stores as envelopes and answers when a receive takes them; a
/// receive that waited for the tag-1 messages to leave first would wait
/// forever. Every transport must deliver both in full.
pub(crate) fn backlog() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let count = BACKLOG_AREA / BACKLOG_MSG;
    let fill = |i: usize| vec![(i % 251) as u8 + 1; BACKLOG_MSG];
    if world.rank() == 1 {
        let msgs: Vec<Vec<u8>> = (0..count).map(fill).collect();
        let reqs = msgs
            .iter()
            .map(|m| world.isend(m, 0, 1))
            .collect::<Result<Vec<_>, _>>()?;
        world.send(&[0xAB_u8; 1000], 0, 2)?;
        wait_all(reqs)?;
    } else if world.rank() == 0 {
        // Let everything arrive before the receive is posted; the other
        // order must work too,
        // and is what a fast receiver gets.
        std::thread::sleep(std::time::Duration::from_millis(500));
        let mut last = [0u8; 1000];
        let st = world.recv(&mut last, 1, 2)?;
        ensure!(
            st.count_bytes() == 1000 && last.iter().all(|b| *b == 0xAB),
            "tag-2 message: {} bytes, content wrong",
            st.count_bytes()
        );
        for i in 0..count {
            let mut buf = vec![0u8; BACKLOG_MSG];
            let st = world.recv(&mut buf, 1, 1)?;
            ensure!(
                st.count_bytes() == BACKLOG_MSG && buf == fill(i),
                "backlog message {i}: {} bytes, content wrong",
                st.count_bytes()
            );
        }
    }
    universe.finalize()?;
    Ok(())
}

/// Messages of the `late_tag` case, and their size: together more than
/// the o2g module's default area for unexpected messages (64 MiB).
const LATE_TAG_COUNT: usize = 20;
const LATE_TAG_MSG: usize = 4 << 20;
/// The short messages of its `O2G_CONF_MANY_SMALL` variant: four times
/// the default eager credit (256 messages).
const LATE_TAG_SMALL_COUNT: usize = 1024;
const LATE_TAG_SMALL_MSG: usize = 1024;

/// The program of issue 20: rank 1 (in a world of one, rank 0 itself)
/// starts `LATE_TAG_COUNT` sends of 4 MiB with tag 1, then one with tag
/// 2; rank 0 waits for the tag-2
/// message first, then takes the others in order. MPI's progress rule
/// says it completes: the tag-1 messages must not stand in the way of
/// the tag-2 one, however little room the receiver has for them. With
/// `O2G_CONF_ONE_HUGE=1` one tag-1 message is instead larger than all
/// the others together; with `O2G_CONF_MANY_SMALL=1` the tag-1 messages
/// are `LATE_TAG_SMALL_COUNT` short ones, more than a sender's eager
/// credit covers.
pub(crate) fn late_tag() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let flag = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
    let (huge, small) = (flag("O2G_CONF_ONE_HUGE"), flag("O2G_CONF_MANY_SMALL"));
    let count = if small {
        LATE_TAG_SMALL_COUNT
    } else {
        LATE_TAG_COUNT
    };
    let size = |i: usize| {
        if small {
            LATE_TAG_SMALL_MSG
        } else if huge && i == 0 {
            LATE_TAG_COUNT * LATE_TAG_MSG
        } else {
            LATE_TAG_MSG
        }
    };
    let fill = |i: usize| vec![(i % 251) as u8 + 1; size(i)];
    // The last rank sends to rank 0: in a world of one, to itself.
    let sender = world.size() - 1;
    let msgs: Vec<Vec<u8>> = if world.rank() == sender {
        (0..count).map(fill).collect()
    } else {
        Vec::new()
    };
    let mut reqs = Vec::new();
    if world.rank() == sender {
        reqs = msgs
            .iter()
            .map(|m| world.isend(m, 0, 1))
            .collect::<Result<Vec<_>, _>>()?;
        world.send(&[0xCD_u8; 100], 0, 2)?;
    }
    if world.rank() == 0 {
        let mut last = [0u8; 100];
        let st = world.recv(&mut last, sender, 2)?;
        ensure!(
            st.count_bytes() == 100 && last.iter().all(|b| *b == 0xCD),
            "tag-2 message: {} bytes, content wrong",
            st.count_bytes()
        );
        for i in 0..count {
            let mut buf = vec![0u8; size(i)];
            let st = world.recv(&mut buf, sender, 1)?;
            ensure!(
                st.count_bytes() == size(i) && buf == fill(i),
                "tag-1 message {i}: {} bytes, content wrong",
                st.count_bytes()
            );
        }
    }
    wait_all(reqs)?;
    universe.finalize()?;
    Ok(())
}

/// Message sizes and rounds of `exchange`.
const EXCHANGE_SIZES: [usize; 3] = [64 << 10, 1 << 20, 2 << 20];
const EXCHANGE_ROUNDS: usize = 40;

/// Ranks 0 and 1 exchange messages of each of [`EXCHANGE_SIZES`] with
/// `MPI_Sendrecv`, [`EXCHANGE_ROUNDS`] times, each round's bytes its own,
/// as a large collective's steps do; also with a rendezvous threshold
/// above them all, so that both ranks' sends are eager. (Such exchanges,
/// many more of them, once hung over sockets-epoll: a send queued behind a
/// credit message lost epoll's wake-up. The transport's unit test
/// `an_isend_behind_a_queued_message_goes_out` pins that down.)
pub(crate) fn exchange() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let rank = world.rank();
    if rank < 2 {
        let peer = 1 - rank;
        let fill = |from: i32, round: usize, len: usize| -> Vec<u8> {
            (0..len)
                .map(|i| (i as u8) ^ (round as u8).wrapping_mul(7) ^ (from as u8).wrapping_mul(101))
                .collect()
        };
        for len in EXCHANGE_SIZES {
            let mut got = vec![0u8; len];
            for round in 0..EXCHANGE_ROUNDS {
                let mine = fill(rank, round, len);
                let st = world.sendrecv(&mine, peer, 5, &mut got, peer, 5)?;
                ensure!(
                    st.count_bytes() == len && got == fill(peer, round, len),
                    "rank {rank}: round {round} of {len}-byte exchanges brought other bytes"
                );
            }
        }
    }
    world.barrier()?;
    universe.finalize()?;
    Ok(())
}

/// Bytes each rank sends in `head_to_head`: above the rendezvous threshold.
const HEAD_TO_HEAD: usize = 1 << 20;

/// Ranks 0 and 1 each send a large message to the other with a blocking
/// send before either receives (a standard send may wait for its receive,
/// but ours never waits forever), then overwrite the buffer at once, and
/// receive only later: what arrives is what the buffer held at the send.
/// The same for nonblocking sends whose request is dropped, or waited
/// for, before the buffer is overwritten.
pub(crate) fn head_to_head() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    ensure!(size >= 2, "head_to_head needs two ranks");
    let fill = |seed: i32| -> Vec<u8> {
        (0..HEAD_TO_HEAD)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed as u8))
            .collect()
    };
    if rank < 2 {
        let peer = 1 - rank;
        let mut mine = fill(rank);
        world.send(&mine, peer, 1)?;
        mine.fill(0xEE);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut got = vec![0u8; HEAD_TO_HEAD];
        let st = world.recv(&mut got, peer, 1)?;
        ensure!(
            st.count_bytes() == HEAD_TO_HEAD && got == fill(peer),
            "rank {rank}: the message from rank {peer} differs from what was sent"
        );
        // A nonblocking send whose request is dropped before its receive
        // is posted (`MPI_Request_free`): the buffer is the caller's again
        // once the request is gone, and the message is what it held.
        if rank == 0 {
            let mut buf = fill(7);
            let req = world.isend(&buf, 1, 2)?;
            drop(req);
            buf.fill(0xDD);
            let req = world.isend(&buf, 1, 3)?;
            wait_all(vec![req])?;
            buf.fill(0xCC);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let st = world.recv(&mut got, 0, 2)?;
            ensure!(
                st.count_bytes() == HEAD_TO_HEAD && got == fill(7),
                "a message whose request was dropped differs from what was sent"
            );
            world.recv(&mut got, 0, 3)?;
            ensure!(
                got.iter().all(|b| *b == 0xDD),
                "a waited-for nonblocking send differs from what was sent"
            );
        }
        drop(mine);
    }
    universe.finalize()?;
    Ok(())
}

/// Rank 1 leaves without `MPI_Finalize`'s synchronisation (it closes its
/// connections and tells the launcher it is done, as a dropped universe
/// does); rank 0 gets an error, not a hang. (A rank that exits without
/// telling the launcher at all fails the whole job: see o2grun.)
pub(crate) fn dead_peer() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.rank() == 1 {
        drop(universe);
        std::process::exit(0);
    }
    let mut v = [0u8];
    match world.recv(&mut v, 1, 0) {
        Err(Error::PeerGone { rank: 1, .. }) => {}
        other => return Err(format!("expected PeerGone, got {other:?}").into()),
    }
    ensure!(
        world.send(&[0u8; 1 << 20], 1, 0).is_err(),
        "send to a dead peer succeeded"
    );
    ensure!(
        world.ssend(&[0u8], 1, 0).is_err(),
        "ssend to a dead peer succeeded"
    );
    ensure!(
        universe.finalize().is_err(),
        "finalize with a dead peer succeeded"
    );
    Ok(())
}

/// Rank 1 exits with status 3 while the others wait for it.
pub(crate) fn rank_fails() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.rank() == 1 {
        std::process::exit(3);
    }
    // Blocks until o2grun tears the job down.
    let _ = world.recv(&mut [0u8], 1, 0);
    std::thread::sleep(std::time::Duration::from_secs(60));
    Err("rank survived the teardown".into())
}

/// Rank 2 calls MPI_Abort(7).
pub(crate) fn rank_aborts() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.rank() == 2 {
        world.abort(7);
    }
    let _ = world.recv(&mut [0u8], 2, 0);
    std::thread::sleep(std::time::Duration::from_secs(60));
    Err("rank survived the abort".into())
}
