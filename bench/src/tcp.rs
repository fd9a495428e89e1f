//! Setting up one TCP connection between two benchmark processes, which
//! may be on two hosts: one end listens, the other connects.

use std::io;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Accepts one connection on `addr`, waiting at most `wait`; `who`
/// names the program in the line that says where it listens.
pub fn accept_one(who: &str, addr: &str, wait: Duration) -> io::Result<TcpStream> {
    let listener = TcpListener::bind(addr)?;
    // The port actually bound (ADDR may name port 0), for whoever started
    // this end: a port picked beforehand may be taken by then.
    eprintln!("{who}: listening on {}", listener.local_addr()?);
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + wait;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no peer connected to {addr} within {wait:?}"),
                ));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Connects to `addr`, retrying while the peer is not listening yet, for
/// at most `wait`.
pub fn connect_retrying(addr: &str, wait: Duration) -> io::Result<TcpStream> {
    let deadline = Instant::now() + wait;
    loop {
        let last = match addr.to_socket_addrs()?.next() {
            Some(a) => match TcpStream::connect_timeout(&a, wait) {
                // Before the peer listens, a loopback connect can land on
                // its own ephemeral port (TCP simultaneous open): retry.
                Ok(s) if s.local_addr()? == s.peer_addr()? => {
                    io::Error::new(io::ErrorKind::ConnectionRefused, "connected to itself")
                }
                Ok(s) => return Ok(s),
                Err(e) => e,
            },
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{addr} names no address"),
                ))
            }
        };
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                last.kind(),
                format!("cannot connect to {addr} within {wait:?}: {last}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Both ends of one connection over loopback, for a benchmark that runs
/// both in this process.
pub fn loopback_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let near = TcpStream::connect(listener.local_addr()?)?;
    let (far, _) = listener.accept()?;
    Ok((near, far))
}
