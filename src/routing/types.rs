//! The tags channels are found by: 32 bits per message type instead of
//! its 16-byte `TypeId`, each tag given to one type only.
//!
//! A type's tag is its [`type_tag`] (a fold of its `TypeId`), unless
//! another type took that one first on this table: then the next free one.
//! So a channel found by a type's exact tag ([`Types::tag`]) is that
//! type's; one found by its `type_tag` (the fast path: no lookup here) may
//! be another type's that shares it, and its handler, which checks the
//! message's type before anything, says so (`Next::Reroute`), for the
//! message to be routed again by its exact tag.

use super::{TypeIdHasher, type_tag};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// Tags are below this (see [`type_tag`]).
const TAGS: u32 = 1 << 30;

/// The tag [`Types::tag`] gives a type that has none: no channel's.
pub(super) const UNKNOWN: u32 = u32::MAX - 1;

/// The tags given on one table, by type (types subscribed to at least once:
/// as many as the program has message types, at most).
#[derive(Default)]
pub(super) struct Types {
    tags: HashMap<TypeId, u32, BuildHasherDefault<TypeIdHasher>>,
    taken: HashSet<u32>,
}

impl Types {
    /// The tag of `type_id`, given now if it has none yet.
    pub(super) fn give(&mut self, type_id: TypeId) -> u32 {
        if let Some(&tag) = self.tags.get(&type_id) {
            return tag;
        }
        let mut tag = type_tag(type_id);
        while !self.taken.insert(tag) {
            tag = (tag + 1) % TAGS;
        }
        self.tags.insert(type_id, tag);
        tag
    }

    /// The tag of `type_id` ([`UNKNOWN`] if it has none: nothing was ever
    /// subscribed to it here).
    #[inline]
    pub(super) fn tag(&self, type_id: TypeId) -> u32 {
        self.tags.get(&type_id).copied().unwrap_or(UNKNOWN)
    }
}
