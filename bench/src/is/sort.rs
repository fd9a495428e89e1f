//! The IS ranking iteration, the timed loop and the full verification,
//! following NPB 3.4's MPI version step for step (bucket counts, their
//! allreduce, the bucket-to-process split, alltoall of counts, alltoallv
//! of keys, local ranking, partial verification of five keys).

use mpi::communicator::Communicator;
use mpi::SystemOperation;

use super::class::{Class, ITERATIONS, TEST_KEYS};
use super::hot;
use super::keys::keys_for;

/// The most buckets of any class (a power of two, so that a bucket index
/// can be masked to it: see [`hot::count_per_bucket`]).
pub const MAX_BUCKETS: usize = 1024;

/// What a run measured and checked, as rank 0 sees it.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// Slowest rank's time for the timed iterations, in seconds.
    pub seconds: f64,
    /// Partial checks that passed plus ranks whose full check passed.
    pub passed: i32,
    /// What `passed` must be for a successful run.
    pub required: i32,
}

impl Report {
    /// Whether every check passed.
    pub fn verified(&self) -> bool {
        self.passed == self.required
    }
}

/// One rank's state of an IS run on a communicator of a power-of-two size.
pub struct IntegerSort<'c> {
    comm: &'c Communicator,
    class: Class,
    rank: usize,
    ranks: usize,
    /// This rank's share of the keys.
    keys: Vec<i32>,
    /// Keys grouped by bucket, ready to send.
    by_bucket: Vec<i32>,
    /// Keys received: those of this rank's buckets from every rank.
    received: Vec<i32>,
    /// Per-key-value counts, then cumulative counts (ranks), over this
    /// rank's key range.
    counts: Vec<i32>,
    /// After the last iteration: smallest key of this rank's range and
    /// number of keys received, for the full verification.
    last: (i32, usize),
}

/// A collective or point-to-point call failed.
pub type Result<T> = mpi::Result<T>;

impl<'c> IntegerSort<'c> {
    /// Generates this rank's keys. `comm`'s size must be a power of two
    /// dividing the class's key count.
    pub fn new(comm: &'c Communicator, class: Class) -> Self {
        let (rank, ranks) = (comm.rank() as usize, comm.size() as usize);
        let keys = keys_for(rank, ranks, class.total_keys(), class.max_key());
        // NPB's buffer size: the split of buckets is uneven, so a rank may
        // receive more than its share.
        let room = 3 * keys.len() / 2 + 64;
        Self {
            comm,
            class,
            rank,
            ranks,
            keys,
            by_bucket: vec![0; room],
            received: vec![0; room],
            counts: vec![0; class.max_key() as usize + 1],
            last: (0, 0),
        }
    }

    /// Ranks the keys once; returns how many of the five test keys this
    /// rank checked and found at their expected rank.
    pub fn rank_keys(&mut self, iteration: i32) -> Result<i32> {
        let class = self.class;
        let buckets = class.buckets();
        let (_, key_log, bucket_log) = class.logs();
        let shift = key_log - bucket_log;
        let per_rank = self.keys.len();

        // Each iteration plants two keys whose ranks it knows.
        if self.rank == 0 {
            self.keys[iteration as usize] = iteration;
            self.keys[(iteration + ITERATIONS) as usize] = class.max_key() - iteration;
        }

        // The two passes over every key: count them per bucket, then
        // group them by bucket.
        assert!(buckets <= MAX_BUCKETS);
        let mut count = [0i32; MAX_BUCKETS];
        hot::count_per_bucket(&self.keys, shift, &mut count);
        let mut next = [0usize; MAX_BUCKETS];
        for b in 1..buckets {
            next[b] = next[b - 1] + count[b - 1] as usize;
        }
        hot::group_by_bucket(
            &self.keys,
            shift,
            &mut next,
            &mut self.by_bucket[..per_rank],
        );
        // Bucket counts, with the test keys' values hidden behind them so
        // the same allreduce tells every rank what they are.
        let mut sizes = vec![0i32; buckets + TEST_KEYS];
        sizes[..buckets].copy_from_slice(&count[..buckets]);
        for (i, &index) in class.test_index().iter().enumerate() {
            if index / per_rank == self.rank {
                sizes[buckets + i] = self.keys[index % per_rank];
            }
        }
        let mut totals = vec![0i32; buckets + TEST_KEYS];
        self.comm
            .all_reduce_into(&sizes, &mut totals, &SystemOperation::Sum)?;

        // Split the buckets among the ranks: rank j takes buckets until
        // the running total passes (j + 1) shares.
        let ranks = self.ranks;
        let mut send_counts = vec![0usize; ranks];
        let mut send_displs = vec![0usize; ranks];
        let mut first = vec![1usize; ranks];
        let mut last = vec![0usize; ranks];
        let (mut global, mut local, mut j) = (0usize, 0usize, 0usize);
        first[0] = 0;
        for b in 0..buckets {
            global += totals[b] as usize;
            local += sizes[b] as usize;
            if j < ranks && global >= (j + 1) * per_rank {
                send_counts[j] = local;
                if j > 0 {
                    send_displs[j] = send_displs[j - 1] + send_counts[j - 1];
                    first[j] = last[j - 1] + 1;
                }
                last[j] = b;
                j += 1;
                local = 0;
            }
        }

        let counts_out: Vec<i32> = send_counts.iter().map(|&c| c as i32).collect();
        let mut counts_in = vec![0i32; ranks];
        self.comm.all_to_all_into(&counts_out, &mut counts_in)?;
        let recv_counts: Vec<usize> = counts_in.iter().map(|&c| c as usize).collect();
        let mut recv_displs = vec![0usize; ranks];
        for r in 1..ranks {
            recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
        }
        let incoming: usize = recv_counts.iter().sum();
        if incoming > self.received.len() {
            self.received.resize(incoming, 0);
        }
        self.comm.all_to_all_varcount_into(
            &self.by_bucket,
            &send_counts,
            &send_displs,
            &mut self.received,
            &recv_counts,
            &recv_displs,
        )?;

        // Rank the received keys by counting each value over this rank's
        // key range.
        let me = self.rank;
        let min_key = (first[me] << shift) as i32;
        let max_key = (((last[me] + 1) << shift) - 1) as i32;
        let lesser: i64 = (0..me)
            .flat_map(|r| first[r]..=last[r])
            .map(|b| i64::from(totals[b]))
            .sum();
        let mine: usize = (first[me]..=last[me]).map(|b| totals[b] as usize).sum();
        let span = (max_key - min_key + 1).max(0) as usize;
        let counts = &mut self.counts[..span];
        counts.fill(0);
        hot::count_values(&self.received[..mine], min_key, counts);
        hot::running_sum(counts);

        let mut passed = 0;
        for i in 0..TEST_KEYS {
            let k = totals[buckets + i];
            if (min_key..=max_key).contains(&k) {
                // Keys below k on this rank, plus all keys of lower ranks.
                let below = if k > min_key {
                    i64::from(counts[(k - 1 - min_key) as usize])
                } else {
                    0
                };
                let rank = below + lesser;
                let want = class.expected_rank(i, iteration);
                if rank == want {
                    passed += 1;
                } else {
                    eprintln!(
                        "IS: partial verification failed: iteration {iteration}, rank {me}, test key {i}: rank {rank}, want {want}"
                    );
                }
            }
        }
        self.last = (min_key, mine);
        Ok(passed)
    }

    /// Sorts this rank's keys with the last ranking and checks the global
    /// order against the neighbour ranks; 1 if this rank's part is sorted.
    pub fn full_verify(&mut self) -> Result<i32> {
        let (min_key, mine) = self.last;
        let mut sorted = vec![0i32; mine];
        for &k in &self.received[..mine] {
            let slot = &mut self.counts[(k - min_key) as usize];
            *slot -= 1;
            sorted[*slot as usize] = k;
        }
        let (me, ranks) = (self.rank as i32, self.ranks as i32);
        let mut from_left = [0i32];
        {
            let req = if me > 0 {
                Some(self.comm.irecv(&mut from_left, me - 1, 1000)?)
            } else {
                None
            };
            if me < ranks - 1 {
                let top = sorted.last().copied().unwrap_or(0);
                self.comm.send(&[top], me + 1, 1000)?;
            }
            if let Some(r) = req {
                r.wait()?;
            }
        }
        let mut disorder = sorted.windows(2).filter(|w| w[0] > w[1]).count();
        if me > 0 && !sorted.is_empty() && from_left[0] > sorted[0] {
            disorder += 1;
        }
        if disorder != 0 {
            eprintln!("IS: rank {me}: {disorder} keys out of order");
        }
        Ok(i32::from(disorder == 0))
    }

    /// The whole benchmark: one untimed iteration, [`ITERATIONS`] timed
    /// ones, the full verification; the report is meaningful on rank 0.
    pub fn run(&mut self, mut progress: impl FnMut(i32)) -> Result<Report> {
        self.rank_keys(1)?;
        self.comm.barrier()?;
        let mut passed = 0;
        let start = mpi::time();
        for it in 1..=ITERATIONS {
            progress(it);
            passed += self.rank_keys(it)?;
        }
        let elapsed = mpi::time() - start;
        let mut slowest = [0.0f64];
        self.comm
            .reduce_into(&[elapsed], Some(&mut slowest), &SystemOperation::Max, 0)?;
        passed += self.full_verify()?;
        let mut total = [0i32];
        self.comm
            .reduce_into(&[passed], Some(&mut total), &SystemOperation::Sum, 0)?;
        Ok(Report {
            seconds: slowest[0],
            passed: total[0],
            required: TEST_KEYS as i32 * ITERATIONS + self.ranks as i32,
        })
    }
}
