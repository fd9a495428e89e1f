//! `o2g-idle-holder`: the third node of the o2g paper's figure 6. It
//! accepts TCP connections and holds them open without ever sending, so
//! that two ranks measuring bandwidth (with `O2G_IDLE_HOLDER` pointing
//! here and `O2G_IDLE_CONNECTIONS=N`) each watch N idle connections whose
//! far ends are on another machine, as in the paper.
//!
//! It exits after `--seconds`, or once `--expect` connections have come
//! and all of them have been closed by their other ends (the ranks
//! finished), printing how many it held.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
#[command(about = "Holds idle TCP connections open (the o2g paper's third node)")]
struct Args {
    /// Address and port to listen on.
    #[arg(long, default_value = "0.0.0.0:7300")]
    listen: SocketAddr,
    /// Exit once this many connections came and all were closed again.
    #[arg(long)]
    expect: Option<usize>,
    /// Exit after this many seconds in any case.
    #[arg(long, default_value_t = 3600)]
    seconds: u64,
}

/// Raises the descriptor limit to its hard limit: the holder keeps one
/// descriptor per connection of every rank.
fn raise_fd_limit() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write or read only the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// Whether the other end has closed `s` (a read of 0 bytes); anything it
/// sent is discarded, though nothing should be.
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Drops the connections whose other ends have closed: one `poll` finds
/// the few with something to read, and only those are read.
fn drop_closed(held: &mut Vec<TcpStream>) {
    let mut fds: Vec<libc::pollfd> = held
        .iter()
        .map(|s| libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(s),
            events: libc::POLLIN | libc::POLLRDHUP,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a valid array of `fds.len()` entries for the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if n <= 0 {
        return;
    }
    let mut i = 0;
    held.retain_mut(|s| {
        let ready = fds[i].revents != 0;
        i += 1;
        !(ready && closed(s))
    });
}

fn main() {
    let args = Args::parse();
    raise_fd_limit();
    let listener = match TcpListener::bind(args.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("o2g-idle-holder: cannot listen on {}: {e}", args.listen);
            std::process::exit(1);
        }
    };
    listener
        .set_nonblocking(true)
        .expect("nonblocking listener");
    let at = listener.local_addr().expect("bound address");
    // The first line says where (a caller that asked for port 0 learns it).
    println!("o2g-idle-holder: listening on {at}");
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let (mut held, mut total) = (Vec::<TcpStream>::new(), 0usize);
    let mut peak = 0;
    // Checked once a second, with one poll over all of them: the holder
    // must not take CPU from the ranks it serves.
    let mut next_check = Instant::now();
    while Instant::now() < deadline {
        let mut busy = false;
        loop {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(true).expect("nonblocking connection");
                    held.push(s);
                    total += 1;
                    busy = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    eprintln!("o2g-idle-holder: accept: {e}");
                    break;
                }
            }
        }
        peak = peak.max(held.len());
        if Instant::now() >= next_check {
            drop_closed(&mut held);
            next_check = Instant::now() + Duration::from_secs(1);
        }
        if args.expect.is_some_and(|n| total >= n) && held.is_empty() {
            break;
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    println!("o2g-idle-holder: held {peak} connections at most, {total} in all");
}
