//! `o2g-vmtest tlb-keeper CPU MS`: wakes on one CPU every MS
//! milliseconds, forever, so that the benchmarks' guests switch address
//! spaces now and then even while a rank computes alone on that CPU.
//!
//! Why: QEMU's TCG keeps a software TLB per vCPU and resizes it only when
//! the guest flushes it, which an x86 guest does when it switches to
//! another process's page tables. A rank that sleeps on an otherwise idle
//! vCPU and wakes there switches to no other address space (the idle task
//! borrows the last one), so its TLB can stay at the size it shrank to
//! while the rank waited. IS's bucket phase then writes 1024 streams, one
//! per bucket, through a TLB of a few hundred entries: without any MPI
//! call, that phase took 0.42 s per iteration in fast runs and 1.9-2.2 s
//! in slow ones, on one rank at a time, and class B runs fell into a fast
//! group (~48 Mop/s) and a slow one (~20) at random, for every MPI
//! library. A switch to this process every 50 ms gives the TLB the flush
//! it needs to grow; no real machine has this problem.

use std::time::Duration;

use crate::harness::pin_to_cpu;

/// Pins this process to `cpu` and sleeps `ms` at a time, forever.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let usage = "tlb-keeper needs CPU MS";
    let cpu: usize = (args.first().and_then(|s| s.parse().ok()))
        .filter(|&c| c < libc::CPU_SETSIZE as usize)
        .ok_or(usage)?;
    let ms: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .filter(|&m| m > 0)
        .ok_or(usage)?;
    pin_to_cpu(cpu).map_err(|e| format!("tlb-keeper: {e}"))?;
    loop {
        std::thread::sleep(Duration::from_millis(ms));
    }
}
