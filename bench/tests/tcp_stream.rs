//! The one-way TCP stream (`o2g-tcp-stream`) between two processes, as the
//! cluster benchmark runs it between VMs: the sending end reports both
//! send modes for every size and writes every repetition to its CSV; over
//! loopback the kernel completes every zero-copy send by copying, and the
//! tool says so. The draining end refuses a volume it should not wait for.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn tcp_stream() -> Command {
    Command::new(env!("CARGO_BIN_EXE_o2g-tcp-stream"))
}

/// A draining end on a loopback port of its own choosing, and its address.
fn listen() -> (std::process::Child, String) {
    let mut child = tcp_stream()
        .args(["--listen", "127.0.0.1:0", "--wait", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the draining end");
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().expect("piped stderr"))
        .read_line(&mut line)
        .expect("the draining end's first line");
    let addr = line
        .trim()
        .strip_prefix("o2g-tcp-stream: listening on ")
        .unwrap_or_else(|| panic!("no address from the draining end: {line:?}"))
        .to_string();
    (child, addr)
}

#[test]
fn both_modes_are_measured_and_loopback_zero_copy_is_copied() {
    let (mut drain, addr) = listen();
    let csv = std::env::temp_dir().join(format!("o2g-tcp-stream-{}.csv", std::process::id()));
    let out = tcp_stream()
        .args(["--connect", &addr, "--wait", "30", "--reps", "2"])
        .args(["--sizes", "4096,65536", "--volume", "1048576", "--csv"])
        .arg(&csv)
        .output()
        .expect("run the sending end");
    assert!(drain.wait().expect("draining end").success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for size in ["4096", "65536"] {
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(size))
            .unwrap_or_else(|| panic!("no row for {size}: {text}"))
            .split_whitespace()
            .collect();
        assert_eq!(row.len(), 6, "{row:?}");
        for mbs in &row[1..3] {
            assert!(mbs.parse::<f64>().expect("MB/s") > 0.0, "{row:?}");
        }
        assert_eq!(row[5], "100%", "loopback copies zero-copy sends: {row:?}");
    }
    let rows = std::fs::read_to_string(&csv).expect("csv");
    std::fs::remove_file(&csv).ok();
    let mut lines = rows.lines();
    assert_eq!(lines.next(), Some("series,bytes,rep,mbps"));
    // 2 sizes x 2 modes x 2 repetitions (the warm-up is not recorded).
    assert_eq!(lines.count(), 8, "{rows}");
}

#[test]
fn the_draining_end_refuses_an_absurd_volume() {
    let (drain, addr) = listen();
    let mut s = TcpStream::connect(&addr).expect("connect");
    s.write_all(&u64::MAX.to_le_bytes()).expect("write");
    let out = drain.wait_with_output().expect("draining end");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(!out.status.success());
    let mut err = String::new();
    out.stderr
        .as_slice()
        .read_to_string(&mut err)
        .expect("stderr");
    assert!(err.contains("asked to stream"), "{err}");
}
