//! A slab of values keyed by (index, generation), with the key encoded in a
//! receive's `user_data` so that a completion leads back to its buffer.

/// Top bit of `user_data`: set for receives posted by [`crate::Endpoint::post`]
/// (whose `user_data` is a slab key), clear for raw posts.
pub(crate) const OWNED_BIT: u64 = 1 << 63;
const GENERATION_MASK: u32 = u32::MAX >> 1;

/// Names one value in a [`Slab`] for as long as it stays there; a key whose
/// value was removed names nothing, even after the slot is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    index: u32,
    /// 31 bits, so that the encoded key fits below [`OWNED_BIT`].
    generation: u32,
}

impl Key {
    /// The `user_data` the module echoes in this receive's completion.
    pub(crate) fn to_user_data(self) -> u64 {
        OWNED_BIT | (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The key in a completion's `user_data`, or `None` for a raw post's.
    pub(crate) fn from_user_data(user_data: u64) -> Option<Self> {
        (user_data & OWNED_BIT != 0).then_some(Self {
            index: user_data as u32,
            generation: (user_data >> 32) as u32 & GENERATION_MASK,
        })
    }
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Values addressed by [`Key`]s; freed slots are reused.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Values held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether no value is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `value`.
    ///
    /// # Panics
    ///
    /// Beyond 2^32 values held at once; endpoints hold at most the ring's
    /// size (at most 2^31).
    pub(crate) fn insert(&mut self, value: T) -> Key {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).expect("slab index beyond u32");
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.value = Some(value);
        self.len += 1;
        Key {
            index,
            generation: slot.generation,
        }
    }

    fn slot(&self, key: Key) -> Option<&Slot<T>> {
        self.slots
            .get(key.index as usize)
            .filter(|s| s.generation == key.generation && s.value.is_some())
    }

    /// The value `key` names, if still held.
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.slot(key).and_then(|s| s.value.as_ref())
    }

    /// The value `key` names, if still held.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        self.slot(key)?;
        self.slots[key.index as usize].value.as_mut()
    }

    /// Takes the value `key` names out; the key names nothing afterwards.
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        self.slot(key)?;
        let slot = &mut self.slots[key.index as usize];
        let value = slot.value.take();
        slot.generation = slot.generation.wrapping_add(1) & GENERATION_MASK;
        self.free.push(key.index);
        self.len -= 1;
        value
    }

    /// Keys of all values held.
    pub(crate) fn keys(&self) -> Vec<Key> {
        self.slots
            .iter()
            .zip(0u32..)
            .filter(|(s, _)| s.value.is_some())
            .map(|(s, index)| Key {
                index,
                generation: s.generation,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.len(), 2);
        assert_eq!(s.get(a), Some(&"a"));
        *s.get_mut(b).unwrap() = "B";
        assert_eq!(s.remove(b), Some("B"));
        assert_eq!(s.remove(b), None);
        assert_eq!(s.get(b), None);
        assert_eq!(s.len(), 1);
        assert_eq!(s.keys(), vec![a]);
        assert_eq!(s.remove(a), Some("a"));
        assert!(s.is_empty());
    }

    #[test]
    fn a_stale_key_does_not_name_the_slot_s_next_value() {
        let mut s = Slab::default();
        let old = s.insert(1);
        s.remove(old);
        let new = s.insert(2);
        assert_ne!(old, new);
        assert_eq!(old.index, new.index, "the slot is reused");
        assert_eq!(s.get(old), None);
        assert_eq!(s.get_mut(old), None);
        assert_eq!(s.remove(old), None);
        assert_eq!(s.get(new), Some(&2));
    }

    #[test]
    fn generations_stay_within_31_bits() {
        let mut s = Slab::default();
        s.slots.push(Slot {
            generation: GENERATION_MASK,
            value: None,
        });
        s.free.push(0);
        let k = s.insert(());
        assert_eq!(k.generation, GENERATION_MASK);
        s.remove(k);
        let k2 = s.insert(());
        assert_eq!(k2.generation, 0);
        assert_eq!(Key::from_user_data(k2.to_user_data()), Some(k2));
    }

    #[test]
    fn user_data_round_trips_and_marks_owned_receives() {
        let k = Key {
            index: 0xdead_beef,
            generation: GENERATION_MASK,
        };
        let u = k.to_user_data();
        assert_ne!(u & OWNED_BIT, 0);
        assert_eq!(Key::from_user_data(u), Some(k));
        assert_eq!(Key::from_user_data(0), None);
        assert_eq!(Key::from_user_data(OWNED_BIT - 1), None);
    }
}
