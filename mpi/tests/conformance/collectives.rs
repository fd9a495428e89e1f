//! Every collective, checked against values each rank can compute alone.

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
