//! [`Lent`]: a message lent to its handlers with its type erased (the
//! queue module's invariant "lent", see there).

use std::any::TypeId;
use std::marker::PhantomData;

/// A message lent to its handlers, its type erased: a `&'a M` that can be
/// had back only as a `&'a M`. Like `&dyn Any`, but the check is a compare
/// with a constant, not a call through a vtable (a handler runs once per
/// delivery). Two words, so it is passed in registers: the type is named
/// by the function `TypeId::of::<M>`.
#[derive(Clone, Copy)]
pub(crate) struct Lent<'a> {
    type_id: fn() -> TypeId,
    message: *const (),
    _borrow: PhantomData<&'a ()>,
}

impl<'a> Lent<'a> {
    /// Lends `message`.
    #[inline(always)]
    pub(crate) fn new<M: 'static>(message: &'a M) -> Lent<'a> {
        Lent {
            type_id: TypeId::of::<M>,
            message: (message as *const M).cast(),
            _borrow: PhantomData,
        }
    }

    /// The message, if it is an `M`.
    #[inline(always)]
    pub(crate) fn get<M: 'static>(self) -> Option<&'a M> {
        // The same function (usually: one per type in the binary) returns
        // the same `TypeId`; another one (a copy in another codegen unit)
        // is asked, out of line, so that the caller keeps nothing across a
        // call (the message's address comes back as the result).
        let of_m: fn() -> TypeId = TypeId::of::<M>;
        if !std::ptr::fn_addr_eq(self.type_id, of_m) {
            return self.get_asked();
        }
        // SAFETY (lent): `message` came from a `&'a M'` in `new`, with
        // `type_id` the function `TypeId::of::<M'>`, here `TypeId::of::<M>`
        // (the same code gives the same value): so `M' == M` (both
        // `'static`); the borrow lives for `'a`, which the returned
        // reference does not outlive.
        Some(unsafe { &*self.message.cast::<M>() })
    }

    /// [`get`](Self::get) by asking the lender's function for its `TypeId`.
    #[cold]
    #[inline(never)]
    fn get_asked<M: 'static>(self) -> Option<&'a M> {
        // SAFETY (lent): as in `get`, `type_id` (of `M'`) returned
        // `TypeId::of::<M>()`, so `M' == M`.
        ((self.type_id)() == TypeId::of::<M>()).then(|| unsafe { &*self.message.cast::<M>() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lent_message_comes_back_only_as_its_own_type() {
        let text = String::from("hello");
        let lent = Lent::new(&text);
        assert_eq!(lent.get::<String>().map(String::as_str), Some("hello"));
        assert!(lent.get::<&str>().is_none());
        assert!(lent.get::<u64>().is_none());
        let n = 7u8;
        let lent = Lent::new(&n);
        assert_eq!(lent.get::<u8>(), Some(&7));
        assert!(lent.get::<i8>().is_none());
        let unit = ();
        assert!(Lent::new(&unit).get::<()>().is_some());
        // The type named by another function than `TypeId::of::<M>` itself (as
        // a copy of it in another codegen unit would be): its `TypeId` decides.
        let copy = Lent {
            type_id: || TypeId::of::<String>(),
            ..Lent::new(&text)
        };
        assert!(!std::ptr::fn_addr_eq(
            copy.type_id,
            TypeId::of::<String> as fn() -> TypeId
        ));
        assert_eq!(copy.get::<String>().map(String::as_str), Some("hello"));
        assert!(copy.get::<u64>().is_none());
    }
}
