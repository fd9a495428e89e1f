//! Intrusive doubly linked lists threaded through a slice by index.
//!
//! The matching engine keeps every queue as such a list over storage the
//! caller provides: O(1) append and O(1) unlink from the middle (cancel,
//! release), no allocation. An index of [`NIL`] means "none"; storage is
//! never longer than `NIL` entries, so `NIL` is never a valid index and
//! `get(NIL)` is simply `None`.
//!
//! A node can sit on two lists at once through two link pairs ([`Which`]).
//! Every walk is bounded by the slice length, so even a corrupted list
//! cannot loop forever in softirq context.

/// The "no node" index.
pub(super) const NIL: u32 = u32::MAX;

/// Converts a list index to a slice index.
pub(super) const fn at(index: u32) -> usize {
    index as usize
}

/// One pair of links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Links {
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl Links {
    /// Links of a node on no list.
    pub(super) const NONE: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// Which of a node's two link pairs a list uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    /// The hash chain (or the wildcard list, or the free list).
    Chain,
    /// The arrival-order list of unexpected messages.
    Order,
}

/// Something that can sit on lists.
pub(super) trait Node {
    /// The link pair `which`.
    fn links(&self, which: Which) -> Links;
    /// The link pair `which`, to change.
    fn links_mut(&mut self, which: Which) -> &mut Links;
}

/// Head and tail of one list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl List {
    /// An empty list.
    pub(super) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Appends node `index`, which must be on no list of kind `which`.
    pub(super) fn push_back<T: Node>(&mut self, nodes: &mut [T], index: u32, which: Which) {
        let tail = self.tail;
        let Some(node) = nodes.get_mut(at(index)) else {
            return;
        };
        *node.links_mut(which) = Links {
            prev: tail,
            next: NIL,
        };
        match nodes.get_mut(at(tail)) {
            Some(t) => t.links_mut(which).next = index,
            None => self.head = index,
        }
        self.tail = index;
    }

    /// Removes node `index`, which must be on this list.
    pub(super) fn unlink<T: Node>(&mut self, nodes: &mut [T], index: u32, which: Which) {
        let Some(node) = nodes.get_mut(at(index)) else {
            return;
        };
        let links = core::mem::replace(node.links_mut(which), Links::NONE);
        match nodes.get_mut(at(links.prev)) {
            Some(p) => p.links_mut(which).next = links.next,
            None => self.head = links.next,
        }
        match nodes.get_mut(at(links.next)) {
            Some(n) => n.links_mut(which).prev = links.prev,
            None => self.tail = links.prev,
        }
    }

    /// The first node, walking from the head, for which `pred` returns
    /// `Some`; `pred` may also stop the walk early by returning `Err`.
    pub(super) fn find<T: Node, R>(
        &self,
        nodes: &[T],
        which: Which,
        mut pred: impl FnMut(u32, &T) -> Result<Option<R>, ()>,
    ) -> Option<R> {
        let mut index = self.head;
        for _ in 0..nodes.len() {
            let node = nodes.get(at(index))?;
            match pred(index, node) {
                Ok(Some(found)) => return Some(found),
                Ok(None) => index = node.links(which).next,
                Err(()) => return None,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[derive(Clone, Copy)]
    struct N([Links; 2]);

    impl Node for N {
        fn links(&self, which: Which) -> Links {
            self.0[which as usize]
        }
        fn links_mut(&mut self, which: Which) -> &mut Links {
            &mut self.0[which as usize]
        }
    }

    fn collect(list: &List, nodes: &[N], which: Which) -> Vec<u32> {
        let mut out = Vec::new();
        let none: Option<()> = list.find(nodes, which, |i, _| {
            out.push(i);
            Ok(None)
        });
        assert!(none.is_none());
        out
    }

    #[test]
    fn push_unlink_on_two_lists() {
        let mut nodes = [N([Links::NONE; 2]); 5];
        let (mut a, mut b) = (List::EMPTY, List::EMPTY);
        for i in 0..5 {
            a.push_back(&mut nodes, i, Which::Chain);
            b.push_back(&mut nodes, 4 - i, Which::Order);
        }
        a.unlink(&mut nodes, 0, Which::Chain);
        a.unlink(&mut nodes, 2, Which::Chain);
        a.unlink(&mut nodes, 4, Which::Chain);
        b.unlink(&mut nodes, 3, Which::Order);
        assert_eq!(collect(&a, &nodes, Which::Chain), [1, 3]);
        assert_eq!(collect(&b, &nodes, Which::Order), [4, 2, 1, 0]);
        a.unlink(&mut nodes, 1, Which::Chain);
        a.unlink(&mut nodes, 3, Which::Chain);
        assert_eq!(a, List::EMPTY);
    }

    #[test]
    fn find_stops_early_and_never_loops() {
        let mut nodes = [N([Links::NONE; 2]); 3];
        let mut a = List::EMPTY;
        for i in 0..3 {
            a.push_back(&mut nodes, i, Which::Chain);
        }
        assert_eq!(
            a.find(&nodes, Which::Chain, |i, _| Ok((i == 1).then_some(i))),
            Some(1)
        );
        assert_eq!(
            a.find(&nodes, Which::Chain, |_, _| Err::<Option<u32>, _>(())),
            None
        );
        // A corrupted cycle ends after nodes.len() steps.
        nodes[2].0[0].next = 0;
        assert_eq!(a.find(&nodes, Which::Chain, |_, _| Ok(None::<u32>)), None);
    }
}
