//! Actor names interned per locality, so that an address of a plain actor
//! (its type's name, or a `&'static` name) carries a small id instead of an
//! allocation of its own (docs/architecture.md, "Addresses").
//!
//! The table lives in the locality's shared part: it is written on the
//! locality's thread (and, under its lock, by whoever makes an address with
//! a `&'static` name), and read without a lock from any thread, since an
//! address's `Display` may run anywhere, also after its actor is gone. It is
//! append-only and bounded ([`MAX_NAMES`]); past the bound, names are no
//! longer interned and addresses carry their own (an allocation, as before).

use crate::routing::TypeIdHasher;
use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The index of a name in its locality's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NameId(pub(crate) u32);

/// Slots of chunk `i`: `FIRST << i` (chunks are made when first needed).
const FIRST: usize = 16;
const CHUNKS: usize = 10;
/// How many names a locality interns at most: beyond, addresses own their names.
pub(crate) const MAX_NAMES: usize = FIRST * ((1 << CHUNKS) - 1);

/// What a name was interned under.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum NameKey {
    /// The default name of an actor type.
    Type(TypeId),
    /// A `&'static` name (a literal, usually), by its text.
    Text(&'static str),
}

/// A run of name slots, each set once.
type Chunk = Box<[OnceLock<Cow<'static, str>>]>;

/// The interned names of one locality.
pub(crate) struct Names {
    chunks: [OnceLock<Chunk>; CHUNKS],
    /// What is interned already, and the next free id; taken to add a name.
    index: Mutex<(HashMap<NameKey, NameId>, u32)>,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            index: Mutex::new((HashMap::new(), 0)),
        }
    }
}

/// The chunk and the slot in it of id `i`.
fn place(i: usize) -> (usize, usize) {
    // Chunk c starts at FIRST * (2^c - 1).
    let c = (i / FIRST + 1).ilog2() as usize;
    (c, i - FIRST * ((1 << c) - 1))
}

impl Names {
    /// The name with id `id` (any thread, no lock).
    pub(crate) fn get(&self, id: NameId) -> Option<&str> {
        let (c, slot) = place(id.0 as usize);
        let name = self.chunks.get(c)?.get()?.get(slot)?.get()?;
        Some(name)
    }

    /// The id of the default name of type `A`, interning it (made by
    /// `make`) if it is new; `None` once the table is full.
    pub(crate) fn intern_type(
        &self,
        ty: TypeId,
        make: impl FnOnce() -> Cow<'static, str>,
    ) -> Option<NameId> {
        self.intern(NameKey::Type(ty), make)
    }

    /// The id of a `&'static` name, interning it if it is new; `None` once
    /// the table is full.
    pub(crate) fn intern_static(&self, name: &'static str) -> Option<NameId> {
        self.intern(NameKey::Text(name), || Cow::Borrowed(name))
    }

    fn intern(&self, key: NameKey, make: impl FnOnce() -> Cow<'static, str>) -> Option<NameId> {
        // The lock guards no invariant a panic could break: go on after one.
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, next) = &mut *index;
        if let Some(&id) = map.get(&key) {
            return Some(id);
        }
        if *next as usize >= MAX_NAMES {
            return None;
        }
        let id = NameId(*next);
        let (c, slot) = place(*next as usize);
        let chunk = self.chunks[c].get_or_init(|| {
            (0..FIRST << c)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        // Only this (locked) code sets slots, each once: it is free.
        let _ = chunk[slot].set(make());
        *next += 1;
        map.insert(key, id);
        Some(id)
    }
}

/// The locality's own cache of its actor types' name ids: a spawn looks its
/// type up here, without the table's lock.
#[derive(Default)]
pub(crate) struct TypeNames {
    ids: HashMap<TypeId, NameId, BuildHasherDefault<TypeIdHasher>>,
    /// The last type looked up in `ids`: a spawn loop makes one type.
    last_id: Option<(TypeId, NameId)>,
    /// What each actor type's lifecycle hooks are, found on their first
    /// call (`Hook::bit`s): the low byte has those left to the trait's
    /// default (not called again), the high byte those it overrides. A
    /// cell keeps its type's index here (`ActorCell::hooks`), so that what
    /// any actor of its type found is known to it at once, without a
    /// lookup of its type. Index 0 is for types past `MAX_HOOK_RECORDS`
    /// (nothing is learned of them: their hooks are all called).
    hook_records: Vec<u16>,
    /// The index in `hook_records` of each actor type's record.
    hooks: HashMap<TypeId, u16, BuildHasherDefault<TypeIdHasher>>,
    /// The last type asked about in `hooks`, and its index: a spawn loop
    /// makes one type.
    last_hooks: Option<(TypeId, u16)>,
    /// The last type a spawn asked about ([`of`](TypeNames::of)), with its
    /// name id and hook index: one compare of the type for both.
    last_spawned: Option<(TypeId, NameId, u16)>,
}

/// The most actor types whose hooks are recorded (indexes below
/// `NO_EXTRAS`, the flag beside the index in `ActorCell::hooks`).
pub(crate) const MAX_HOOK_RECORDS: usize = 0x7fff;

impl TypeNames {
    /// The id of `ty`'s default name (as [`id`](Self::id)) and the index of
    /// its record of hooks (as [`hook_index`](Self::hook_index)), with one
    /// look at the last type a spawn made.
    #[inline]
    pub(crate) fn of(
        &mut self,
        names: &Names,
        ty: TypeId,
        make: impl FnOnce() -> Cow<'static, str>,
    ) -> (Option<NameId>, u16) {
        if let Some((last, id, index)) = self.last_spawned
            && last == ty
        {
            return (Some(id), index);
        }
        self.of_slow(names, ty, make)
    }

    /// [`of`](Self::of) for a type other than the last one a spawn made.
    #[inline(never)]
    fn of_slow(
        &mut self,
        names: &Names,
        ty: TypeId,
        make: impl FnOnce() -> Cow<'static, str>,
    ) -> (Option<NameId>, u16) {
        let (id, index) = (self.id(names, ty, make), self.hook_index(ty));
        if let Some(id) = id {
            self.last_spawned = Some((ty, id, index));
        }
        (id, index)
    }

    /// The id of `ty`'s default name in `names`, interning it on first use.
    #[inline]
    pub(crate) fn id(
        &mut self,
        names: &Names,
        ty: TypeId,
        make: impl FnOnce() -> Cow<'static, str>,
    ) -> Option<NameId> {
        if let Some((last, id)) = self.last_id
            && last == ty
        {
            return Some(id);
        }
        self.id_slow(names, ty, make)
    }

    /// [`id`](Self::id) for a type other than the last one asked about.
    #[inline(never)]
    fn id_slow(
        &mut self,
        names: &Names,
        ty: TypeId,
        make: impl FnOnce() -> Cow<'static, str>,
    ) -> Option<NameId> {
        let id = match self.ids.get(&ty) {
            Some(&id) => id,
            None => {
                let id = names.intern_type(ty, make)?;
                self.ids.insert(ty, id);
                id
            }
        };
        self.last_id = Some((ty, id));
        Some(id)
    }

    /// The index of actor type `ty`'s record of hooks (made on first use;
    /// 0 once `MAX_HOOK_RECORDS` types have one).
    #[inline]
    pub(crate) fn hook_index(&mut self, ty: TypeId) -> u16 {
        if let Some((last, index)) = self.last_hooks
            && last == ty
        {
            return index;
        }
        self.hook_index_slow(ty)
    }

    /// [`hook_index`](Self::hook_index) for a type other than the last one
    /// asked about.
    #[inline(never)]
    fn hook_index_slow(&mut self, ty: TypeId) -> u16 {
        if self.hook_records.is_empty() {
            self.hook_records.push(0); // index 0: types past the limit
        }
        let index = match self.hooks.get(&ty) {
            Some(&index) => index,
            None if self.hook_records.len() > MAX_HOOK_RECORDS => 0,
            None => {
                let index = self.hook_records.len() as u16;
                self.hook_records.push(0);
                self.hooks.insert(ty, index);
                index
            }
        };
        self.last_hooks = Some((ty, index));
        index
    }

    /// The hooks known of the actor type at `index` (`hook_index`): those
    /// left to the trait's defaults (low byte) and those overridden (high
    /// byte).
    #[inline]
    pub(crate) fn hooks(&self, index: u16) -> u16 {
        self.hook_records
            .get(usize::from(index))
            .copied()
            .unwrap_or(0)
    }

    /// Notes what hook `bit` of the actor type at `index` is: the trait's
    /// default, or overridden.
    pub(crate) fn learn_hook(&mut self, index: u16, bit: u8, default: bool) {
        if index == 0 {
            return;
        }
        if let Some(bits) = self.hook_records.get_mut(usize::from(index)) {
            *bits |= match default {
                true => u16::from(bit),
                false => u16::from(bit) << 8,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_cover_every_id_once() {
        let mut sizes = [0usize; CHUNKS];
        let mut last = None;
        for i in 0..MAX_NAMES {
            let (c, slot) = place(i);
            assert!(c < CHUNKS && slot < FIRST << c, "{i}: {c} {slot}");
            sizes[c] = sizes[c].max(slot + 1);
            // One after the other: every slot once, none skipped.
            let next = match last {
                None => (0, 0),
                Some((lc, ls)) if ls + 1 == FIRST << lc => (lc + 1, 0),
                Some((lc, ls)) => (lc, ls + 1),
            };
            assert_eq!((c, slot), next, "{i}");
            last = Some((c, slot));
        }
        assert_eq!(sizes[CHUNKS - 1], FIRST << (CHUNKS - 1));
    }

    #[test]
    fn interning_is_stable_and_bounded() {
        let names = Names::default();
        let a = names.intern_static("a").unwrap();
        assert_eq!(names.intern_static("a"), Some(a));
        let t = names
            .intern_type(TypeId::of::<u8>(), || "u8".into())
            .unwrap();
        assert_ne!(a, t);
        assert_eq!(names.get(a), Some("a"));
        assert_eq!(names.get(t), Some("u8"));
        assert_eq!(names.get(NameId(MAX_NAMES as u32 + 5)), None);
        let mut cache = TypeNames::default();
        assert_eq!(
            cache.id(&names, TypeId::of::<u8>(), || unreachable!()),
            Some(t)
        );
        for i in 2..MAX_NAMES {
            let leaked: &'static str = Box::leak(i.to_string().into_boxed_str());
            assert!(names.intern_static(leaked).is_some());
        }
        assert_eq!(names.intern_static("one too many"), None);
        assert_eq!(names.intern_static("a"), Some(a));
        assert_eq!(
            names.get(NameId(MAX_NAMES as u32 - 1)).map(str::to_owned),
            Some((MAX_NAMES - 1).to_string())
        );
    }
}
