//! o2grun under attack (issue 19, item 11) and with ranks that leave badly
//! (item 12): every test starts a real job and checks how it ends.
//!
//! One binary plays two roles. Run by cargo, each test starts `o2grun`
//! running this same binary as the MPI program: o2grun's arguments
//! select the [`rank`] entry point (`--exact rank`), and
//! `O2G_TEST_ROLE` says which program the rank runs:
//! - `ring`: every rank greets, passes its rank around a ring and the
//!   world sums the ranks (the `hello` example); the job's correct output;
//! - `no_finalize`: rank 1 exits 0 right after `MPI_Init`, without
//!   `MPI_Finalize`; the others wait for it until they are terminated;
//! - `abort`: the last rank fails in `MPI_Init` (it asks for the `self`
//!   transport in a world of several), which reports the error to o2grun
//!   through PMI `abort`, then lingers; the others wait in `MPI_Init`.
//!
//! Rank 0 writes its `PMI_PORT` (and `O2G_JOB_SECRET`, standing for a
//! leaked secret) to files in the test's directory (`O2G_TEST_DIR`), so a
//! test finds o2grun's PMI server the way a stranger on the machine
//! could: o2grun itself is started as it always is. Ranks named in
//! `O2G_TEST_HOLD` (`all`, or a comma-separated list) wait before
//! `MPI_Init` until the test creates the file `go` there: the attacks
//! happen while the job is waiting for its ranks.
//!
//! Every wait is bounded: o2grun runs with `--timeout`, and the test kills
//! it if it outlives that.

use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// o2grun's `--timeout` for every job: a job that hangs ends here (with
/// status 124).
const JOB_TIMEOUT: u64 = 30;

/// Bound on the waits of a test around its job (files appearing, o2grun
/// reacting to an attack).
const WAIT: Duration = Duration::from_secs(15);

/// How often the waits look.
const POLL: Duration = Duration::from_millis(10);

// ---------------------------------------------------------------------
// The rank side.

/// The ranks' entry point, not a test: o2grun starts this binary with
/// `--exact rank` and `O2G_TEST_ROLE`; run by cargo, there is nothing to
/// do.
#[test]
fn rank() {
    if let Ok(role) = std::env::var("O2G_TEST_ROLE") {
        std::process::exit(rank_main(&role));
    }
}

fn rank_main(role: &str) -> i32 {
    match run_rank(role) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rank failed: {e}");
            2
        }
    }
}

mod common;
use common::RankResult;

fn run_rank(role: &str) -> RankResult {
    let dir = PathBuf::from(std::env::var("O2G_TEST_DIR")?);
    let me: u32 = std::env::var("PMI_RANK")?.parse()?;
    if me == 0 {
        // The secret first: a test that has the port knows whether there
        // is one.
        if let Ok(secret) = std::env::var("O2G_JOB_SECRET") {
            write_file(&dir, "secret", &secret)?;
        }
        write_file(&dir, "port", &std::env::var("PMI_PORT")?)?;
    }
    let hold = std::env::var("O2G_TEST_HOLD").unwrap_or_default();
    if hold == "all" || hold.split(',').any(|r| r == me.to_string()) {
        let go = dir.join("go");
        let deadline = Instant::now() + Duration::from_secs(2 * JOB_TIMEOUT);
        while !go.exists() {
            if Instant::now() > deadline {
                return Err("the test never said go".into());
            }
            thread::sleep(POLL);
        }
    }
    match role {
        "ring" => ring(),
        "no_finalize" => no_finalize(),
        "abort" => abort_in_init(me),
        other => Err(format!("unknown role {other}").into()),
    }
}

/// Writes `dir/name` whole or not at all.
fn write_file(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    fs::write(&tmp, text)?;
    fs::rename(tmp, dir.join(name))
}

/// The `hello` example: its output is how a test knows the job was
/// unharmed.
fn ring() -> RankResult {
    common::ring("")
}

/// Rank 1 leaves without `MPI_Finalize`; the others stand for ranks
/// blocked on it.
fn no_finalize() -> RankResult {
    let universe = mpi::initialize()?;
    if universe.world().rank() == 1 {
        std::process::exit(0);
    }
    wait_for_teardown()
}

/// The last rank asks for a transport that cannot serve the world, so
/// `MPI_Init` fails and reports the error through PMI `abort`; the rank
/// then lingers, as a rank slow to exit would.
fn abort_in_init(me: u32) -> RankResult {
    let size: u32 = std::env::var("PMI_SIZE")?.parse()?;
    if me == size - 1 {
        use nix::sys::signal::{signal, SigHandler, Signal};
        std::env::set_var("O2G_TRANSPORT", "self");
        // o2grun terminates the job as soon as the abort arrives: SIGTERM
        // waits until the rank has said what it sent, for the test to
        // compare.
        // SAFETY: SIG_IGN installs no handler, so no code runs in signal
        // context.
        unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }?;
        match mpi::initialize() {
            Ok(_) => return Err("MPI_Init succeeded with the self transport".into()),
            Err(e) => eprintln!("init failed: {e}"),
        }
        // SAFETY: as above, for SIG_DFL.
        unsafe { signal(Signal::SIGTERM, SigHandler::SigDfl) }?;
    } else {
        // Waits in the PMI barrier for the rank that never comes.
        let _universe = mpi::initialize()?;
    }
    wait_for_teardown()
}

/// Waits for o2grun to terminate this rank.
fn wait_for_teardown() -> RankResult {
    let deadline = Instant::now() + Duration::from_secs(2 * JOB_TIMEOUT);
    while Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    Err("o2grun never terminated this rank".into())
}

// ---------------------------------------------------------------------
// The launcher side.

/// A running job: o2grun with this binary as its ranks.
struct Job {
    child: Option<Child>,
    dir: PathBuf,
    out: Option<thread::JoinHandle<Vec<u8>>>,
    err: Option<thread::JoinHandle<Vec<u8>>>,
}

/// How a job ended.
struct Ended {
    code: Option<i32>,
    text: String,
}

impl Ended {
    fn assert_ran_correctly(&self, np: u32, attack: &str) {
        let fail = |why: String| -> ! {
            panic!(
                "the job attacked by {attack} was harmed: {why}\n--- o2grun's output ---\n{}",
                self.text
            )
        };
        if self.code != Some(0) {
            fail(format!("o2grun exited with {:?}, not 0", self.code));
        }
        for r in 0..np {
            let line = format!("[{r}] hello from rank {r} of {np}");
            if !self.text.contains(&line) {
                fail(format!("no {line:?}"));
            }
        }
        let sum = format!("[0] sum of ranks: {}", np * (np - 1) / 2);
        if !self.text.contains(&sum) {
            fail(format!("no {sum:?}"));
        }
    }
}

fn collect(mut from: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = from.read_to_end(&mut v);
        v
    })
}

/// A fresh directory for one job's files.
fn job_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "o2grun-attacks-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create the job's directory");
    dir
}

impl Job {
    /// Starts `o2grun -n np` with ranks playing `role`; `hold` as
    /// `O2G_TEST_HOLD`.
    fn start(np: u32, role: &str, hold: &str) -> Job {
        let dir = job_dir();
        let mut child = Command::new(env!("CARGO_BIN_EXE_o2grun"))
            .args(["-n", &np.to_string(), "--tag-output"])
            .args(["--timeout", &JOB_TIMEOUT.to_string(), "--grace", "1"])
            .arg(std::env::current_exe().expect("current_exe"))
            .args(["--exact", "rank", "--nocapture", "--test-threads=1", "-q"])
            .env("O2G_TEST_ROLE", role)
            .env("O2G_TEST_DIR", &dir)
            .env("O2G_TEST_HOLD", hold)
            .env("O2G_TRANSPORT", "sockets-epoll")
            .env_remove("PMI_FD")
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            .env_remove("O2G_JOB_SECRET")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn o2grun");
        let out = child.stdout.take().map(collect);
        let err = child.stderr.take().map(collect);
        Job {
            child: Some(child),
            dir,
            out,
            err,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits for a file rank 0 writes at start-up.
    fn file(&mut self, name: &str) -> Option<String> {
        let path = self.dir.join(name);
        let port = self.dir.join("port");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(text) = fs::read_to_string(&path) {
                return Some(text);
            }
            // Rank 0 writes the secret, if any, before the port.
            if name != "port" && port.exists() {
                return fs::read_to_string(&path).ok();
            }
            if Instant::now() > deadline {
                self.fail(&format!("rank 0 did not write {name} within {WAIT:?}"));
            }
            thread::sleep(POLL);
        }
    }

    /// Where o2grun serves PMI, as its ranks see it.
    fn pmi_addr(&mut self) -> SocketAddr {
        let text = self.file("port").expect("port");
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("PMI_PORT={text:?} is not an address"))
    }

    /// The job's secret, as a rank sees it (`None`: o2grun gave none).
    fn secret(&mut self) -> Option<String> {
        self.file("secret")
    }

    /// Lets the held ranks start MPI.
    fn go(&self) {
        write_file(&self.dir, "go", "").expect("write go");
    }

    /// Waits for o2grun to end (bounded: it has `--timeout`).
    fn finish(mut self) -> Ended {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(JOB_TIMEOUT + 15);
        let status = loop {
            if let Some(st) = child.try_wait().expect("wait for o2grun") {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let text = self.text();
                panic!("o2grun outlived its --timeout {JOB_TIMEOUT}; killed\n{text}");
            }
            thread::sleep(POLL);
        };
        Ended {
            code: status.code(),
            text: self.text(),
        }
    }

    fn text(&mut self) -> String {
        let mut text = String::new();
        for h in [self.out.take(), self.err.take()].into_iter().flatten() {
            text += &String::from_utf8_lossy(&h.join().unwrap_or_default());
        }
        text
    }

    /// Ends the job and fails the test with `why` and o2grun's output.
    fn fail(&mut self, why: &str) -> ! {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        panic!("{why}\n--- o2grun's output ---\n{}", self.text());
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Connects to o2grun's PMI server as a stranger would.
fn stranger(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("connecting to o2grun's PMI server at {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .expect("write timeout");
    s
}

/// The one line o2grun answers `s` with; `None` if it closed the
/// connection (or reset it) instead.
fn reply(s: &TcpStream) -> Option<String> {
    let mut line = String::new();
    match BufReader::new(s).read_line(&mut line) {
        Ok(0) => None,
        Ok(_) => Some(line.trim_end().to_owned()),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => None,
        Err(e) => panic!("waiting for o2grun's answer: {e}"),
    }
}

/// Whether o2grun has closed `s` within `bound`.
fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    let mut buf = [0u8; 256];
    while Instant::now() < deadline {
        s.set_read_timeout(Some(
            POLL.max(deadline.saturating_duration_since(Instant::now())),
        ))
        .expect("read timeout");
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("reading from o2grun: {e}"),
        }
    }
    false
}

fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn open_fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The process o2grun started as `rank`.
fn rank_pid(o2grun: u32, rank: u32) -> Option<u32> {
    let want = format!("PMI_RANK={rank}");
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold anything but ')'.
        let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
        if after.split_whitespace().nth(1) != Some(&o2grun.to_string()) {
            continue;
        }
        let env = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// The sockets `pid` has open (not its descriptors: the PMI client holds
/// its connection twice, to read and to write).
fn sockets(pid: u32) -> usize {
    let mut inodes: Vec<String> = fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| fs::read_link(e.path()).ok())
                .map(|l| l.to_string_lossy().into_owned())
                .filter(|l| l.starts_with("socket:"))
                .collect()
        })
        .unwrap_or_default();
    inodes.sort();
    inodes.dedup();
    inodes.len()
}

// ---------------------------------------------------------------------
// Item 11: strangers on the PMI port.

#[test]
fn invalid_utf8_from_a_stranger_is_ignored() {
    let mut job = Job::start(2, "ring", "all");
    let mut s = stranger(job.pmi_addr());
    s.write_all(b"\xff\xfe\xfd not utf-8 \x80\ncmd=initack pmiid=\xc3\x28\n")
        .expect("send the garbage");
    job.go();
    let ended = job.finish();
    drop(s);
    ended.assert_ran_correctly(2, "invalid UTF-8 from a stranger");
}

#[test]
fn abort_without_initack_is_ignored() {
    let mut job = Job::start(2, "ring", "all");
    let mut s = stranger(job.pmi_addr());
    s.write_all(b"cmd=abort exitcode=9 error_msg=a_stranger_ends_the_job\n")
        .expect("send the abort");
    job.go();
    let ended = job.finish();
    drop(s);
    ended.assert_ran_correctly(2, "cmd=abort without initack");
}

#[test]
fn silent_connection_is_dropped_and_takes_no_rank_slot() {
    let mut job = Job::start(2, "ring", "all");
    let addr = job.pmi_addr();
    let mut first = stranger(addr);
    if !closed_within(&mut first, WAIT) {
        job.fail(&format!(
            "o2grun kept a connection that never sent initack open for {WAIT:?}"
        ));
    }
    // Another one, held for the whole job this time.
    let second = stranger(addr);
    job.go();
    let ended = job.finish();
    drop(second);
    ended.assert_ran_correctly(2, "a silent connection");
}

#[test]
fn connection_flood_is_bounded() {
    // As many as the descriptor limit allows, up to 1000.
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
    let limit = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(s, _)| s);
    let want = 1000.min(limit.saturating_sub(200) as usize);
    assert!(want >= 300, "only {limit} descriptors: too few to flood");

    let mut job = Job::start(2, "ring", "all");
    let addr = job.pmi_addr();
    let pid = job.pid();
    let mut flood = Vec::new();
    let deadline = Instant::now() + WAIT;
    while flood.len() < want && Instant::now() < deadline {
        // Once o2grun's backlog is full, a connection waits for it to
        // accept (the kernel retries the SYN after 1 s, 3 s, ...).
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.max(POLL)) {
            Ok(s) => flood.push(s),
            // Refused: o2grun stopped listening (before its fix, after
            // `np` connections).
            Err(_) => thread::sleep(POLL),
        }
    }
    let fds = open_fds(pid);
    eprintln!(
        "{} connections open, o2grun holds {fds} descriptors",
        flood.len()
    );
    if fds > 200 {
        job.fail(&format!(
            "o2grun holds {fds} descriptors with {} idle connections open",
            flood.len()
        ));
    }
    job.go();
    let ended = job.finish();
    let n = flood.len();
    drop(flood);
    ended.assert_ran_correctly(2, &format!("{n} idle connections"));
}

#[test]
fn forged_initack_and_put_are_refused() {
    let mut job = Job::start(2, "ring", "all");
    let addr = job.pmi_addr();
    let secret = job.secret();
    for forged in [
        "cmd=initack pmiid=1 secret=00000000000000000000000000000000",
        "cmd=initack pmiid=1",
    ] {
        let mut s = stranger(addr);
        s.write_all(format!("{forged}\n").as_bytes())
            .expect("send the initack");
        if let Some(r) = reply(&s) {
            if r.contains("rc=0") {
                job.fail(&format!("o2grun accepted {forged:?}: {r:?}"));
            }
        }
        // The rank's address, as its put would publish it.
        let _ = s.write_all(b"cmd=put kvsname=x key=o2g-addr-1 value=127.0.0.1:9\n");
        if let Some(r) = reply(&s) {
            if r.contains("put_result") {
                job.fail(&format!("o2grun took a put after {forged:?}: {r:?}"));
            }
        }
    }
    let lower_hex =
        |s: &str| s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !secret.as_deref().is_some_and(lower_hex) {
        job.fail(&format!(
            "ranks got O2G_JOB_SECRET={secret:?}, not 32 lowercase hex digits"
        ));
    }
    job.go();
    job.finish()
        .assert_ran_correctly(2, "forged initacks followed by puts");
}

#[test]
fn second_initack_for_a_connected_rank_is_refused() {
    // Rank 0 connects and waits in MPI_Init for rank 1, which is held.
    let mut job = Job::start(2, "ring", "1");
    let addr = job.pmi_addr();
    // Known to the attacker here: the worst case.
    let secret = job.secret();
    let o2grun = job.pid();
    let deadline = Instant::now() + WAIT;
    // Rank 0 opens a socket besides its PMI connection (its MPI listener)
    // only after its initack was answered.
    while rank_pid(o2grun, 0).is_none_or(|p| sockets(p) < 2) {
        if Instant::now() > deadline {
            job.fail("rank 0 did not get past its PMI handshake");
        }
        thread::sleep(POLL);
    }
    let mut s = stranger(addr);
    let line = match &secret {
        Some(secret) => format!("cmd=initack pmiid=0 secret={secret}\n"),
        None => "cmd=initack pmiid=0\n".to_owned(),
    };
    s.write_all(line.as_bytes()).expect("send the initack");
    match reply(&s) {
        Some(r) if r.contains("rc=0") => job.fail(&format!(
            "o2grun accepted a second initack for rank 0: {r:?}"
        )),
        Some(r) if !r.contains("already") => job.fail(&format!(
            "o2grun refused a second initack for rank 0 without saying why: {r:?}"
        )),
        None => job.fail("o2grun closed a second initack for rank 0 without saying why"),
        Some(_) => {}
    }
    job.go();
    job.finish()
        .assert_ran_correctly(2, "a second initack for rank 0");
}

#[test]
fn endless_line_is_cut_off_with_bounded_memory() {
    const TOTAL: usize = 400 << 20;
    const CHUNK: usize = 1 << 20;
    const RSS_LIMIT_KIB: u64 = 100 << 10;
    let mut job = Job::start(2, "ring", "all");
    let pid = job.pid();
    let mut s = stranger(job.pmi_addr());
    let chunk = vec![b'a'; CHUNK];
    let mut sent = 0;
    let mut max_rss = 0;
    let cut = loop {
        if sent >= TOTAL {
            break None;
        }
        match s.write_all(&chunk) {
            Ok(()) => sent += CHUNK,
            Err(e) => break Some(e),
        }
        let rss = proc_status_kib(pid, "VmRSS:").unwrap_or(0);
        max_rss = max_rss.max(rss);
        if rss > RSS_LIMIT_KIB {
            job.fail(&format!(
                "o2grun's resident memory reached {} MiB after {} MiB of one line",
                rss >> 10,
                sent >> 20
            ));
        }
    };
    eprintln!(
        "o2grun cut the line after {} MiB were sent ({cut:?}); its peak RSS {} MiB",
        sent >> 20,
        max_rss >> 10
    );
    match cut {
        Some(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {}
        Some(e) => job.fail(&format!("sending the line failed oddly: {e}")),
        None => job.fail(&format!(
            "o2grun read {} MiB of one line without cutting it off (peak RSS {} MiB)",
            TOTAL >> 20,
            max_rss >> 10
        )),
    }
    job.go();
    job.finish()
        .assert_ran_correctly(2, &format!("a line of {} MiB without newline", sent >> 20));
}

// ---------------------------------------------------------------------
// Item 12: ranks that leave badly.

#[test]
fn rank_exiting_without_finalize_ends_the_job() {
    let start = Instant::now();
    let ended = Job::start(3, "no_finalize", "").finish();
    let ok = ended.code.is_some_and(|c| c != 0 && c != 124)
        && ended.text.contains("rank 1 exited")
        && ended.text.contains("without calling MPI_Finalize");
    assert!(
        ok,
        "rank 1 exited 0 without MPI_Finalize: o2grun should end the job naming it; \
         it exited {:?} after {:.1} s\n{}",
        ended.code,
        start.elapsed().as_secs_f64(),
        ended.text
    );
}

/// What the aborting rank's `MPI_Init` said, and o2grun's report of it.
fn abort_job() -> (String, Ended) {
    let ended = Job::start(3, "abort", "").finish();
    let said = ended
        .text
        .lines()
        .find_map(|l| l.strip_prefix("[2] init failed: "))
        .unwrap_or_else(|| panic!("rank 2 did not fail in MPI_Init\n{}", ended.text))
        .to_owned();
    assert_eq!(
        ended.code,
        Some(1),
        "an abort with code 1 should end o2grun with 1\n{}",
        ended.text
    );
    (said, ended)
}

#[test]
fn abort_message_reaches_o2grun_unchanged() {
    let (said, ended) = abort_job();
    assert!(said.contains('_'), "the test needs an underscore: {said:?}");
    let want = format!("rank 2 called MPI_Abort with code 1: rank 2: {said}");
    assert!(
        ended.text.contains(&format!("{want};")),
        "o2grun should report {want:?}\n{}",
        ended.text
    );
}

#[test]
fn abort_terminates_the_other_ranks_counted_right() {
    let (_, ended) = abort_job();
    assert!(
        ended.text.contains("terminating 2 other rank(s)"),
        "rank 2 of 3 aborted: 2 others to terminate\n{}",
        ended.text
    );
}
