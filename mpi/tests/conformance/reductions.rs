//! Non-commutative reductions, scan, exscan, reduce_scatter(_block),
//! alltoallw and every nonblocking collective, checked against values
//! each rank computes alone: on the world, on a split communicator, with
//! several nonblocking collectives outstanding at once, mixed with
//! blocking collectives and point-to-point traffic on the same
//! communicator.

use mpi::{Color, Communicator, Request, SystemOperation, UserOperation};

use crate::{ensure, Check};

pub(crate) fn run() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    check(&world)?;
    if world.size() >= 2 {
        let rank = world.rank();
        let sub = world
            .split(Color::With((rank % 2) as u32), -rank)?
            .ok_or("split")?;
        check(&sub)?;
    }
    universe.finalize()?;
    Ok(())
}

fn check(c: &Communicator) -> Check {
    non_commutative(c)?;
    scans(c)?;
    reduce_scatter(c)?;
    alltoallw(c)?;
    nonblocking(c)?;
    overlapping(c)?;
    c.barrier()?;
    Ok(())
}

/// A 2×2 matrix of integers modulo 2^64: their product does not commute.
type Mat = [i64; 4];

fn mul(a: &Mat, b: &Mat) -> Mat {
    let m = |x: i64, y: i64| x.wrapping_mul(y);
    [
        m(a[0], b[0]).wrapping_add(m(a[1], b[2])),
        m(a[0], b[1]).wrapping_add(m(a[1], b[3])),
        m(a[2], b[0]).wrapping_add(m(a[3], b[2])),
        m(a[2], b[1]).wrapping_add(m(a[3], b[3])),
    ]
}

/// Member `r`'s `i`-th matrix.
fn mat(r: usize, i: usize) -> Mat {
    let (r, i) = (r as i64, i as i64);
    [r + 1, i + 2, r * 3 + i + 1, 1 - r]
}

/// The matrix product as an operation: `inout = input × inout`.
fn matmul() -> UserOperation<impl Fn(&[Mat], &mut [Mat])> {
    UserOperation::non_commutative(|a: &[Mat], b: &mut [Mat]| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = mul(x, y);
        }
    })
}

/// The product of the matrices of members `ranks`, in order.
fn product(ranks: std::ops::Range<usize>, i: usize) -> Mat {
    ranks.fold([1, 0, 0, 1], |acc, r| mul(&acc, &mat(r, i)))
}

fn non_commutative(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    // Short vectors and one long enough for the split algorithms.
    for n in [1, 3, 3000] {
        let mine: Vec<Mat> = (0..n).map(|i| mat(r, i)).collect();
        let want: Vec<Mat> = (0..n).map(|i| product(0..p, i)).collect();
        let mut got = vec![[0; 4]; n];
        c.all_reduce_into(&mine, &mut got, &matmul())?;
        ensure!(got == want, "allreduce of {n} matrices in rank order");
        for root in [0, p - 1, p / 2] {
            let mut got = vec![[0; 4]; n];
            let recv = (r == root).then_some(&mut got[..]);
            c.reduce_into(&mine, recv, &matmul(), root as i32)?;
            ensure!(
                r != root || got == want,
                "reduce of {n} to {root} in rank order"
            );
        }
    }
    Ok(())
}

fn scans(c: &Communicator) -> Check {
    let r = c.rank() as usize;
    for n in [0, 1, 5] {
        let mine: Vec<Mat> = (0..n).map(|i| mat(r, i)).collect();
        let mut got = vec![[0; 4]; n];
        c.scan_into(&mine, &mut got, &matmul())?;
        let want: Vec<Mat> = (0..n).map(|i| product(0..r + 1, i)).collect();
        ensure!(got == want, "scan of {n} matrices");
        let mut got = vec![[7; 4]; n];
        c.exscan_into(&mine, &mut got, &matmul())?;
        let want: Vec<Mat> = (0..n)
            .map(|i| if r == 0 { [7; 4] } else { product(0..r, i) })
            .collect();
        ensure!(got == want, "exscan of {n} matrices");
        let ints: Vec<i64> = (0..n).map(|i| (r * 10 + i) as i64).collect();
        let mut got = vec![0i64; n];
        c.scan_into(&ints, &mut got, &SystemOperation::Sum)?;
        let want: Vec<i64> = (0..n)
            .map(|i| (0..=r).map(|q| (q * 10 + i) as i64).sum())
            .collect();
        ensure!(got == want, "scan sum {got:?} want {want:?}");
    }
    Ok(())
}

fn reduce_scatter(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let counts: Vec<usize> = (0..p).map(|i| i % 3).collect();
    let total: usize = counts.iter().sum();
    let start: usize = counts[..r].iter().sum();
    let mine: Vec<Mat> = (0..total).map(|i| mat(r, i)).collect();
    let mut got = vec![[0; 4]; counts[r]];
    c.reduce_scatter_into(&mine, &mut got, &counts, &matmul())?;
    let want: Vec<Mat> = (start..start + counts[r])
        .map(|i| product(0..p, i))
        .collect();
    ensure!(got == want, "reduce_scatter of matrices");
    let mine: Vec<i64> = (0..2 * p).map(|i| (r + i) as i64).collect();
    let mut got = vec![0i64; 2];
    c.reduce_scatter_block_into(&mine, &mut got, &SystemOperation::Max)?;
    let want: Vec<i64> = (2 * r..2 * r + 2).map(|i| (p - 1 + i) as i64).collect();
    ensure!(got == want, "reduce_scatter_block {got:?} want {want:?}");
    Ok(())
}

/// Member `r`'s byte `k` for member `d`.
fn byte(r: usize, d: usize, k: usize) -> u8 {
    (r * 31 + d * 7 + k) as u8
}

fn alltoallw(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    // Member r sends d + 1 bytes to member d, blocks in reverse order
    // with a gap of 3 bytes; receives r + 1 bytes from each.
    let send_bytes: Vec<usize> = (0..p).map(|d| d + 1).collect();
    let mut send_displs = vec![0; p];
    let mut at = 0;
    for d in (0..p).rev() {
        send_displs[d] = at;
        at += send_bytes[d] + 3;
    }
    let mut send = vec![0xeeu8; at];
    for d in 0..p {
        for k in 0..send_bytes[d] {
            send[send_displs[d] + k] = byte(r, d, k);
        }
    }
    let recv_bytes = vec![r + 1; p];
    let recv_displs: Vec<usize> = (0..p).map(|s| s * (r + 2)).collect();
    let mut recv = vec![0u8; p * (r + 2)];
    c.all_to_all_w_into(
        &send,
        &send_bytes,
        &send_displs,
        &mut recv,
        &recv_bytes,
        &recv_displs,
    )?;
    for s in 0..p {
        for k in 0..r + 1 {
            ensure!(
                recv[recv_displs[s] + k] == byte(s, r, k),
                "alltoallw from {s}"
            );
        }
        ensure!(recv[recv_displs[s] + r + 1] == 0, "alltoallw wrote a gap");
    }
    Ok(())
}

fn nonblocking(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    c.ibarrier()?.wait()?;
    for root in [0, p - 1] {
        let mut buf = vec![0u32; 5];
        if r == root {
            buf = (0..5).map(|i| i * 3 + root as u32).collect();
        }
        c.ibroadcast_into(&mut buf, root as i32)?.wait()?;
        ensure!(
            buf == (0..5).map(|i| i * 3 + root as u32).collect::<Vec<_>>(),
            "ibcast"
        );
        let mine: Vec<Mat> = (0..3).map(|i| mat(r, i)).collect();
        let want: Vec<Mat> = (0..3).map(|i| product(0..p, i)).collect();
        let mut got = vec![[0; 4]; 3];
        let recv = (r == root).then_some(&mut got[..]);
        c.ireduce_into(&mine, recv, matmul(), root as i32)?.wait()?;
        ensure!(r != root || got == want, "ireduce in rank order");
        // gather(v): member i sends i + 1 items.
        let send: Vec<u16> = (0..r + 1).map(|k| (r * 100 + k) as u16).collect();
        let counts: Vec<usize> = (0..p).map(|i| i + 1).collect();
        let displs: Vec<usize> = (0..p).map(|i| i * (i + 1) / 2 + i).collect();
        let len = displs[p - 1] + p + 1;
        let mut all = vec![9u16; len];
        let recv = (r == root).then_some((&mut all[..], &counts[..], &displs[..]));
        c.igather_varcount_into(&send, recv, root as i32)?.wait()?;
        if r == root {
            for i in 0..p {
                for k in 0..=i {
                    ensure!(all[displs[i] + k] == (i * 100 + k) as u16, "igatherv");
                }
                if i > 0 {
                    ensure!(all[displs[i] - 1] == 9, "igatherv wrote a gap");
                }
            }
        }
        // scatter(v): the same layout back.
        let mut mine = vec![0u16; r + 1];
        let send = (r == root).then_some((&all[..], &counts[..], &displs[..]));
        let req = c.iscatter_varcount_into(send, &mut mine, root as i32)?;
        req.wait()?;
        let want: Vec<u16> = (0..r + 1).map(|k| (r * 100 + k) as u16).collect();
        ensure!(mine == want, "iscatterv {mine:?}");
    }
    // Uniform gather/scatter with real values everywhere.
    let mut all = vec![0i32; 2 * p];
    let send = [r as i32, -(r as i32)];
    c.iall_gather_into(&send, &mut all)?.wait()?;
    ensure!(
        (0..p).all(|i| all[2 * i] == i as i32 && all[2 * i + 1] == -(i as i32)),
        "iallgather {all:?}"
    );
    let mut back = [0i32; 2];
    let root_send = (r == 0).then_some(&all[..]);
    c.iscatter_into(root_send, &mut back, 0)?.wait()?;
    ensure!(back == send, "iscatter {back:?}");
    let mut g = vec![0i32; 2 * p];
    let recv = (r == p - 1).then_some(&mut g[..]);
    c.igather_into(&send, recv, (p - 1) as i32)?.wait()?;
    ensure!(r != p - 1 || g == all, "igather");
    // alltoall(v)
    let send: Vec<u32> = (0..p).map(|d| (r * 1000 + d) as u32).collect();
    let mut recv = vec![0u32; p];
    c.iall_to_all_into(&send, &mut recv)?.wait()?;
    ensure!(
        (0..p).all(|s| recv[s] == (s * 1000 + r) as u32),
        "ialltoall {recv:?}"
    );
    // allgatherv with gaps: member i contributes i % 2 + 1 items.
    let counts: Vec<usize> = (0..p).map(|i| i % 2 + 1).collect();
    let displs: Vec<usize> = (0..p).map(|i| 3 * i).collect();
    let send: Vec<u8> = (0..counts[r]).map(|k| (r * 5 + k) as u8).collect();
    let mut recv = vec![0xffu8; 3 * p];
    c.iall_gather_varcount_into(&send, &mut recv, &counts, &displs)?
        .wait()?;
    for i in 0..p {
        for k in 0..3 {
            let want = if k < counts[i] {
                (i * 5 + k) as u8
            } else {
                0xff
            };
            ensure!(recv[3 * i + k] == want, "iallgatherv block {i} item {k}");
        }
    }
    // allreduce, scan, exscan, reduce_scatter(_block).
    let mine: Vec<Mat> = (0..4).map(|i| mat(r, i)).collect();
    let mut got = vec![[0; 4]; 4];
    c.iall_reduce_into(&mine, &mut got, matmul())?.wait()?;
    ensure!(
        got == (0..4).map(|i| product(0..p, i)).collect::<Vec<_>>(),
        "iallreduce"
    );
    c.iscan_into(&mine, &mut got, matmul())?.wait()?;
    ensure!(
        got == (0..4).map(|i| product(0..r + 1, i)).collect::<Vec<_>>(),
        "iscan"
    );
    let mut got = vec![[5; 4]; 4];
    c.iexscan_into(&mine, &mut got, matmul())?.wait()?;
    let want: Vec<Mat> = (0..4)
        .map(|i| if r == 0 { [5; 4] } else { product(0..r, i) })
        .collect();
    ensure!(got == want, "iexscan");
    let counts: Vec<usize> = (0..p).map(|i| (i + 1) % 3).collect();
    let total: usize = counts.iter().sum();
    let start: usize = counts[..r].iter().sum();
    let mine: Vec<Mat> = (0..total).map(|i| mat(r, i)).collect();
    let mut got = vec![[0; 4]; counts[r]];
    c.ireduce_scatter_into(&mine, &mut got, &counts, matmul())?
        .wait()?;
    let want: Vec<Mat> = (start..start + counts[r])
        .map(|i| product(0..p, i))
        .collect();
    ensure!(got == want, "ireduce_scatter");
    let mine: Vec<i64> = (0..3 * p).map(|i| (r * i) as i64).collect();
    let mut got = vec![0i64; 3];
    c.ireduce_scatter_block_into(&mine, &mut got, SystemOperation::Sum)?
        .wait()?;
    let s: i64 = (0..p as i64).sum();
    ensure!(
        (0..3).all(|k| got[k] == s * (3 * r + k) as i64),
        "ireduce_scatter_block {got:?}"
    );
    Ok(())
}

/// Several nonblocking collectives outstanding at once, completed in
/// another order than they were started, with blocking collectives and
/// point-to-point messages on the same communicator in between.
fn overlapping(c: &Communicator) -> Check {
    let (r, p) = (c.rank() as usize, c.size() as usize);
    let mine = [r as i64 + 1];
    let (mut a, mut b, mut d) = ([0i64], [0i64], vec![0i64; p]);
    let mut bc = [0u64; 3];
    if r == p - 1 {
        bc = [11, 22, 33];
    }
    let mut reqs: Vec<Request<'_>> = vec![
        c.iall_reduce_into(&mine, &mut a, SystemOperation::Sum)?,
        c.ibroadcast_into(&mut bc, (p - 1) as i32)?,
        c.iall_reduce_into(&mine, &mut b, SystemOperation::Max)?,
        c.iall_gather_into(&mine, &mut d)?,
        c.ibarrier()?,
    ];
    // Blocking collectives and a ring of messages meanwhile.
    let mut s = [0i64];
    c.all_reduce_into(&mine, &mut s, &SystemOperation::Product)?;
    let fact: i64 = (1..=p as i64).product();
    ensure!(s[0] == fact, "blocking allreduce among nonblocking ones");
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let mut got = [0i64];
    let recv = c.irecv(&mut got, left as i32, 5)?;
    c.send(&mine, right as i32, 5)?;
    recv.wait()?;
    ensure!(got[0] == left as i64 + 1, "ring message among collectives");
    // Complete in reverse order.
    while let Some(req) = reqs.pop() {
        req.wait()?;
    }
    drop(reqs);
    let n = p as i64;
    ensure!(a[0] == n * (n + 1) / 2, "iallreduce sum {}", a[0]);
    ensure!(b[0] == n, "iallreduce max {}", b[0]);
    ensure!(bc == [11, 22, 33], "ibcast {bc:?}");
    ensure!(d == (1..=n).collect::<Vec<_>>(), "iallgather {d:?}");
    // Many small ones, tested to completion together.
    let vals: Vec<[i64; 1]> = (0..8).map(|k| [(r * 8 + k) as i64]).collect();
    let mut outs = [[0i64]; 8];
    let mut reqs: Vec<Request<'_>> = Vec::new();
    for (v, o) in vals.iter().zip(outs.iter_mut()) {
        reqs.push(c.iall_reduce_into(v, o, SystemOperation::Sum)?);
    }
    mpi::request::wait_all(reqs)?;
    for (k, o) in outs.iter().enumerate() {
        let want: i64 = (0..p).map(|q| (q * 8 + k) as i64).sum();
        ensure!(o[0] == want, "iallreduce {k} of 8");
    }
    Ok(())
}
