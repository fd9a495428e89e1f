//! Large byte buffers kept for reuse: copies of sends the socket did not
//! take, payloads of receives the library completes by copying.
//!
//! glibc serves an allocation over its mmap threshold (128 KiB, rising to
//! at most 32 MiB) with fresh pages and gives them back when it is freed,
//! so a stream of 1 MiB messages faulted in and zeroed every page of every
//! copy: a third of the CPU time of a windowed bandwidth run over
//! `sockets-epoll` went to page faults and `clear_page`. Reusing the
//! buffers makes the pages stay. Small buffers are left to malloc, which
//! recycles them well; the pool holds at most [`KEEP_BYTES`].
//!
//! The pool is per thread: the library's handles are `!Send`, so one
//! thread does all its sends and receives.

use std::cell::RefCell;

/// Buffers smaller than this go back to malloc.
const SMALLEST: usize = 64 << 10;
/// The most bytes of capacity the pool keeps.
const KEEP_BYTES: usize = 64 << 20;
/// The most buffers the pool keeps (each search is linear).
const KEEP_BUFFERS: usize = 64;

#[derive(Default)]
struct Pool {
    free: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// An empty vector with room for at least `len` bytes: the smallest kept
/// buffer that fits, or a new one.
pub(crate) fn take(len: usize) -> Vec<u8> {
    let mut buf = reuse(len);
    buf.clear();
    buf
}

/// A vector of exactly `len` bytes, for a writer that fills it through a
/// pointer (the kernel module). Only bytes past what a kept buffer held
/// before are zeroed.
pub(crate) fn take_sized(len: usize) -> Vec<u8> {
    let mut buf = reuse(len);
    if buf.len() >= len {
        buf.truncate(len);
    } else {
        buf.resize(len, 0);
    }
    buf
}

/// The smallest kept buffer that holds `len` bytes (contents as they were
/// given back), or a new empty one.
fn reuse(len: usize) -> Vec<u8> {
    if len >= SMALLEST {
        let found = POOL.with_borrow_mut(|p| {
            let best = p
                .free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= len)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i)?;
            let buf = p.free.swap_remove(best);
            p.bytes -= buf.capacity();
            Some(buf)
        });
        if let Some(buf) = found {
            return buf;
        }
    }
    Vec::with_capacity(len)
}

/// A copy of `data` in a buffer from [`take`].
pub(crate) fn copy_of(data: &[u8]) -> Vec<u8> {
    let mut buf = take(data.len());
    buf.extend_from_slice(data);
    buf
}

/// Gives `buf` back for reuse; it is freed if small or if the pool is
/// full (then the smallest kept buffer makes room for a larger one).
pub(crate) fn give(buf: Vec<u8>) {
    let cap = buf.capacity();
    if !(SMALLEST..=KEEP_BYTES).contains(&cap) {
        return;
    }
    POOL.with_borrow_mut(|p| {
        while p.bytes + cap > KEEP_BYTES || p.free.len() >= KEEP_BUFFERS {
            let Some(smallest) = p
                .free
                .iter()
                .enumerate()
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i)
            else {
                break;
            };
            if p.free[smallest].capacity() >= cap {
                // Everything kept is at least as useful: drop `buf`.
                return;
            }
            p.bytes -= p.free.swap_remove(smallest).capacity();
        }
        p.bytes += cap;
        p.free.push(buf);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> (usize, usize) {
        POOL.with_borrow(|p| (p.free.len(), p.bytes))
    }

    #[test]
    fn a_given_buffer_comes_back_for_a_request_it_fits() {
        let a = take(1 << 20);
        let ptr = a.as_ptr();
        give(a);
        assert_eq!(kept(), (1, 1 << 20));
        let b = take(256 << 10);
        assert_eq!(b.as_ptr(), ptr, "the kept buffer is reused");
        assert!(b.is_empty());
        assert_eq!(kept(), (0, 0));
        // Too small for the next request: a new buffer.
        give(b);
        assert!(take(2 << 20).capacity() >= 2 << 20);
        assert_eq!(kept().0, 1);
    }

    #[test]
    fn small_and_huge_buffers_are_not_kept_and_the_pool_is_bounded() {
        give(Vec::with_capacity(1024));
        give(Vec::with_capacity(KEEP_BYTES + 1));
        assert_eq!(kept(), (0, 0));
        for _ in 0..10 {
            give(Vec::with_capacity(16 << 20));
        }
        let (n, bytes) = kept();
        assert!(
            bytes <= KEEP_BYTES && n == KEEP_BYTES / (16 << 20),
            "{n} {bytes}"
        );
        // A smaller buffer does not displace larger ones.
        give(Vec::with_capacity(1 << 20));
        assert_eq!(kept(), (n, bytes));
        let data = [7u8; 100 << 10];
        assert_eq!(copy_of(&data), data);
        // A sized buffer keeps what it held and zeroes only the rest.
        let mut b = take_sized(256 << 10);
        b[0] = 9;
        give(b);
        let b = take_sized(300 << 10);
        assert_eq!(b.len(), 300 << 10);
        assert!(b[(256 << 10)..].iter().all(|&x| x == 0));
    }
}
