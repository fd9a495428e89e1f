//! One-way TCP streaming with and without `MSG_ZEROCOPY`: does sending
//! from the caller's pages, instead of copying them into the socket, pay
//! on this path? Issue 22 asks that zero-copy sends be kept only where
//! they win between VMs; this measures the question below any MPI layer.
//!
//! One end runs `--listen ADDR` and drains, the other `--connect ADDR` and
//! sends. For every size and repetition the sender streams `--volume`
//! bytes as messages of that size, once copying (`send`) and once with
//! `MSG_ZEROCOPY` (interleaved, so drift hits both alike), and waits for
//! the receiver's one-byte answer that all arrived and, for zero-copy, for
//! the kernel's completion of every send. Printed per send mode and size:
//! bandwidth, the sender's CPU time per MiB, and the share of zero-copy
//! sends the kernel completed by copying after all (it does so on
//! loopback, where the receiver would otherwise hold the sender's pages).
//! Without `--listen` or `--connect` both ends run here over loopback, and
//! the CPU time is then both ends'.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use mpi::zerocopy::ZeroCopy;
use o2g_bench::stats::median;
use o2g_bench::tcp::{accept_one, connect_retrying, loopback_pair};

#[derive(Parser)]
#[command(about = "One-way TCP stream, copying sends against MSG_ZEROCOPY")]
struct Args {
    /// Only drain, for one peer that connects to ADDR (host:port), then exit.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    listen: Option<String>,
    /// Send to a `--listen` peer at ADDR (host:port).
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Message sizes in bytes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "65536,262144,1048576,4194304"
    )]
    sizes: Vec<usize>,
    /// Bytes streamed per size, mode and repetition (whole messages).
    #[arg(long, default_value_t = 64 << 20)]
    volume: u64,
    /// Repetitions of each size and mode, after one warm-up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Also write every repetition to FILE: `series,bytes,rep,MB/s`.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Longest wait, in seconds, to connect or for any one read.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    wait: u64,
}

/// Largest message the draining end accepts in a request.
const MAX_VOLUME: u64 = 1 << 40;

/// The draining end: per request, a volume to read, then a one-byte
/// answer; ends at the sender's close.
fn drain(mut s: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let mut b = [0u8; 8];
        match s.read_exact(&mut b) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        let mut left = u64::from_le_bytes(b);
        if left > MAX_VOLUME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("peer asked to stream {left} bytes (at most {MAX_VOLUME})"),
            ));
        }
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = s.read(&mut buf[..want])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            left -= n as u64;
        }
        s.write_all(&[1])?;
    }
}

/// Waits up to 100 ms for `events` on `s` (errors, such as zero-copy
/// completions, always count); fails once `deadline` has passed.
fn wait_for(s: &TcpStream, events: libc::c_short, deadline: Instant) -> io::Result<()> {
    if Instant::now() >= deadline {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the socket stayed full, or zero-copy sends did not complete",
        ));
    }
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    unsafe { libc::poll(&mut p, 1, 100) };
    Ok(())
}

/// Waits up to `wait` until every zero-copy send on `s` completed.
fn complete_all(s: &TcpStream, zc: &mut ZeroCopy, wait: Duration) -> io::Result<()> {
    let deadline = Instant::now() + wait;
    while !zc.reap(s)? {
        wait_for(s, 0, deadline)?;
    }
    Ok(())
}

/// Writes all of `buf`, with `MSG_ZEROCOPY` if `zc` is given.
fn send_all(
    s: &mut TcpStream,
    buf: &[u8],
    zc: Option<&mut ZeroCopy>,
    wait: Duration,
) -> io::Result<()> {
    let Some(zc) = zc else {
        return s.write_all(buf);
    };
    let deadline = Instant::now() + wait;
    let mut at = 0;
    while at < buf.len() {
        // SAFETY: the caller never writes `buf` (the same constant buffer
        // throughout), and waits for every completion before it drops it.
        match unsafe { zc.send(s, &buf[at..]) } {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_for(s, libc::POLLOUT, deadline)?;
            }
            // Too many completions queued: take them and go on.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                if !zc.reap(s)? {
                    wait_for(s, 0, deadline)?;
                }
            }
            Err(e) => return Err(e),
        }
        zc.reap(s)?;
    }
    Ok(())
}

/// One repetition: `volume` bytes as whole messages of `buf` (at least
/// one); returns the bytes sent, the seconds and the sender's CPU seconds.
fn stream(
    s: &mut TcpStream,
    buf: &[u8],
    volume: u64,
    mut zc: Option<&mut ZeroCopy>,
    wait: Duration,
) -> io::Result<(u64, f64, f64)> {
    let msgs = (volume / buf.len() as u64).max(1);
    let bytes = msgs * buf.len() as u64;
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    s.write_all(&bytes.to_le_bytes())?;
    for _ in 0..msgs {
        send_all(s, buf, zc.as_deref_mut(), wait)?;
    }
    let mut answer = [0u8; 1];
    s.read_exact(&mut answer)?;
    if let Some(zc) = zc {
        complete_all(s, zc, wait)?;
    }
    Ok((bytes, t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0))
}

/// This process's user and system CPU time so far.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data that getrusage fills.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to `u`.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

fn measure(mut s: TcpStream, args: &Args, csv: &mut Option<std::fs::File>) -> io::Result<()> {
    let wait = Duration::from_secs(args.wait);
    // One count for the socket: the kernel numbers its sends from 0 once.
    let mut zc = ZeroCopy::enable(&s)
        .ok_or_else(|| io::Error::other(format!("SO_ZEROCOPY: {}", io::Error::last_os_error())))?;
    println!(
        "{:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "bytes", "copy MB/s", "zc MB/s", "copy us/MiB", "zc us/MiB", "zc copied"
    );
    for &size in &args.sizes {
        let buf: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let (mut bw, mut cpu) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
        let (made, copied) = (zc.made(), zc.copied());
        for rep in 0..=args.reps {
            for mode in 0..2 {
                let z = (mode == 1).then_some(&mut zc);
                let (bytes, secs, cpu_secs) = stream(&mut s, &buf, args.volume, z, wait)?;
                if rep == 0 {
                    continue;
                }
                let mbs = bytes as f64 / 1e6 / secs;
                bw[mode].push(mbs);
                cpu[mode].push(cpu_secs * 1e6 / (bytes as f64 / f64::from(1 << 20)));
                if let Some(f) = csv {
                    let series = ["copy", "zerocopy"][mode];
                    writeln!(f, "{series},{size},{rep},{mbs:.1}")?;
                }
            }
        }
        println!(
            "{:>9} {:>10.1} {:>10.1} {:>10.0} {:>10.0} {:>9.0}%",
            size,
            median(&bw[0]),
            median(&bw[1]),
            median(&cpu[0]),
            median(&cpu[1]),
            100.0 * (zc.copied() - copied) as f64 / (zc.made() - made).max(1) as f64,
        );
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("o2g-tcp-stream: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let wait = Duration::from_secs(args.wait);
    if args.sizes.iter().any(|&s| s == 0 || s > 1 << 30) {
        return Err("sizes must be 1 byte to 1 GiB".into());
    }
    if let Some(addr) = &args.listen {
        let s = accept_one("o2g-tcp-stream", addr, wait)?;
        s.set_read_timeout(Some(wait))?;
        return Ok(drain(s)?);
    }
    // Only the sending end measures.
    let mut csv = match &args.csv {
        Some(path) => {
            let mut f = std::fs::File::create(path)?;
            writeln!(f, "series,bytes,rep,mbps")?;
            Some(f)
        }
        None => None,
    };
    if let Some(addr) = &args.connect {
        let s = connect_retrying(addr, wait)?;
        s.set_read_timeout(Some(wait))?;
        println!(
            "one-way TCP stream to {addr}, {} bytes per run",
            args.volume
        );
        return Ok(measure(s, &args, &mut csv)?);
    }
    let (s, peer) = loopback_pair()?;
    peer.set_read_timeout(Some(wait))?;
    s.set_read_timeout(Some(wait))?;
    let drainer = std::thread::spawn(move || drain(peer));
    println!(
        "one-way TCP stream over loopback, {} bytes per run",
        args.volume
    );
    measure(s, &args, &mut csv)?;
    drainer.join().map_err(|_| "drain thread panicked")??;
    Ok(())
}
