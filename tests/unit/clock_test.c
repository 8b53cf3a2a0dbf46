/* SPDX-License-Identifier: MIT */
/* clock_test.c: calls a program makes between wakeups read the loop's clock. Two contexts on
 * loopback, each with its pure_loop, both driven from this thread in turns. A link carries a
 * message, then nothing happens for longer than idle_timeout: an idle link has no timer, so
 * neither loop gives its context any time. Then, outside every callback, the client sends 1 MiB
 * and closes gracefully. pure_loop_new gives the context pure_now as its clock
 * (pure_ctx_set_clock): before, the close took the last time the context had been given, its
 * give-up deadline (idle_timeout) had passed already, and the first timer ended the link with
 * PURE_ETIMEDOUT while the message was still going out (the server never got it). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pure.h"
#include "pure_loop.h"
#include "test.h"

#define IDLE_TIMEOUT (300ull * 1000000) /* ns */

typedef struct end {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link *link;
    int established, closed, close_error;
    uint64_t received;
} end;

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    (void)svc;
    (void)key;
    end *e = user;
    e->link = l;
    pure_link_set_user(l, e);
    return 0;
}

static void on_established(pure_link *l, void *user)
{
    (void)l;
    ((end *)user)->established = 1;
}

static void on_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    (void)l;
    (void)d;
    (void)n;
    ((end *)user)->received++;
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)l;
    end *e = user;
    e->closed = 1;
    e->close_error = info->error;
    e->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static int make_end(end *e, int server)
{
    memset(e, 0, sizeof *e);
    pure_settings st;
    pure_settings_default(&st);
    CHECK_EQ(pure_keygen(st.private_key), 0);
    st.callbacks = &cbs;
    st.user = e;
    st.allow_any = server;
    st.idle_timeout = IDLE_TIMEOUT;
    if (pure_ctx_new(&st, &e->ctx) != 0)
        return -1;
    if (server)
        CHECK_EQ(pure_ctx_add_service(e->ctx, "svc"), 0);
    return pure_loop_new(e->ctx, "127.0.0.1:0", &e->loop);
}

/* Runs both loops in turns, 1 ms each, until done(a, b) or `ms` pass. */
static void pump(end *a, end *b, int (*done)(end *, end *), int ms)
{
    for (int i = 0; i < ms && !done(a, b); i++) {
        pure_loop_run(a->loop, 500000);
        pure_loop_run(b->loop, 500000);
    }
}

static int never(end *a, end *b)
{
    (void)a;
    (void)b;
    return 0;
}

static int got_one(end *c, end *s)
{
    return c->established && s->received == 1;
}

static int client_closed(end *c, end *s)
{
    return c->closed && s->closed;
}

static void test_close_after_quiet(void)
{
    end c, s;
    if (make_end(&s, 1) != 0 || make_end(&c, 0) != 0)
        return;
    pure_addr to;
    char addr[PURE_ADDR_STRLEN];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", pure_loop_port(s.loop));
    CHECK_EQ(pure_addr_from_string(&to, addr), 0);
    CHECK_EQ(pure_connect(c.ctx, &to, pure_ctx_public_key(s.ctx), "svc", &c, &c.link, pure_now()),
             0);
    CHECK(pure_link_send(c.link, "hello", 5) >= 0);
    pump(&c, &s, got_one, 5000);
    CHECK(got_one(&c, &s));
    pump(&c, &s, never, 50); /* the ACKs settle; then nothing is due on either side */
    struct timespec quiet = {0, (long)(2 * IDLE_TIMEOUT)};
    nanosleep(&quiet, NULL); /* as a program busy elsewhere, or a loop waiting on nothing */
    static uint8_t big[1 << 20];
    CHECK_EQ(pure_link_send(c.link, big, sizeof big), 1);
    CHECK_EQ(pure_link_close(c.link, 0, "done"), 0);
    pump(&c, &s, client_closed, 10000);
    CHECK(c.closed);
    CHECK_EQ(c.close_error, 0);
    CHECK_EQ(s.received, 2);
    pure_loop_free(c.loop);
    pure_ctx_free(c.ctx);
    pure_loop_free(s.loop);
    pure_ctx_free(s.ctx);
}

int main(void)
{
    RUN(test_close_after_quiet);
    return pure_test_finish();
}
