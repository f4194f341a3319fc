//! What a [`Node`] instance does: its scripted actions (crashes, panics,
//! quits, sends, external subscriptions, requests), and its handlers of the
//! numbered messages, requests, responses and stops.

use super::{Ask, Ev, Node, Seq, Stop};
use crate::scenario::{Action, Reply};
use commutator::{Address, CancelRequest, Context, Error, ErrorCode, RequestMsg, Response};

impl Node {
    pub(super) fn act(&mut self, ctx: &mut Context<'_, Self>, action: Action) {
        match action {
            Action::Crash => self.fail(ctx, "crash"),
            Action::Panic => {
                // Logged as the failure the framework will make of it.
                let what = format!("u{} panic", self.uid);
                let error = Error::new(ErrorCode::Panicked)
                    .with_context(format!("{}: {what}", ctx.address()));
                self.log(
                    ctx,
                    Ev::Failed {
                        uid: self.uid,
                        error,
                    },
                );
                panic!("{what}");
            }
            Action::Quit => ctx.shutdown(),
            Action::StopSupervisor => ctx.shutdown_supervisor(),
            Action::Send { to, count } => {
                if let Some(to) = self.env.current(to) {
                    self.send_seq(ctx, &to, count);
                }
            }
            Action::SendStale { to, count } => {
                if let Some(to) = self.env.first(to) {
                    self.send_seq(ctx, &to, count);
                }
            }
            Action::Listen { to } => {
                let Some(target) = self.env.current(to) else {
                    return;
                };
                let k = self.listens;
                self.listens += 1;
                let heard = move |me: &mut Self, s: &Seq, ctx: &mut Context<'_, Self>| {
                    me.on_overheard(k, s, ctx)
                };
                match ctx.subscribe_external(&target, heard) {
                    Ok(_) => {
                        let target = target.to_string();
                        self.log(
                            ctx,
                            Ev::Listening {
                                uid: self.uid,
                                target,
                            },
                        );
                    }
                    Err(e) if e.code() == ErrorCode::StaleAddress => {}
                    Err(e) => self.broken(ctx, format!("subscribe_external({target}): {e:#}")),
                }
            }
            Action::Request {
                to,
                reply,
                timeout,
                cancel_after,
                via,
            } => {
                let Some(to) = self.env.current(to) else {
                    return;
                };
                let req = self.next_req;
                let ask = Ask {
                    from: self.uid,
                    req,
                    reply,
                };
                let timeout_d = self.env.ms(timeout);
                let id = match (via, self.replies.clone()) {
                    (true, Some(replies)) => match ctx.request_via(&replies, &to, ask, timeout_d) {
                        Ok(id) => id,
                        Err(e) => return self.broken(ctx, format!("request_via: {e:#}")),
                    },
                    _ => ctx.request(&to, ask, timeout_d),
                };
                self.next_req += 1;
                self.pending.insert(req, id);
                let uid = self.uid;
                self.log(
                    ctx,
                    Ev::Sent {
                        uid,
                        req,
                        reply,
                        timeout,
                    },
                );
                if let Some(after) = cancel_after {
                    ctx.start_timer(self.env.ms(after), move |me: &mut Self, ctx, _| {
                        let unanswered = me.pending.contains_key(&req);
                        let cancelled = ctx.cancel_request(id);
                        me.log(
                            ctx,
                            Ev::Cancel {
                                uid,
                                req,
                                cancelled,
                                unanswered,
                            },
                        );
                    });
                }
            }
        }
    }

    fn send_seq(&mut self, ctx: &mut Context<'_, Self>, to: &Address, count: u32) {
        let next = self.out.entry(to.to_string()).or_insert(0);
        for _ in 0..count {
            let seq = *next;
            *next += 1;
            ctx.send(
                to,
                Seq {
                    from: self.uid,
                    seq,
                },
            );
        }
    }

    pub(super) fn on_seq(&mut self, s: &Seq, ctx: &mut Context<'_, Self>) {
        let next = self.heard.entry(s.from).or_insert(0);
        let expected = *next;
        *next = s.seq + 1;
        if s.seq != expected {
            let what = format!(
                "FIFO: #{} from u{} came when #{expected} was due",
                s.seq, s.from
            );
            self.broken(ctx, what);
        }
    }

    fn on_overheard(&mut self, k: usize, s: &Seq, ctx: &mut Context<'_, Self>) {
        let expected = self.overheard.insert((k, s.from), s.seq + 1);
        if let Some(expected) = expected
            && s.seq != expected
        {
            let what = format!(
                "external FIFO: #{} from u{} came when #{expected} was due",
                s.seq, s.from
            );
            self.broken(ctx, what);
        }
    }

    pub(super) fn on_ask(&mut self, q: &RequestMsg<Ask>, ctx: &mut Context<'_, Self>) {
        let value = q.payload().value();
        match q.payload().reply {
            Reply::Now => ctx.reply(q, value),
            Reply::Error => ctx.reply_error(q, Error::failure("refused")),
            Reply::Never => {}
            Reply::Late(after) => {
                let q = q.clone();
                ctx.start_timer(self.env.ms(after), move |_: &mut Self, ctx, _| {
                    ctx.reply(&q, value)
                });
            }
            Reply::Twice => {
                ctx.reply(q, value);
                ctx.reply(q, value + 1);
            }
        }
    }

    pub(super) fn on_response(&mut self, r: &Response<Ask>, ctx: &mut Context<'_, Self>) {
        let ask = r.request();
        if ask.from != self.uid {
            let what = format!("got the response to u{}'s request {}", ask.from, ask.req);
            return self.broken(ctx, what);
        }
        match self.pending.remove(&ask.req) {
            Some(id) if id == r.id() => {}
            Some(id) => {
                let what = format!(
                    "request {} answered with id {} (sent as {id})",
                    ask.req,
                    r.id()
                );
                return self.broken(ctx, what);
            }
            None => {
                let what = format!("a second response to request {}", ask.req);
                return self.broken(ctx, what);
            }
        }
        let result = r.result().copied().map_err(Error::clone);
        let (uid, req) = (self.uid, ask.req);
        self.log(ctx, Ev::Answered { uid, req, result });
    }

    pub(super) fn on_cancel(&mut self, _: &CancelRequest<Ask>, _: &mut Context<'_, Self>) {}

    pub(super) fn on_stop(&mut self, _: &Stop, ctx: &mut Context<'_, Self>) {
        ctx.shutdown();
    }
}
