//! Every collective, checked against values each rank can compute alone.
//!
//! [`check_all`] covers every call and its argument checks with small
//! buffers; [`by_size`] covers every algorithm a collective chooses
//! between (see the list in `mpi/src/collective/mod.rs`): lengths on both
//! sides of the size thresholds, counts below the number of processes and
//! not divisible by it, zero, several roots, and communicators of sizes
//! that are not powers of two. Reductions are compared with sums and
//! maxima computed here, and floating-point allreduce results must be the
//! same bits on every member.

use mpi::{Color, Communicator, SystemOperation, UserOperation, ANY_SOURCE};

use crate::{ensure, Check};

pub(crate) fn run() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    check_all(&world)?;
    if world.size() >= 2 {
        // The same on a split communicator with a different layout.
        let rank = world.rank();
        let sub = world
            .split(Color::With((rank % 2) as u32), rank)?
            .ok_or("split")?;
        check_all(&sub)?;
        check_all(&world.dup()?)?;
    }
    by_size(&world)?;
    // Other sizes than the runs' (which are 1, 2, 3, 4, 7 and 16): halves
    // (1 to 4), and from 7 the first k ranks of the world with the rest
    // (5 and 2, 6 and 1), ranked in reverse so that no rank keeps its
    // world rank. Not on 16: its halves (8) would double the longest run
    // (over o2g in a TCG guest, 16 processes on 2 vCPUs).
    let (rank, size) = (world.rank(), world.size());
    if (2..=8).contains(&size) {
        let half = world
            .split(Color::With((rank % 2) as u32), rank)?
            .ok_or("split")?;
        by_size(&half)?;
    }
    for k in [5, 6] {
        if size > k && size <= 8 {
            let part = world
                .split(Color::With(u32::from(rank < k)), -rank)?
                .ok_or("split")?;
            by_size(&part)?;
        }
    }
    universe.finalize()?;
    Ok(())
}

fn check_all(c: &Communicator) -> Check {
    let (r, p) = (c.rank(), c.size());
    let (ru, pu) = (r as usize, p as usize);
    for _ in 0..3 {
        c.barrier()?;
    }
    // Nobody leaves a barrier before the last one has entered it: the
    // others report leaving to the last rank, which looks for such a
    // report for a while before it enters (causal: no clocks compared).
    if r == p - 1 {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(200);
        while std::time::Instant::now() < until {
            if let Some(st) = c.iprobe(ANY_SOURCE, 77)? {
                return Err(format!(
                    "rank {} left the barrier before rank {r} entered it",
                    st.source_rank()
                )
                .into());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        c.barrier()?;
        for _ in 0..p - 1 {
            c.recv::<u8>(&mut [], ANY_SOURCE, 77)?;
        }
    } else {
        c.barrier()?;
        c.send::<u8>(&[], p - 1, 77)?;
    }

    // Bcast from every root, and an empty one.
    for root in 0..p {
        let mut v: Vec<i64> = if r == root {
            (0..10).map(|i| i64::from(root) * 100 + i).collect()
        } else {
            vec![0; 10]
        };
        c.process_at_rank(root)?.broadcast_into(&mut v)?;
        ensure!(
            v.iter()
                .enumerate()
                .all(|(i, x)| *x == i64::from(root) * 100 + i as i64),
            "bcast root {root}: {v:?}"
        );
    }
    c.broadcast_into::<u8>(&mut [], 0)?;

    // Reduce with each predefined operation, to two roots.
    let mine: Vec<i64> = (0..5).map(|i| i64::from(r) + i).collect();
    let n = i64::from(p);
    for root in [0, p - 1] {
        for (op, want) in [
            (
                SystemOperation::Sum,
                Box::new(move |i: i64| n * i + n * (n - 1) / 2) as Box<dyn Fn(i64) -> i64>,
            ),
            (SystemOperation::Max, Box::new(move |i| n - 1 + i)),
            (SystemOperation::Min, Box::new(|i| i)),
        ] {
            let rp = c.process_at_rank(root)?;
            if r == root {
                let mut out = vec![0i64; 5];
                rp.reduce_into_root(&mine, &mut out, &op)?;
                ensure!(
                    out.iter().enumerate().all(|(i, x)| *x == want(i as i64)),
                    "reduce {op:?}: {out:?}"
                );
            } else {
                rp.reduce_into(&mine, &op)?;
            }
        }
    }
    let two = [2u64];
    let mut prod = [0u64];
    c.reduce_into(&two, Some(&mut prod), &SystemOperation::Product, 0)?;
    ensure!(r != 0 || prod[0] == 1 << p, "reduce product {prod:?}");

    // Allreduce: every operation, floats, a user operation, empty.
    let mut out = vec![0i64; 5];
    c.all_reduce_into(&mine, &mut out, &SystemOperation::Sum)?;
    ensure!(out[4] == n * 4 + n * (n - 1) / 2, "allreduce sum {out:?}");
    let mut f = [0f64; 2];
    c.all_reduce_into(
        &[f64::from(r) * 0.5, -f64::from(r)],
        &mut f,
        &SystemOperation::Max,
    )?;
    ensure!(f == [f64::from(p - 1) * 0.5, 0.0], "allreduce max {f:?}");
    c.all_reduce_into(
        &[f64::from(r) * 0.5, -f64::from(r)],
        &mut f,
        &SystemOperation::Min,
    )?;
    ensure!(f == [0.0, -f64::from(p - 1)], "allreduce min {f:?}");
    c.all_reduce_into(&two, &mut prod, &SystemOperation::Product)?;
    ensure!(prod[0] == 1 << p, "allreduce product {prod:?}");
    let or = UserOperation::commutative(|a: &[u32], b: &mut [u32]| {
        b.iter_mut().zip(a).for_each(|(b, a)| *b |= a)
    });
    let mut bits = [0u32];
    c.all_reduce_into(&[1u32 << r], &mut bits, &or)?;
    ensure!(
        bits[0] == ((1u64 << p) - 1) as u32,
        "allreduce user op {bits:?}"
    );
    c.all_reduce_into::<i32, _>(&[], &mut [], &SystemOperation::Sum)?;

    // Gather and gatherv to the last rank.
    let root = p - 1;
    let rp = c.process_at_rank(root)?;
    let pair = [r, r * 2];
    if r == root {
        let mut all = vec![0; 2 * pu];
        rp.gather_into_root(&pair, &mut all)?;
        ensure!(
            (0..p).all(|i| all[2 * i as usize] == i && all[2 * i as usize + 1] == 2 * i),
            "gather {all:?}"
        );
    } else {
        rp.gather_into(&pair)?;
    }
    let counts: Vec<usize> = (0..pu).map(|i| i % 3).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |acc, c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let total: usize = counts.iter().sum();
    let mine_v = vec![r; counts[ru]];
    if r == root {
        let mut all = vec![-1; total];
        c.gather_varcount_into(&mine_v, Some((&mut all, &counts, &displs)), root)?;
        let want: Vec<i32> = (0..p).flat_map(|i| vec![i; counts[i as usize]]).collect();
        ensure!(all == want, "gatherv {all:?}");
    } else {
        c.gather_varcount_into(&mine_v, None, root)?;
    }

    // Scatter and scatterv from rank 0.
    let src: Vec<i32> = (0..2 * p).collect();
    let mut got = [0; 2];
    if r == 0 {
        c.process_at_rank(0)?.scatter_into_root(&src, &mut got)?;
    } else {
        c.process_at_rank(0)?.scatter_into(&mut got)?;
    }
    ensure!(got == [2 * r, 2 * r + 1], "scatter {got:?}");
    let srcv: Vec<i32> = (0..p).flat_map(|i| vec![i; counts[i as usize]]).collect();
    let mut gotv = vec![-1; counts[ru]];
    let send = (r == 0).then_some((&srcv[..], &counts[..], &displs[..]));
    c.scatter_varcount_into(send, &mut gotv, 0)?;
    ensure!(gotv.iter().all(|x| *x == r), "scatterv {gotv:?}");

    // Allgather and allgatherv.
    let mut all = vec![0; 2 * pu];
    c.all_gather_into(&pair, &mut all)?;
    ensure!(
        (0..p).all(|i| all[2 * i as usize] == i && all[2 * i as usize + 1] == 2 * i),
        "allgather {all:?}"
    );
    let mut allv = vec![-1; total];
    c.all_gather_varcount_into(&mine_v, &mut allv, &counts, &displs)?;
    ensure!(allv == srcv, "allgatherv {allv:?}");
    // Every block in the same place (erroneous in MPI, possible from safe
    // Rust): blocks to send and to receive overlap, which must neither
    // fail nor hang, and leave one member's contribution.
    let same = [r * 3 + 1, r * 3 + 2];
    let mut one = [-1; 2];
    c.all_gather_varcount_into(&same, &mut one, &vec![2; pu], &vec![0; pu])?;
    ensure!(
        (0..p).any(|i| one == [i * 3 + 1, i * 3 + 2]),
        "allgatherv into one place: {one:?}"
    );

    // Alltoall: block j of rank i is i*1000+j.
    let send: Vec<i32> = (0..p)
        .flat_map(|j| [r * 1000 + j, -(r * 1000 + j)])
        .collect();
    let mut recv = vec![0; 2 * pu];
    c.all_to_all_into(&send, &mut recv)?;
    ensure!(
        (0..p)
            .all(|i| recv[2 * i as usize] == i * 1000 + r
                && recv[2 * i as usize + 1] == -(i * 1000 + r)),
        "alltoall {recv:?}"
    );

    // Alltoallv: rank i sends (i + j) % 3 elements to rank j.
    let cnt = |i: usize, j: usize| (i + j) % 3;
    let sc: Vec<usize> = (0..pu).map(|j| cnt(ru, j)).collect();
    let rc: Vec<usize> = (0..pu).map(|i| cnt(i, ru)).collect();
    let prefix = |v: &[usize]| {
        v.iter()
            .scan(0, |a, c| {
                let d = *a;
                *a += c;
                Some(d)
            })
            .collect::<Vec<_>>()
    };
    let (sd, rd) = (prefix(&sc), prefix(&rc));
    let sendv: Vec<u64> = (0..pu)
        .flat_map(|j| (0..sc[j]).map(move |k| (ru * 10_000 + j * 10 + k) as u64))
        .collect();
    let mut recvv = vec![0u64; rc.iter().sum()];
    c.all_to_all_varcount_into(&sendv, &sc, &sd, &mut recvv, &rc, &rd)?;
    let want: Vec<u64> = (0..pu)
        .flat_map(|i| (0..rc[i]).map(move |k| (i * 10_000 + ru * 10 + k) as u64))
        .collect();
    ensure!(recvv == want, "alltoallv {recvv:?} vs {want:?}");

    // Disagreeing arguments are errors.
    ensure!(
        c.all_gather_into(&[1u8], &mut [0u8; 0]).is_err(),
        "allgather into a short buffer"
    );
    ensure!(
        c.broadcast_into(&mut [0u8], p).is_err(),
        "bcast from rank size"
    );
    c.barrier()?;
    Ok(())
}

/// The collectives' algorithms on both sides of their size thresholds.
fn by_size(c: &Communicator) -> Check {
    allreduce_by_size(c)?;
    reduce_by_size(c)?;
    grain_by_size(c)?;
    bcast_by_size(c)?;
    alltoall_by_size(c)?;
    c.barrier()?;
    Ok(())
}

/// Element counts for reductions of 8-byte elements: none, one, fewer
/// than the processes, a few per process (not divisible by their number),
/// and two above 64 KiB (where allreduce and reduce split the vector
/// into blocks, at least 4 KiB each up to 18 processes) that leave a
/// remainder of 1 and of p - 1 blocks' worth.
fn reduction_counts(p: usize) -> Vec<usize> {
    let q = 9000 / p + 1;
    let mut v = vec![0, 1, p.saturating_sub(1), 3 * p + 1, q * p + 1];
    if p > 2 {
        v.push(q * p + p - 1);
    }
    v
}

/// Member `r`'s `i`-th integer.
fn ival(r: usize, i: usize) -> i64 {
    ((r as i64 + 1) * 1_000_003 + i as i64 * 7919) % 100_003 - 50_001
}

/// Member `r`'s `i`-th float: small values and ±1e15, so that the result
/// of a sum depends on the order it is taken in.
fn fval(r: usize, i: usize) -> f64 {
    let small = ival(r, i) as f64 / 7.0;
    match (r + i) % 4 {
        0 => small + 1e15,
        2 => small - 1e15,
        _ => small,
    }
}

/// Like [`fval`], but +0.0 (even members) or -0.0 (odd ones) at even
/// `i`: which zero a maximum keeps depends on the order of the operands.
fn zval(r: usize, i: usize) -> f64 {
    match (i % 2, r % 2) {
        (0, 0) => 0.0,
        (0, _) => -0.0,
        _ => fval(r, i),
    }
}

/// `fold` over every member's `val(r, i)`, in rank order.
fn expected<T>(
    p: usize,
    n: usize,
    val: impl Fn(usize, usize) -> T,
    fold: impl Fn(T, T) -> T,
) -> Vec<T> {
    (0..n)
        .map(|i| (1..p).fold(val(0, i), |acc, r| fold(acc, val(r, i))))
        .collect()
}

/// Fails unless every member of `c` holds exactly the bits of `v`.
fn same_bits(c: &Communicator, v: &[f64], what: &str) -> Check {
    let hash = v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3)
    });
    let mut all = vec![0u64; c.size() as usize];
    c.all_gather_into(&[hash], &mut all)?;
    ensure!(
        all.iter().all(|&h| h == hash),
        "{what}: the members' results differ in their bits: {all:x?}"
    );
    Ok(())
}

/// A float sum within rounding of the one taken in rank order.
fn close_sum(p: usize, i: usize, got: f64, want: f64) -> bool {
    let scale: f64 = (0..p).map(|r| fval(r, i).abs()).sum();
    (got - want).abs() <= scale * p as f64 * f64::EPSILON
}

fn allreduce_by_size(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let xor = UserOperation::commutative(|a: &[[u64; 4]], b: &mut [[u64; 4]]| {
        for (b, a) in b.iter_mut().zip(a) {
            for (b, a) in b.iter_mut().zip(a) {
                *b ^= a;
            }
        }
    });
    for n in reduction_counts(p) {
        let mine: Vec<i64> = (0..n).map(|i| ival(r, i)).collect();
        let mut out = vec![0i64; n];
        c.all_reduce_into(&mine, &mut out, &SystemOperation::Sum)?;
        ensure!(
            out == expected(p, n, ival, |a, b| a + b),
            "allreduce sum of {n} i64 on {p}: wrong result"
        );
        c.all_reduce_into(&mine, &mut out, &SystemOperation::Max)?;
        ensure!(
            out == expected(p, n, ival, i64::max),
            "allreduce max of {n} i64 on {p}: wrong result"
        );

        let mine: Vec<f64> = (0..n).map(|i| fval(r, i)).collect();
        let mut out = vec![0f64; n];
        c.all_reduce_into(&mine, &mut out, &SystemOperation::Sum)?;
        let want = expected(p, n, fval, |a, b| a + b);
        let far = (0..n).find(|&i| !close_sum(p, i, out[i], want[i]));
        ensure!(
            far.is_none(),
            "allreduce sum of {n} f64 on {p}: element {far:?} is {:?}, not about {:?}",
            far.map(|i| out[i]),
            far.map(|i| want[i])
        );
        same_bits(c, &out, &format!("allreduce sum of {n} f64 on {p}"))?;

        let mine: Vec<f64> = (0..n).map(|i| zval(r, i)).collect();
        c.all_reduce_into(&mine, &mut out, &SystemOperation::Max)?;
        ensure!(
            out == expected(p, n, zval, f64::max),
            "allreduce max of {n} f64 on {p}: wrong result"
        );
        same_bits(c, &out, &format!("allreduce max of {n} f64 on {p}"))?;

        // Elements of 32 bytes, so blocks of the vector are never bytes.
        let quad = |r: usize, i: usize| {
            [0u64, 1, 2, 3].map(|k| (ival(r, i + k as usize) as u64) << (k * 7))
        };
        let mine: Vec<[u64; 4]> = (0..n).map(|i| quad(r, i)).collect();
        let mut out = vec![[0u64; 4]; n];
        c.all_reduce_into(&mine, &mut out, &xor)?;
        let want = expected(p, n, quad, |a, b| [0, 1, 2, 3].map(|k| a[k] ^ b[k]));
        ensure!(out == want, "allreduce xor of {n} [u64; 4] on {p}");
    }
    // Bytes wrap, and a vector of fewer elements than processes above
    // the size threshold.
    let n = (9000 / p + 1) * p * 8 + 3;
    let byte = |r: usize, i: usize| (r * 31 + i * 7 + (i >> 9)) as u8;
    let mine: Vec<u8> = (0..n).map(|i| byte(r, i)).collect();
    let mut out = vec![0u8; n];
    c.all_reduce_into(&mine, &mut out, &SystemOperation::Sum)?;
    ensure!(
        out == expected(p, n, byte, u8::wrapping_add),
        "allreduce sum of {n} u8 on {p}"
    );
    if p > 1 {
        let wide = |r: usize, i: usize| [0; 2048].map(|_| ival(r, i) as u64);
        let mine: Vec<[u64; 2048]> = (0..p - 1).map(|i| wide(r, i)).collect();
        let mut out = vec![[0u64; 2048]; p - 1];
        let xor = UserOperation::commutative(|a: &[[u64; 2048]], b: &mut [[u64; 2048]]| {
            for (b, a) in b.iter_mut().zip(a) {
                for (b, a) in b.iter_mut().zip(a) {
                    *b ^= a;
                }
            }
        });
        c.all_reduce_into(&mine, &mut out, &xor)?;
        let want = expected(p, p - 1, wide, |a, b| {
            let mut x = a;
            x.iter_mut().zip(b).for_each(|(x, b)| *x ^= b);
            x
        });
        ensure!(
            out == want,
            "allreduce xor of {} 16 KiB elements on {p}",
            p - 1
        );
    }
    Ok(())
}

/// Sums of `w`-byte little-endian integers, reduced as bytes (as the C
/// ABI reduces its datatypes) with an operation of grain `w`: the carries
/// cross bytes, so a block boundary inside an element would change the
/// result. Element counts above the split threshold whose byte-wise
/// blocks would not fall between elements.
fn grain_cases(p: usize) -> [(usize, usize); 3] {
    [
        (8, (9000 / p + 1) * p + 1),
        (3, (24_000 / p + 1) * p + p - 1),
        (24, (3000 / p + 1) * p + 1),
    ]
}

/// Member `r`'s bytes of `n` elements of `w` bytes.
fn grain_bytes(r: usize, w: usize, n: usize) -> Vec<u8> {
    (0..w * n)
        .map(|k| (ival(r, k) as u64 >> 3) as u8 | 0x80)
        .collect()
}

/// The sum over every member of [`grain_bytes`], element by element.
fn grain_sum(p: usize, w: usize, n: usize) -> Vec<u8> {
    let mut acc = vec![0u8; w * n];
    for r in 0..p {
        add_wide(w, &grain_bytes(r, w, n), &mut acc);
    }
    acc
}

/// `inout += input`, as little-endian integers of `w` bytes, wrapping.
fn add_wide(w: usize, input: &[u8], inout: &mut [u8]) {
    for (x, y) in input.chunks_exact(w).zip(inout.chunks_exact_mut(w)) {
        let mut carry = 0u16;
        for (x, y) in x.iter().zip(y.iter_mut()) {
            let s = u16::from(*x) + u16::from(*y) + carry;
            *y = s as u8;
            carry = s >> 8;
        }
    }
}

fn grain_by_size(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let mut roots = vec![0, p - 1];
    roots.dedup();
    for (w, n) in grain_cases(p) {
        let op = UserOperation::commutative(move |a: &[u8], b: &mut [u8]| add_wide(w, a, b))
            .with_grain(w);
        let mine = grain_bytes(r, w, n);
        let want = grain_sum(p, w, n);
        let mut out = vec![0u8; w * n];
        c.all_reduce_into(&mine, &mut out, &op)?;
        let bad = (0..n).find(|&i| out[i * w..(i + 1) * w] != want[i * w..(i + 1) * w]);
        ensure!(
            bad.is_none(),
            "allreduce of {n} {w}-byte elements as bytes on {p}: element {bad:?} differs"
        );
        for &root in &roots {
            let mut out = vec![0u8; w * n];
            let recv = (r == root).then_some(&mut out[..]);
            c.reduce_into(&mine, recv, &op, root as i32)?;
            let bad = (0..n).find(|&i| out[i * w..(i + 1) * w] != want[i * w..(i + 1) * w]);
            ensure!(
                r != root || bad.is_none(),
                "reduce of {n} {w}-byte elements as bytes on {p} to {root}: element {bad:?} differs"
            );
        }
    }
    Ok(())
}

fn reduce_by_size(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let mut roots = vec![0, p / 2, p - 1];
    roots.dedup();
    for n in reduction_counts(p) {
        for &root in &roots {
            let at_root = r == root;
            let mine: Vec<i64> = (0..n).map(|i| ival(r, i)).collect();
            let mut out = vec![0i64; n];
            let recv = at_root.then_some(&mut out[..]);
            c.reduce_into(&mine, recv, &SystemOperation::Sum, root as i32)?;
            ensure!(
                !at_root || out == expected(p, n, ival, |a, b| a + b),
                "reduce sum of {n} i64 on {p} to {root}: wrong result"
            );

            let mine: Vec<f64> = (0..n).map(|i| zval(r, i)).collect();
            let mut out = vec![0f64; n];
            let recv = at_root.then_some(&mut out[..]);
            c.reduce_into(&mine, recv, &SystemOperation::Max, root as i32)?;
            ensure!(
                !at_root || out == expected(p, n, zval, f64::max),
                "reduce max of {n} f64 on {p} to {root}: wrong result"
            );
        }
    }
    Ok(())
}

fn bcast_by_size(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let mut roots = vec![0, 1 % p, p / 2, p - 1];
    roots.sort_unstable();
    roots.dedup();
    // Lengths in bytes: the scatter-allgather broadcast starts at 128 KiB
    // and at 4 KiB per process.
    let q = (132 << 10) / p + 1;
    let byte = |root: usize, i: usize| (root * 131 + i * 7 + (i >> 8)) as u8;
    for n in [
        0,
        1,
        p - 1 + usize::from(p == 1),
        3 * p + 1,
        q * p + 1,
        q * p + p - 1,
        300_007,
    ] {
        for &root in &roots {
            let mut buf: Vec<u8> = if r == root {
                (0..n).map(|i| byte(root, i)).collect()
            } else {
                vec![0xa5; n]
            };
            c.broadcast_into(&mut buf, root as i32)?;
            let bad = (0..n).find(|&i| buf[i] != byte(root, i));
            ensure!(
                bad.is_none(),
                "bcast of {n} bytes on {p} from {root}: byte {bad:?} differs"
            );
        }
    }
    // Elements wider than a byte: the blocks need not respect them.
    let n = q / 8 * p + 3;
    let root = p - 1;
    let mut buf: Vec<i64> = if r == root {
        (0..n).map(|i| ival(root, i)).collect()
    } else {
        vec![-1; n]
    };
    c.process_at_rank(root as i32)?.broadcast_into(&mut buf)?;
    ensure!(
        (0..n).all(|i| buf[i] == ival(root, i)),
        "bcast of {n} i64 on {p} from {root}"
    );
    Ok(())
}

fn alltoall_by_size(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    // Byte `k` of the block member `i` sends to member `j`.
    let byte = |i: usize, j: usize, k: usize| (i * 37 + j * 11 + k + (k >> 8)) as u8;
    // Blocks of 0 bytes, small ones, and large enough that a member sends
    // and receives more than the 256 KiB it posts at once.
    let large = (256 << 10) / (2 * p.max(2) - 2) + 1024;
    for m in [0, 5, 2048, large] {
        let send: Vec<u8> = (0..p)
            .flat_map(|j| (0..m).map(move |k| byte(r, j, k)))
            .collect();
        let mut recv = vec![0xa5u8; m * p];
        c.all_to_all_into(&send, &mut recv)?;
        let want: Vec<u8> = (0..p)
            .flat_map(|i| (0..m).map(move |k| byte(i, r, k)))
            .collect();
        ensure!(recv == want, "alltoall of {m}-byte blocks on {p}");
    }
    // Alltoallv with empty, small and large blocks: small ones only (all
    // members post everything at once), large ones for most members
    // (pairwise), and large only from member 0 to 1, so that those two
    // exchange pairwise while the rest post everything at once.
    let patterns: [&dyn Fn(usize, usize) -> usize; 3] = [
        &|i, j| [0, 3, 100][(i + j) % 3],
        &|i, j| [0, 3, 4 * large][(i + j) % 3],
        &|i, j| {
            if (i, j) == (0, 1) {
                300 << 10
            } else {
                (i + 2 * j) % 5
            }
        },
    ];
    for (which, count) in patterns.iter().enumerate() {
        let sc: Vec<usize> = (0..p).map(|j| count(r, j)).collect();
        let rc: Vec<usize> = (0..p).map(|i| count(i, r)).collect();
        // Receive blocks in reverse order of their senders.
        let sd = prefix(&sc);
        let mut rd = vec![0; p];
        let mut at = 0;
        for i in (0..p).rev() {
            rd[i] = at;
            at += rc[i];
        }
        let send: Vec<u8> = (0..p)
            .flat_map(|j| (0..sc[j]).map(move |k| byte(r, j, k)))
            .collect();
        let mut recv = vec![0xa5u8; at];
        c.all_to_all_varcount_into(&send, &sc, &sd, &mut recv, &rc, &rd)?;
        let bad = (0..p).find(|&i| (0..rc[i]).any(|k| recv[rd[i] + k] != byte(i, r, k)));
        ensure!(
            bad.is_none(),
            "alltoallv pattern {which} on {p}: the block from {bad:?} differs"
        );
    }
    Ok(())
}

/// Displacements of consecutive blocks of `counts`.
fn prefix(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |acc, c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}
