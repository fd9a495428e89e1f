//! The PMI server: the job's key-value space and barrier, and a thread
//! per rank serving that rank's connection in PMI-1 (`pmi1.rs`) or PMI-2
//! (`pmi2.rs`).
//!
//! Speaks the `PMI_PORT` dialect of hydra: the client opens with
//! `cmd=initack pmiid=<rank> secret=<job secret>`, whichever version it
//! speaks next, and is told its size and rank. Which connections get that
//! far is the gate's decision (`gate.rs`): from then on a connection is
//! its rank's, only one connection holds a rank, and what it says counts
//! as the rank's own. Its next message picks the version: a PMI-1 line
//! `cmd=init pmi_version=1` (or any PMI-1 command) keeps to PMI-1; `cmd=init
//! pmi_version=2`, answered in PMI-1 as MPICH's, hydra's and Slurm's PMI-2
//! clients and servers do, or a PMI-2 frame straight away (told by its
//! length field) switches to PMI-2 for the rest of the connection. Ranks
//! of one job may speak different versions: both share one key-value space
//! and one barrier (`barrier_in` and `kvs-fence` are the same wait).
//! `o2grun --pmi N` serves only version N and refuses the other with an
//! error the client reports.
//!
//! A rank that breaks the protocol (an overlong or non-UTF-8 message, a
//! malformed `put`, a second barrier entry, a version the job does not
//! serve) or calls `abort` is reported to the supervisor, which ends the
//! job naming it.
//!
//! Lock order: one mutex, [`Server`]'s state, never held across I/O (a
//! barrier waits on the condition variable, which releases it).

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::Range;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use crate::gate;
use crate::pmi1;
use crate::pmi2;
use crate::secret::Secret;
use crate::wire2;

/// Most bytes of keys and values the key-value space holds: far above
/// what the transports publish (an address per rank), a bound on what a
/// broken rank can make o2grun keep.
const MAX_KVS_BYTES: usize = 16 << 20;

/// What a rank told the server that the supervisor must act on.
#[derive(Debug)]
pub(crate) enum Event {
    /// `cmd=abort` from a rank.
    Abort { rank: u32, code: i32, msg: String },
    /// A rank broke the protocol, or a remote rank went away.
    Protocol { rank: u32, msg: String },
    /// A rank on another machine finalized: the server may go away once
    /// every remote rank has.
    RemoteFinalized,
}

/// Where a rank stands with the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conn {
    /// No connection has been admitted for it.
    Waiting,
    /// Its connection is being served.
    Serving,
    /// It sent `finalize` (and was answered).
    Finalized,
    /// Its connection ended without `finalize`.
    Gone,
}

/// The barrier, counted per rank.
#[derive(Debug)]
struct Barrier {
    /// Ranks in the current generation's barrier.
    entered: Vec<bool>,
    count: usize,
    /// Bumped each time every rank has entered.
    generation: u64,
}

/// What entering the barrier did.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// This rank was the last: everyone goes on.
    Released,
    /// Wait until the generation moves past this one.
    Wait(u64),
}

impl Barrier {
    fn new(np: u32) -> Self {
        Self {
            entered: vec![false; np as usize],
            count: 0,
            generation: 0,
        }
    }

    fn enter(&mut self, rank: u32) -> Result<Entry, String> {
        let slot = &mut self.entered[rank as usize];
        if *slot {
            return Err("entered the PMI barrier twice".into());
        }
        *slot = true;
        self.count += 1;
        if self.count < self.entered.len() {
            return Ok(Entry::Wait(self.generation));
        }
        self.entered.fill(false);
        self.count = 0;
        self.generation += 1;
        Ok(Entry::Released)
    }
}

#[derive(Debug)]
struct State {
    kvs: HashMap<String, String>,
    kvs_bytes: usize,
    conns: Vec<Conn>,
    barrier: Barrier,
}

/// The PMI server of one job.
pub(crate) struct Server {
    np: u32,
    /// Ranks the serving o2grun supervises; the others run elsewhere.
    local: Range<u32>,
    secret: Option<Secret>,
    /// The one PMI version served (`o2grun --pmi`); `None`: both.
    version: Option<u8>,
    kvsname: String,
    state: Mutex<State>,
    cond: Condvar,
    events: Sender<Event>,
}

impl Server {
    /// Serves PMI on `listener` for `np` ranks, of which those outside
    /// `local` run on other machines; admits only connections that present
    /// `secret` (any, without one), and serves PMI `version` only, if
    /// given. Returns at once: the gate and the ranks' connections run on
    /// threads of their own.
    pub(crate) fn start(
        listener: TcpListener,
        np: u32,
        local: Range<u32>,
        secret: Option<Secret>,
        version: Option<u8>,
        events: Sender<Event>,
    ) -> Arc<Self> {
        let server = Self::new(np, local, secret, version, events);
        let s = server.clone();
        thread::spawn(move || gate::run(listener, &s));
        server
    }

    /// The server's state, before anything is served.
    fn new(
        np: u32,
        local: Range<u32>,
        secret: Option<Secret>,
        version: Option<u8>,
        events: Sender<Event>,
    ) -> Arc<Self> {
        Arc::new(Self {
            np,
            local,
            secret,
            version,
            kvsname: format!("o2grun_{}", std::process::id()),
            state: Mutex::new(State {
                kvs: HashMap::new(),
                kvs_bytes: 0,
                conns: vec![Conn::Waiting; np as usize],
                barrier: Barrier::new(np),
            }),
            cond: Condvar::new(),
            events,
        })
    }

    pub(crate) fn np(&self) -> u32 {
        self.np
    }

    pub(crate) fn secret(&self) -> Option<&Secret> {
        self.secret.as_ref()
    }

    /// The job's key-value space's name (PMI-2's job id).
    pub(crate) fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Whether PMI `version` is served.
    pub(crate) fn serves(&self, version: u8) -> bool {
        self.version.is_none_or(|v| v == version)
    }

    /// What is served, for a client refused.
    pub(crate) fn served(&self) -> String {
        match self.version {
            Some(v) => format!("PMI-{v} only (o2grun --pmi {v})"),
            None => "PMI-1 and PMI-2".into(),
        }
    }

    /// PMI-2's `PMI_process_mapping` job attribute: every rank on this
    /// machine, as MPICH writes it; unknown for a job split across
    /// o2gruns, whose other machines' ranks this one does not know.
    pub(crate) fn process_mapping(&self) -> Option<String> {
        (self.local == (0..self.np)).then(|| format!("(vector,(0,1,{}))", self.np))
    }

    /// Whether `rank` connected and then exited (or is exiting) without
    /// `finalize`. A rank that never connected is not an MPI process as
    /// far as the server knows (`o2grun -n 2 hostname`).
    pub(crate) fn left_without_finalize(&self, rank: u32) -> bool {
        matches!(
            self.lock().conns.get(rank as usize),
            Some(Conn::Serving | Conn::Gone)
        )
    }

    /// Whether every rank holds (or held) a connection: then nobody else
    /// needs to connect.
    pub(crate) fn all_claimed(&self) -> bool {
        self.lock().conns.iter().all(|c| *c != Conn::Waiting)
    }

    /// Gives `rank` to a new connection; false if another has it (or had
    /// it: a rank connects once).
    pub(crate) fn claim(&self, rank: u32) -> bool {
        let mut st = self.lock();
        match st.conns.get_mut(rank as usize) {
            Some(c @ Conn::Waiting) => {
                *c = Conn::Serving;
                true
            }
            _ => false,
        }
    }

    /// Serves `rank`'s admitted connection on a thread of its own;
    /// `leftover` holds what the gate read past the `initack` line.
    pub(crate) fn serve(self: &Arc<Self>, rank: u32, stream: TcpStream, leftover: Vec<u8>) {
        let s = self.clone();
        thread::spawn(move || s.serve_rank(rank, stream, leftover));
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn serve_rank(&self, rank: u32, stream: TcpStream, leftover: Vec<u8>) {
        let stop = match self.converse(rank, stream, leftover) {
            Ok(s) | Err(s) => s,
        };
        let remote = !self.local.contains(&rank);
        if !matches!(stop, Stop::Finalized) {
            self.lock().conns[rank as usize] = Conn::Gone;
        }
        let event = match stop {
            Stop::Finalized => remote.then_some(Event::RemoteFinalized),
            // A local rank that leaves without finalizing is its
            // supervisor's business (its exit status decides); a remote
            // one is only seen here.
            Stop::Closed(why) => remote.then(|| Event::Protocol {
                rank,
                msg: format!(
                    "remote rank {rank} closed its PMI connection without finalizing{}",
                    why.map_or(String::new(), |e| format!(" ({e})"))
                ),
            }),
            Stop::Aborted { code, msg } => Some(Event::Abort { rank, code, msg }),
            Stop::Broken(msg) => Some(Event::Protocol { rank, msg }),
        };
        if let Some(e) = event {
            let _ = self.events.send(e);
        }
    }

    /// Answers `rank`'s commands until it finalizes, aborts, breaks the
    /// protocol or goes away.
    fn converse(&self, rank: u32, stream: TcpStream, leftover: Vec<u8>) -> Result<Stop, Stop> {
        let mut out = stream.try_clone()?;
        let mut input = BufReader::new(Cursor::new(leftover).chain(stream));
        // The gate admitted the connection on its initack: answer it.
        out.write_all(
            format!(
                "cmd=initack rc=0\ncmd=set size={}\ncmd=set rank={rank}\ncmd=set debug=0\n",
                self.np
            )
            .as_bytes(),
        )?;
        // The next message's first byte tells PMI-2's frames from lines.
        let first = loop {
            match input.fill_buf() {
                Ok([first, ..]) => break *first,
                Ok([]) => return Ok(Stop::Closed(None)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Ok(Stop::Closed(Some(e))),
            }
        };
        if !wire2::is_frame_start(first) {
            match pmi1::converse(self, rank, &mut input, &mut out)? {
                pmi1::Next::Stop(stop) => return Ok(stop),
                pmi1::Next::Pmi2 => {}
            }
        }
        pmi2::converse(self, rank, &mut input, &mut out)
    }

    /// Records that `rank` finalized. Before the answer: once the rank
    /// has it, it may exit, and its supervisor must see it finalized.
    pub(crate) fn finalized(&self, rank: u32) {
        self.lock().conns[rank as usize] = Conn::Finalized;
    }

    /// The value of `key`, if some rank put it.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.lock().kvs.get(key).cloned()
    }

    /// Stores `key=value`, within the bound on the space.
    pub(crate) fn put(&self, key: &str, value: &str) -> Result<(), Stop> {
        let mut st = self.lock();
        let old = st.kvs.get(key).map_or(0, |v| key.len() + v.len());
        let bytes = st.kvs_bytes - old + key.len() + value.len();
        if bytes > MAX_KVS_BYTES {
            return Err(Stop::Broken(format!(
                "put more than {} MiB into the key-value space",
                MAX_KVS_BYTES >> 20
            )));
        }
        st.kvs_bytes = bytes;
        st.kvs.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// Waits until every rank has entered the barrier.
    pub(crate) fn barrier(&self, rank: u32) -> Result<(), Stop> {
        let mut st = self.lock();
        match st.barrier.enter(rank).map_err(Stop::Broken)? {
            Entry::Released => self.cond.notify_all(),
            Entry::Wait(generation) => {
                // The supervisor ends the whole process if a rank dies,
                // so this wait cannot outlive the job.
                while st.barrier.generation == generation {
                    st = self.cond.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
        Ok(())
    }
}

/// How a rank's conversation ended.
pub(crate) enum Stop {
    Finalized,
    /// The connection ended or failed without `finalize`.
    Closed(Option<io::Error>),
    Aborted {
        code: i32,
        msg: String,
    },
    /// The rank broke the protocol.
    Broken(String),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Closed(Some(e))
    }
}

/// The start of a long line, for a message.
pub(crate) fn shorten(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A server of `np` ranks on this machine, serving `version` (both if
    /// `None`), with nobody listening to its events.
    pub(crate) fn server(np: u32, version: Option<u8>) -> Arc<Server> {
        let (events, _) = std::sync::mpsc::channel();
        Server::new(np, 0..np, None, version, events)
    }

    #[test]
    fn the_barrier_releases_when_every_rank_entered_once() {
        let mut b = Barrier::new(3);
        assert_eq!(b.enter(0), Ok(Entry::Wait(0)));
        assert_eq!(b.enter(2), Ok(Entry::Wait(0)));
        assert_eq!(b.enter(1), Ok(Entry::Released));
        assert_eq!(b.generation, 1);
        // The next generation starts empty.
        assert_eq!(b.enter(1), Ok(Entry::Wait(1)));
    }

    #[test]
    fn a_rank_entering_twice_releases_nobody() {
        let mut b = Barrier::new(2);
        assert_eq!(b.enter(0), Ok(Entry::Wait(0)));
        assert!(b.enter(0).is_err());
        assert_eq!(b.generation, 0);
        assert_eq!(b.count, 1);
        assert_eq!(b.enter(1), Ok(Entry::Released));
    }

    #[test]
    fn long_lines_are_shortened_on_a_character_boundary() {
        assert_eq!(shorten("cmd=put"), "cmd=put");
        let long = "é".repeat(100);
        assert_eq!(shorten(&long), format!("{}...", "é".repeat(80)));
    }
}
