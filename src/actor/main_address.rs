//! Where an actor's main address is: in its routing slot, which lives as
//! long as its cell (both go in `finish_removal`); the cell keeps its key.

use crate::actor::ActorCell;
use crate::address::Address;
use crate::arena::Key;
use crate::locality::Core;
use crate::routing::Routes;
use crate::subscription::{AddressInfo, BoxedHandler};

impl Core {
    /// The main address of actor `me`, if it is here (kept in its routing
    /// slot, not in its cell).
    #[inline]
    pub(crate) fn address_of(&self, me: Key) -> Option<&Address> {
        let main = self.actors.get(me)?.main;
        self.routes.address(main).map(|info| &info.address)
    }

    /// The main address of `cell`, an actor of this locality (`None` only
    /// once its slot is gone, in its removal).
    #[inline]
    pub(crate) fn main_address<'a>(
        routes: &'a Routes<AddressInfo, BoxedHandler>,
        cell: &ActorCell,
    ) -> Option<&'a Address> {
        routes.address(cell.main).map(|info| &info.address)
    }
}
