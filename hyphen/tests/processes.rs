//! Nodes as separate processes sharing one `/dev/shm` board: blocking EXT
//! across processes (shared futexes), the multiple-writer property, and
//! the scatter/gather program.
//!
//! The parent re-runs this test binary with `O2G_HYPHEN_CHILD` set; the
//! `child` test then acts as one node and does nothing otherwise.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use o2g_hyphen::scatter_gather::{self, expected_checksum};
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::{Board, BoardConfig, GlobalPage, Overflow, PAGE};
use o2g_nicmem::Region;

const CHILD_VAR: &str = "O2G_HYPHEN_CHILD";
const UNITS: u16 = 12;

fn policy() -> WaitPolicy {
    WaitPolicy::blocking(Duration::from_secs(30))
}

fn config(nodes: u32) -> BoardConfig {
    BoardConfig {
        nodes,
        dsm_pages: 16,
        cache_pages: 4,
        twin_pages: 4,
        ..BoardConfig::default()
    }
}

/// Removes the shared file when the test ends, however it ends.
struct Shm(String);

impl Drop for Shm {
    fn drop(&mut self) {
        let _ = Region::unlink_shm(&self.0);
    }
}

fn create(tag: &str, nodes: u32) -> (Shm, Board) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "o2g-hyphen-proc-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let cfg = config(nodes);
    let region = Region::create_shm(&name, Board::required_len(&cfg).unwrap()).unwrap();
    let board = Board::create(Arc::new(region), cfg).unwrap();
    (Shm(name), board)
}

fn spawn(role: &str, shm: &Shm, node: u32) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, format!("{role}:{}:{node}", shm.0))
        // A child's own test summary would mix with the parent's output,
        // which scripts/test.sh counts; its failure shows in its status
        // and on stderr.
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn reap(children: Vec<Child>) {
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a child node failed");
    }
}

/// The body of a child process (a no-op in a normal test run).
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD_VAR) else {
        return;
    };
    let mut parts = spec.split(':');
    let role = parts.next().unwrap();
    let name = parts.next().unwrap();
    let me: u32 = parts.next().unwrap().parse().unwrap();
    let region = Arc::new(Region::open_shm(name).unwrap());
    let board = Board::attach_expecting(region, &config(3), Duration::from_secs(10)).unwrap();
    match role {
        "writer" => {
            let node = board.node(me, policy()).unwrap();
            // Wait for the go task, so both children hold twins of the
            // same old page before either writes back.
            let page = GlobalPage { home: 0, page: 0 };
            let e = node.cache(page).unwrap();
            node.pb(0, 100 + me, Overflow::Wait).unwrap();
            assert_eq!(node.ext().unwrap(), 200);
            for i in (me as usize - 1..PAGE).step_by(2) {
                node.cache_write(e, i, &[0x10 * me as u8]).unwrap();
            }
            let stats = node.write_back(e).unwrap();
            assert_eq!(stats.dirty_bytes, PAGE / 2);
            node.pb(0, 300 + me, Overflow::Wait).unwrap();
        }
        "sg" => {
            let out = scatter_gather::run_node(&board, me, UNITS, policy()).unwrap();
            assert!(out.is_none(), "only the master gathers");
        }
        other => panic!("unknown child role {other}"),
    }
}

#[test]
fn processes_writing_disjoint_bytes_of_one_page_both_land_at_home() {
    let (shm, board) = create("writers", 3);
    let home = board.node(0, policy()).unwrap();
    home.home_write(0, 0, &[0xff; PAGE]).unwrap();
    let children = vec![spawn("writer", &shm, 1), spawn("writer", &shm, 2)];
    // Blocking EXT: the children's PBs wake this process through the
    // shared futex.
    let mut cached = [home.ext().unwrap(), home.ext().unwrap()];
    cached.sort();
    assert_eq!(cached, [101, 102]);
    home.pb(1, 200, Overflow::Wait).unwrap();
    home.pb(2, 200, Overflow::Wait).unwrap();
    let mut written = [home.ext().unwrap(), home.ext().unwrap()];
    written.sort();
    assert_eq!(written, [301, 302]);
    reap(children);
    let mut page = vec![0u8; PAGE];
    home.home_read(GlobalPage { home: 0, page: 0 }, 0, &mut page)
        .unwrap();
    for (i, &b) in page.iter().enumerate() {
        assert_eq!(b, if i % 2 == 0 { 0x10 } else { 0x20 }, "byte {i}");
    }
}

#[test]
fn processes_run_scatter_compute_gather() {
    let (shm, board) = create("sg", 3);
    let children = vec![spawn("sg", &shm, 1), spawn("sg", &shm, 2)];
    let out = scatter_gather::run_node(&board, 0, UNITS, policy())
        .unwrap()
        .expect("node 0 is the master");
    reap(children);
    assert_eq!(out.mismatches, 0);
    assert_eq!(out.checksum, expected_checksum(UNITS));
}
