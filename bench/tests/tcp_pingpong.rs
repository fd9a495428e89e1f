//! The raw-TCP ping-pong between two processes (`--listen` / `--connect`,
//! as the cluster benchmark runs it between VMs): the measuring end
//! reports every size, and the echoing end refuses a plan it should not
//! allocate.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

fn tcp_pingpong() -> Command {
    Command::new(env!("CARGO_BIN_EXE_o2g-tcp-pingpong"))
}

fn connected_to_itself(s: &TcpStream) -> bool {
    s.local_addr().ok() == s.peer_addr().ok()
}

/// An echoing end listening on a loopback port of its own choosing (a
/// port picked here and handed over could be taken in between, by the
/// other test running at the same time), with the address it reports
/// and the rest of its standard error.
struct Echoer {
    child: Child,
    addr: String,
    stderr: BufReader<ChildStderr>,
}

fn listen() -> Echoer {
    let mut child = tcp_pingpong()
        .args(["--listen", "127.0.0.1:0", "--wait", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the echoing end");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    stderr
        .read_line(&mut line)
        .expect("the echoing end's first line");
    let addr = line
        .trim()
        .strip_prefix("o2g-tcp-pingpong: listening on ")
        .unwrap_or_else(|| panic!("no address from the echoing end: {line:?}"))
        .to_string();
    Echoer {
        child,
        addr,
        stderr,
    }
}

impl Echoer {
    /// Waits for the echoing end; whether it succeeded, and what else it
    /// wrote to standard error.
    fn finish(mut self) -> (bool, String) {
        let mut err = String::new();
        self.stderr
            .read_to_string(&mut err)
            .expect("the echoing end's stderr");
        let status = self.child.wait().expect("echoing end");
        (status.success(), err)
    }
}

#[test]
fn measures_against_a_listening_process() {
    let echoer = listen();
    let addr = echoer.addr.clone();
    let dir = std::env::temp_dir().join(format!("o2g-tcp-pingpong-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = tcp_pingpong()
        .args([
            "--connect",
            &addr,
            "--wait",
            "30",
            "--sizes",
            "8,64K",
            "--reps",
            "2",
        ])
        .arg("--csv-dir")
        .arg(&dir)
        .output()
        .expect("run the measuring end");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for size in ["8", "65536"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(size)),
            "no row for {size} bytes:\n{text}"
        );
    }
    let csv = std::fs::read_to_string(dir.join("pingpong-bandwidth.csv")).expect("bandwidth CSV");
    assert!(
        csv.lines().any(|l| l.starts_with("raw-tcp,65536,")),
        "{csv}"
    );
    let (ok, err) = echoer.finish();
    assert!(ok, "{err}");
    std::fs::remove_dir_all(&dir).expect("remove the CSV folder");
}

#[test]
fn the_echoing_end_refuses_an_oversized_plan() {
    let echoer = listen();
    let addr = echoer.addr.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut s = loop {
        match TcpStream::connect(&addr) {
            // A connection to a port nobody listens on yet can be made to
            // itself (its own ephemeral port): not the echoing end.
            Ok(s) if !connected_to_itself(&s) => break s,
            Ok(_) | Err(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(_) => panic!("{addr}: only self-connections within 30 s"),
            Err(e) => panic!("cannot connect to {addr}: {e}"),
        }
    };
    // One step of 1 TiB messages, one round trip.
    let mut plan = Vec::new();
    for word in [1u64, 1 << 40, 1] {
        plan.extend_from_slice(&word.to_le_bytes());
    }
    s.write_all(&plan).expect("send the plan");
    let (ok, err) = echoer.finish();
    assert!(!ok, "accepted a 1 TiB plan");
    assert!(err.contains("plan refused"), "{err}");
}
