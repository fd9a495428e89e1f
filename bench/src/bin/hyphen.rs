//! Microbenchmarks of the emulated HyphenLink board and AP1000 buffer
//! receiving (`o2g-hyphen`):
//!
//! - `pb-ext`: PB→EXT latency between two nodes, polling vs interrupt
//!   EXT (a futex sleep on this host), per task id, with 1 to 64 ids in
//!   flight per round trip;
//! - `dsm`: CACHE and WB cost vs the number of dirty runs in the page
//!   (1 to 2048 one-byte runs spread over it), and vs the number of dirty
//!   bytes (one contiguous run, or 1-byte runs: the diff's worst shape);
//! - `ring`: ping-pong over AP1000 rings, `recvs` in place (copying only
//!   the wrapped part of a message to the slack) vs a copying receive, and
//!   the bytes each receive copies per message (the wrap-around copy grows
//!   as size² / (2 × ring capacity)).
//!
//! Nodes are threads of this process, each with its own node handle on one
//! `/dev/shm` region (created and unlinked at once); the board's work runs
//! on the issuing thread either way (see the crate docs), so threads
//! measure the same code path processes would.
//!
//! The HyphenLink figures come twice: what the timing model says the
//! board would take (the nodes' virtual clocks, `Costs::HYPHENLINK`, every
//! parameter assumed: the paper has no figure; deterministic, the same on
//! any host), and what the emulation took on this host ("here", wall
//! clock; on a small shared machine polling peers time-share cores, so
//! compare series of one run). The rings have no model yet.

mod emulated;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Subcommand;
use o2g_bench::report::Report;
use o2g_bench::{iterations, median};
use o2g_hyphen::ring::{Filter, RingConfig, RingEnvelope, RingReader, RingWriter};
use o2g_hyphen::wait::{WaitMode, WaitPolicy};
use o2g_hyphen::{Board, BoardConfig, GlobalPage, Node, Overflow, Ps, PAGE};
use o2g_nicmem::Region;

use crate::emulated::{scratch_name, Args};

#[derive(Subcommand)]
enum Cmd {
    /// PB→EXT latency, polling vs blocking EXT.
    PbExt,
    /// CACHE and WB cost vs dirty bytes in the page.
    Dsm,
    /// Ping-pong over AP1000 rings: in-place recvs vs copying receive.
    Ring(RingArgs),
    /// All of the above.
    All(RingArgs),
}

#[derive(Clone, Copy, clap::Args)]
struct RingArgs {
    /// Ring capacity in KiB.
    #[arg(long, default_value_t = 128)]
    ring_kib: usize,
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-hyphen-bench", run())
}

fn run() -> Res<()> {
    let about = "Emulated HyphenLink and AP1000 buffer-receiving microbenchmarks";
    let args = Args::<Cmd>::parse(about);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
    }
    let out = |name: &str| args.out.as_deref().map(|d| d.join(name));
    match args.cmd {
        Cmd::PbExt => emit_pb_ext(args.quick, &out)?,
        Cmd::Dsm => emit_dsm(args.quick, &out)?,
        Cmd::Ring(r) => emit_ring(args.quick, r, &out)?,
        Cmd::All(r) => {
            emit_pb_ext(args.quick, &out)?;
            emit_dsm(args.quick, &out)?;
            emit_ring(args.quick, r, &out)?;
        }
    }
    Ok(())
}

/// What the paper says of every HyphenLink table: nothing to compare.
const NO_PAPER_FIGURE: &str =
    "paper (HYPHEN): no figure; every model parameter is assumed (docs/emulated.md)\n";

fn emit_pb_ext(quick: bool, out: &dyn Fn(&str) -> Option<PathBuf>) -> Res<()> {
    pb_ext(quick)?.emit(out("hyphen-pb-ext").as_deref())?;
    println!("{NO_PAPER_FIGURE}(§4.3 left polling against interrupts to be measured)\n");
    Ok(())
}

fn emit_dsm(quick: bool, out: &dyn Fn(&str) -> Option<PathBuf>) -> Res<()> {
    dsm_runs(quick)?.emit(out("hyphen-dsm-runs").as_deref())?;
    println!("{NO_PAPER_FIGURE}");
    dsm(quick)?.emit(out("hyphen-dsm").as_deref())?;
    println!("{NO_PAPER_FIGURE}");
    Ok(())
}

fn emit_ring(quick: bool, r: RingArgs, out: &dyn Fn(&str) -> Option<PathBuf>) -> Res<()> {
    let (time, wraps) = ring(quick, r.ring_kib * 1024)?;
    time.emit(out("hyphen-ring-pingpong").as_deref())?;
    wraps.emit(out("hyphen-ring-copied").as_deref())
}

/// A fresh region, unlinked at once.
fn scratch(len: usize) -> Res<Arc<Region>> {
    let name = scratch_name("hyphen");
    let region = Region::create_shm(&name, len)?;
    Region::unlink_shm(&name)?;
    Ok(Arc::new(region))
}

/// A board of two nodes with one of everything (and no rings), on a
/// fresh region.
fn two_nodes() -> Res<Board> {
    let cfg = BoardConfig {
        nodes: 2,
        dsm_pages: 1,
        cache_pages: 1,
        twin_pages: 1,
        sync_vars: 1,
        ring: None,
    };
    Ok(Board::create(scratch(Board::required_len(&cfg)?)?, cfg)?)
}

fn policy(mode: WaitMode) -> WaitPolicy {
    WaitPolicy {
        mode,
        timeout: Duration::from_secs(30),
    }
}

fn reps(quick: bool) -> usize {
    if quick {
        3
    } else {
        7
    }
}

/// PB→EXT one-way time per task id: node 0 PBs `batch` ids to node 1,
/// which EXTs them all and PBs `batch` back; half the round trip divided
/// by the batch, modelled and here.
fn pb_ext(quick: bool) -> Res<Report> {
    let mut report = Report::new(
        "PB->EXT latency per task id (one way)",
        "ids per round trip",
        "us",
        true,
    );
    let b = two_nodes()?;
    let reps = reps(quick);
    for (name, mode) in [("polling", WaitMode::Poll), ("interrupt", WaitMode::Block)] {
        for batch in [1u32, 4, 16, 64] {
            let rounds = (if quick { 1500 } else { 15000 }) / batch as usize;
            let warm = rounds.min(500);
            let total = warm + reps * rounds;
            let n0 = b.node(0, policy(mode))?;
            let n1 = b.node(1, policy(mode))?;
            align(&[&n0, &n1])?;
            let (samples, model) = std::thread::scope(|s| -> Res<(Vec<Duration>, Ps)> {
                let echo = s.spawn(|| -> o2g_hyphen::Result<()> {
                    for _ in 0..total {
                        for _ in 0..batch {
                            n1.ext()?;
                        }
                        for k in 0..batch {
                            n1.pb(0, k, Overflow::Wait)?;
                        }
                    }
                    Ok(())
                });
                let round = || -> o2g_hyphen::Result<()> {
                    for k in 0..batch {
                        n0.pb(1, k, Overflow::Wait)?;
                    }
                    for _ in 0..batch {
                        n0.ext()?;
                    }
                    Ok(())
                };
                for _ in 0..warm {
                    round()?;
                }
                let start = n0.now()?;
                let mut samples = Vec::new();
                for _ in 0..reps {
                    let t = Instant::now();
                    for _ in 0..rounds {
                        round()?;
                    }
                    samples.push(t.elapsed() / (2 * rounds as u32 * batch));
                }
                let model = (n0.now()? - start) / (2 * (reps * rounds) as u64 * u64::from(batch));
                echo.join().expect("echo thread")?;
                Ok((samples, model))
            })?;
            let mut samples = samples;
            report.push(&format!("{name}, model"), batch.into(), model_us(model));
            report.push(
                &format!("{name}, here"),
                batch.into(),
                us(median(&mut samples)),
            );
        }
    }
    Ok(report)
}

/// Lines the nodes' host clocks up at the latest of them.
fn align(nodes: &[&Node]) -> Res<Ps> {
    let mut t = 0;
    for n in nodes {
        t = t.max(n.now()?);
    }
    for n in nodes {
        n.advance_to(t)?;
    }
    Ok(t)
}

fn model_us(ps: Ps) -> f64 {
    ps as f64 / 1e6
}

/// What one CACHE and one WB took, modelled (node 1's host clock) and
/// here.
#[derive(Default)]
struct DsmSamples {
    cache_model: Vec<Ps>,
    wb_model: Vec<Ps>,
    cache: Vec<Duration>,
    wb: Vec<Duration>,
}

impl DsmSamples {
    /// CACHEs `page` on `node`, lets `dirty` change the cached copy, and
    /// writes it back; returns the diff's runs.
    fn once(
        &mut self,
        node: &Node,
        page: GlobalPage,
        dirty: impl FnOnce(o2g_hyphen::CacheEntry) -> o2g_hyphen::Result<()>,
    ) -> Res<usize> {
        let t0 = node.now()?;
        let t = Instant::now();
        let e = node.cache(page)?;
        self.cache.push(t.elapsed());
        self.cache_model.push(node.now()? - t0);
        dirty(e)?;
        let t0 = node.now()?;
        let t = Instant::now();
        let stats = node.write_back(e)?;
        self.wb.push(t.elapsed());
        self.wb_model.push(node.now()? - t0);
        Ok(stats.runs)
    }
}

/// The median of modelled times (all equal: the model is deterministic).
fn model_median(samples: &mut [Ps]) -> f64 {
    samples.sort_unstable();
    model_us(samples.get(samples.len() / 2).copied().unwrap_or(0))
}

/// CACHE of a remote page and WB of it with `runs` one-byte dirty runs
/// spread evenly over the page.
fn dsm_runs(quick: bool) -> Res<Report> {
    let mut report = Report::new(
        "CACHE and WB cost vs dirty runs (4 KiB page, remote home, 1-byte runs)",
        "dirty runs",
        "us",
        true,
    );
    let b = two_nodes()?;
    let home = b.node(0, policy(WaitMode::Poll))?;
    let node = b.node(1, policy(WaitMode::Poll))?;
    let page = GlobalPage { home: 0, page: 0 };
    let iters = if quick { 300 } else { 3000 };
    let mut value = 0u8;
    for _ in 0..iters {
        let e = node.cache(page)?;
        node.write_back(e)?;
    }
    for runs in (0..=11).map(|s| 1usize << s) {
        home.home_write(0, 0, &[0; PAGE])?;
        let stride = PAGE / runs;
        let mut s = DsmSamples::default();
        for _ in 0..iters {
            // A value unlike the home's, so every written byte is dirty.
            value = value.wrapping_add(1).max(1);
            let got = s.once(&node, page, |e| {
                for k in 0..runs {
                    node.cache_write(e, k * stride, &[value])?;
                }
                Ok(())
            })?;
            assert_eq!(got, runs, "one run per written byte");
        }
        let x = runs as f64;
        report.push("CACHE, model", x, model_median(&mut s.cache_model));
        report.push("CACHE, here", x, us(median(&mut s.cache)));
        report.push("WB, model", x, model_median(&mut s.wb_model));
        report.push("WB, here", x, us(median(&mut s.wb)));
    }
    Ok(report)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// CACHE of a remote page and WB of it with `dirty` changed bytes, in one
/// run or in 1-byte runs.
fn dsm(quick: bool) -> Res<Report> {
    let mut report = Report::new(
        "CACHE and WB cost vs dirty bytes (4 KiB page, remote home)",
        "dirty bytes",
        "us",
        false,
    );
    let b = two_nodes()?;
    let home = b.node(0, policy(WaitMode::Poll))?;
    let node = b.node(1, policy(WaitMode::Poll))?;
    let page = GlobalPage { home: 0, page: 0 };
    let iters = if quick { 300 } else { 3000 };
    // Warm-up: page tables, caches, allocator.
    for _ in 0..iters {
        let e = node.cache(page)?;
        node.write_back(e)?;
    }
    let mut value = 0u8;
    for dirty in [0usize, 1, 16, 64, 256, 1024, 2048, 3072, 4096] {
        // Start from zeros: later values (never 0) then always differ
        // from what the home holds.
        home.home_write(0, 0, &[0; PAGE])?;
        let mut one_run = DsmSamples::default();
        let mut scattered = DsmSamples::default();
        for _ in 0..iters {
            value = value.wrapping_add(1).max(1);
            let runs =
                one_run.once(&node, page, |e| node.cache_write(e, 0, &vec![value; dirty]))?;
            assert_eq!(runs, usize::from(dirty > 0), "every written byte differs");
            if dirty <= PAGE / 2 {
                value = value.wrapping_add(1).max(1);
                let runs = scattered.once(&node, page, |e| {
                    for k in 0..dirty {
                        node.cache_write(e, 2 * k, &[value])?;
                    }
                    Ok(())
                })?;
                assert_eq!(runs, dirty, "every written byte differs");
            }
        }
        let x = dirty as f64;
        one_run.cache.append(&mut scattered.cache);
        report.push("CACHE, model", x, model_median(&mut one_run.cache_model));
        report.push("CACHE, here", x, us(median(&mut one_run.cache)));
        report.push("WB one run, model", x, model_median(&mut one_run.wb_model));
        report.push("WB one run, here", x, us(median(&mut one_run.wb)));
        if !scattered.wb.is_empty() {
            report.push(
                "WB 1-byte runs, model",
                x,
                model_median(&mut scattered.wb_model),
            );
            report.push("WB 1-byte runs, here", x, us(median(&mut scattered.wb)));
        }
    }
    Ok(report)
}

/// How a ping-pong endpoint receives.
#[derive(Clone, Copy, PartialEq)]
enum Recv {
    /// `recvs`: in place, echoing straight from the ring.
    InPlace,
    /// `recv_copy` into a buffer, echoing from the buffer.
    Copy,
}

/// Receives one message on `r` and sends it back on `w`.
fn echo(r: &RingReader, w: &RingWriter, how: Recv, buf: &mut Vec<u8>) -> o2g_hyphen::Result<()> {
    let env = RingEnvelope::default();
    match how {
        Recv::InPlace => {
            let m = r.recvs(Filter::ANY)?;
            w.send(&env, m.payload())?;
            m.done()
        }
        Recv::Copy => {
            r.recv_copy(Filter::ANY, buf)?;
            w.send(&env, buf)
        }
    }
}

fn ring(quick: bool, capacity: usize) -> Res<(Report, Report)> {
    let mut time = Report::new(
        &format!("AP1000 ring ping-pong ({} KiB ring)", capacity / 1024),
        "bytes",
        "half round trip (us)",
        true,
    );
    let mut wraps = Report::new(
        &format!(
            "Bytes the receive copies per message ({} KiB ring)",
            capacity / 1024
        ),
        "bytes",
        "bytes copied per message",
        true,
    );
    let max = 64 * 1024;
    let cfg = RingConfig {
        capacity,
        max_payload: max,
    };
    cfg.validate()?;
    let stride = cfg.footprint();
    let region = scratch(2 * stride)?;
    cfg.init(&region, 0)?;
    cfg.init(&region, stride)?;
    let p = policy(WaitMode::Poll);
    let sizes: Vec<usize> = if quick {
        vec![16, 1024, 8 * 1024, 24 * 1024, 40 * 1024, 64 * 1024]
    } else {
        vec![
            16,
            256,
            1024,
            4 * 1024,
            8 * 1024,
            16 * 1024,
            24 * 1024,
            32 * 1024,
            40 * 1024,
            48 * 1024,
            64 * 1024,
        ]
    };
    let budget = if quick { 8 << 20 } else { 64 << 20 };
    let reps = reps(quick);
    for &size in &sizes {
        let rounds = iterations(size, if quick { 2000 } else { 20000 }, budget);
        for (name, how) in [
            ("recvs in place", Recv::InPlace),
            ("copying receive", Recv::Copy),
        ] {
            let a_reader = RingReader::attach(Arc::clone(&region), 0, p)?;
            let a_writer = RingWriter::attach(Arc::clone(&region), stride, 0, p)?;
            let wraps_before = a_reader.wrap_bytes();
            let warm = rounds.min(200);
            let total = warm + reps * rounds;
            let region = &region;
            let (mut samples, b_wraps) = std::thread::scope(|s| -> Res<(Vec<Duration>, u64)> {
                let peer = s.spawn(move || -> o2g_hyphen::Result<u64> {
                    let r = RingReader::attach(Arc::clone(region), stride, p)?;
                    let w = RingWriter::attach(Arc::clone(region), 0, 1, p)?;
                    let before = r.wrap_bytes();
                    let mut buf = Vec::new();
                    for _ in 0..total {
                        echo(&r, &w, how, &mut buf)?;
                    }
                    Ok(r.wrap_bytes() - before)
                });
                let payload = vec![0x5au8; size];
                let mut buf = Vec::new();
                let round = |buf: &mut Vec<u8>| -> o2g_hyphen::Result<()> {
                    a_writer.send(&RingEnvelope::default(), &payload)?;
                    match how {
                        Recv::InPlace => {
                            let m = a_reader.recvs(Filter::ANY)?;
                            assert_eq!(m.payload().len(), size);
                            m.done()
                        }
                        Recv::Copy => a_reader.recv_copy(Filter::ANY, buf).map(drop),
                    }
                };
                for _ in 0..warm {
                    round(&mut buf)?;
                }
                let mut samples = Vec::new();
                for _ in 0..reps {
                    let t = Instant::now();
                    for _ in 0..rounds {
                        round(&mut buf)?;
                    }
                    samples.push(t.elapsed() / (2 * rounds as u32));
                }
                let b_wraps = peer.join().expect("peer thread")?;
                Ok((samples, b_wraps))
            })?;
            time.push(name, size as f64, us(median(&mut samples)));
            let messages = (2 * total) as f64;
            match how {
                Recv::InPlace => {
                    let bytes = a_reader.wrap_bytes() - wraps_before + b_wraps;
                    wraps.push(name, size as f64, bytes as f64 / messages);
                }
                Recv::Copy => wraps.push(name, size as f64, size as f64),
            }
        }
    }
    Ok((time, wraps))
}
