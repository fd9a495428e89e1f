//! The neighborhood collectives of the Rust API (MPI 5.0 §8.6, §8.7),
//! as real jobs of 1, 2, 3, 4 and 7 processes over the socket transports.
//!
//! One binary plays two roles, as `o2grun_attacks.rs` does: run by cargo,
//! [`neighborhood_collectives`] starts `o2grun` running this binary with
//! `--exact rank` and `O2G_TEST_ROLE=neighbor`; started so, [`rank`] is
//! one process of the job. Each process checks every value it receives
//! (and that the blocks of `MPI_PROC_NULL` neighbours and the gaps are
//! left as they were) for every blocking and nonblocking neighborhood
//! collective, on periodic and non-periodic grids (at 1, 2 and 4
//! processes with dimensions where both neighbours are one process), a
//! graph with self-loops, a distributed graph with repeated edges, and a
//! hand-made neighbourhood with `None` neighbours and empty sides. A user
//! message with the collectives' own tag is in flight throughout, in the
//! user's context: it must neither match nor be matched by them.

use std::process::Command;

use mpi::topology::{dims_create, Cartesian, Graph, Neighborhood, Topology};
use mpi::{Communicator, Request};

/// What a receive block holds before the collective (and after, for
/// `MPI_PROC_NULL`'s and the gaps).
const SENT: i64 = -7;

/// The ranks' entry point, not a test: o2grun starts this binary with
/// `--exact rank` and `O2G_TEST_ROLE`; run by cargo, there is nothing to
/// do.
#[test]
fn rank() {
    if std::env::var("O2G_TEST_ROLE").as_deref() == Ok("neighbor") {
        let code = match run() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("neighbor: {e}");
                1
            }
        };
        std::process::exit(code);
    }
}

#[test]
fn neighborhood_collectives() {
    for np in [1, 2, 3, 4, 7] {
        for t in ["sockets-epoll", "sockets-select"] {
            let out = Command::new(env!("CARGO_BIN_EXE_o2grun"))
                .args(["-n", &np.to_string(), "--timeout", "120"])
                .arg(std::env::current_exe().expect("current_exe"))
                .args(["--exact", "rank", "--nocapture", "--test-threads=1", "-q"])
                .env("O2G_TEST_ROLE", "neighbor")
                .env("O2G_TRANSPORT", t)
                .env_remove("PMI_FD")
                .env_remove("PMI_PORT")
                .output()
                .expect("o2grun");
            assert!(
                out.status.success(),
                "np {np} over {t}: {}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

type Check = Result<(), Box<dyn std::error::Error>>;

/// Element `k` of the block `i` that process `s` sends in round `gen`.
fn val(s: i32, i: usize, k: usize, gen: i64) -> i64 {
    100_000 * gen + 1000 * i64::from(s) + 50 * i as i64 + k as i64
}

/// A neighbourhood with, for each receive block, the index of the
/// sender's block that lands in it (`None` for `MPI_PROC_NULL`).
struct Case {
    name: String,
    nbrs: Neighborhood,
    blk: Vec<Option<usize>>,
}

/// Works out which block lands where from every process's destinations
/// (gathered, each padded to `MAX` entries).
fn case(
    c: &Communicator,
    name: &str,
    nbrs: Neighborhood,
) -> Result<Case, Box<dyn std::error::Error>> {
    const MAX: usize = 16;
    let p = c.size() as usize;
    let mut mine = vec![-2i32; MAX + 1];
    mine[0] = nbrs.destinations.len() as i32;
    for (i, d) in nbrs.destinations.iter().enumerate() {
        mine[i + 1] = d.unwrap_or(-1);
    }
    let mut all = vec![0i32; p * (MAX + 1)];
    c.all_gather_into(&mine, &mut all)?;
    let me = c.rank();
    let mut blk = Vec::new();
    for (j, s) in nbrs.sources.iter().enumerate() {
        let Some(s) = *s else {
            blk.push(None);
            continue;
        };
        let row = &all[s as usize * (MAX + 1)..][..MAX + 1];
        let dests = &row[1..=row[0] as usize];
        let i = if nbrs.cartesian {
            j ^ 1
        } else {
            let k = nbrs.sources[..j].iter().filter(|&&x| x == Some(s)).count();
            dests
                .iter()
                .enumerate()
                .filter(|(_, &d)| d == me)
                .nth(k)
                .ok_or(format!("{name}: {s} sends {me} too few blocks"))?
                .0
        };
        if dests.get(i) != Some(&me) {
            return Err(format!("{name}: block {i} of {s} is not for {me}").into());
        }
        blk.push(Some(i));
    }
    Ok(Case {
        name: name.to_owned(),
        nbrs,
        blk,
    })
}

fn run() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (r, p) = (world.rank(), world.size());
    // A user message with the blocking collectives' tag and the
    // nonblocking ones' range, to this process, in flight throughout.
    let user = [42i64, 43];
    let pending = world.isend(&user, r, 13)?;
    let mut cases = Vec::new();
    for (nd, periods) in [
        (2, vec![true, true]),
        (2, vec![false, false]),
        (3, vec![false, true, true]),
    ] {
        let mut dims = vec![0; nd];
        dims_create(p, &mut dims)?;
        let g = Topology::Cartesian(Cartesian::new(dims.clone(), periods.clone())?);
        let name = format!("grid {dims:?} periods {periods:?}");
        cases.push(case(&world, &name, g.neighborhood(r)?)?);
    }
    // A ring both ways, with self-loops at even ranks.
    let (mut index, mut edges) = (Vec::new(), Vec::new());
    for q in 0..p {
        edges.push((q + 1) % p);
        if q % 2 == 0 {
            edges.push(q);
        }
        edges.push((q + p - 1) % p);
        index.push(edges.len() as i32);
    }
    let g = Topology::Graph(Graph::new(index, edges)?);
    cases.push(case(&world, "graph", g.neighborhood(r)?)?);
    // Twice to the next rank, once to the one after, each edge given by
    // a process other than its ends where there is one.
    let mut given = Vec::new();
    if r == 0 {
        for q in 0..p {
            given.push(((q + 1) % p, (q + 2) % p, 1));
            given.push((q, (q + 1) % p, 2));
            given.push((q, (q + 1) % p, 3));
        }
    }
    let d = world.dist_graph_from_edges(&given, true)?;
    cases.push(case(&world, "distributed graph", d.neighborhood())?);
    // By hand, a chain with `None` neighbours: from the previous rank,
    // to the next; the first process receives from nobody and the last
    // sends to nobody (at 1 process, nothing either way).
    let sources = if r == 0 {
        vec![]
    } else {
        vec![None, Some(r - 1)]
    };
    let destinations = if r == p - 1 {
        vec![]
    } else {
        vec![None, Some(r + 1), None]
    };
    let by_hand = Neighborhood::graph(sources, destinations);
    cases.push(case(&world, "by hand", by_hand)?);
    for c in &cases {
        for gen in 0..2 {
            for nb in [false, true] {
                check(&world, c, gen, nb)
                    .map_err(|e| format!("{} (nonblocking {nb}): {e}", c.name))?;
            }
        }
    }
    let mut got = [0i64; 2];
    world.recv(&mut got, r, 13)?;
    pending.wait()?;
    if got != user {
        return Err(format!("user message {got:?}").into());
    }
    universe.finalize()?;
    Ok(())
}

/// Runs `f` (a blocking call) or `i` (nonblocking, then waited for) on
/// the receive buffer `buf`.
fn go<'b, T>(
    nb: bool,
    buf: &'b mut [T],
    f: impl FnOnce(&mut [T]) -> mpi::Result<()>,
    i: impl FnOnce(&'b mut [T]) -> mpi::Result<Request<'b>>,
) -> mpi::Result<()> {
    if nb {
        i(buf)?.wait().map(drop)
    } else {
        f(buf)
    }
}

fn same(what: &str, got: &[i64], want: &[i64]) -> Check {
    if got != want {
        return Err(format!("{what}: got {got:?}, expected {want:?}").into());
    }
    Ok(())
}

/// Every neighborhood collective on `c`, round `gen`.
fn check(w: &Communicator, c: &Case, gen: i64, nb: bool) -> Check {
    let n = &c.nbrs;
    let me = w.rank();
    let (ins, outs) = (n.sources.len(), n.destinations.len());
    let src = |j: usize| n.sources[j].expect("a source");

    // allgather: 3 items to everyone.
    let send: Vec<i64> = (0..3).map(|k| val(me, 0, k, gen)).collect();
    let mut recv = vec![SENT; 3 * ins];
    let mut want = recv.clone();
    for j in 0..ins {
        if c.blk[j].is_some() {
            for k in 0..3 {
                want[3 * j + k] = val(src(j), 0, k, gen);
            }
        }
    }
    go(
        nb,
        &mut recv,
        |b| w.neighbor_all_gather_into(n, &send, b),
        |b| w.ineighbor_all_gather_into(n, &send, b),
    )?;
    same("allgather", &recv, &want)?;

    // allgatherv: process s sends 1 + s % 3 items; blocks in reverse
    // order, a gap after each.
    let send: Vec<i64> = (0..1 + me as usize % 3)
        .map(|k| val(me, 0, k, gen))
        .collect();
    let (mut counts, mut displs) = (vec![0; ins], vec![0; ins]);
    let mut at = 0;
    for j in (0..ins).rev() {
        counts[j] = if c.blk[j].is_some() {
            1 + src(j) as usize % 3
        } else {
            2
        };
        displs[j] = at;
        at += counts[j] + 1;
    }
    let mut recv = vec![SENT; at];
    let mut want = recv.clone();
    for j in 0..ins {
        if c.blk[j].is_some() {
            for k in 0..counts[j] {
                want[displs[j] + k] = val(src(j), 0, k, gen);
            }
        }
    }
    go(
        nb,
        &mut recv,
        |b| w.neighbor_all_gather_varcount_into(n, &send, b, &counts, &displs),
        |b| w.ineighbor_all_gather_varcount_into(n, &send, b, &counts, &displs),
    )?;
    same("allgatherv", &recv, &want)?;

    // alltoall: 2 items per block.
    let send: Vec<i64> = (0..2 * outs).map(|x| val(me, x / 2, x % 2, gen)).collect();
    let mut recv = vec![SENT; 2 * ins];
    let mut want = recv.clone();
    for j in 0..ins {
        if let Some(i) = c.blk[j] {
            for k in 0..2 {
                want[2 * j + k] = val(src(j), i, k, gen);
            }
        }
    }
    go(
        nb,
        &mut recv,
        |b| w.neighbor_all_to_all_into(n, &send, b),
        |b| w.ineighbor_all_to_all_into(n, &send, b),
    )?;
    same("alltoall", &recv, &want)?;

    // alltoallv: block i of process s has (s + i) % 3 items (zero
    // included), a gap after each; the receive blocks in reverse order.
    let cnt = |s: i32, i: usize| (s as usize + i) % 3;
    let (mut sc, mut sd, mut at) = (vec![0; outs], vec![0; outs], 0);
    for i in 0..outs {
        sc[i] = cnt(me, i);
        sd[i] = at;
        at += sc[i] + 1;
    }
    let mut send = vec![-1i64; at];
    for i in 0..outs {
        for k in 0..sc[i] {
            send[sd[i] + k] = val(me, i, k, gen);
        }
    }
    let (mut rc, mut rd, mut at) = (vec![0; ins], vec![0; ins], 0);
    for j in (0..ins).rev() {
        rc[j] = c.blk[j].map_or(1, |i| cnt(src(j), i));
        rd[j] = at;
        at += rc[j] + 1;
    }
    let mut recv = vec![SENT; at];
    let mut want = recv.clone();
    for j in 0..ins {
        if let Some(i) = c.blk[j] {
            for k in 0..rc[j] {
                want[rd[j] + k] = val(src(j), i, k, gen);
            }
        }
    }
    go(
        nb,
        &mut recv,
        |b| w.neighbor_all_to_all_varcount_into(n, &send, &sc, &sd, b, &rc, &rd),
        |b| w.ineighbor_all_to_all_varcount_into(n, &send, &sc, &sd, b, &rc, &rd),
    )?;
    same("alltoallv", &recv, &want)?;

    // alltoallw: the same in bytes.
    let bytes = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let times8 = |v: &[usize]| v.iter().map(|x| 8 * x).collect::<Vec<usize>>();
    let sendb = bytes(&send);
    let mut recvb = bytes(&vec![SENT; at]);
    let (sc8, sd8, rc8, rd8) = (times8(&sc), times8(&sd), times8(&rc), times8(&rd));
    go(
        nb,
        &mut recvb,
        |b| w.neighbor_all_to_all_w_into(n, &sendb, &sc8, &sd8, b, &rc8, &rd8),
        |b| w.ineighbor_all_to_all_w_into(n, &sendb, &sc8, &sd8, b, &rc8, &rd8),
    )?;
    same(
        "alltoallw",
        &recvb
            .chunks(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
            .collect::<Vec<_>>(),
        &want,
    )?;

    // Counts that are not one per neighbour are refused, before anything
    // is sent.
    if ins > 0
        && w.neighbor_all_to_all_varcount_into(n, &send, &sc, &sd, &mut recv, &rc[..0], &rd[..0])
            .is_ok()
    {
        return Err("alltoallv with no receive counts succeeded".into());
    }
    Ok(())
}
