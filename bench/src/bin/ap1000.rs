//! The AP1000 paper's ping-pong (Shimizu, Horie, Ishihata, §5.1) on the
//! emulated cells of `o2g-ap1000`: Table 2 (half round trip at 10 B and
//! 10 KB in the four modes) and Fig. 7 (latency by size).
//!
//! The modes are the paper's: **DMA** ("Normal": send by a copy into a
//! non-cacheable area and a DMA, receive by an interrupt handler that
//! programs a DMA), **LS** (line sending, normal receive), **BR** (DMA
//! send, buffer receiving into the ring) and **LS+BR**.
//!
//! Each cell is a thread; each sends from its own buffer, written before
//! the timed round trips (so in the cache as far as it fits, as the paper
//! found 90% of sent lines were). Every figure comes twice: what the
//! timing model says the AP1000 would take (the cells' virtual clocks,
//! `o2g_ap1000::Costs::AP1000`; deterministic), and what the emulation took
//! on this host (wall clock, noisy). The paper's own figures are printed
//! beside them.

#[allow(dead_code)] // scratch_name: these cells need no shared region
mod emulated;

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use clap::Subcommand;
use o2g_ap1000::{Config, Filter, Machine, ReceiveMode, SendMode, Stats};
use o2g_bench::report::Report;

use crate::emulated::Args;

#[derive(Subcommand)]
enum Cmd {
    /// Table 2: half round trip at 10 B and 10 KB, four modes.
    Table2 {
        /// The send FIFO's depth in lines, instead of the assumed 4 (a
        /// sensitivity check: the paper gives no depth).
        #[arg(long)]
        fifo_lines: Option<usize>,
    },
    /// Fig. 7: half round trip by message size, four modes.
    Fig7,
    /// Both.
    All,
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The paper's four modes.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Dma,
    Ls,
    Br,
    LsBr,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Dma, Mode::Ls, Mode::Br, Mode::LsBr];

    fn name(self) -> &'static str {
        match self {
            Mode::Dma => "DMA",
            Mode::Ls => "LS",
            Mode::Br => "BR",
            Mode::LsBr => "LS+BR",
        }
    }

    fn send(self) -> SendMode {
        match self {
            Mode::Ls | Mode::LsBr => SendMode::Line,
            Mode::Dma | Mode::Br => SendMode::Dma,
        }
    }

    fn receive(self) -> ReceiveMode {
        match self {
            Mode::Br | Mode::LsBr => ReceiveMode::Ring,
            Mode::Dma | Mode::Ls => ReceiveMode::Dma,
        }
    }

    /// Table 2 (us): 10 B, 10 KB.
    fn paper(self) -> (f64, f64) {
        match self {
            Mode::Dma => (112.0, 1590.0),
            Mode::Ls => (111.0, 597.0),
            Mode::Br => (61.3, 1550.0),
            Mode::LsBr => (32.8, 491.0),
        }
    }
}

/// Where each cell's send buffer starts (clear of the header buffer at the
/// top of memory for every size up to 512 KiB).
const BUF: u32 = 0x10_0000;

/// One ping-pong's figures.
struct Run {
    /// Modelled half round trip, us.
    model: f64,
    /// This host's half round trip.
    here: Duration,
    /// The initiating cell's counters over the whole run.
    stats: Stats,
}

/// Round trips to time for `size`-byte messages.
fn iterations(quick: bool, size: usize) -> usize {
    let budget = if quick { 2 << 20 } else { 32 << 20 };
    let max = if quick { 200 } else { 2_000 };
    (budget / size.max(64)).clamp(20, max)
}

/// A ping-pong of `size` bytes between two cells in `mode`, with rings of
/// `ring` bytes: two untimed round trips, then `iters` timed.
fn ping_pong(mode: Mode, size: usize, ring: usize, iters: usize) -> Res<Run> {
    ping_pong_with(mode, size, iters, |c| c.ring_bytes = ring)
}

/// [`ping_pong`] on cells whose configuration `tune` changed.
fn ping_pong_with(mode: Mode, size: usize, iters: usize, tune: impl Fn(&mut Config)) -> Res<Run> {
    let mut config = Config::ap1000(mode.receive());
    tune(&mut config);
    let m = Machine::new(2, config)?;
    let (a, b) = (m.cell(0)?, m.cell(1)?);
    let data: Vec<u8> = (0..size).map(|i| (i * 13 + 5) as u8).collect();
    a.write(BUF, &data)?;
    b.write(BUF, &data)?;
    const WARM: usize = 2;
    let responder = thread::spawn(move || -> Result<(), o2g_ap1000::Error> {
        let mut buf = Vec::with_capacity(size);
        for _ in 0..WARM + iters {
            b.recv(Filter::ANY, &mut buf)?;
            b.send(0, 0, BUF, size, mode.send())?;
        }
        Ok(())
    });
    let mut buf = Vec::with_capacity(size);
    let round = |buf: &mut Vec<u8>| -> Res<()> {
        a.send(1, 0, BUF, size, mode.send())?;
        a.recv(Filter::ANY, buf)?;
        Ok(())
    };
    for _ in 0..WARM {
        round(&mut buf)?;
    }
    if buf != data {
        return Err(format!("{} at {size} B: the echo differs", mode.name()).into());
    }
    let start = a.now();
    let t = Instant::now();
    for _ in 0..iters {
        round(&mut buf)?;
    }
    let here = t.elapsed() / (2 * iters) as u32;
    let model = (a.now() - start) as f64 / 1e6 / (2 * iters) as f64;
    responder.join().map_err(|_| "responder panicked")??;
    Ok(Run {
        model,
        here,
        stats: a.stats(),
    })
}

fn emit(report: &Report, out: Option<&Path>, name: &str) -> Res<()> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
    }
    report.emit(out.map(|d| d.join(name)).as_deref())?;
    println!();
    Ok(())
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn table2(quick: bool, out: Option<&Path>, fifo_lines: Option<usize>) -> Res<()> {
    let mut report = Report::new(
        "AP1000 Table 2: ping-pong half round trip",
        "bytes",
        "us",
        false,
    );
    let mut lines = Vec::new();
    for mode in Mode::ALL {
        let (p10, p10k) = mode.paper();
        let mut row = format!("{:>6}", mode.name());
        for (size, paper) in [(10usize, p10), (10 << 10, p10k)] {
            let r = ping_pong_with(mode, size, iterations(quick, size), |c| {
                if let Some(n) = fifo_lines {
                    c.fifo_lines = n;
                }
            })?;
            let x = size as f64;
            report.push(&format!("{}, paper", mode.name()), x, paper);
            report.push(&format!("{}, model", mode.name()), x, r.model);
            report.push(&format!("{}, here", mode.name()), x, us(r.here));
            row += &format!(
                " | {paper:>7.1} {:>7.1} {:>5.2} {:>7.2}",
                r.model,
                r.model / paper,
                us(r.here)
            );
            if mode.send() == SendMode::Line && size > 10 {
                row += &format!(
                    " | hit {:.1}% trap {:.1}%",
                    100.0 * r.stats.hit_rate(),
                    100.0 * r.stats.trap_rate()
                );
            }
        }
        lines.push(row);
    }
    emit(&report, out, "ap1000-table2")?;
    if let Some(n) = fifo_lines {
        println!("(model with a send FIFO of {n} lines)");
    }
    println!("Table 2, half round trip (us): paper, model, model/paper, here");
    println!("{:>6} | {:^29} | {:^29}", "mode", "10 B", "10 KB");
    for l in lines {
        println!("{l}");
    }
    println!("(line sends at 10 KB: hit and trap rates per line send, the initiating cell)\n");
    Ok(())
}

fn fig7(quick: bool, out: Option<&Path>) -> Res<()> {
    let mut report = Report::new(
        "AP1000 Fig. 7: ping-pong half round trip by size",
        "bytes",
        "us",
        true,
    );
    report.log_y = true;
    let big_ring = Config::ap1000(ReceiveMode::Ring).ring_bytes;
    let small_ring = 64 << 10;
    let top = if quick { 64 << 10 } else { 256 << 10 };
    let mut sizes: Vec<usize> = (3..=18)
        .map(|s| 1usize << s)
        .filter(|&s| s <= top)
        .collect();
    sizes.extend([10, 10 << 10, 30 << 10]);
    if !quick {
        // The largest message a 512 KiB ring takes (Table 1's limit).
        sizes.push(big_ring - 32);
    }
    sizes.sort_unstable();
    for &size in &sizes {
        let iters = iterations(quick, size);
        for mode in Mode::ALL {
            let r = ping_pong(mode, size, big_ring, iters)?;
            report.push(&format!("{}, model", mode.name()), size as f64, r.model);
            report.push(&format!("{}, here", mode.name()), size as f64, us(r.here));
            // The smallest ring the MSC takes (§3.2: 64 KB), where
            // messages wrap more often.
            if mode.receive() == ReceiveMode::Ring && size + 48 <= small_ring {
                let r = ping_pong(mode, size, small_ring, iters)?;
                let name = format!("{}, model, 64 KiB ring", mode.name());
                report.push(&name, size as f64, r.model);
            }
        }
    }
    emit(&report, out, "ap1000-fig7")?;
    println!(
        "paper (Fig. 7, prose only, §5.1 L260): LS+BR best at every size; BR degrades from \
         about 30 KB (wrap-around copies); DMA is held by set-up for small messages and by \
         the copy for large ones\n"
    );
    Ok(())
}

fn main() {
    let args = Args::<Cmd>::parse("Emulated AP1000: line sending and buffer receiving");
    let out = args.out.as_deref();
    let result = match args.cmd {
        Cmd::Table2 { fifo_lines } => table2(args.quick, out, fifo_lines),
        Cmd::Fig7 => fig7(args.quick, out),
        Cmd::All => table2(args.quick, out, None).and_then(|()| fig7(args.quick, out)),
    };
    if let Err(e) = result {
        eprintln!("o2g-ap1000-bench: {e}");
        std::process::exit(1);
    }
}
