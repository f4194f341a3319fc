//! How a [`Pool`](super::Pool) routes: picking a worker, forwarding
//! messages and requests, counting requests in flight, holding what no
//! worker can take yet, refusing what none will.

use super::{Pool, PoolStrategy};
use crate::actor::{Actor, ActorState};
use crate::address::Address;
use crate::arena::Key;
use crate::context::Context;
use crate::entity::deliver_now;
use crate::error::{Error, ErrorCode};
use crate::request::{Answered, CancelRequest, Request, RequestId, RequestMsg};
use std::marker::PhantomData;

/// A worker in rotation.
pub(super) struct Worker {
    pub(super) slot: usize,
    pub(super) address: Address,
    /// Its actor's key, if it lives on this locality.
    pub(super) local: Option<Key>,
    /// Requests in flight.
    pub(super) load: u32,
}

/// A request forwarded to a worker, kept to answer it if the worker goes.
pub(super) struct Flight {
    slot: usize,
    request: Box<dyn Outstanding>,
}

trait Outstanding {
    /// Answers the request with `error`.
    fn fail(&self, core: &mut crate::locality::Core, me: Key, error: Error);
    /// Tells the worker at `to` that the request was cancelled.
    fn cancelled(&self, core: &mut crate::locality::Core, me: Key, to: &Address, local: bool);
}

impl<R: Request> Outstanding for RequestMsg<R> {
    fn fail(&self, core: &mut crate::locality::Core, me: Key, error: Error) {
        crate::request::reply(core, me, self, Err(error));
    }
    fn cancelled(&self, core: &mut crate::locality::Core, me: Key, to: &Address, local: bool) {
        let cancel = CancelRequest::<R> {
            id: self.id,
            reply_to: self.reply_to().clone(),
            _request: PhantomData,
        };
        if local {
            deliver_now(core, me, to.key(), &cancel);
        } else {
            core.send(to, me, cancel);
        }
    }
}

/// A message or request held until a worker can take it.
pub(super) trait Job<W: Actor> {
    fn run(self: Box<Self>, pool: &mut Pool<W>, ctx: &mut Context<'_, Pool<W>>);
    fn refuse(self: Box<Self>, ctx: &mut Context<'_, Pool<W>>, error: Error);
    /// The request's id (`None` for a plain message).
    fn request_id(&self) -> Option<RequestId> {
        None
    }
}

struct PlainJob<M>(M);

impl<W: Actor, M: Clone + Send + 'static> Job<W> for PlainJob<M> {
    fn run(self: Box<Self>, pool: &mut Pool<W>, ctx: &mut Context<'_, Pool<W>>) {
        pool.on_message(&self.0, ctx);
    }
    fn refuse(self: Box<Self>, _: &mut Context<'_, Pool<W>>, _: Error) {}
}

struct RequestJob<R: Request>(RequestMsg<R>);

impl<W: Actor, R: Request> Job<W> for RequestJob<R> {
    fn run(self: Box<Self>, pool: &mut Pool<W>, ctx: &mut Context<'_, Pool<W>>) {
        pool.on_request(&self.0, ctx);
    }
    fn refuse(self: Box<Self>, ctx: &mut Context<'_, Pool<W>>, error: Error) {
        ctx.reply_error(&self.0, error);
    }
    fn request_id(&self) -> Option<RequestId> {
        Some(self.0.id)
    }
}

impl<W: Actor> Pool<W> {
    /// The worker for the next message, if one can take it.
    pub(super) fn pick(&mut self, ctx: &Context<'_, Self>) -> Option<usize> {
        let len = self.workers.len();
        let usable = |w: &Worker| {
            w.local.is_none_or(|actor| {
                ctx.core
                    .actors
                    .get(actor)
                    .is_some_and(|c| c.state == ActorState::Operational)
            })
        };
        let mut best: Option<usize> = None;
        for i in 0..len {
            let at = (self.next + i) % len;
            let w = &self.workers[at];
            if !usable(w) {
                continue;
            }
            match self.strategy {
                PoolStrategy::RoundRobin => {
                    best = Some(at);
                    break;
                }
                PoolStrategy::LeastLoaded => {
                    if best.is_none_or(|b| w.load < self.workers[b].load) {
                        best = Some(at);
                    }
                    if w.load == 0 {
                        break;
                    }
                }
            }
        }
        if let Some(at) = best {
            self.next = at + 1;
        }
        best
    }

    pub(super) fn on_message<M: Clone + Send + 'static>(
        &mut self,
        m: &M,
        ctx: &mut Context<'_, Self>,
    ) {
        if self.closing {
            return self.refuse(Box::new(PlainJob(m.clone())), "is shutting down", ctx);
        }
        let Some(at) = self.pick(ctx) else {
            return self.hold(Box::new(PlainJob(m.clone())), ctx);
        };
        let w = &self.workers[at];
        if w.local.is_some() {
            deliver_now(ctx.core, ctx.me, w.address.key(), m);
        } else {
            ctx.send(&w.address, m.clone());
        }
        self.stats.update(|s| s.routed += 1);
    }

    pub(super) fn on_request<R: Request>(
        &mut self,
        req: &RequestMsg<R>,
        ctx: &mut Context<'_, Self>,
    ) {
        if self.closing {
            return self.refuse(Box::new(RequestJob(req.clone())), "is shutting down", ctx);
        }
        let Some(at) = self.pick(ctx) else {
            return self.hold(Box::new(RequestJob(req.clone())), ctx);
        };
        let forwarded = RequestMsg {
            id: req.id,
            payload: req.payload.clone(),
            watcher: Some(ctx.address().clone()),
        };
        let w = &mut self.workers[at];
        if let std::collections::hash_map::Entry::Vacant(entry) = self.in_flight.entry(req.id) {
            let kept = RequestMsg {
                watcher: None,
                ..forwarded.clone()
            };
            entry.insert(Flight {
                slot: w.slot,
                request: Box::new(kept),
            });
            w.load += 1;
        }
        if w.local.is_some() {
            let dest = w.address.key();
            deliver_now(ctx.core, ctx.me, dest, &forwarded);
        } else {
            let to = w.address.clone();
            ctx.send(&to, forwarded);
        }
        let in_flight = self.in_flight.len();
        self.stats.update(|s| {
            s.routed += 1;
            s.in_flight = in_flight;
        });
    }

    /// A worker replied: one request less in flight.
    pub(super) fn on_answered(&mut self, answered: &Answered, _: &mut Context<'_, Self>) {
        if let Some(flight) = self.in_flight.remove(&answered.0) {
            self.unload(flight.slot);
        }
    }

    /// The requester gave up (timeout, cancel, gone): the worker is told;
    /// a request still held for want of a worker is dropped.
    pub(super) fn on_cancel<R: Request>(
        &mut self,
        cancel: &CancelRequest<R>,
        ctx: &mut Context<'_, Self>,
    ) {
        let Some(flight) = self.in_flight.remove(&cancel.id) else {
            let id = Some(cancel.id);
            if let Some(at) = self.pending.iter().position(|j| j.request_id() == id) {
                drop(self.pending.remove(at));
            }
            return;
        };
        self.unload(flight.slot);
        if let Some(w) = self.workers.iter().find(|w| w.slot == flight.slot) {
            let local = w.local.is_some();
            flight
                .request
                .cancelled(ctx.core, ctx.me, &w.address, local);
        }
    }

    pub(super) fn unload(&mut self, slot: usize) {
        if let Some(w) = self.workers.iter_mut().find(|w| w.slot == slot) {
            w.load = w.load.saturating_sub(1);
        }
        let in_flight = self.in_flight.len();
        self.stats.update(|s| s.in_flight = in_flight);
    }

    /// Holds a message while no worker can take it: some are initializing,
    /// restarting, or leaving (and will be replaced, or say they are gone).
    pub(super) fn hold(&mut self, job: Box<dyn Job<W>>, ctx: &mut Context<'_, Self>) {
        if self.starting == 0 && self.workers.is_empty() {
            return self.refuse(job, "has no worker left", ctx);
        }
        if self.pending.len() >= self.max_buffered {
            return self.refuse(job, "holds too many messages", ctx);
        }
        self.pending.push_back(job);
    }

    pub(super) fn refuse(&mut self, job: Box<dyn Job<W>>, why: &str, ctx: &mut Context<'_, Self>) {
        let error =
            Error::new(ErrorCode::Unavailable).with_context(format!("pool {} {why}", self.name));
        tracing::debug!(pool = %self.name, %error, "refused");
        job.refuse(ctx, error);
        self.stats.update(|s| s.refused += 1);
    }

    /// Answers every request in flight at the worker in `slot` (every one,
    /// for `None`) with `error`.
    pub(super) fn fail_flights(
        &mut self,
        slot: Option<usize>,
        error: &Error,
        ctx: &mut Context<'_, Self>,
    ) {
        let ids: Vec<RequestId> = self
            .in_flight
            .iter()
            .filter(|(_, f)| slot.is_none_or(|s| f.slot == s))
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            if let Some(flight) = self.in_flight.remove(id) {
                flight.request.fail(ctx.core, ctx.me, error.clone());
            }
        }
        let (failed, in_flight) = (ids.len() as u64, self.in_flight.len());
        self.stats.update(|s| {
            s.failed += failed;
            s.in_flight = in_flight;
        });
    }
}
