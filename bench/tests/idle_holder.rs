//! The o2g paper's figure 6 setup on one host: two ranks ping-pong while
//! each also holds idle connections whose far ends an `o2g-idle-holder`
//! (the paper's third node) keeps open.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn o2grun() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_o2g-pingpong")).with_file_name("o2grun");
    assert!(
        path.exists(),
        "{} missing: cargo build -p mpi --bins",
        path.display()
    );
    path
}

fn pingpong(transport: &str, holder: &str, idle: usize) -> std::process::Output {
    Command::new(o2grun())
        .args(["-n", "2", "--timeout", "120"])
        .arg(env!("CARGO_BIN_EXE_o2g-pingpong"))
        .args(["--sizes", "8,64K", "--reps", "1"])
        .env("O2G_TRANSPORT", transport)
        .env("O2G_SELF", "0")
        .env("O2G_IDLE_CONNECTIONS", idle.to_string())
        .env("O2G_IDLE_HOLDER", holder)
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .output()
        .expect("spawn o2grun")
}

#[test]
fn the_ranks_idle_connections_are_held_by_the_third_process() {
    for transport in ["sockets-poll", "sockets-epoll"] {
        let idle = 40;
        let mut holder = Command::new(env!("CARGO_BIN_EXE_o2g-idle-holder"))
            .args(["--listen", "127.0.0.1:0", "--seconds", "120"])
            .args(["--expect", &(2 * idle).to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the holder");
        let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
        let first = lines.next().expect("the holder's first line").unwrap();
        let addr = first.rsplit(' ').next().unwrap().to_owned();
        let out = pingpong(transport, &addr, idle);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("65536"),
            "{transport}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = lines.last().expect("the holder's summary").unwrap();
        assert!(holder.wait().unwrap().success());
        assert_eq!(
            last,
            format!(
                "o2g-idle-holder: held {0} connections at most, {0} in all",
                2 * idle
            ),
            "{transport}"
        );
    }
}

#[test]
fn a_holder_that_is_not_there_stops_the_job_with_its_address() {
    // A port nothing listens on: bind one, note it, close it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = pingpong("sockets-epoll", &addr.to_string(), 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("the holder at {addr}")), "{err}");
}
