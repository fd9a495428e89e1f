//! The IS benchmark verifies (NPB's partial and full checks) on the socket
//! transports at several process counts, including one that is not a
//! power of two.

use std::path::PathBuf;
use std::process::Command;

/// o2grun, built next to this package's binaries by `cargo test --workspace`.
fn o2grun() -> PathBuf {
    let is = PathBuf::from(env!("CARGO_BIN_EXE_o2g-is"));
    let path = is.with_file_name("o2grun");
    assert!(
        path.exists(),
        "{} missing: build the launcher first (cargo build -p mpi --bins, or cargo test --workspace)",
        path.display()
    );
    path
}

fn run_is(transport: &str, np: u32, class: &str) -> String {
    let out = Command::new(o2grun())
        .args(["-n", &np.to_string(), "--timeout", "120"])
        .arg(env!("CARGO_BIN_EXE_o2g-is"))
        .arg(class)
        .env("O2G_TRANSPORT", transport)
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .output()
        .expect("spawn o2grun");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{transport} np{np}: exit {:?}\n{text}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn class_s_verifies_over_both_socket_transports() {
    for transport in ["sockets-epoll", "sockets-select"] {
        for np in [1, 2, 3, 4] {
            let text = run_is(transport, np, "S");
            assert!(
                text.contains("Verification    =  SUCCESSFUL"),
                "{transport} np{np}:\n{text}"
            );
            assert!(text.contains("Mop/s total"), "{text}");
        }
    }
}

#[test]
fn class_w_verifies_on_four_processes() {
    let text = run_is("sockets-epoll", 4, "W");
    assert!(text.contains("Verification    =  SUCCESSFUL"), "{text}");
}
