//! [`Runtime`]: the PB task model on one node.
//!
//! A program is a set of *tasks*, each a handler registered under a kind
//! ([`TaskId`]). Nodes do not call each other: a node asks another to run
//! a task by PB-ing the task id into that node's FIFO, and every node runs
//! an *EXT loop*: take the next id from its own FIFO, run its handler,
//! repeat. Handlers may PB further tasks (to any node, itself included).
//!
//! # The barrier made of PB tasks
//!
//! [`Runtime::barrier`] is built from two reserved tasks, the shape of the
//! HYPHEN paper's barrier (its figure 4), with logical node 0 as master:
//!
//! ```text
//!  worker k                          master (logical 0)
//!  PB(0, ARRIVE(e))  ------------->  counts ARRIVE(e) in its EXT loop
//!  EXT loop, running any             (its own arrival counts too)
//!  task that comes, until            when all n have arrived:
//!  RELEASE(e) is seen  <-----------  PB(k, RELEASE(e)) for every k != 0
//! ```
//!
//! `e` is the barrier's epoch parity: an ARRIVE of the next barrier can
//! reach the master only after it released this one (the worker needed
//! RELEASE(e) first), so two counters suffice. Tasks that arrive while a
//! node waits in the barrier run as they come, as on the board.

use std::collections::HashMap;
use std::time::Instant;

use crate::board::Node;
use crate::error::{Error, Result};
use crate::fifo::Overflow;
use crate::task::{TaskId, BARRIER_ARRIVE, BARRIER_RELEASE, STOP};

/// A task handler: gets the node's context and the task's argument.
pub type Handler<S> = fn(&mut TaskCtx<'_, S>, u16) -> Result<()>;

/// What a running handler can reach.
pub struct TaskCtx<'a, S> {
    /// The program's per-node state.
    pub state: &'a mut S,
    node: &'a Node,
}

impl<S> TaskCtx<'_, S> {
    /// This node (for DSM commands and more).
    pub fn node(&self) -> &Node {
        self.node
    }

    /// PB `task` to logical node `logical`, waiting while its FIFO is full.
    ///
    /// # Errors
    ///
    /// As [`Node::pb`].
    pub fn pb(&self, logical: u32, task: TaskId) -> Result<()> {
        self.node.pb(logical, task.0, Overflow::Wait)
    }
}

/// The PB task runtime of one node: handlers, the EXT loop, the barrier.
pub struct Runtime<S> {
    node: Node,
    handlers: HashMap<u16, Handler<S>>,
    state: S,
    arrivals: [u32; 2],
    released: [bool; 2],
    epoch: u32,
    stopped: bool,
    executed: u64,
}

impl<S> Runtime<S> {
    /// A runtime on `node` with the program state `state` and no handlers.
    pub fn new(node: Node, state: S) -> Self {
        Self {
            node,
            handlers: HashMap::new(),
            state,
            arrivals: [0; 2],
            released: [false; 2],
            epoch: 0,
            stopped: false,
            executed: 0,
        }
    }

    /// Registers `handler` for tasks of `kind`.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] for a reserved kind.
    pub fn register(&mut self, kind: u16, handler: Handler<S>) -> Result<()> {
        if TaskId::new(kind, 0).is_reserved() {
            return Err(Error::BadConfig(format!("task kind {kind:#x} is reserved")));
        }
        self.handlers.insert(kind, handler);
        Ok(())
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The program state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The program state, mutably.
    pub fn state_mut(&mut self) -> &mut S {
        &mut self.state
    }

    /// Gives the program state back.
    pub fn into_state(self) -> S {
        self.state
    }

    /// Tasks run so far (runtime tasks included).
    pub fn executed(&self) -> u64 {
        self.executed
    }

    /// PB `task` to logical node `logical`. While the target FIFO is full
    /// this node keeps running its own tasks, so two nodes flooding each
    /// other cannot deadlock; the wait is bounded by the node's timeout.
    ///
    /// # Errors
    ///
    /// As [`Node::pb`]; [`Error::Timeout`] if the FIFO stays full; what a
    /// task run meanwhile returns.
    pub fn pb(&mut self, logical: u32, task: TaskId) -> Result<()> {
        let start = Instant::now();
        loop {
            match self.node.pb(logical, task.0, Overflow::Error) {
                Err(Error::FifoFull(physical)) => {
                    if self.try_step()?.is_none() {
                        if start.elapsed() >= self.node.policy().timeout {
                            return Err(Error::Timeout {
                                what: format!("a free slot in node {physical}'s EXT FIFO"),
                                after: start.elapsed(),
                            });
                        }
                        std::thread::yield_now();
                    }
                }
                other => return other,
            }
        }
    }

    /// EXT one task (waiting as the node's policy says) and runs it.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when no task comes; [`Error::UnknownTask`]; what
    /// the handler returns.
    pub fn step(&mut self) -> Result<TaskId> {
        let id = TaskId(self.node.ext()?);
        self.run(id)?;
        Ok(id)
    }

    /// Runs the next task if one is waiting.
    ///
    /// # Errors
    ///
    /// As [`Runtime::step`], without the timeout.
    pub fn try_step(&mut self) -> Result<Option<TaskId>> {
        match self.node.try_ext()? {
            Some(id) => {
                let id = TaskId(id);
                self.run(id)?;
                Ok(Some(id))
            }
            None => Ok(None),
        }
    }

    /// Runs tasks until `done(state)` holds (checked before each EXT).
    ///
    /// # Errors
    ///
    /// As [`Runtime::step`]: each EXT wait is bounded by the policy.
    pub fn run_until(&mut self, mut done: impl FnMut(&S) -> bool) -> Result<()> {
        while !done(&self.state) {
            self.step()?;
        }
        Ok(())
    }

    /// Runs tasks until a [`TaskId::STOP`] arrives.
    ///
    /// # Errors
    ///
    /// As [`Runtime::step`].
    pub fn run_until_stopped(&mut self) -> Result<()> {
        while !self.stopped {
            self.step()?;
        }
        self.stopped = false;
        Ok(())
    }

    /// PBs [`TaskId::STOP`] to every logical node, this one included.
    ///
    /// # Errors
    ///
    /// As [`Node::pb`].
    pub fn stop_all(&mut self) -> Result<()> {
        for l in 0..self.node.board().config().nodes {
            self.pb(l, TaskId::STOP)?;
        }
        Ok(())
    }

    /// The barrier of PB tasks (see the module documentation): returns
    /// when every node has called it.
    ///
    /// # Errors
    ///
    /// As [`Runtime::step`] and [`Node::pb`].
    pub fn barrier(&mut self) -> Result<()> {
        let parity = (self.epoch & 1) as u16;
        self.epoch = self.epoch.wrapping_add(1);
        let nodes = self.node.board().config().nodes;
        let p = parity as usize;
        if self.node.board().logical_of(self.node.id())? == 0 {
            self.arrivals[p] += 1;
            while self.arrivals[p] < nodes {
                self.step()?;
            }
            self.arrivals[p] = 0;
            for l in 1..nodes {
                self.pb(l, TaskId::new(BARRIER_RELEASE, parity))?;
            }
        } else {
            self.pb(0, TaskId::new(BARRIER_ARRIVE, parity))?;
            while !self.released[p] {
                self.step()?;
            }
            self.released[p] = false;
        }
        Ok(())
    }

    fn run(&mut self, id: TaskId) -> Result<()> {
        self.executed += 1;
        match id.kind() {
            BARRIER_ARRIVE => {
                self.arrivals[usize::from(id.arg() & 1)] += 1;
                Ok(())
            }
            BARRIER_RELEASE => {
                self.released[usize::from(id.arg() & 1)] = true;
                Ok(())
            }
            STOP => {
                self.stopped = true;
                Ok(())
            }
            kind => {
                let handler = *self.handlers.get(&kind).ok_or(Error::UnknownTask(id.0))?;
                let mut ctx = TaskCtx {
                    state: &mut self.state,
                    node: &self.node,
                };
                handler(&mut ctx, id.arg())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;
    use crate::layout::BoardConfig;
    use crate::testutil::scratch_region;
    use crate::wait::WaitPolicy;
    use std::time::Duration;

    const PING: u16 = 1;
    const COUNT: u16 = 2;

    fn ping(ctx: &mut TaskCtx<'_, u32>, from: u16) -> Result<()> {
        *ctx.state += 1;
        ctx.pb(u32::from(from), TaskId::new(COUNT, 0))
    }

    fn count(ctx: &mut TaskCtx<'_, u32>, _: u16) -> Result<()> {
        *ctx.state += 1;
        Ok(())
    }

    #[test]
    fn tasks_run_where_they_are_pushed_and_barriers_hold_everyone() {
        let nodes = 4;
        let cfg = BoardConfig {
            nodes,
            ..BoardConfig::default()
        };
        let region = scratch_region("runtime", Board::required_len(&cfg).unwrap());
        let board = Board::create(region, cfg).unwrap();
        // Logical 0 (the barrier's master) is physical node 2.
        board.set_logical(0, 2).unwrap();
        board.set_logical(2, 0).unwrap();
        let threads: Vec<_> = (0..nodes)
            .map(|me| {
                let board = board.clone();
                std::thread::spawn(move || {
                    let policy = if me % 2 == 0 {
                        WaitPolicy::blocking(Duration::from_secs(20))
                    } else {
                        WaitPolicy::polling(Duration::from_secs(20))
                    };
                    let mut rt = Runtime::new(board.node(me, policy).unwrap(), 0u32);
                    rt.register(PING, ping).unwrap();
                    rt.register(COUNT, count).unwrap();
                    assert!(rt.register(0xff00, count).is_err());
                    let my_logical = board.logical_of(me).unwrap();
                    for round in 0..20u32 {
                        // Everyone pings everyone else; each ping is
                        // answered with a COUNT.
                        for l in (0..nodes).filter(|&l| l != my_logical) {
                            rt.pb(l, TaskId::new(PING, my_logical as u16)).unwrap();
                        }
                        let want = (round + 1) * 2 * (nodes - 1);
                        rt.run_until(|s| *s == want).unwrap();
                        rt.barrier().unwrap();
                        assert_eq!(*rt.state(), want, "no task of the next round yet");
                        rt.barrier().unwrap();
                    }
                    rt.into_state()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), 20 * 2 * (nodes - 1));
        }
    }

    #[test]
    fn unknown_tasks_and_stop() {
        let cfg = BoardConfig::default();
        let region = scratch_region("runtime-stop", Board::required_len(&cfg).unwrap());
        let board = Board::create(region, cfg).unwrap();
        let node = board
            .node(0, WaitPolicy::polling(Duration::from_millis(50)))
            .unwrap();
        let mut rt = Runtime::new(node, 0u32);
        rt.pb(0, TaskId::new(7, 1)).unwrap();
        assert!(matches!(rt.step(), Err(Error::UnknownTask(0x0007_0001))));
        rt.stop_all().unwrap();
        rt.run_until_stopped().unwrap();
        assert_eq!(rt.try_step().unwrap(), None);
        // The other node's STOP is still queued there.
        assert_eq!(
            board
                .node(1, WaitPolicy::default())
                .unwrap()
                .try_ext()
                .unwrap(),
            Some(TaskId::STOP.0)
        );
        assert!(matches!(rt.step(), Err(Error::Timeout { .. })));
    }
}
