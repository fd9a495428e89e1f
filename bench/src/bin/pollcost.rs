//! The cost of one readiness call as the number of watched sockets grows
//! (the o2g paper's figure 7): `select`, `poll` and `epoll_wait` over `n`
//! idle loopback sockets plus one with data waiting, so each call finds
//! exactly one ready socket. `select` cannot watch descriptors at or past
//! `FD_SETSIZE`; its column says so from there on.
//!
//! `--none-ready --min --reps 10 --sockbuf 131072` measures as the paper
//! did: no socket has data, the minimum of 10 runs, 128 KB socket
//! buffers; it then prints the cost per watched socket beside the paper's
//! 0.5 us (Pentium 4 2.4 GHz, Linux 2.4.20).

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use clap::Parser;
use o2g_bench::median;
use o2g_bench::report::Report;

#[derive(Parser)]
#[command(about = "select/poll/epoll_wait cost per call vs watched sockets")]
struct Args {
    /// Watched-socket counts (idle ones; one more holds data).
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,250,500,1000")]
    counts: Vec<usize>,
    /// Calls per repetition.
    #[arg(long, default_value_t = 2000)]
    calls: u32,
    /// Repetitions; the median is reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// SO_SNDBUF and SO_RCVBUF of every socket, in bytes (the paper: 128 KB).
    #[arg(long)]
    sockbuf: Option<usize>,
    /// No socket has data (the paper's setting); by default one has.
    #[arg(long)]
    none_ready: bool,
    /// Report the minimum of the repetitions (the paper's statistic)
    /// rather than the median.
    #[arg(long)]
    min: bool,
    /// Also append the results to DIR/pollcost.csv (series,idle
    /// sockets,us per call).
    #[arg(long, value_name = "DIR")]
    csv_dir: Option<std::path::PathBuf>,
}

fn check(r: libc::c_int, what: &str) -> std::io::Result<libc::c_int> {
    if r < 0 {
        Err(std::io::Error::new(
            std::io::Error::last_os_error().kind(),
            format!("{what}: {}", std::io::Error::last_os_error()),
        ))
    } else {
        Ok(r)
    }
}

/// Median (or minimum) time of one call of `f`, which must find one
/// ready socket, or none with `--none-ready`.
fn time_calls(
    args: &Args,
    mut f: impl FnMut() -> std::io::Result<libc::c_int>,
) -> std::io::Result<Duration> {
    let mut samples = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        let t = Instant::now();
        for _ in 0..args.calls {
            if f()? != libc::c_int::from(!args.none_ready) {
                return Err(std::io::Error::other(format!(
                    "expected exactly {} ready socket(s)",
                    u8::from(!args.none_ready)
                )));
            }
        }
        samples.push(t.elapsed() / args.calls);
    }
    if args.min {
        return Ok(samples.into_iter().min().unwrap_or_default());
    }
    Ok(median(&mut samples))
}

fn select_cost(args: &Args, fds: &[RawFd]) -> std::io::Result<Option<Duration>> {
    let max = *fds.iter().max().unwrap_or(&0);
    if max as usize >= libc::FD_SETSIZE {
        return Ok(None);
    }
    time_calls(args, || {
        // SAFETY: An all-zero fd_set is a valid empty set.
        let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
        for &fd in fds {
            // SAFETY: `fd` is below FD_SETSIZE (checked above) and `set` is valid.
            unsafe { libc::FD_SET(fd, &mut set) };
        }
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: `set` and `tv` are valid for the call; no other sets.
        let r = unsafe {
            libc::select(
                max + 1,
                &mut set,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            )
        };
        check(r, "select")
    })
    .map(Some)
}

fn poll_cost(args: &Args, fds: &[RawFd]) -> std::io::Result<Duration> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    time_calls(args, || {
        // SAFETY: `pfds` is a valid array of `pfds.len()` entries.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 0) };
        check(r, "poll")
    })
}

fn epoll_cost(args: &Args, fds: &[RawFd]) -> std::io::Result<Duration> {
    // SAFETY: Creates a new descriptor; no pointers involved.
    let ep = check(
        unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) },
        "epoll_create1",
    )?;
    let close = || {
        // SAFETY: `ep` was opened above and is not used after this.
        unsafe { libc::close(ep) };
    };
    for &fd in fds {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: `ep` and `fd` are open descriptors; `ev` is valid.
        let r = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if let Err(e) = check(r, "epoll_ctl") {
            close();
            return Err(e);
        }
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let cost = time_calls(args, || {
        // SAFETY: `events` has room for the 8 entries the call may fill.
        let r = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 8, 0) };
        check(r, "epoll_wait")
    });
    close();
    cost
}

/// Sets the socket's send and receive buffers to `bytes`.
fn set_buffers(s: &TcpStream, bytes: usize) -> std::io::Result<()> {
    let v = libc::c_int::try_from(bytes).map_err(std::io::Error::other)?;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: `v` outlives the call and its size is passed.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        check(r, "setsockopt")?;
    }
    Ok(())
}

fn micros(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-pollcost", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let most = args.counts.iter().copied().max().unwrap_or(0);
    let want = 2 * most as u64 + 64;
    // SAFETY: Plain getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    // The busy socket first, so it has the lowest descriptor.
    let mut busy_far = TcpStream::connect(addr)?;
    let (busy, _) = listener.accept()?;
    let tune = |s: &TcpStream| args.sockbuf.map_or(Ok(()), |b| set_buffers(s, b));
    tune(&busy)?;
    if !args.none_ready {
        busy_far.write_all(b"x")?;
    }
    let mut idle = Vec::new();
    let mut report = Report::new("readiness call cost", "idle sockets", "us per call", false);
    println!(
        "# readiness call cost, {} ready among N+1 sockets, {} of {} x {} calls{}",
        u8::from(!args.none_ready),
        if args.min { "minimum" } else { "median" },
        args.reps,
        args.calls,
        args.sockbuf
            .map_or(String::new(), |b| format!(", {b}-byte socket buffers"))
    );
    let mut selects = Vec::new();
    println!(
        "{:>6} {:>12} {:>12} {:>12}",
        "idle", "select(us)", "poll(us)", "epoll(us)"
    );
    for &n in &args.counts {
        while idle.len() < n {
            let far = TcpStream::connect(addr)?;
            let (near, _) = listener.accept()?;
            tune(&near)?;
            idle.push((near, far));
        }
        let fds: Vec<RawFd> = std::iter::once(busy.as_raw_fd())
            .chain(idle[..n].iter().map(|(near, _)| near.as_raw_fd()))
            .collect();
        let sel = select_cost(&args, &fds)?;
        let pol = poll_cost(&args, &fds)?;
        let epo = epoll_cost(&args, &fds)?;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        if let Some(d) = sel {
            report.push("select", n as f64, us(d));
            selects.push((n, us(d)));
        }
        report.push("poll", n as f64, us(pol));
        report.push("epoll_wait", n as f64, us(epo));
        let sel = sel.map_or("past FD_SETSIZE".into(), micros);
        println!("{n:>6} {sel:>12} {:>12} {:>12}", micros(pol), micros(epo));
    }
    // The slope, as the paper states its figure 7: cost per watched socket.
    if let (Some(&(n0, c0)), Some(&(n1, c1))) = (selects.first(), selects.last()) {
        if n1 > n0 {
            println!(
                "select: {:.3} us per watched socket from {n0} to {n1} (paper, figure 7: about 0.5 us)",
                (c1 - c0) / (n1 - n0) as f64
            );
        }
    }
    if let Some(dir) = &args.csv_dir {
        std::fs::create_dir_all(dir)?;
        report.append_csv(&dir.join("pollcost.csv"))?;
    }
    Ok(())
}
