//! Nodes as separate processes over one `/dev/shm` region: the test binary
//! re-runs itself with `O2G_DIMMNET_CHILD` set, and the `child` test below
//! plays the node named there (it does nothing in a normal run).

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::pattern;
use o2g_dimmnet::{Barrier, Config, DimmEndpoint, Error, Nic, WaitPolicy};
use o2g_nicmem::Region;

const ENV: &str = "O2G_DIMMNET_CHILD";
const PGID: u16 = 3;
const MSGS: usize = 5;

/// Removes the region's name however the test ends.
struct Unlink(String);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = Region::unlink_shm(&self.0);
    }
}

fn spawn(name: &str, node: u32, role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(ENV, format!("{name} {node} {role}"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn msg_len(node: u32, k: usize) -> usize {
    (node as usize * 4099 + k * 20_011) % 70_000
}

/// The child side; a no-op unless started by a parent test.
#[test]
fn child() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let region = Arc::new(Region::open_shm(parts[0]).unwrap());
    let node: u32 = parts[1].parse().unwrap();
    let nic = Nic::attach(region, node).unwrap();
    match parts[2] {
        "sender" => {
            let mut b = Barrier::new(nic.clone()).unwrap();
            b.wait().unwrap();
            let mut ep = DimmEndpoint::new(nic, PGID).unwrap();
            for k in 0..MSGS {
                ep.send(0, &pattern(node as usize * 10 + k, msg_len(node, k)))
                    .unwrap();
            }
            b.wait().unwrap();
        }
        "stuck" => {
            // Announce a message and wait for a grant that never comes,
            // until the parent kills us.
            let mut ep = DimmEndpoint::new(nic, PGID).unwrap();
            let _ = ep.send(0, &[7u8; 50_000]);
            std::thread::sleep(Duration::from_secs(60));
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn processes_send_to_one_and_meet_at_barriers() {
    const NODES: u32 = 4;
    let name = common::unique("procs");
    let _r = Nic::create_shm(&name, Config::new(NODES)).unwrap();
    let _unlink = Unlink(name.clone());
    let nic = Nic::attach(Arc::clone(&_r), 0).unwrap();
    let mut children: Vec<Child> = (1..NODES).map(|n| spawn(&name, n, "sender")).collect();
    let mut b = Barrier::new(nic.clone()).unwrap();
    b.wait().unwrap();
    let mut ep = DimmEndpoint::new(nic, PGID).unwrap();
    let mut next = [0usize; NODES as usize];
    let mut buf = vec![0u8; 70_000];
    for _ in 0..(NODES as usize - 1) * MSGS {
        let (src, len) = ep.recv_any(&mut buf).unwrap();
        let k = next[src as usize];
        assert_eq!(len, msg_len(src, k));
        assert_eq!(&buf[..len], &pattern(src as usize * 10 + k, len)[..]);
        next[src as usize] += 1;
    }
    b.wait().unwrap();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
}

#[test]
fn a_killed_process_gives_a_timeout_not_a_hang() {
    let name = common::unique("killed");
    let r = Nic::create_shm(&name, Config::new(2)).unwrap();
    let _unlink = Unlink(name.clone());
    let nic = Nic::attach(r, 0)
        .unwrap()
        .with_wait(WaitPolicy::with_deadline(Duration::from_millis(300)));
    let mut ep = DimmEndpoint::new(nic, PGID).unwrap();
    let mut child = spawn(&name, 1, "stuck");
    // Wait (bounded) for its announcement, then kill it mid-protocol.
    let policy = WaitPolicy::with_deadline(Duration::from_secs(30));
    let (src, len) = policy
        .wait(|| "the child's announcement".into(), || ep.poll())
        .unwrap();
    assert_eq!((src, len), (1, 50_000));
    child.kill().unwrap();
    child.wait().unwrap();
    let e = ep.recv(1, &mut vec![0u8; 50_000]).unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
}
