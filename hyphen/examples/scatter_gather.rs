//! The HYPHEN paper's scatter / compute / gather program on an emulated
//! HyphenLink cluster, one process per node.
//!
//! ```text
//! cargo run -p o2g-hyphen --example scatter_gather -- [--nodes N] [--units U] [--poll]
//! ```
//!
//! The first process creates the board in `/dev/shm`, starts nodes
//! 1..N as copies of itself (`--node K --shm NAME`), runs node 0 (the
//! master), checks the gathered result and removes the shared file.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use o2g_hyphen::scatter_gather::{self, expected_checksum, pages_needed};
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::{Board, BoardConfig};
use o2g_nicmem::Region;

struct Args {
    nodes: u32,
    units: u16,
    poll: bool,
    node: Option<u32>,
    shm: Option<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        nodes: 4,
        units: 64,
        poll: false,
        node: None,
        shm: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--nodes" => a.nodes = value()?.parse().map_err(|e| format!("--nodes: {e}"))?,
            "--units" => a.units = value()?.parse().map_err(|e| format!("--units: {e}"))?,
            "--poll" => a.poll = true,
            "--node" => a.node = Some(value()?.parse().map_err(|e| format!("--node: {e}"))?),
            "--shm" => a.shm = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn config(a: &Args) -> BoardConfig {
    BoardConfig {
        nodes: a.nodes,
        dsm_pages: pages_needed(a.units),
        cache_pages: 4,
        twin_pages: 4,
        ..BoardConfig::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse()?;
    let policy = if a.poll {
        WaitPolicy::polling(Duration::from_secs(30))
    } else {
        WaitPolicy::blocking(Duration::from_secs(30))
    };
    if let (Some(me), Some(name)) = (a.node, &a.shm) {
        let region = Arc::new(Region::open_shm(name)?);
        let board = Board::attach_expecting(region, &config(&a), Duration::from_secs(10))?;
        scatter_gather::run_node(&board, me, a.units, policy)?;
        return Ok(());
    }
    let name = format!("o2g-hyphen-scatter-gather-{}", std::process::id());
    let cfg = config(&a);
    let region = Arc::new(Region::create_shm(&name, Board::required_len(&cfg)?)?);
    let board = Board::create(region, cfg)?;
    let exe = std::env::current_exe()?;
    let start = Instant::now();
    let children: Vec<_> = (1..a.nodes)
        .map(|k| {
            let mut c = Command::new(&exe);
            c.args([
                "--nodes",
                &a.nodes.to_string(),
                "--units",
                &a.units.to_string(),
            ])
            .args(["--node", &k.to_string(), "--shm", &name]);
            if a.poll {
                c.arg("--poll");
            }
            c.spawn()
        })
        .collect::<Result<_, _>>()?;
    let result = scatter_gather::run_node(&board, 0, a.units, policy);
    let mut failed = 0;
    for mut c in children {
        failed += usize::from(!c.wait()?.success());
    }
    Region::unlink_shm(&name)?;
    let out = result?.ok_or("node 0 is the master")?;
    println!(
        "{} nodes ({} EXT), {} units of {} bytes: {} mismatches, checksum {:#x} (expected {:#x}), \
         {} tasks on the master, {:.1} ms",
        a.nodes,
        if a.poll { "polling" } else { "blocking" },
        out.units,
        scatter_gather::UNIT_BYTES,
        out.mismatches,
        out.checksum,
        expected_checksum(a.units),
        out.tasks_run,
        start.elapsed().as_secs_f64() * 1e3
    );
    if failed > 0 || out.mismatches > 0 || out.checksum != expected_checksum(a.units) {
        return Err("scatter/gather result is wrong".into());
    }
    println!("ok");
    Ok(())
}
