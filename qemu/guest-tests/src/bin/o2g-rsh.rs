//! A remote shell for the harness's own VMs, so that Open MPI's and
//! MPICH's launchers can start ranks on other nodes (the guests have no
//! ssh). It speaks only to nodes of one test run, on the harness network.
//!
//! `o2g-rsh --serve PORT SECONDS` runs on every node but the launching
//! one. For each connection it runs the command it is sent under `sh -c`
//! (stdin from /dev/null) in a process group of its own, forwards its
//! output, then its exit status. A client that goes away takes the command
//! with it (the group is killed), as when a launcher stops its ssh. The
//! server ends on a `quit` request or after SECONDS.
//!
//! `o2g-rsh HOST COMMAND...` is the ssh stand-in the launchers call
//! (`/bin/o2g-rsh`): like ssh it joins COMMAND's words with spaces for the
//! remote shell, and exits with the remote command's status. Options before
//! HOST (launchers pass some to ssh) are ignored. `o2g-rsh --quit HOST`
//! ends HOST's server.
//!
//! Wire format. Request: u32 length (big-endian) and the command, or the
//! length `u32::MAX` for quit. Reply: frames of a kind byte (1 stdout,
//! 2 stderr, 3 exit status), a u32 length and the bytes; the exit frame
//! carries an i32 (the status, or 128 + the signal) and ends the reply.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const EXIT: u8 = 3;
const QUIT: u32 = u32::MAX;
/// A command line longer than this is refused (Open MPI's orted lines are
/// a few KiB).
const MAX_COMMAND: u32 = 1 << 20;
/// How long the client keeps trying to reach a server that is not up yet.
const CONNECT_FOR: Duration = Duration::from_secs(60);

/// The port the client and `--quit` connect to (`O2G_RSH_PORT`).
fn port() -> Result<u16, String> {
    std::env::var("O2G_RSH_PORT")
        .unwrap_or_else(|_| "7100".into())
        .parse()
        .map_err(|e| format!("O2G_RSH_PORT: {e}"))
}

fn frame(out: &Mutex<TcpStream>, kind: u8, data: &[u8]) -> io::Result<()> {
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    let mut head = [0u8; 5];
    head[0] = kind;
    head[1..].copy_from_slice(&(data.len() as u32).to_be_bytes());
    w.write_all(&head)?;
    w.write_all(data)
}

/// `--serve PORT SECONDS`.
fn serve(args: &[String]) -> Result<(), String> {
    let [port, secs] = args else {
        return Err("usage: o2g-rsh --serve PORT SECONDS".into());
    };
    let port: u16 = port.parse().map_err(|e| format!("PORT: {e}"))?;
    let secs: u64 = secs.parse().map_err(|e| format!("SECONDS: {e}"))?;
    let listener =
        TcpListener::bind(("0.0.0.0", port)).map_err(|e| format!("bind port {port}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let quit = Arc::new(Mutex::new(false));
    while !*quit.lock().unwrap_or_else(|p| p.into_inner()) {
        if Instant::now() >= deadline {
            return Err(format!("--serve: no quit request within {secs} s"));
        }
        match listener.accept() {
            Ok((conn, peer)) => {
                let quit = quit.clone();
                thread::spawn(move || {
                    if let Err(e) = session(conn, &quit) {
                        eprintln!("o2g-rsh --serve: {peer}: {e}");
                    }
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
    Ok(())
}

/// One request: runs the command and streams its output and status back.
fn session(mut conn: TcpStream, quit: &Mutex<bool>) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    let mut len = [0u8; 4];
    conn.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    if len == QUIT {
        *quit.lock().unwrap_or_else(|p| p.into_inner()) = true;
        return Ok(());
    }
    if len > MAX_COMMAND {
        return Err(io::Error::other(format!("command of {len} bytes refused")));
    }
    let mut cmd = vec![0u8; len as usize];
    conn.read_exact(&mut cmd)?;
    let cmd = String::from_utf8(cmd).map_err(io::Error::other)?;
    let out = Arc::new(Mutex::new(conn.try_clone()?));
    let mut child = match Command::new("/bin/sh")
        .args(["-c", &cmd])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            frame(
                &out,
                STDERR,
                format!("o2g-rsh --serve: sh: {e}\n").as_bytes(),
            )?;
            return frame(&out, EXIT, &127i32.to_be_bytes());
        }
    };
    let group = child.id() as libc::pid_t;
    let mut pumps = Vec::new();
    for (kind, mut src) in [
        (
            STDOUT,
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        ),
        (STDERR, Box::new(child.stderr.take().expect("piped"))),
    ] {
        let out = out.clone();
        pumps.push(thread::spawn(move || {
            let mut buf = [0u8; 16 << 10];
            // A failed forward means the client is gone; the watcher
            // below kills the command.
            while let Ok(n @ 1..) = src.read(&mut buf) {
                if frame(&out, kind, &buf[..n]).is_err() {
                    break;
                }
            }
        }));
    }
    // The client sends nothing more: end of stream means it is gone.
    // Once the command has been reaped its pid may be reused, so the
    // watcher then leaves it alone.
    let reaped = Arc::new(AtomicBool::new(false));
    let mut watch = conn.try_clone()?;
    let seen = reaped.clone();
    thread::spawn(move || {
        let _ = watch.read(&mut [0u8; 1]);
        if !seen.load(Ordering::SeqCst) {
            // SAFETY: kill(2) on the command's own process group (spawned
            // with process_group(0), so its id is the pid), not yet
            // reaped; if it has just ended, kill fails with ESRCH.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
    });
    let status = child.wait()?;
    reaped.store(true, Ordering::SeqCst);
    for p in pumps {
        let _ = p.join();
    }
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    frame(&out, EXIT, &code.to_be_bytes())?;
    let _ = conn.shutdown(Shutdown::Write);
    Ok(())
}

/// Connects to `host`'s server, retrying while it is not up yet.
fn connect(host: &str) -> Result<TcpStream, String> {
    let port = port()?;
    let start = Instant::now();
    loop {
        let addrs = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{host}: {e}"))?;
        let mut last = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if start.elapsed() >= CONNECT_FOR {
            return Err(format!(
                "{host}:{port}: no o2g-rsh --serve within {} s ({})",
                CONNECT_FOR.as_secs(),
                last.map_or("no address".into(), |e| e.to_string())
            ));
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// `[OPTIONS] HOST COMMAND...`: returns the remote command's status.
fn client(args: &[String]) -> Result<i32, String> {
    let mut words = args.iter().skip_while(|a| a.starts_with('-'));
    let host = words
        .next()
        .ok_or("usage: o2g-rsh [OPTIONS] HOST COMMAND... | --serve PORT SECONDS | --quit HOST")?;
    let cmd = words.map(String::as_str).collect::<Vec<_>>().join(" ");
    if cmd.is_empty() {
        return Err("no command (an interactive shell is not offered)".into());
    }
    let mut s = connect(host)?;
    let len = u32::try_from(cmd.len())
        .ok()
        .filter(|l| *l <= MAX_COMMAND)
        .ok_or("command too long")?;
    s.write_all(&len.to_be_bytes())
        .and_then(|()| s.write_all(cmd.as_bytes()))
        .map_err(|e| format!("{host}: {e}"))?;
    let mut head = [0u8; 5];
    loop {
        s.read_exact(&mut head)
            .map_err(|e| format!("{host}: connection ended before the exit status: {e}"))?;
        let len = u32::from_be_bytes(head[1..].try_into().expect("4 bytes")) as usize;
        let mut data = vec![0u8; len];
        s.read_exact(&mut data)
            .map_err(|e| format!("{host}: {e}"))?;
        match head[0] {
            STDOUT => {
                let _ = io::stdout()
                    .write_all(&data)
                    .and_then(|()| io::stdout().flush());
            }
            STDERR => {
                let _ = io::stderr().write_all(&data);
            }
            EXIT if len == 4 => return Ok(i32::from_be_bytes(data[..].try_into().expect("4"))),
            k => return Err(format!("{host}: bad frame kind {k} ({len} bytes)")),
        }
    }
}

/// `--quit HOST`: ends HOST's server.
fn quit(args: &[String]) -> Result<(), String> {
    let [host] = args else {
        return Err("usage: o2g-rsh --quit HOST".into());
    };
    let mut s = connect(host)?;
    s.write_all(&QUIT.to_be_bytes())
        .map_err(|e| format!("--quit: {host}: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (result, failure) = match args.first().map(String::as_str) {
        Some("--serve") => (serve(&args[1..]).map(|()| 0), 1),
        Some("--quit") => (quit(&args[1..]).map(|()| 0), 1),
        // The remote command's status is this program's; like ssh, 255
        // when the remote shell itself failed.
        _ => (client(&args), 255),
    };
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(msg) => {
            eprintln!("o2g-rsh: {msg}");
            ExitCode::from(failure)
        }
    }
}
