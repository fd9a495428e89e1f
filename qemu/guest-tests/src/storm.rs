//! A hostile caller: random ioctls (opcodes, sizes, argument pointers and
//! contents, fds, ranks) from several processes at once. The module must
//! answer each with a result or an errno, and the kernel log must stay clean
//! (the harness checks it after the test).

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;

use libo2g::{abi, raw, Device};
use rand_core::{Rng as _, SeedableRng};
use rand_xorshift::XorShiftRng;

use crate::CheckResult;

/// The storm's random numbers: xorshift, deterministic per seed (its
/// `seed_from_u64`), so a failing run can be replayed with its seed.
struct Rng(XorShiftRng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(XorShiftRng::seed_from_u64(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `ioctl-storm PROCS CALLS`: runs PROCS children of `ioctl-storm-child`.
pub(crate) fn storm(args: &[String]) -> CheckResult {
    let procs: u32 = parse(args.first(), "PROCS")?;
    let calls: u64 = parse(args.get(1), "CALLS")?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let base_seed = std::process::id() as u64 * 0x9e37_79b9;
    let mut children = Vec::new();
    for i in 0..procs {
        let seed = base_seed + u64::from(i);
        let child = Command::new(&exe)
            .args([
                "ioctl-storm-child",
                &seed.to_string(),
                &(calls / u64::from(procs)).to_string(),
            ])
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        children.push((seed, child));
    }
    let mut failed = Vec::new();
    for (seed, mut child) in children {
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            failed.push(format!("seed {seed}: {status}"));
        }
    }
    if failed.is_empty() {
        println!("{calls} random ioctls from {procs} processes");
        Ok(())
    } else {
        Err(format!("storm children failed: {failed:?}"))
    }
}

/// One storm process: `calls` random ioctls on its own /dev/o2g, with a few
/// real sockets to register and unregister among the random fds.
pub(crate) fn storm_child(args: &[String]) -> CheckResult {
    let seed: u64 = parse(args.first(), "SEED")?;
    let calls: u64 = parse(args.get(1), "CALLS")?;
    let mut rng = Rng::new(seed);
    let dev = Device::open().map_err(|e| e.to_string())?;
    let fd = dev.as_fd();
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let mut socks = Vec::new();
    for _ in 0..4 {
        socks.push(TcpStream::connect(addr).map_err(|e| e.to_string())?);
        socks.push(listener.accept().map_err(|e| e.to_string())?.0);
    }
    let mut fds: Vec<i32> = socks.iter().map(|s| s.as_raw_fd()).collect();
    fds.extend([
        -1,
        0,
        1,
        2,
        fd.as_raw_fd(),
        listener.as_raw_fd(),
        4096,
        i32::MAX,
    ]);

    let known = [
        abi::O2G_IOC_VERSION,
        abi::O2G_IOC_REGISTER_SOCKET,
        abi::O2G_IOC_UNREGISTER_SOCKET,
        abi::O2G_IOC_STATS,
        abi::O2G_IOC_INIT,
        abi::O2G_IOC_POST,
        abi::O2G_IOC_CANCEL,
        abi::O2G_IOC_FREE,
        abi::O2G_IOC_POLL,
        abi::O2G_IOC_PROBE,
        abi::O2G_IOC_SOCKET_STATS,
        abi::O2G_IOC_LIST_ENDPOINTS,
    ];
    // Arguments point into the first half of `area`; the second half is
    // slack, so whatever the module writes through a known opcode (at most
    // one argument struct) stays inside memory we own.
    let mut area = vec![0u64; 128];
    let mut succeeded = 0u64;
    for _ in 0..calls {
        let cmd = match rng.below(4) {
            0 | 1 => known[rng.below(known.len() as u64) as usize],
            // A known number with another size or direction.
            2 => {
                let nr = rng.below(16) as u32;
                abi::ioc(rng.below(4) as u32, nr, rng.below(512) as usize)
            }
            _ => rng.next() as u32,
        };
        // Fill the buffer like a plausible argument: small ranks and real fds
        // often, garbage sometimes.
        for (i, word) in area.iter_mut().take(64).enumerate() {
            *word = match rng.below(4) {
                0 => rng.next(),
                1 => 0,
                _ if i == 0 => {
                    let fd = fds[rng.below(fds.len() as u64) as usize] as u32;
                    u64::from(fd) | (rng.below(8) << 32)
                }
                _ => rng.below(8),
            };
        }
        let arg = match rng.below(8) {
            0 => 0,
            1 => 0xffff_ffff_8100_0000,
            2 => usize::MAX - rng.below(64) as usize,
            3 => area.as_mut_ptr() as usize + rng.below(512) as usize,
            _ => area.as_mut_ptr() as usize,
        };
        // SAFETY: `arg` is null, a kernel address or past the end of the
        // address space (the module must refuse those), or points into the
        // first 512 bytes of `area`, which is 1 KiB of plain integers: any
        // argument struct the module writes there stays inside it.
        if unsafe { raw::ioctl(fd, cmd, arg) }.is_ok() {
            succeeded += 1;
        }
    }
    let stats = dev.stats().map_err(|e| format!("after storm: {e}"))?;
    println!(
        "seed {seed}: {succeeded} of {calls} calls succeeded, {} sockets still registered",
        stats.sockets
    );
    // The device must still answer sanely.
    dev.version().map_err(|e| format!("after storm: {e}"))?;
    Ok(())
}

fn parse<T: std::str::FromStr>(arg: Option<&String>, what: &str) -> Result<T, String> {
    arg.and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("missing or bad {what}"))
}
