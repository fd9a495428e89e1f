//! The IS benchmark verifies (NPB's partial and full checks) on the socket
//! transports at several process counts, including one that is not a
//! power of two, and with the o2g paper's 998 idle connections open.

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

/// o2grun running o2g-is `class` on `np` processes over `transport`, each
/// also holding `idle` idle connections.
fn launch_is(transport: &str, np: u32, class: &str, idle: usize) -> std::process::Output {
    Command::new(o2grun())
        .args(["-n", &np.to_string(), "--timeout", "120"])
        .arg(env!("CARGO_BIN_EXE_o2g-is"))
        .arg(class)
        .env("O2G_TRANSPORT", transport)
        .env("O2G_IDLE_CONNECTIONS", idle.to_string())
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .output()
        .expect("spawn o2grun")
}

fn run_is(transport: &str, np: u32, class: &str) -> String {
    let out = launch_is(transport, np, class, 0);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{transport} np{np}: exit {:?}\n{text}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        !errors.contains("warning"),
        "{transport} np{np}: o2g-is warned:\n{errors}"
    );
    text
}

#[test]
fn class_s_verifies_over_the_socket_transports() {
    for transport in ["sockets-epoll", "sockets-select", "sockets-poll"] {
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

/// 998 idle connections put descriptors past `FD_SETSIZE`: `sockets-poll`
/// runs there, `sockets-select` refuses with a clear error.
#[test]
fn idle_connections_past_fd_setsize() {
    let out = launch_is("sockets-poll", 2, "S", 998);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Verification    =  SUCCESSFUL"),
        "sockets-poll with 998 idle: exit {:?}\n{text}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = launch_is("sockets-select", 2, "S", 998);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        // The reason travels in a PMI-1 abort message, which has no
        // underscores: "FD SETSIZE".
        !out.status.success() && all.contains("SETSIZE"),
        "sockets-select with 998 idle: exit {:?}\n{all}",
        out.status.code()
    );
}
