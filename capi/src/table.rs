//! A concurrent handle table: the home of every kind of object that is
//! plain data (datatypes, groups, keyvals, info objects, error handlers,
//! operations, ...), ready for `MPI_THREAD_MULTIPLE` from the start.
//!
//! Objects are `Arc`s behind one `RwLock` per table: a lookup clones the
//! `Arc` and drops the lock at once, so no lock is ever held while
//! control is in the `mpi` crate or in user code (a user callback may
//! call MPI again). A lock poisoned by a panic elsewhere is taken over:
//! the tables hold no invariant a half-done insert could break.
//!
//! Handle values come from one process-wide counter
//! ([`fresh_handle`]), shared with the thread-local tables of
//! `handles.rs` (communicators and requests, whose `mpi` crate objects
//! are bound to their thread), so no two objects ever share a value.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use foldhash::{HashMap, HashMapExt};

use crate::handles::{handle, value, Handle, FIRST_DYNAMIC};

/// Handle values go up in steps of 16, so a value never looks like a
/// small predefined one or a misaligned pointer.
const STEP: usize = 16;

static NEXT: AtomicUsize = AtomicUsize::new(FIRST_DYNAMIC);

/// A value no object has had before in this process.
pub(crate) fn fresh_handle() -> usize {
    NEXT.fetch_add(STEP, Ordering::Relaxed)
}

/// Objects of one kind by handle value.
pub(crate) struct Table<T> {
    map: RwLock<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Table<T> {
    /// An empty table, usable in a `static`.
    pub(crate) const fn new() -> Self {
        Self {
            map: RwLock::new(None),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Option<HashMap<usize, Arc<T>>>> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Option<HashMap<usize, Arc<T>>>> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Files `obj` under a fresh handle and returns the handle.
    pub(crate) fn insert(&self, obj: T) -> Handle {
        let v = fresh_handle();
        self.write()
            .get_or_insert_with(HashMap::new)
            .insert(v, Arc::new(obj));
        handle(v)
    }

    /// The object behind `h`, if there is one.
    pub(crate) fn get(&self, h: Handle) -> Option<Arc<T>> {
        self.read().as_ref()?.get(&value(h)).cloned()
    }

    /// Replaces the object behind `h` (for objects that change by
    /// replacement, such as a datatype being committed); `false` if `h`
    /// names none.
    pub(crate) fn replace(&self, h: Handle, obj: T) -> bool {
        let mut w = self.write();
        match w.as_mut().and_then(|m| m.get_mut(&value(h))) {
            Some(slot) => {
                *slot = Arc::new(obj);
                true
            }
            None => false,
        }
    }

    /// Takes the object behind `h` out of the table. Users that still
    /// hold its `Arc` (an operation in progress) keep it alive, as MPI
    /// asks of freed objects still in use.
    pub(crate) fn remove(&self, h: Handle) -> Option<Arc<T>> {
        self.write().as_mut()?.remove(&value(h))
    }

    /// How many objects the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.read().as_ref().map_or(0, HashMap::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_distinct_and_objects_come_back() {
        static T: Table<u32> = Table::new();
        let a = T.insert(1);
        let b = T.insert(2);
        assert_ne!(value(a), value(b));
        assert!(value(a) >= FIRST_DYNAMIC && value(a) % STEP == 0);
        assert_eq!(*T.get(b).unwrap(), 2);
        assert!(T.replace(a, 3));
        assert_eq!(*T.get(a).unwrap(), 3);
        let held = T.get(a).unwrap();
        assert_eq!(*T.remove(a).unwrap(), 3);
        assert!(T.get(a).is_none() && T.remove(a).is_none() && !T.replace(a, 4));
        assert_eq!(*held, 3, "a removed object lives on while in use");
        assert_eq!(T.len(), 1);
    }

    #[test]
    fn concurrent_inserts_never_share_a_handle() {
        static T: Table<usize> = Table::new();
        let hs: Vec<Vec<usize>> = std::thread::scope(|s| {
            let ts: Vec<_> = (0..4)
                .map(|i| s.spawn(move || (0..500).map(|j| value(T.insert(i * 1000 + j))).collect()))
                .collect();
            ts.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut all: Vec<usize> = hs.into_iter().flatten().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 2000);
        assert_eq!(T.len(), 2000);
    }
}
