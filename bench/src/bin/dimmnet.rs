//! Microbenchmarks of the emulated DIMMnet-1 (`o2g-dimmnet`): AOTF round
//! trip, BOTF vs PUSH bandwidth, DIMM_Send/DIMM_Recv bandwidth, the Fagus
//! AOTF barrier, and bank switching per receive vs per batch.
//!
//! Ranks are threads of this process, each with its own `Nic` handle on one
//! `/dev/shm` region (created and unlinked at once). The emulated hardware
//! work runs on the issuing thread whichever way the ranks are hosted, so
//! threads measure the same code path as processes would; what they do not
//! show is the cost of separate page tables (the process tests of the crate
//! check correctness across processes). On a small machine ranks beyond the
//! core count time-share: the barrier figures at many ranks then measure
//! the wait policy's yields as much as the protocol.
//!
//! Every figure comes twice: what the timing model says the card would
//! take (the nodes' virtual clocks, `o2g_dimmnet::Costs::DIMMNET1`;
//! deterministic, the same on any host), and what the emulation took on
//! this host (wall clock, noisy). The papers' own figures are printed
//! beside them where they give one.
//!
//! Hook for comparisons: `barrier --out DIR` writes `DIR/barrier.csv` in
//! the long form `series,ranks,us`; a socket-MPI barrier benchmark that
//! writes rows in the same form can be merged into the table and chart with
//! `barrier --join other.csv` (repeatable).

mod emulated;
#[path = "emulated/socket_barrier.rs"]
mod socket_barrier;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Subcommand;
use o2g_bench::median;
use o2g_bench::report::Report;
use o2g_dimmnet::datagram::MAX_DATAGRAM;
use o2g_dimmnet::layout::LLCM_USER;
use o2g_dimmnet::{
    AllToAllBarrier, Barrier, Config, Datagrams, Detector, DimmEndpoint, Nic, NicAddr, Ps,
};
use o2g_nicmem::Region;

use crate::emulated::{scratch_name, Args};
use crate::socket_barrier::Carrier;

#[derive(Subcommand)]
enum Cmd {
    /// AOTF round trip (1, 2, 4, 8 bytes) between two nodes.
    AotfRtt,
    /// BOTF vs PUSH bandwidth, 8 B to 64 KiB, and where the lines cross.
    BotfPush,
    /// DIMM_Send/DIMM_Recv streaming bandwidth vs message size.
    Sendrecv,
    /// The Fagus AOTF barrier, and the all-to-all AOTF barrier in the place
    /// of `_expBarrier`, at 2..=8 ranks.
    Barrier {
        /// Merge series from a long-form CSV (`series,ranks,us`), e.g. a
        /// socket-MPI barrier run; repeatable.
        #[arg(long)]
        join: Vec<PathBuf>,
        /// Largest rank count.
        #[arg(long, default_value_t = 8)]
        max_ranks: u32,
    },
    /// Bank switch per receive vs one switch per batch of receives.
    BankSwitch,
    /// Fagus's dimmnet_sendto/recvfrom, inline detection vs a detection
    /// thread (Fagus Table 1).
    Datagram,
    /// Everything above.
    All,
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A fresh region for `config` (name unlinked at once) and a handle per
/// node, all seeded.
fn fabric(config: Config) -> Res<Vec<Nic>> {
    let name = scratch_name("dimmnet");
    let region = Nic::create_shm(&name, config)?;
    Region::unlink_shm(&name)?;
    let nics = (0..config.nodes)
        .map(|n| Nic::attach(Arc::clone(&region), n))
        .collect::<Result<Vec<_>, _>>()?;
    for n in &nics {
        n.seed_all()?;
    }
    Ok(nics)
}

fn emit(report: &Report, out: Option<&Path>, name: &str) -> Res<()> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
    }
    report.emit(out.map(|d| d.join(name)).as_deref())?;
    println!();
    Ok(())
}

struct Plan {
    quick: bool,
}

impl Plan {
    fn reps(&self) -> usize {
        if self.quick {
            3
        } else {
            7
        }
    }

    /// Operations per repetition for `bytes`-sized operations.
    fn iters(&self, bytes: usize) -> usize {
        let budget = if self.quick { 4 << 20 } else { 64 << 20 };
        let max = if self.quick { 2_000 } else { 50_000 };
        (budget / bytes.max(64)).clamp(10, max)
    }
}

/// Median over repetitions of the time per operation.
fn time_per_op(plan: &Plan, iters: usize, mut rep: impl FnMut(usize) -> Res<()>) -> Res<Duration> {
    let mut samples = Vec::new();
    for _ in 0..plan.reps() {
        let t = Instant::now();
        rep(iters)?;
        samples.push(t.elapsed() / iters as u32);
    }
    Ok(median(&mut samples))
}

fn mbps(bytes: usize, per_op: Duration) -> f64 {
    bytes as f64 / per_op.as_secs_f64().max(1e-12) / 1e6
}

/// Modelled microseconds per operation from a node's clock readings.
fn model_us(start: Ps, end: Ps, ops: usize) -> f64 {
    (end - start) as f64 / 1e6 / ops.max(1) as f64
}

/// MB/s of `bytes` in `ps` modelled picoseconds.
fn model_mbps(bytes: usize, ps: Ps) -> f64 {
    bytes as f64 / (ps.max(1) as f64 * 1e-12) / 1e6
}

/// Lines every node's host clock up at the latest of them (before a
/// modelled measurement) and returns that time.
fn align(nics: &[&Nic]) -> Res<Ps> {
    let mut t = 0;
    for n in nics {
        t = t.max(n.now()?);
    }
    for n in nics {
        n.advance_to(t)?;
    }
    Ok(t)
}

/// How the first leg of a round trip reaches the responder.
#[derive(Clone, Copy, PartialEq)]
enum Leg {
    /// A plain AOTF the responder polls for.
    Polling,
    /// An interrupt AOTF that the responder's core PU appends to a list.
    Interrupt,
}

/// LLCM offset of the responder's interrupt list (count + one entry).
const LIST: usize = LLCM_USER + 64;

/// One AOTF ping-pong of `size` bytes: (modelled, measured) round trip.
fn ping_pong(plan: &Plan, size: usize, leg: Leg) -> Res<(f64, Duration)> {
    let nics = fabric(Config::new(2))?;
    let [a, b]: [Nic; 2] = nics.try_into().map_err(|_| "two nodes")?;
    let iters = if plan.quick { 2_000 } else { 50_000 };
    let mask = if size == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * size)) - 1
    };
    // Values cycle through 1..=200 so every size can carry them.
    let val = |i: usize| (i % 200 + 1) as u64;
    let reps = plan.reps();
    std::thread::scope(|s| -> Res<(f64, Duration)> {
        let responder = s.spawn(|| -> Result<(), o2g_dimmnet::Error> {
            let w = b.llcm_u64(LLCM_USER)?;
            let count = b.llcm_u64(LIST)?;
            for i in 0..iters * reps {
                let v = val(i);
                if leg == Leg::Polling {
                    b.wait_policy().wait(
                        || format!("ping {i}"),
                        || Ok((w.load(Ordering::Acquire) & mask == v).then_some(())),
                    )?;
                    b.observed(LLCM_USER, size)?;
                } else {
                    b.wait_policy().wait(
                        || format!("interrupt ping {i}"),
                        || Ok((count.load(Ordering::Acquire) == 1).then_some(())),
                    )?;
                    b.observed(LIST, 16)?;
                    // Empty the list for the next ping: bookkeeping of this
                    // benchmark, not of the paper's round trip, so a raw
                    // store the model does not charge.
                    count.store(0, Ordering::Release);
                }
                b.aotf(0, LLCM_USER, &v.to_le_bytes()[..size])?;
            }
            Ok(())
        });
        let w = a.llcm_u64(LLCM_USER)?;
        let mut i = 0;
        let start = a.now()?;
        let t = time_per_op(plan, iters, |n| {
            for _ in 0..n {
                let v = val(i);
                match leg {
                    Leg::Polling => a.aotf(1, LLCM_USER, &v.to_le_bytes()[..size])?,
                    Leg::Interrupt => {
                        a.aotf_interrupt(1, LIST, 1, v)?;
                    }
                }
                a.wait_policy().wait(
                    || format!("pong {i}"),
                    || Ok((w.load(Ordering::Acquire) & mask == v).then_some(())),
                )?;
                a.observed(LLCM_USER, size)?;
                i += 1;
            }
            Ok(())
        })?;
        let modelled = model_us(start, a.now()?, iters * reps);
        responder.join().map_err(|_| "responder panicked")??;
        Ok((modelled, t))
    })
}

fn aotf_rtt(plan: &Plan, out: Option<&Path>) -> Res<()> {
    let mut report = Report::new("AOTF round trip", "bytes", "us", false);
    for size in [1usize, 2, 4, 8] {
        let (model, here) = ping_pong(plan, size, Leg::Polling)?;
        report.push("model, polling", size as f64, model);
        report.push("here, polling", size as f64, here.as_secs_f64() * 1e6);
    }
    let (model, here) = ping_pong(plan, 8, Leg::Interrupt)?;
    report.push("model, interrupt first leg", 8.0, model);
    report.push("here, interrupt first leg", 8.0, here.as_secs_f64() * 1e6);
    emit(&report, out, "aotf_rtt")?;
    println!("paper (DIMMnet-1 §5.1): 2.91 us polling, 11.01 us with an interrupt first leg\n");
    Ok(())
}

fn botf_push(plan: &Plan, out: Option<&Path>) -> Res<()> {
    let mut report = Report::new("BOTF vs PUSH into a remote LLCM", "bytes", "MB/s", true);
    let nics = fabric(Config::new(2))?;
    let (a, b) = (&nics[0], &nics[1]);
    let mut sizes: Vec<usize> = (3..=16).map(|s| 1usize << s).collect();
    // The paper's crossing region, between the powers of two, and each
    // side of a packet boundary.
    sizes.extend([464, 465, 600, 800, 928, 929]);
    sizes.sort_unstable();
    let (mut model_cross, mut here_cross) = (None, None);
    for size in sizes {
        let data = vec![0x5au8; size];
        // The PUSH's data sits in the sender's LLCM, as in the paper.
        a.llcm_write(LLCM_USER, &data)?;
        // The model, as the paper timed them (§2.7): BOTF from the first
        // store until the last byte is in the receiver's LLCM (the
        // receiver's poll finds it), PUSH from its issue until its ACK.
        let t0 = align(&[a, b])?;
        a.botf(1, LLCM_USER, &data)?;
        let botf_ps = b.observed(LLCM_USER + size - 1, 1)? - t0;
        // LLCM to LLCM, no bank switch, as in the paper.
        let push_acked = || -> Res<()> {
            let ack = a.push(
                1,
                NicAddr::Llcm(LLCM_USER),
                NicAddr::Llcm(LLCM_USER),
                size,
                0,
            )?;
            Ok(a.wait_ack(ack)?)
        };
        let t0 = align(&[a, b])?;
        push_acked()?;
        let push_ps = a.now()? - t0;
        let (mb, mp) = (model_mbps(size, botf_ps), model_mbps(size, push_ps));
        report.push("BOTF, model", size as f64, mb);
        report.push("PUSH, model", size as f64, mp);
        if model_cross.is_none() && mp >= mb {
            model_cross = Some(size);
        }
        // This host.
        let iters = plan.iters(size);
        let botf = time_per_op(plan, iters, |n| {
            for _ in 0..n {
                a.botf(1, LLCM_USER, &data)?;
            }
            Ok(())
        })?;
        let push = time_per_op(plan, iters, |n| {
            for _ in 0..n {
                push_acked()?;
            }
            Ok(())
        })?;
        let (hb, hp) = (mbps(size, botf), mbps(size, push));
        report.push("BOTF, here", size as f64, hb);
        report.push("PUSH, here", size as f64, hp);
        if here_cross.is_none() && hp >= hb {
            here_cross = Some(size);
        }
    }
    emit(&report, out, "botf_push")?;
    let say =
        |c: Option<usize>| c.map_or("never, up to 64 KiB".to_string(), |s| format!("at {s} B"));
    println!(
        "PUSH overtakes BOTF: model {}, here {} (paper, Fig. 5: BOTF ahead up to 464 B, even to ~800 B, PUSH beyond)\n",
        say(model_cross),
        say(here_cross)
    );
    Ok(())
}

fn sendrecv(plan: &Plan, out: Option<&Path>) -> Res<()> {
    let mut report = Report::new("DIMM_Send/DIMM_Recv streaming", "bytes", "MB/s", true);
    let max = if plan.quick { 256 << 10 } else { 1 << 20 };
    let mut sizes: Vec<usize> = (3..=20)
        .map(|s| 1usize << s)
        .filter(|&s| s <= max)
        .collect();
    sizes.push(464);
    sizes.sort_unstable();
    for size in sizes {
        let nics = fabric(Config::new(2))?;
        let mut it = nics.into_iter();
        let mut rx = DimmEndpoint::new(it.next().ok_or("node 0")?, 1)?;
        let mut tx = DimmEndpoint::new(it.next().ok_or("node 1")?, 1)?;
        let iters = plan.iters(size).min(if plan.quick { 500 } else { 5_000 });
        let reps = plan.reps();
        let data = vec![0xa5u8; size];
        let (per_op, model) = std::thread::scope(|s| -> Res<(Duration, f64)> {
            let sender = s.spawn(|| -> Result<(), o2g_dimmnet::Error> {
                for _ in 0..iters * reps {
                    tx.send(0, &data)?;
                }
                Ok(())
            });
            let mut buf = vec![0u8; size];
            let start = rx.nic().now()?;
            let t = time_per_op(plan, iters, |n| {
                for _ in 0..n {
                    rx.recv(1, &mut buf)?;
                }
                Ok(())
            })?;
            let model = model_us(start, rx.nic().now()?, iters * reps);
            sender.join().map_err(|_| "sender panicked")??;
            Ok((t, model))
        })?;
        report.push("model", size as f64, size as f64 / model);
        report.push("here", size as f64, mbps(size, per_op));
        if size == max {
            println!("path counters at {size} B:");
            println!("  sender   {:?}", tx.stats());
            println!("  receiver {:?}", rx.stats());
        }
    }
    emit(&report, out, "sendrecv")
}

/// Host time and modelled time per barrier of one AOTF barrier kind at
/// `ranks` ranks: `make` builds a node's side, `wait` passes one barrier.
fn time_barrier<B>(
    plan: &Plan,
    ranks: u32,
    make: fn(Nic) -> Result<B, o2g_dimmnet::Error>,
    wait: fn(&mut B) -> Result<(), o2g_dimmnet::Error>,
) -> Res<(Duration, f64)> {
    let nics = fabric(Config::new(ranks))?;
    let iters = if plan.quick { 300 } else { 5_000 };
    let reps = plan.reps();
    std::thread::scope(|s| -> Res<(Duration, f64)> {
        let mut it = nics.into_iter();
        let root = it.next().ok_or("node 0")?;
        let others: Vec<_> = it
            .map(|nic| {
                s.spawn(move || -> Result<(), o2g_dimmnet::Error> {
                    let mut b = make(nic)?;
                    // One warm-up barrier, then the timed ones.
                    for _ in 0..=iters * reps {
                        wait(&mut b)?;
                    }
                    Ok(())
                })
            })
            .collect();
        let clock = root.clone();
        let mut b = make(root)?;
        wait(&mut b)?;
        let start = clock.now()?;
        let t = time_per_op(plan, iters, |n| {
            for _ in 0..n {
                wait(&mut b)?;
            }
            Ok(())
        })?;
        let model = model_us(start, clock.now()?, iters * reps);
        for h in others {
            h.join().map_err(|_| "rank panicked")??;
        }
        Ok((t, model))
    })
}

fn barrier(plan: &Plan, out: Option<&Path>, join: &[PathBuf], max_ranks: u32) -> Res<()> {
    let mut report = Report::new("Barrier", "ranks", "us", false);
    for ranks in 2..=max_ranks.max(2) {
        let x = f64::from(ranks);
        let (per_op, model) = time_barrier(plan, ranks, Barrier::new, Barrier::wait)?;
        report.push("dimmnet-aotf, model", x, model);
        report.push("dimmnet-aotf, here", x, per_op.as_secs_f64() * 1e6);
        let (per_op, model) =
            time_barrier(plan, ranks, AllToAllBarrier::new, AllToAllBarrier::wait)?;
        report.push("all-to-all aotf, model", x, model);
        report.push("all-to-all aotf, here", x, per_op.as_secs_f64() * 1e6);
        // The Fagus algorithm over loopback sockets (its UDP baseline).
        let iters = if plan.quick { 300 } else { 5_000 };
        for (name, carrier) in [("udp, here", Carrier::Udp), ("tcp, here", Carrier::Tcp)] {
            let us = socket_barrier::time(carrier, ranks as usize, iters, plan.reps())
                .map_err(|e| format!("{name} barrier at {ranks} ranks: {e}"))?;
            report.push(name, x, us);
        }
    }
    for path in join {
        join_csv(&mut report, path)?;
    }
    emit(&report, out, "barrier")?;
    println!(
        "paper (Fagus Table 2, 2 nodes): _expBarrier 4.09 us, AOTF 29.80 us, UDP on Fast Ethernet 179.88 us, on Gigabit Ethernet 136.66 us"
    );
    println!(
        "(all-to-all aotf stands in for _expBarrier, whose algorithm the paper does not give)\n"
    );
    Ok(())
}

/// Per datagram of `bytes`: host time and modelled receive-side time,
/// with a detection thread or inline detection.
fn time_datagrams(plan: &Plan, bytes: usize, thread: bool) -> Res<(Duration, f64)> {
    let mut config = Config::new(2);
    config.bank_size = 1 << 20;
    let nics = fabric(config)?;
    let mut rx = Datagrams::new(nics[0].clone(), LLCM_USER)?;
    let mut tx = Datagrams::new(nics[1].clone(), LLCM_USER)?;
    let iters = if plan.quick { 200 } else { 2_000 };
    let reps = plan.reps();
    let detector = if thread {
        Some(Detector::start(&rx)?)
    } else {
        None
    };
    std::thread::scope(|s| -> Res<(Duration, f64)> {
        let sender = s.spawn(move || -> Result<(), o2g_dimmnet::Error> {
            let data = vec![0x5au8; bytes];
            for _ in 0..=iters * reps {
                tx.sendto(0, &data)?;
            }
            Ok(())
        });
        let mut buf = vec![0u8; bytes];
        let mut recv = |rx: &mut Datagrams| -> Res<()> {
            match &detector {
                Some(d) => d.recvfrom(rx, &mut buf)?,
                None => rx.recvfrom(&mut buf)?,
            };
            Ok(())
        };
        recv(&mut rx)?;
        let start = rx.nic().now()?;
        let t = time_per_op(plan, iters, |n| {
            for _ in 0..n {
                recv(&mut rx)?;
            }
            Ok(())
        })?;
        let model = model_us(start, rx.nic().now()?, iters * reps);
        sender.join().map_err(|_| "sender panicked")??;
        Ok((t, model))
    })
}

fn datagram(plan: &Plan, out: Option<&Path>) -> Res<()> {
    let mut report = Report::new(
        "dimmnet_sendto/recvfrom, per datagram",
        "bytes",
        "us",
        false,
    );
    for bytes in [16usize, 1000, 10_000, MAX_DATAGRAM] {
        let x = bytes as f64;
        for (thread, name) in [(false, "inline"), (true, "detection thread")] {
            let (per_op, model) = time_datagrams(plan, bytes, thread)?;
            report.push(&format!("{name}, model"), x, model);
            report.push(&format!("{name}, here"), x, per_op.as_secs_f64() * 1e6);
        }
    }
    emit(&report, out, "datagram")?;
    println!(
        "paper (Fagus Table 1, 10000 B): 23590 us with a detection thread, 20000 us inline (99.46% bank switching, Table 3)\n"
    );
    Ok(())
}

/// Adds the rows of a long-form CSV (`series,ranks,us`, header first) to
/// `report`.
fn join_csv(report: &mut Report, path: &Path) -> Res<()> {
    let text = std::fs::read_to_string(path)?;
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let [series, x, y] = f[..] else {
            return Err(format!("{}:{}: expected series,ranks,us", path.display(), n + 1).into());
        };
        report.push(series, x.trim().parse()?, y.trim().parse()?);
    }
    Ok(())
}

fn bank_switch(plan: &Plan, out: Option<&Path>) -> Res<()> {
    const MSG: usize = 1024;
    let mut report = Report::new(
        "Receive cost with one bank switch per batch",
        "receives per switch",
        "us per receive",
        true,
    );
    let nics = fabric(Config::new(2))?;
    let (rx, tx) = (&nics[0], &nics[1]);
    let base = rx.layout().dimm_user();
    let data = vec![0x3cu8; MSG];
    tx.llcm_write(LLCM_USER, &data)?;
    let mut buf = vec![0u8; MSG];
    for batch in [1usize, 2, 4, 8, 16, 32] {
        let rounds = if plan.quick { 200 } else { 5_000 };
        let start = align(&[rx, tx])?;
        let per_round = time_per_op(plan, rounds, |n| {
            for _ in 0..n {
                // The sender PUSHes a batch into the network bank...
                for j in 0..batch {
                    let off = NicAddr::Dimm(base + j * MSG);
                    tx.push(0, NicAddr::Llcm(LLCM_USER), off, MSG, 0)?;
                }
                // ...and the receiver switches once and reads them all.
                rx.switch_banks()?;
                for j in 0..batch {
                    rx.dimm_read(base + j * MSG, &mut buf)?;
                }
            }
            Ok(())
        })?;
        let receives = rounds * plan.reps() * batch;
        report.push("model", batch as f64, model_us(start, rx.now()?, receives));
        report.push(
            "here",
            batch as f64,
            per_round.as_secs_f64() * 1e6 / batch as f64,
        );
    }
    emit(&report, out, "bank_switch")?;
    println!("(each receive: one {MSG} B PUSH into the network bank and one host read)\n");
    Ok(())
}

fn main() {
    let args = Args::<Cmd>::parse("Emulated DIMMnet-1 microbenchmarks");
    let plan = Plan { quick: args.quick };
    let out = args.out.as_deref();
    let result = match &args.cmd {
        Cmd::AotfRtt => aotf_rtt(&plan, out),
        Cmd::BotfPush => botf_push(&plan, out),
        Cmd::Sendrecv => sendrecv(&plan, out),
        Cmd::Barrier { join, max_ranks } => barrier(&plan, out, join, *max_ranks),
        Cmd::BankSwitch => bank_switch(&plan, out),
        Cmd::Datagram => datagram(&plan, out),
        Cmd::All => aotf_rtt(&plan, out)
            .and_then(|()| botf_push(&plan, out))
            .and_then(|()| sendrecv(&plan, out))
            .and_then(|()| barrier(&plan, out, &[], 8))
            .and_then(|()| bank_switch(&plan, out))
            .and_then(|()| datagram(&plan, out)),
    };
    if let Err(e) = result {
        eprintln!("o2g-dimmnet-bench: {e}");
        std::process::exit(1);
    }
}
