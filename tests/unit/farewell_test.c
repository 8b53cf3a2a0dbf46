/* SPDX-License-Identifier: MIT */
/* farewell_test: a program that ends its links and then frees its loop and context tells its
 * peers over real loopback sockets, at once — before, pure_link_abort's CLOSE waited for a
 * pure_ctx_write that never came and the peer kept the link until its idle timeout. Cases: an
 * abort, a graceful close still waiting for acknowledgements, pure_ctx_shutdown of links left
 * open, and a loop freed with open links (which stay open: the context may be driven on). */
#include <string.h>

#include "pure.h"
#include "pure_loop.h"
#include "test.h"

typedef struct side {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link *link;
    int accepted, established, closes;
    uint64_t messages;
    pure_close_info info;
    uint64_t closed_at;
} side;

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    side *s = u;
    s->link = l;
    s->accepted = 1;
    pure_link_set_user(l, s);
    return 0;
}
static void on_established(pure_link *l, void *u)
{
    ((side *)u)->established = 1;
}
static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    ((side *)u)->messages++;
}
static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    side *s = u;
    s->closes++;
    s->info = *info;
    s->info.reason = NULL;
    s->closed_at = pure_now();
    s->link = NULL;
}
static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static void make(side *s, int server)
{
    memset(s, 0, sizeof *s);
    pure_settings st;
    pure_settings_default(&st);
    CHECK_EQ(pure_keygen(st.private_key), 0);
    st.callbacks = &cbs;
    st.user = s;
    st.allow_any = 1;
    st.idle_timeout = 30000000000ull; /* a peer left to find out alone takes 30 s */
    CHECK_EQ(pure_ctx_new(&st, &s->ctx), 0);
    if (server)
        CHECK_EQ(pure_ctx_add_service(s->ctx, "svc"), 0);
    CHECK_EQ(pure_loop_new(s->ctx, "127.0.0.1:0", &s->loop), 0);
}

/* Runs both loops in turn for up to `ms` milliseconds or until done. */
static int run_until(side *a, side *b, int (*done)(side *, side *), int ms)
{
    uint64_t end = pure_now() + (uint64_t)ms * 1000000u;
    while (pure_now() < end) {
        if (done(a, b))
            return 1;
        if (a->loop)
            pure_loop_run(a->loop, 1000000u);
        if (b->loop)
            pure_loop_run(b->loop, 1000000u);
    }
    return done(a, b);
}
static int connected(side *c, side *s)
{
    return c->established && s->accepted;
}
static int server_closed(side *c, side *s)
{
    return s->closes > 0;
}

static void connect_pair(side *c, side *s)
{
    make(s, 1);
    make(c, 0);
    char to[64];
    pure_addr a;
    snprintf(to, sizeof to, "127.0.0.1:%u", pure_loop_port(s->loop));
    CHECK_EQ(pure_addr_from_string(&a, to), 0);
    CHECK_EQ(pure_connect(c->ctx, &a, pure_ctx_public_key(s->ctx), "svc", c, &c->link, pure_now()),
             0);
    CHECK(run_until(c, s, connected, 3000));
}

static void free_side(side *s)
{
    if (s->loop)
        pure_loop_free(s->loop);
    s->loop = NULL;
    if (s->ctx)
        pure_ctx_free(s->ctx);
    s->ctx = NULL;
}

enum how {
    ABORT,
    GRACEFUL_PENDING,
    SHUTDOWN_OPEN
};

static void one(enum how how)
{
    side c, s;
    connect_pair(&c, &s);
    static uint8_t big[4 << 20];
    if (how == ABORT) {
        CHECK_EQ(pure_link_abort(c.link, PURE_CLOSE_APP + 7, "bye"), 0);
        CHECK_EQ(c.closes, 1);
    } else if (how == GRACEFUL_PENDING) {
        /* a message far larger than one flight: the close cannot complete before the free */
        CHECK_EQ(pure_link_send(c.link, big, sizeof big), 0);
        CHECK_EQ(pure_link_close(c.link, PURE_CLOSE_APP + 8, "done"), 0);
        CHECK_EQ(c.closes, 0);
    } else {
        CHECK_EQ(pure_link_send(c.link, "hi", 2), 0);
        CHECK_EQ(pure_ctx_shutdown(c.ctx, 0x80, pure_now()), PURE_EINVAL);
        CHECK_EQ(pure_ctx_shutdown(c.ctx, PURE_SHUTDOWN_ALL, pure_now()), 0);
        CHECK_EQ(c.closes, 1);
        CHECK_EQ(c.info.error, PURE_ECLOSED);
    }
    uint64_t freed = pure_now();
    pure_loop_free(c.loop); /* the CLOSE must leave here */
    c.loop = NULL;
    CHECK_EQ(c.closes, 1);
    if (how == GRACEFUL_PENDING) {
        CHECK_EQ(c.info.error, PURE_ECLOSED); /* the close could not complete */
        CHECK_EQ(c.info.next_id, 1);
    }
    pure_ctx_free(c.ctx);
    c.ctx = NULL;
    CHECK(run_until(&c, &s, server_closed, 2000));
    CHECK_EQ(s.closes, 1);
    uint64_t took = s.closed_at - freed;
    printf("  %s: the peer knew in %.1f ms\n",
           how == ABORT              ? "abort"
           : how == GRACEFUL_PENDING ? "graceful close pending"
                                     : "shutdown",
           (double)took / 1e6);
    CHECK(took < 500000000u);
    if (how == ABORT) {
        CHECK_EQ(s.info.error, PURE_ERESET);
        CHECK_EQ(s.info.peer_code, PURE_CLOSE_APP + 7);
    } else if (how == GRACEFUL_PENDING) {
        CHECK_EQ(s.info.error, PURE_ERESET);
        CHECK_EQ(s.info.peer_code, PURE_CLOSE_APP + 8);
        CHECK_EQ(s.messages, 0); /* 4 MiB never all arrived */
    } else {
        CHECK_EQ(s.info.error, 0);
    }
    free_side(&s);
}

static void test_abort_then_free(void)
{
    one(ABORT);
}
static void test_graceful_pending_then_free(void)
{
    one(GRACEFUL_PENDING);
}
static void test_shutdown_then_free(void)
{
    one(SHUTDOWN_OPEN);
}

/* pure_loop_free leaves links the application did not end alone (no CLOSE, no on_closed). */
static void test_open_links_stay_open(void)
{
    side c, s;
    connect_pair(&c, &s);
    pure_loop_free(c.loop);
    c.loop = NULL;
    CHECK_EQ(c.closes, 0);
    CHECK(!run_until(&c, &s, server_closed, 300));
    pure_ctx_free(c.ctx); /* on_closed, PURE_ECLOSED */
    c.ctx = NULL;
    CHECK_EQ(c.closes, 1);
    CHECK_EQ(c.info.error, PURE_ECLOSED);
    CHECK_EQ(s.closes, 0);
    free_side(&s);
}

/* pure_ctx_shutdown is refused from a callback and inside a walk. */
static int visit_shutdown(pure_link *l, void *u, void *arg)
{
    CHECK_EQ(pure_ctx_shutdown(arg, PURE_SHUTDOWN_ALL, pure_now()), PURE_ESTATE);
    return 0;
}
static void test_shutdown_refused_inside(void)
{
    side c, s;
    connect_pair(&c, &s);
    CHECK_EQ(pure_ctx_links(c.ctx, visit_shutdown, c.ctx), 1);
    CHECK_EQ(c.closes, 0);
    CHECK_EQ(pure_ctx_shutdown(NULL, PURE_SHUTDOWN_ALL, 0), PURE_EINVAL);
    free_side(&c);
    free_side(&s);
}

int main(void)
{
    RUN(test_abort_then_free);
    RUN(test_graceful_pending_then_free);
    RUN(test_shutdown_then_free);
    RUN(test_open_links_stay_open);
    RUN(test_shutdown_refused_inside);
    return pure_test_finish();
}
