//! The HYPHEN paper's scatter / compute / gather shape as a PB task
//! program: what `examples/scatter_gather.rs` runs and a test checks.
//!
//! Logical node 0 (the master) is home to the input and output arrays, in
//! its DSM pages. Work is cut into *units* of half a page (512 `u32`), so
//! two workers write disjoint halves of the same output page and both
//! write back: the multiple-writer property at work.
//!
//! ```text
//!  master                                   worker w
//!  fill input pages (home writes)
//!  barrier  <----------- PB tasks ----------> barrier
//!  scatter: PB(w, COMPUTE(u)) for each unit   EXT: COMPUTE(u)
//!                                               CACHE input page, read half
//!                                               CACHE output page, write f(x)
//!                                               WB output page (diff home)
//!  EXT: DONE(u) ... until all units  <------    PB(0, DONE(u))
//!  gather: read output pages at home, check
//!  PB(w, FINISH) to every worker     ------>  EXT: FINISH
//!  barrier  <------------------------------>  barrier
//! ```
//!
//! With one node, the master is its own worker.

use crate::board::Board;
use crate::dsm::GlobalPage;
use crate::error::Result;
use crate::layout::PAGE;
use crate::runtime::{Runtime, TaskCtx};
use crate::task::TaskId;
use crate::wait::WaitPolicy;

/// Task: compute unit `arg`.
pub const COMPUTE: u16 = 1;
/// Task (to the master): unit `arg` is done.
pub const DONE: u16 = 2;
/// Task (to a worker): no more work.
pub const FINISH: u16 = 3;

/// Bytes of one unit of work: half a page.
pub const UNIT_BYTES: usize = PAGE / 2;
const UNIT_WORDS: usize = UNIT_BYTES / 4;

/// Input word `i`.
pub fn input(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995
}

/// What each input word becomes.
pub fn f(x: u32) -> u32 {
    x.wrapping_mul(x).wrapping_add(1)
}

/// DSM pages the master needs for `units` units (input and output).
pub fn pages_needed(units: u16) -> u32 {
    2 * u32::from(units).div_ceil(2)
}

/// What the master found when it gathered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Units computed.
    pub units: u16,
    /// Output words that differ from `f(input(i))` (0 when correct).
    pub mismatches: usize,
    /// Wrapping sum of the output words.
    pub checksum: u64,
    /// Tasks the master ran (barrier tasks included).
    pub tasks_run: u64,
}

struct State {
    master: u32,
    input_pages: u32,
    done: u32,
    finished: bool,
}

fn compute(ctx: &mut TaskCtx<'_, State>, unit: u16) -> Result<()> {
    let page = u32::from(unit) / 2;
    let half = usize::from(unit % 2) * UNIT_BYTES;
    let node = ctx.node().clone();
    let home = ctx.state.master;
    let inp = node.cache(GlobalPage { home, page })?;
    let mut buf = vec![0u8; UNIT_BYTES];
    node.cache_read(inp, half, &mut buf)?;
    node.discard(inp)?;
    for w in buf.chunks_exact_mut(4) {
        let x = u32::from_le_bytes(w.try_into().expect("4 bytes"));
        w.copy_from_slice(&f(x).to_le_bytes());
    }
    let out = node.cache(GlobalPage {
        home,
        page: ctx.state.input_pages + page,
    })?;
    node.cache_write(out, half, &buf)?;
    node.write_back(out)?;
    ctx.pb(0, TaskId::new(DONE, unit))
}

fn done(ctx: &mut TaskCtx<'_, State>, _unit: u16) -> Result<()> {
    ctx.state.done += 1;
    Ok(())
}

fn finish(ctx: &mut TaskCtx<'_, State>, _: u16) -> Result<()> {
    ctx.state.finished = true;
    Ok(())
}

/// Runs the program as physical node `me`; every node of the board must
/// run it with the same `units`. The master returns what it gathered.
///
/// # Errors
///
/// Any board error, e.g. [`crate::Error::NoSuchPage`] when the master has
/// fewer DSM pages than [`pages_needed`], or [`crate::Error::Timeout`] if
/// a node is missing.
pub fn run_node(board: &Board, me: u32, units: u16, policy: WaitPolicy) -> Result<Option<Outcome>> {
    let master = board.physical(0)?;
    let input_pages = u32::from(units).div_ceil(2);
    let state = State {
        master,
        input_pages,
        done: 0,
        finished: false,
    };
    let mut rt = Runtime::new(board.node(me, policy)?, state);
    rt.register(COMPUTE, compute)?;
    rt.register(DONE, done)?;
    rt.register(FINISH, finish)?;
    let is_master = board.logical_of(me)? == 0;
    let words = usize::from(units) * UNIT_WORDS;
    if is_master {
        let node = rt.node().clone();
        let bytes: Vec<u8> = (0..words as u32)
            .flat_map(|i| input(i).to_le_bytes())
            .collect();
        for (p, chunk) in bytes.chunks(PAGE).enumerate() {
            node.home_write(p as u32, 0, chunk)?;
            node.home_write(input_pages + p as u32, 0, &vec![0; chunk.len()])?;
        }
    }
    rt.barrier()?;
    let outcome = if is_master {
        let nodes = board.config().nodes;
        let workers: Vec<u32> = if nodes > 1 {
            (1..nodes).collect()
        } else {
            vec![0]
        };
        for u in 0..units {
            rt.pb(
                workers[usize::from(u) % workers.len()],
                TaskId::new(COMPUTE, u),
            )?;
        }
        rt.run_until(|s| s.done == u32::from(units))?;
        // Gather straight from the home pages.
        let node = rt.node().clone();
        let mut out = vec![0u8; words * 4];
        for (p, chunk) in out.chunks_mut(PAGE).enumerate() {
            let page = GlobalPage {
                home: master,
                page: input_pages + p as u32,
            };
            node.home_read(page, 0, chunk)?;
        }
        let mut mismatches = 0;
        let mut checksum = 0u64;
        for (i, w) in out.chunks_exact(4).enumerate() {
            let got = u32::from_le_bytes(w.try_into().expect("4 bytes"));
            mismatches += usize::from(got != f(input(i as u32)));
            checksum = checksum.wrapping_add(u64::from(got));
        }
        for l in 1..nodes {
            rt.pb(l, TaskId::new(FINISH, 0))?;
        }
        Some((mismatches, checksum))
    } else {
        rt.run_until(|s| s.finished)?;
        None
    };
    rt.barrier()?;
    Ok(outcome.map(|(mismatches, checksum)| Outcome {
        units,
        mismatches,
        checksum,
        tasks_run: rt.executed(),
    }))
}

/// The checksum a correct run gives.
pub fn expected_checksum(units: u16) -> u64 {
    (0..(usize::from(units) * UNIT_WORDS) as u32)
        .map(|i| u64::from(f(input(i))))
        .fold(0u64, u64::wrapping_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::BoardConfig;
    use crate::testutil::scratch_region;
    use std::time::Duration;

    fn run(nodes: u32, units: u16, policy: WaitPolicy) -> Outcome {
        let cfg = BoardConfig {
            nodes,
            dsm_pages: pages_needed(units),
            cache_pages: 4,
            twin_pages: 4,
            ..BoardConfig::default()
        };
        let region = scratch_region("sg", Board::required_len(&cfg).unwrap());
        let board = Board::create(region, cfg).unwrap();
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..nodes)
                .map(|me| {
                    let board = &board;
                    s.spawn(move || run_node(board, me, units, policy).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let masters: Vec<_> = outcomes.into_iter().flatten().collect();
        assert_eq!(masters.len(), 1);
        masters[0]
    }

    #[test]
    fn scatter_compute_gather_is_exact() {
        for (nodes, units, policy) in [
            (4, 24, WaitPolicy::blocking(Duration::from_secs(20))),
            (3, 7, WaitPolicy::polling(Duration::from_secs(20))),
            (1, 4, WaitPolicy::polling(Duration::from_secs(20))),
        ] {
            let o = run(nodes, units, policy);
            assert_eq!(o.mismatches, 0, "{nodes} nodes");
            assert_eq!(o.checksum, expected_checksum(units));
            assert_eq!(o.units, units);
        }
    }

    #[test]
    fn too_little_dsm_is_an_error() {
        let cfg = BoardConfig {
            nodes: 1,
            dsm_pages: 1,
            ..BoardConfig::default()
        };
        let region = scratch_region("sg-small", Board::required_len(&cfg).unwrap());
        let board = Board::create(region, cfg).unwrap();
        let policy = WaitPolicy::polling(Duration::from_secs(5));
        assert!(run_node(&board, 0, 4, policy).is_err());
    }
}
