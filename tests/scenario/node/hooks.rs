//! A [`Node`]'s lifecycle hooks: init (subscriptions, children, links, the
//! scripted init), start (the scripted actions), shutdown, its answer to
//! `should_restart`, and its drop, each logged.

use super::{Ev, INIT_RESOURCE, Node, SHUTDOWN_RESOURCE, Stop, lock};
use crate::scenario::Init;
use commutator::{Actor, Context, Error};

impl Actor for Node {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        self.log(
            ctx,
            Ev::InitStart {
                uid: self.uid,
                addr: me.to_string(),
            },
        );
        ctx.subscribe(Self::on_seq);
        ctx.subscribe(Self::on_ask);
        ctx.subscribe(Self::on_response);
        ctx.subscribe(Self::on_cancel);
        ctx.subscribe(Self::on_stop);
        let replies = ctx.create_address("replies").unwrap();
        if let Err(e) = ctx.subscribe_on(&replies, Self::on_response) {
            self.broken(ctx, format!("subscribe_on(replies): {e:#}"));
        }
        self.replies = Some(replies);
        lock(&self.env.directory)[self.node].push(me);
        let env = self.env.clone();
        let spec = &env.scenario.nodes[self.node];
        for &child in &spec.children {
            self.spawn_child(ctx, child);
        }
        for link in &spec.links {
            if link.discover {
                let discovery = ctx.discover(format!("svc{}", link.server));
                let discovery = if link.wait {
                    discovery.wait()
                } else {
                    discovery
                };
                discovery
                    .link()
                    .then(|me: &mut Self, server, ctx| me.linking(ctx, server));
            } else if let Some(server) = env.current(link.server) {
                ctx.link(&server).expect("linked once");
                self.linking(ctx, &server);
            }
        }
        match self.script().init {
            Init::Ready => {}
            Init::Fail => self.fail(ctx, "fails its init"),
            Init::Delay(ms) => {
                ctx.acquire_resource(INIT_RESOURCE);
                ctx.start_timer(env.ms(ms), |me: &mut Self, ctx, _| {
                    if let Err(e) = ctx.release_resource(INIT_RESOURCE) {
                        me.broken(ctx, format!("releasing the init resource: {e:#}"));
                    }
                });
            }
            Init::FailAfter(ms) => {
                ctx.acquire_resource(INIT_RESOURCE);
                ctx.start_timer(env.ms(ms), |me: &mut Self, ctx, _| {
                    me.fail(ctx, "fails its init late");
                    if let Err(e) = ctx.release_resource(INIT_RESOURCE) {
                        me.broken(ctx, format!("releasing the init resource: {e:#}"));
                    }
                });
            }
        }
        if self.node == 0 {
            ctx.start_timer(env.ms(env.scenario.end_ms), |_, ctx, _| ctx.shutdown());
            if let Some(at) = env.scenario.release_handles_at {
                ctx.start_timer(env.ms(at), |me: &mut Self, _, _| me.env.release_handles());
            }
            for &(at, node) in &env.scenario.stops {
                ctx.start_timer(env.ms(at), move |me: &mut Self, ctx, _| {
                    if let Some(to) = me.env.current(node) {
                        ctx.send(&to, Stop);
                    }
                });
            }
        }
    }

    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::InitFinish { uid: self.uid });
        for server in std::mem::take(&mut self.links) {
            self.log(
                ctx,
                Ev::Linked {
                    uid: self.uid,
                    server,
                },
            );
        }
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::Start { uid: self.uid });
        let env = self.env.clone();
        for &(at, action) in &env.scenario.script(self.node, self.index).actions {
            ctx.start_timer(env.ms(at), move |me: &mut Self, ctx, _| me.act(ctx, action));
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::ShutdownStart { uid: self.uid });
        if let Some(ms) = self.script().shutdown_delay {
            ctx.acquire_resource(SHUTDOWN_RESOURCE);
            ctx.start_timer(self.env.ms(ms), |me: &mut Self, ctx, _| {
                if let Err(e) = ctx.release_resource(SHUTDOWN_RESOURCE) {
                    me.broken(ctx, format!("releasing the shutdown resource: {e:#}"));
                }
            });
        }
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let addr = ctx.address().to_string();
        self.log(
            ctx,
            Ev::ShutdownFinish {
                uid: self.uid,
                addr,
            },
        );
        for req in std::mem::take(&mut self.pending).into_keys() {
            self.log(ctx, Ev::Unanswered { uid: self.uid, req });
        }
        if self.node == 0 {
            self.env.release_handles();
        }
    }

    fn should_restart(&self, reason: &Error) -> bool {
        let reason = reason.clone();
        self.env.log(
            None,
            Ev::Reason {
                uid: self.uid,
                reason,
            },
        );
        self.script().ask_restart
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.env.log(None, Ev::Dropped { uid: self.uid });
    }
}
