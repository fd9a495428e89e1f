//! `o2g-vmtest CHECK [ARGS...]`: one in-guest check per subcommand, which
//! the harness's suites name directly (qemu/suites/*.suite) and its test
//! scripts (qemu/tests/*.sh) may run. Exit status 0 means the check passed;
//! on failure the reason goes to stderr, which the harness shows.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use libo2g::{abi, raw, Device};

mod control_in;
mod credit;
mod flow_steering;
mod harness;
mod ivshmem;
mod notices;
mod recv;
mod remote;
mod rendezvous;
mod scale;
mod sockets;
mod stat;
mod storm;
mod tlb_keeper;
mod trust;
mod unprivileged;
mod window;

type CheckResult = Result<(), String>;

/// One check: its name (what a suite line names), the arguments it takes,
/// and what runs it.
type Check = (&'static str, &'static str, fn(&[String]) -> CheckResult);

/// Every check a suite may name (qemu/suites/*.suite: a name with no
/// qemu/tests/NAME.sh runs `o2g-vmtest NAME ARGS...`).
const CHECKS: &[Check] = &[
    ("version-ioctl", "", |_| version()),
    ("bad-ioctls", "", |_| bad_ioctls()),
    ("tcp-mesh", "", |_| tcp_mesh()),
    ("register-errors", "", |_| sockets::register_errors()),
    ("hook-passthrough", "", |_| sockets::hook_passthrough()),
    ("ioctl-storm", "PROCS CALLS", storm::storm),
    ("recv-paths", "", |_| recv::paths::paths()),
    ("recv-misbehaviour", "", |_| {
        recv::misbehaviour::misbehaviour()
    }),
    ("recv-peer-gone", "", |_| recv::peer_gone::peer_gone()),
    ("recv-flood", "[BYTES]", recv::flood::flood),
    ("recv-notices", "", |_| notices::paths()),
    ("recv-notices-flood", "[BYTES]", notices::flood),
    ("recv-notices-ring-full", "", |_| notices::ring_full()),
    ("recv-race", "[MESSAGES]", recv::race::race),
    ("recv-teardown", "", |_| recv::teardown::teardown()),
    ("recv-sigkill", "", |_| recv::teardown::sigkill()),
    ("recv-unpin", "", |_| recv::unpin::unpin()),
    ("recv-scale", "[SOCKETS]", scale::scale),
    ("recv-remote", "[FLOOD_BYTES]", remote::remote),
    ("rndv-paths", "", |_| rendezvous::paths()),
    ("rndv-misbehaviour", "", |_| rendezvous::misbehaviour()),
    ("rndv-pieces", "", |_| rendezvous::pieces()),
    ("rndv-control-in", "", |_| control_in::control_in()),
    ("rndv-errors", "", |_| rendezvous::errors()),
    ("rndv-teardown", "", |_| rendezvous::teardown()),
    ("credit", "", |_| credit::check()),
    ("flow-steering", "", |_| flow_steering::check()),
    ("win-agent", "", |_| window::agent()),
    ("trust-children", "", |_| trust::listen_child()),
    ("trust-ulp", "", |_| trust::ulp()),
    ("trust-spoof", "", |_| trust::spoof()),
    ("trust-urgent", "", |_| trust::urgent()),
    ("trust-post-race", "[SECS]", trust::post_race),
    ("trust-shared-state", "", |_| trust::shared_state()),
    ("trust-list", "", |_| trust::list_visibility()),
    ("trust-any-source", "", |_| trust::any_source()),
    ("trust-limits", "", |_| trust::limits()),
    ("trust-list-fault", "", |_| trust::list_fault()),
    ("trust-dump-overlap", "", |_| trust::dump_overlap()),
    ("ivshmem", "", |_| ivshmem::ivshmem()),
    ("stat-live", "", |_| stat::live()),
];

fn usage() -> String {
    let mut u = String::from(
        "usage: o2g-vmtest CHECK [ARGS...] | --list | hold-open SECONDS | tlb-keeper CPU MS | as-user MEMLOCK_KIB CMD... | ioctl-storm-child SEED CALLS\nchecks:",
    );
    for (name, args, _) in CHECKS {
        u.push_str(format!("\n  {name} {args}").trim_end());
    }
    u
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map(String::as_str).unwrap_or("");
    let result = match name {
        // The harness asks which names are checks (qemu/make-initramfs.sh).
        "--list" => {
            for (name, _, _) in CHECKS {
                println!("{name}");
            }
            Ok(())
        }
        // Helpers that checks and test scripts run, not checks themselves.
        "hold-open" => hold_open(&args[1..]),
        "tlb-keeper" => tlb_keeper::run(&args[1..]),
        "ioctl-storm-child" => storm::storm_child(&args[1..]),
        "as-user" => {
            return match unprivileged::as_user(&args[1..]) {
                Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
                Err(msg) => {
                    eprintln!("o2g-vmtest: {msg}");
                    ExitCode::from(255)
                }
            };
        }
        _ => match CHECKS.iter().find(|(n, _, _)| *n == name) {
            Some((_, _, run)) => run(&args[1..]),
            None => Err(usage()),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("o2g-vmtest: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Opens /dev/o2g, reads the ABI version, closes.
fn version() -> CheckResult {
    let dev = Device::open().map_err(|e| e.to_string())?;
    let v = dev.version().map_err(|e| e.to_string())?;
    if (v.major, v.minor) != (abi::O2G_ABI_MAJOR, abi::O2G_ABI_MINOR) || v.reserved != 0 {
        return Err(format!(
            "module reports {v:?}, library has {}.{}",
            abi::O2G_ABI_MAJOR,
            abi::O2G_ABI_MINOR
        ));
    }
    println!("o2g ABI {}.{}", v.major, v.minor);
    Ok(())
}

/// An unknown opcode gets ENOTTY; the version ioctl with unmapped or kernel
/// addresses gets EFAULT; the device still works afterwards.
fn bad_ioctls() -> CheckResult {
    let dev = Device::open().map_err(|e| e.to_string())?;
    let fd = dev.as_fd();
    let unknown = [
        abi::ioc(abi::IOC_READ, 0xff, 8),
        abi::ioc(abi::IOC_NONE, 0x01, 0),
        0x5401, // TCGETS: another driver's opcode
    ];
    for cmd in unknown {
        // SAFETY: An opcode the module does not know never touches `arg`.
        let r = unsafe { raw::ioctl(fd, cmd, 0) };
        expect_errno(r, libc::ENOTTY, &format!("unknown ioctl {cmd:#x}"))?;
    }
    let bad_pointers = [0usize, 8, usize::MAX - 4095, 0xffff_ffff_8100_0000];
    for ptr in bad_pointers {
        // SAFETY: None of these addresses is mapped writable in this process;
        // the kernel must refuse them without writing anything.
        let r = unsafe { raw::ioctl(fd, abi::O2G_IOC_VERSION, ptr) };
        expect_errno(r, libc::EFAULT, &format!("version ioctl at {ptr:#x}"))?;
    }
    dev.version()
        .map_err(|e| format!("device broken after bad ioctls: {e}"))?;
    Ok(())
}

/// Keeps /dev/o2g open for the given number of seconds (for rmmod-while-open).
fn hold_open(args: &[String]) -> CheckResult {
    let secs: u64 = args
        .first()
        .and_then(|s| s.parse().ok())
        .ok_or("hold-open needs SECONDS")?;
    let _dev = Device::open().map_err(|e| e.to_string())?;
    println!("holding /dev/o2g");
    std::thread::sleep(Duration::from_secs(secs));
    Ok(())
}

fn expect_errno(r: std::io::Result<i32>, want: i32, what: &str) -> CheckResult {
    match r {
        Err(e) if e.raw_os_error() == Some(want) => Ok(()),
        Err(e) => Err(format!("{what}: got {e}, want errno {want}")),
        Ok(v) => Err(format!("{what}: succeeded with {v}, want errno {want}")),
    }
}

/// Port node 0 listens on for [`tcp_mesh`].
const MESH_PORT: u16 = 7000;
/// Bound on every wait in [`tcp_mesh`]: the other guests may still be booting.
const MESH_WAIT: Duration = Duration::from_secs(90);

/// Cluster check: node 0 accepts one connection from every other node and
/// echoes what it receives; each other node connects (retrying while node 0
/// boots), sends its node number, and checks the echo.
fn tcp_mesh() -> CheckResult {
    let node: u32 = env_number("O2G_NODE")?;
    let nodes: u32 = env_number("O2G_NODES")?;
    let prefix = std::env::var("O2G_PEER_PREFIX").map_err(|_| "O2G_PEER_PREFIX unset")?;
    if nodes < 2 {
        return Err("tcp-mesh needs at least two nodes".into());
    }
    let deadline = Instant::now() + MESH_WAIT;
    if node == 0 {
        let listener =
            TcpListener::bind(("0.0.0.0", MESH_PORT)).map_err(|e| format!("bind: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut seen = Vec::new();
        while seen.len() + 1 < nodes as usize {
            match listener.accept() {
                Ok((mut conn, peer)) => {
                    conn.set_nonblocking(false).map_err(|e| e.to_string())?;
                    conn.set_read_timeout(Some(MESH_WAIT))
                        .map_err(|e| e.to_string())?;
                    let mut buf = [0u8; 4];
                    conn.read_exact(&mut buf)
                        .map_err(|e| format!("read from {peer}: {e}"))?;
                    conn.write_all(&buf)
                        .map_err(|e| format!("echo to {peer}: {e}"))?;
                    let from = u32::from_le_bytes(buf);
                    println!("node 0: hello from node {from} at {peer}");
                    seen.push(from);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(format!("only heard from nodes {seen:?} of {nodes}"));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(format!("accept: {e}")),
            }
        }
        Ok(())
    } else {
        let (mut conn, addr) = connect_node0(&prefix, MESH_PORT, MESH_WAIT)?;
        conn.set_read_timeout(Some(MESH_WAIT))
            .map_err(|e| e.to_string())?;
        conn.write_all(&node.to_le_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf)
            .map_err(|e| format!("echo: {e}"))?;
        if u32::from_le_bytes(buf) != node {
            return Err(format!("echo was {buf:?}"));
        }
        println!("node {node}: reached node 0 at {addr}");
        Ok(())
    }
}

/// Connects to node 0 (`{prefix}1:port`), retrying while it boots, for at
/// most `wait`.
pub(crate) fn connect_node0(
    prefix: &str,
    port: u16,
    wait: Duration,
) -> Result<(TcpStream, SocketAddr), String> {
    let addr: SocketAddr = format!("{prefix}1:{port}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let deadline = Instant::now() + wait;
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(c) => return Ok((c, addr)),
            Err(e) if Instant::now() > deadline => return Err(format!("connect {addr}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(300)),
        }
    }
}

fn env_number(name: &str) -> Result<u32, String> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{name} unset or not a number"))
}
