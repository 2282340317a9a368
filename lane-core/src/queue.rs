//! A first-in, first-out queue in inline storage: the lane's effect and outcome queues.
//!
//! Taking from the front moves nothing: a read position advances over the storage, and
//! the storage is reset whenever the queue runs empty. A driver drains both queues after
//! every input, so they run empty all the time and never approach their inline capacity.

use smallvec::SmallVec;

/// A FIFO of `Copy` values over a `SmallVec`; `take` is O(1).
#[derive(Clone, Debug)]
pub(crate) struct Fifo<T, const N: usize> {
    items: SmallVec<[T; N]>,
    /// Items before this position were taken already.
    head: usize,
}

impl<T: Copy, const N: usize> Fifo<T, N> {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        Self { items: SmallVec::new(), head: 0 }
    }

    /// Appends `item` at the back.
    pub(crate) fn push(&mut self, item: T) {
        if self.head > 0 && self.items.len() == self.items.inline_size() {
            // Taken items fill the inline storage: drop them rather than spill to the heap.
            self.items.drain(..self.head);
            self.head = 0;
        }
        self.items.push(item);
    }

    /// Takes the front item.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<T> {
        self.take_inspected(|_| {})
    }

    /// Takes the front item after `inspect` has seen it in place (no copy to inspect it).
    #[inline]
    pub(crate) fn take_inspected(&mut self, inspect: impl FnOnce(&T)) -> Option<T> {
        let item = self.items.get(self.head)?;
        inspect(item);
        let item = *item;
        self.head += 1;
        if self.head == self.items.len() {
            self.clear();
        }
        Some(item)
    }

    /// Drops every item.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.head = 0;
    }

    /// The items not taken yet, front first.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        self.items.get(self.head..).unwrap_or_default()
    }

    /// How many items are queued.
    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_the_order_they_went_in() {
        let mut fifo: Fifo<u32, 4> = Fifo::new();
        fifo.push(1);
        fifo.push(2);
        assert_eq!(fifo.take(), Some(1));
        fifo.push(3);
        assert_eq!(fifo.as_slice(), &[2, 3]);
        assert_eq!(fifo.take(), Some(2));
        assert_eq!(fifo.take(), Some(3));
        assert_eq!(fifo.take(), None);
        assert_eq!(fifo.len(), 0);
    }

    #[test]
    fn taken_items_never_push_the_queue_out_of_inline_storage() {
        let mut fifo: Fifo<u32, 4> = Fifo::new();
        // Keep one item queued while pushing and taking many: the taken ones are dropped
        // instead of accumulating.
        fifo.push(0);
        for i in 1..100 {
            fifo.push(i);
            assert_eq!(fifo.take(), Some(i - 1));
            assert!(!fifo.items.spilled(), "spilled after {i} items");
        }
        assert_eq!(fifo.as_slice(), &[99]);
    }

    #[test]
    fn a_full_storage_with_taken_items_drops_them_instead_of_spilling() {
        let mut fifo: Fifo<u32, 4> = Fifo::new();
        for i in 1..=4 {
            fifo.push(i);
        }
        for i in 1..=3 {
            assert_eq!(fifo.take(), Some(i));
        }
        // Storage full, three of its items taken: the push makes room by dropping them.
        fifo.push(5);
        assert!(!fifo.items.spilled());
        assert_eq!(fifo.as_slice(), &[4, 5]);
    }

    #[test]
    fn clear_empties_the_queue() {
        let mut fifo: Fifo<u32, 4> = Fifo::new();
        fifo.push(1);
        fifo.push(2);
        let _ = fifo.take();
        fifo.clear();
        assert_eq!(fifo.take(), None);
        fifo.push(7);
        assert_eq!(fifo.as_slice(), &[7]);
    }
}
