//! Inter-communicators (MPI 5.0 §7.6) through the Rust API, as real
//! processes: the test runs this binary under `o2grun` at 1, 2, 3, 4 and
//! 7 ranks (over the transports of `O2G_CONF_TRANSPORTS`, by default
//! `sockets-epoll`), and each rank, seeing `O2G_IC_RANK` in its
//! environment, runs [`rank_main`] and fails on any wrong value.

use std::process::Command;

use mpi::intercomm::{PROC_NULL, ROOT};
use mpi::topology::Neighborhood;
use mpi::{Color, Communicator, Error, Group, SystemOperation, ANY_SOURCE};

type Check = Result<(), Box<dyn std::error::Error>>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*).into());
        }
    };
}

#[test]
fn intercommunicators() {
    if std::env::var_os("O2G_IC_RANK").is_some() {
        if let Err(e) = rank_main() {
            panic!("{e}");
        }
        return;
    }
    let transports =
        std::env::var("O2G_CONF_TRANSPORTS").unwrap_or_else(|_| "sockets-epoll".to_owned());
    let exe = std::env::current_exe().expect("current_exe");
    for t in transports.split(',') {
        for np in [1, 2, 3, 4, 7] {
            let out = Command::new(env!("CARGO_BIN_EXE_o2grun"))
                .args(["-n", &np.to_string(), "--timeout", "60"])
                .arg(&exe)
                .args(["intercommunicators", "--exact", "--nocapture"])
                .env("O2G_IC_RANK", "1")
                .env("O2G_TRANSPORT", t)
                .output()
                .expect("run o2grun");
            assert!(
                out.status.success(),
                "{t} at {np} ranks: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// One rank's part.
fn rank_main() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    ensure!(!world.is_inter(), "the world is not an inter-communicator");
    ensure!(
        world.remote_size().is_none() && world.remote_group().is_none(),
        "remote of world"
    );
    ensure!(
        world.merge(false).is_err(),
        "merge of an intra-communicator"
    );
    if size == 1 {
        let me = world.dup()?;
        ensure!(
            me.intercomm_create(0, Some(&world), 0, 1).is_err(),
            "an inter-communicator with itself"
        );
        return Ok(universe.finalize()?);
    }
    // Evens and odds, leaders world ranks 0 and 1.
    let color = rank % 2;
    let other = 1 - color;
    let (ln, rn, lr) = ((size + 1 - color) / 2, (size + 1 - other) / 2, rank / 2);
    let remote_of = |q: i32| (2 * q + other) as u32;
    let local = world
        .split(Color::With(color as u32), rank)?
        .ok_or("split gave None")?;
    let ic = local.intercomm_create(0, Some(&world), other, 11)?;
    shape(&ic, lr, ln, rn, &remote_of)?;
    p2p(&ic, lr, ln, rn, &remote_of)?;

    collectives(&ic, color, lr, rn, &remote_of)?;
    reduce_scatters(&ic, lr, ln, rn, &remote_of)?;
    nonblocking(&ic, color, lr, rn, &remote_of)?;
    // Scan and exscan, undefined on inter-communicators (§6.2.2), are
    // refused, never run.
    let mut sum = [0];
    ensure!(
        ic.scan_into(&[1], &mut sum, &SystemOperation::Sum).is_err(),
        "scan on an inter-communicator"
    );
    ensure!(
        ic.iscan_into(&[1], &mut sum, SystemOperation::Sum).is_err(),
        "iscan on an inter-communicator"
    );
    ensure!(
        ic.iexscan_into(&[1], &mut sum, SystemOperation::Sum)
            .is_err(),
        "iexscan on an inter-communicator"
    );
    ensure!(ic.create_group(&ic.group(), 0).is_err(), "create_group");
    // No topology on an inter-communicator (§8.1), nor a neighborhood
    // collective: refused as such, before any argument is looked at (a
    // neighbour outside both groups included).
    let unsuitable = |what: &str, r: mpi::Result<()>| -> Check {
        match r {
            Err(Error::InvalidCommunicator(_)) => Ok(()),
            other => Err(format!("{what} on an inter-communicator: {other:?}").into()),
        }
    };
    unsuitable("create_first", ic.create_first(1).map(drop))?;
    unsuitable(
        "dist_graph_from_edges",
        ic.dist_graph_from_edges(&[], false).map(drop),
    )?;
    let far = Neighborhood::graph(vec![Some(1000)], vec![Some(1000)]);
    let mut one = [0];
    unsuitable(
        "neighbor_all_to_all_into",
        ic.neighbor_all_to_all_into(&far, &[1], &mut one),
    )?;
    unsuitable(
        "ineighbor_all_gather_into",
        ic.ineighbor_all_gather_into(&far, &[1], &mut one).map(drop),
    )?;

    let dup = ic.dup()?;
    shape(&dup, lr, ln, rn, &remote_of)?;
    p2p(&dup, lr, ln, rn, &remote_of)?;

    // Split by the parity of the local rank, key -lr.
    let sc = lr % 2;
    let sp = ic.split(Color::With(sc as u32), -lr)?;
    let (lc, rc) = ((ln - sc + 1) / 2, (rn - sc + 1) / 2);
    match sp {
        None => ensure!(rc == 0, "split gave None with {rc} remote processes"),
        Some(sp) => {
            let mine = (lr + 1..ln).filter(|x| x % 2 == sc).count() as i32;
            let remote: Vec<i32> = (0..rn).rev().filter(|r| r % 2 == sc).collect();
            let remote_of = |q: i32| (2 * remote[q as usize] + other) as u32;
            shape(&sp, mine, lc, rc, &remote_of)?;
            p2p(&sp, mine, lc, rc, &remote_of)?;
        }
    }

    // Create with the local group without its rank 0 (unless alone).
    let lg = ic.group();
    let sub = if ln > 1 { lg.excl(&[0])? } else { lg.clone() };
    let made = ic.create(&sub)?;
    ensure!(made.is_some() == (ln == 1 || lr > 0), "create's membership");
    if let Some(c) = made {
        let (mine, lc, rc) = (
            if ln > 1 { lr - 1 } else { 0 },
            ln.max(2) - 1,
            rn.max(2) - 1,
        );
        let remote_of = |q: i32| (2 * (if rn > 1 { q + 1 } else { q }) + other) as u32;
        shape(&c, mine, lc, rc, &remote_of)?;
        p2p(&c, mine, lc, rc, &remote_of)?;
    }

    // Merge: the odds first (high for the evens).
    let m = ic.merge(color == 0)?;
    ensure!(!m.is_inter() && m.size() == size, "merged shape");
    ensure!(
        m.rank() == if color == 1 { lr } else { rn + lr },
        "merged rank {}",
        m.rank()
    );
    m.all_reduce_into(&[rank], &mut sum, &SystemOperation::Sum)?;
    ensure!(
        sum[0] == size * (size - 1) / 2,
        "sum over the merged communicator"
    );

    // From groups, through the world.
    let all: Vec<u32> = (0..size as u32).collect();
    let wg = Group::new(all, rank as u32)?;
    let mine: Vec<i32> = (0..ln).map(|i| 2 * i + color).collect();
    let theirs: Vec<i32> = (0..rn).map(|i| 2 * i + other).collect();
    let fg = world.intercomm_create_from_groups(
        &wg.incl(&mine)?,
        0,
        &wg.incl(&theirs)?,
        0,
        "rust test",
    )?;
    shape(&fg, lr, ln, rn, &remote_of)?;
    p2p(&fg, lr, ln, rn, &remote_of)?;
    Ok(universe.finalize()?)
}

/// Checks the shape of an inter-communicator.
fn shape(ic: &Communicator, lr: i32, ln: i32, rn: i32, remote: &dyn Fn(i32) -> u32) -> Check {
    ensure!(ic.is_inter(), "not an inter-communicator");
    ensure!(
        ic.rank() == lr && ic.size() == ln,
        "local rank {} of {}",
        ic.rank(),
        ic.size()
    );
    ensure!(
        ic.remote_size() == Some(rn),
        "remote size {:?}",
        ic.remote_size()
    );
    let g = ic.remote_group().ok_or("no remote group")?;
    let want: Vec<u32> = (0..rn).map(remote).collect();
    ensure!(
        g.world_ranks() == want,
        "remote group {:?}, {want:?} expected",
        g.world_ranks()
    );
    ensure!(ic.group().size() == ln, "local group");
    Ok(())
}

/// Point-to-point to the remote group: local rank r sends its world
/// rank to remote rank r % rn with tag 100 + r; each receives from its
/// remote ranks by `ANY_SOURCE`.
fn p2p(ic: &Communicator, lr: i32, ln: i32, rn: i32, remote: &dyn Fn(i32) -> u32) -> Check {
    let me = [mpi::raw::world_ranks(ic)[lr as usize]];
    let s = ic.isend(&me, lr % rn, 100 + lr)?;
    for q in (lr..rn).step_by(ln as usize) {
        let mut v = [0u32];
        let st = ic.recv(&mut v, ANY_SOURCE, 100 + q)?;
        ensure!(st.source_rank() == q, "source {} for {q}", st.source_rank());
        ensure!(v[0] == remote(q), "payload {} from {q}", v[0]);
    }
    s.wait()?;
    ensure!(
        ic.process_at_rank(rn).is_err(),
        "rank {rn} of the remote group"
    );
    Ok(())
}

/// The blocking collectives on an inter-communicator (§6.2.2), between
/// the evens (`color` 0) and the odds.
fn collectives(
    ic: &Communicator,
    color: i32,
    lr: i32,
    rn: i32,
    remote: &dyn Fn(i32) -> u32,
) -> Check {
    let me = mpi::raw::world_ranks(ic)[lr as usize];
    let remote_sum: u32 = (0..rn).map(remote).sum();
    // The root of the evens' rooted collectives is their local rank 0.
    let root_of = |group: i32| match (color == group, lr) {
        (true, 0) => ROOT,
        (true, _) => PROC_NULL,
        (false, _) => 0,
    };
    ic.barrier()?;

    let mut b = if color == 0 && lr == 0 {
        [42u32, 7]
    } else {
        [0, 0]
    };
    ic.broadcast_into(&mut b, root_of(0))?;
    let want = match (color, lr) {
        (0, 0) => [42, 7],
        (0, _) => [0, 0],
        _ => [42, 7],
    };
    ensure!(b == want, "bcast gave {b:?}");

    // Reduce to the odds' local rank 0: the sum of the evens' world ranks.
    let mut r = [0u32];
    let root = root_of(1);
    let out = (root == ROOT).then_some(&mut r[..]);
    ic.reduce_into(&[me], out, &SystemOperation::Sum, root)?;
    ensure!(root != ROOT || r[0] == remote_sum, "reduce gave {}", r[0]);

    let mut all = [0u32];
    ic.all_reduce_into(&[me], &mut all, &SystemOperation::Sum)?;
    ensure!(
        all[0] == remote_sum,
        "allreduce gave {}, {remote_sum} expected",
        all[0]
    );

    // Gather to the evens' root: [w, 10 w] from every odd.
    let mut g = vec![0u32; 2 * rn as usize];
    let root = root_of(0);
    let out = (root == ROOT).then_some(&mut g[..]);
    ic.gather_into(&[me, 10 * me], out, root)?;
    if root == ROOT {
        let want: Vec<u32> = (0..rn).flat_map(|q| [remote(q), 10 * remote(q)]).collect();
        ensure!(g == want, "gather gave {g:?}");
    }

    // Scatter from the odds' root: [q, world rank of the root] to q.
    let root = root_of(1);
    let data: Vec<u32> = (0..rn as u32).flat_map(|q| [q, me]).collect();
    let mut got = [9u32, 9];
    let send = (root == ROOT).then_some(&data[..]);
    ic.scatter_into(send, &mut got, root)?;
    if color == 0 {
        ensure!(got == [lr as u32, remote(0)], "scatter gave {got:?}");
    } else {
        ensure!(got == [9, 9], "scatter wrote the root's group");
    }

    // Allgather: every process gets the other group's world ranks.
    let mut ag = vec![0u32; rn as usize];
    ic.all_gather_into(&[me], &mut ag)?;
    let want: Vec<u32> = (0..rn).map(remote).collect();
    ensure!(ag == want, "allgather gave {ag:?}");

    // Alltoall: 100 w + q to remote rank q.
    let out: Vec<u32> = (0..rn as u32).map(|q| 100 * me + q).collect();
    let mut inn = vec![0u32; rn as usize];
    ic.all_to_all_into(&out, &mut inn)?;
    let want: Vec<u32> = (0..rn).map(|q| 100 * remote(q) + lr as u32).collect();
    ensure!(inn == want, "alltoall gave {inn:?}");
    Ok(())
}

/// Reduce-scatter(-block) (§6.10): the reduction of the other group's
/// data scattered over this one, blocking and not. Each process sends
/// `100 w + k` (12 elements, spread over the local group) and `w + k`
/// (`ln × rn` elements, `rn` per process).
fn reduce_scatters(
    ic: &Communicator,
    lr: i32,
    ln: i32,
    rn: i32,
    remote: &dyn Fn(i32) -> u32,
) -> Check {
    let me = mpi::raw::world_ranks(ic)[lr as usize];
    let rsum: u32 = (0..rn).map(remote).sum();
    let (ln, rn, lr) = (ln as usize, rn as usize, lr as usize);
    let counts: Vec<usize> = (0..ln)
        .map(|i| 12 / ln + usize::from(i < 12 % ln))
        .collect();
    let at: usize = counts[..lr].iter().sum();
    let send: Vec<u32> = (0..12).map(|k| 100 * me + k).collect();
    let send2: Vec<u32> = (0..(ln * rn) as u32).map(|k| me + k).collect();
    let want: Vec<u32> = (at..at + counts[lr])
        .map(|k| 100 * rsum + (rn * k) as u32)
        .collect();
    let want2: Vec<u32> = (lr * rn..(lr + 1) * rn)
        .map(|k| rsum + (rn * k) as u32)
        .collect();
    let sum = SystemOperation::Sum;
    let (mut v, mut w) = (vec![0u32; counts[lr]], vec![0u32; rn]);
    ic.reduce_scatter_into(&send, &mut v, &counts, &sum)?;
    ic.reduce_scatter_block_into(&send2, &mut w, &sum)?;
    ensure!(v == want && w == want2, "reduce_scatter gave {v:?} {w:?}");
    let (mut v, mut w) = (vec![0u32; counts[lr]], vec![0u32; rn]);
    let a = ic.ireduce_scatter_into(&send, &mut v, &counts, sum)?;
    let b = ic.ireduce_scatter_block_into(&send2, &mut w, sum)?;
    mpi::request::wait_all(vec![a, b])?;
    ensure!(v == want && w == want2, "ireduce_scatter gave {v:?} {w:?}");
    Ok(())
}

/// The nonblocking collectives (§6.12) on an inter-communicator, some
/// outstanding together, with the values of the blocking ones.
fn nonblocking(
    ic: &Communicator,
    color: i32,
    lr: i32,
    rn: i32,
    remote: &dyn Fn(i32) -> u32,
) -> Check {
    let me = mpi::raw::world_ranks(ic)[lr as usize];
    let remote_sum: u32 = (0..rn).map(remote).sum();
    let root_of = |group: i32| match (color == group, lr) {
        (true, 0) => ROOT,
        (true, _) => PROC_NULL,
        (false, _) => 0,
    };
    let sum = SystemOperation::Sum;
    let rnu = rn as usize;

    // A barrier, a bcast from the evens' root and an allreduce at once.
    let mut b = if color == 0 && lr == 0 {
        [42u32, 7]
    } else {
        [0, 0]
    };
    let mut all = [0u32];
    let reqs = vec![
        ic.ibarrier()?,
        ic.ibroadcast_into(&mut b, root_of(0))?,
        ic.iall_reduce_into(&[me], &mut all, sum)?,
    ];
    mpi::request::wait_all(reqs)?;
    let want = if color == 0 && lr > 0 {
        [0, 0]
    } else {
        [42, 7]
    };
    ensure!(b == want, "ibcast gave {b:?}");
    ensure!(all[0] == remote_sum, "iallreduce gave {}", all[0]);

    // Ireduce to the odds' root.
    let mut r = [0u32];
    let root = root_of(1);
    let out = (root == ROOT).then_some(&mut r[..]);
    ic.ireduce_into(&[me], out, sum, root)?.wait()?;
    ensure!(root != ROOT || r[0] == remote_sum, "ireduce gave {}", r[0]);

    // Igather to the evens' root, iscatter from the odds'.
    let mut g = vec![0u32; 2 * rnu];
    let root = root_of(0);
    let out = (root == ROOT).then_some(&mut g[..]);
    ic.igather_into(&[me, 10 * me], out, root)?.wait()?;
    if root == ROOT {
        let want: Vec<u32> = (0..rn).flat_map(|q| [remote(q), 10 * remote(q)]).collect();
        ensure!(g == want, "igather gave {g:?}");
    }
    let root = root_of(1);
    let data: Vec<u32> = (0..rn as u32).flat_map(|q| [q, me]).collect();
    let mut got = [9u32, 9];
    let send = (root == ROOT).then_some(&data[..]);
    ic.iscatter_into(send, &mut got, root)?.wait()?;
    let want = if color == 0 {
        [lr as u32, remote(0)]
    } else {
        [9, 9]
    };
    ensure!(got == want, "iscatter gave {got:?}");

    // Iallgather(v), ialltoall(v).
    let mut ag = vec![0u32; rnu];
    ic.iall_gather_into(&[me], &mut ag)?.wait()?;
    let want: Vec<u32> = (0..rn).map(remote).collect();
    ensure!(ag == want, "iallgather gave {ag:?}");
    let ones = vec![1usize; rnu];
    let rev: Vec<usize> = (0..rnu).rev().collect();
    let mut ag = vec![0u32; rnu];
    ic.iall_gather_varcount_into(&[me], &mut ag, &ones, &rev)?
        .wait()?;
    let want: Vec<u32> = (0..rn).rev().map(remote).collect();
    ensure!(ag == want, "iallgatherv gave {ag:?}");
    let out: Vec<u32> = (0..rn as u32).map(|q| 100 * me + q).collect();
    let mut inn = vec![0u32; rnu];
    ic.iall_to_all_into(&out, &mut inn)?.wait()?;
    let want: Vec<u32> = (0..rn).map(|q| 100 * remote(q) + lr as u32).collect();
    ensure!(inn == want, "ialltoall gave {inn:?}");
    let fwd: Vec<usize> = (0..rnu).collect();
    let mut inn = vec![0u32; rnu];
    ic.iall_to_all_varcount_into(&out, &ones, &fwd, &mut inn, &ones, &rev)?
        .wait()?;
    let want: Vec<u32> = (0..rn).rev().map(|q| 100 * remote(q) + lr as u32).collect();
    ensure!(inn == want, "ialltoallv gave {inn:?}");
    Ok(())
}
