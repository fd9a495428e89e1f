//! `O2G_MODEL_TIME=1`: an MPI program over `dimmnet` or `hyphenlink`
//! times itself with the NIC's timing model instead of this host's clock.

use std::path::PathBuf;
use std::process::Command;

fn o2grun() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_o2g-pingpong")).with_file_name("o2grun");
    assert!(
        path.exists(),
        "{} missing: cargo build -p mpi --bins",
        path.display()
    );
    path
}

fn pingpong(transport: &str, model: &str) -> std::process::Output {
    Command::new(o2grun())
        .args(["-n", "2", "--timeout", "120"])
        .arg(env!("CARGO_BIN_EXE_o2g-pingpong"))
        .args(["--sizes", "8,64K", "--reps", "1"])
        .env("O2G_TRANSPORT", transport)
        .env("O2G_MODEL_TIME", model)
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .output()
        .expect("spawn o2grun")
}

/// The MB/s column of the row for `bytes`.
fn mbps(text: &str, bytes: u64) -> f64 {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() == 3 && f[0].parse() == Ok(bytes))
        .and_then(|f| f[2].parse().ok())
        .unwrap_or_else(|| panic!("no row for {bytes} B in\n{text}"))
}

/// The 64 KiB bandwidth a ping-pong over `transport` reports under the
/// model; this host's shared memory would move GB/s.
fn modelled_64k(transport: &str) -> f64 {
    let out = pingpong(transport, "1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{transport}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    mbps(&text, 65536)
}

#[test]
fn ping_pong_over_dimmnet_reports_the_cards_bandwidth() {
    // The model's DIMM_Send of 64 KiB runs at about 134 MB/s (RHiNET-2's
    // link, PC100 card memory, the bank switch per receive).
    let bw = modelled_64k("dimmnet");
    assert!((110.0..160.0).contains(&bw), "64 KiB at {bw} MB/s");
}

#[test]
fn ping_pong_over_hyphenlink_reports_the_boards_bandwidth() {
    // A 64 KiB frame: the host's command and the board's DMA at the
    // assumed 100 MB/s of PCI, the link, the DMA out at the receiver:
    // about 32 MB/s a round trip.
    let bw = modelled_64k("hyphenlink");
    assert!((25.0..40.0).contains(&bw), "64 KiB at {bw} MB/s");
}

#[test]
fn model_time_on_a_transport_without_a_model_is_refused() {
    let out = pingpong("sockets-epoll", "1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("O2G_MODEL_TIME=1") && err.contains("no timing model"),
        "{err}"
    );
}
