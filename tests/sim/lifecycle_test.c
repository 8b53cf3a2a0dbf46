/* SPDX-License-Identifier: MIT */
/* lifecycle_test: a link's life at its edges, each a regression test of a fault a service hit:
 * an ACK that fills a small coalesced packet followed by a PING (a heap overflow of up to 1 MiB),
 * messages delivered after on_closed, pure_ctx_free without on_closed, a graceful close that
 * dropped what was queued, a dead peer never noticed while nothing was in flight; and the
 * errors a client gets within the handshake timeout when nothing answers or the key is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "link_send.h"
#include "sim.h"
#include "test.h"

typedef struct app {
    pure_link *link;
    int established, accepted, closes, after_close, messages, finished;
    int messages_after_close;
    pure_close_info info;
    uint64_t closed_at;
    int abort_at; /* abort from on_message at this message (0: never) */
    int in_abort; /* on_closed ran inside pure_link_abort */
} app;

typedef struct world {
    sim *s;
    int cli, srv;
    app c[8], sv[8];
    int n_sv;
} world;

static world *W;

static app *side_of(void *user)
{
    return user;
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    world *w = u;
    app *a = &w->sv[w->n_sv++];
    a->link = l;
    a->accepted = 1;
    pure_link_set_user(l, a);
    return 0;
}

static void on_established(pure_link *l, void *u)
{
    app *a = side_of(u);
    if (a->closes)
        a->after_close++;
    a->established = 1;
}

static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    app *a = side_of(u);
    if (a->closes) {
        a->after_close++;
        a->messages_after_close++;
        return;
    }
    a->messages++;
    if (a->abort_at && a->messages == a->abort_at) {
        a->in_abort = 1;
        CHECK_EQ(pure_link_abort(l, PURE_CLOSE_APP + 9, "enough"), 0);
        a->in_abort = 0;
        CHECK_EQ(a->closes, 1); /* on_closed ran before pure_link_abort returned */
    }
}

static void on_writable(pure_link *l, void *u)
{
    if (side_of(u)->closes)
        side_of(u)->after_close++;
}

static void on_peer_finished(pure_link *l, void *u)
{
    app *a = side_of(u);
    if (a->closes)
        a->after_close++;
    a->finished = 1;
}

static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    app *a = side_of(u);
    a->closes++;
    a->info = *info;
    a->info.reason = NULL;
    a->closed_at = sim_now(W->s);
    a->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_writable = on_writable,
                                   .on_peer_finished = on_peer_finished,
                                   .on_closed = on_closed};

static pure_settings settings(world *w)
{
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    st.user = w;
    st.allow_any = 1;
    st.idle_timeout = 2 * SIM_S;
    st.handshake_timeout = 3 * SIM_S;
    return st;
}

static world *world_new(uint64_t seed)
{
    world *w = calloc(1, sizeof *w);
    W = w;
    w->s = sim_new(seed);
    pure_settings st = settings(w);
    w->cli = sim_add(w->s, &st);
    st = settings(w);
    w->srv = sim_add(w->s, &st);
    pure_ctx_add_service(sim_ctx(w->s, w->srv), "svc");
    return w;
}

static void world_free(world *w)
{
    sim_free(w->s);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(w->c[i].after_close, 0);
        CHECK_EQ(w->sv[i].after_close, 0);
        CHECK(w->c[i].closes <= 1);
        CHECK(w->sv[i].closes <= 1);
    }
    free(w);
}

static void connect_one(world *w, int i)
{
    pure_addr to = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), &to, pure_ctx_public_key(sim_ctx(w->s, w->srv)),
                          "svc", &w->c[i], &w->c[i].link, sim_now(w->s)),
             0);
}

static int established0(void *arg)
{
    return ((world *)arg)->c[0].established && ((world *)arg)->n_sv;
}
static int closed_c0(void *arg)
{
    return ((world *)arg)->c[0].closes > 0;
}
static int closed_both0(void *arg)
{
    return ((world *)arg)->c[0].closes > 0 && ((world *)arg)->sv[0].closes > 0;
}

/* An ACK that exactly fills a small packet (a link joining another link's burst of small
 * segments), then a pending PING and data to send: before, the PING byte went past the room
 * and the data length wrapped, copying up to the peer's credit (1 MiB) past the buffer. */
static void test_ack_fills_small_packet_then_ping(void)
{
    world *w = world_new(1);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    CHECK_EQ(pure_link_send(w->sv[0].link, "hi", 2), 0); /* so the client has packets to ACK */
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 100 * SIM_MS);
    static uint8_t big[1 << 20];
    pure_link *l = w->c[0].link;
    CHECK(pure_link_send(l, big, sizeof big) >= 0);
    /* some packets received, so an ACK is owed; then a PING too */
    uint64_t now = sim_now(w->s);
    pure_acktr_ack_now(&l->acktr);
    l->ping_pending = 1;
    uint32_t n_ranges;
    const pure_range *ranges = pure_acktr_ranges(&l->acktr, &n_ranges);
    CHECK(n_ranges > 0);
    uint8_t tmp[1024];
    uint64_t delay = pure_acktr_delay(&l->acktr, now);
    uint8_t *e = pure_frame_put_ack(tmp, sizeof tmp, ranges, n_ranges, delay);
    if (!e) {
        CHECK(e != NULL);
        world_free(w);
        return;
    }
    size_t ack_len = (size_t)(e - tmp);
    size_t cap = PURE_DATA_HEADER + ack_len + PURE_TAG_LEN;
    size_t guard = 2u << 20;
    uint8_t *buf = malloc(cap + guard);
    memset(buf + cap, 0xEE, guard);
    size_t seg = 0;
    int64_t n = pure_link_write(l, buf, cap, &seg, now, 1);
    CHECK(n >= 0 && (size_t)n <= cap);
    size_t spoilt = 0;
    for (size_t i = cap; i < cap + guard; i++)
        spoilt += buf[i] != 0xEE;
    CHECK_EQ(spoilt, 0);
    /* the PING waits for the next packet; nothing was lost: the message still arrives */
    CHECK(l->ping_pending == 1 || n > 0);
    free(buf);
    CHECK(sim_run(w->s, NULL, NULL, sim_now(w->s) + 3 * SIM_S) == 0);
    CHECK_EQ(w->sv[0].messages, 1);
    world_free(w);
}

/* The service aborts the link from on_message while the client keeps sending: before, the
 * closing link went on delivering what arrived (9 on_message calls after on_closed were seen). */
static void test_no_message_after_abort(void)
{
    world *w = world_new(2);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    w->sv[0].abort_at = 10;
    uint8_t m[1000] = {0};
    for (int i = 0; i < 200; i++)
        CHECK(pure_link_send(w->c[0].link, m, sizeof m) >= 0);
    sim_run(w->s, closed_both0, w, 10 * SIM_S);
    CHECK_EQ(w->sv[0].messages, 10);
    CHECK_EQ(w->sv[0].messages_after_close, 0);
    CHECK_EQ(w->sv[0].closes, 1);
    CHECK_EQ(w->c[0].closes, 1);
    CHECK_EQ(w->c[0].info.error, PURE_ERESET); /* the service's code 9 */
    /* what the client's close reports acknowledged reached the service */
    CHECK(w->c[0].info.first_unacked <= 10);
    CHECK_EQ(w->c[0].info.next_id, 200);
    world_free(w);
}

/* The client aborts while the service streams to it: nothing after on_closed, on either side. */
static void test_no_message_after_client_abort(void)
{
    world *w = world_new(3);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    uint8_t m[1200] = {0};
    for (int i = 0; i < 150; i++) /* within send_queue (256 KiB) */
        CHECK(pure_link_send(w->sv[0].link, m, sizeof m) >= 0);
    w->c[0].abort_at = 5;
    sim_run(w->s, closed_both0, w, 10 * SIM_S);
    CHECK_EQ(w->c[0].messages, 5);
    CHECK_EQ(w->c[0].messages_after_close, 0);
    CHECK_EQ(w->c[0].closes, 1);
    CHECK_EQ(w->sv[0].closes, 1);
    world_free(w);
}

/* pure_ctx_free reports every live link closed, once, with PURE_ECLOSED: before, links were
 * freed without on_closed and an application leaked what it kept per link. */
static void test_ctx_free_reports_every_link(void)
{
    world *w = world_new(4);
    for (int i = 0; i < 5; i++)
        connect_one(w, i);
    sim_run(w->s, NULL, NULL, 2 * SIM_S);
    CHECK_EQ(w->n_sv, 5);
    static uint8_t m[100000];
    CHECK_EQ(pure_link_send(w->c[0].link, m, sizeof m), 0); /* unacknowledged at the free */
    pure_settings st = settings(w);
    memset(st.private_key, 5, sizeof st.private_key); /* a new client process */
    pure_ctx_free(sim_replace(w->s, w->cli, &st));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(w->c[i].closes, 1);
        CHECK_EQ(w->c[i].info.error, PURE_ECLOSED);
    }
    CHECK_EQ(w->c[0].info.first_unacked, 0);
    CHECK_EQ(w->c[0].info.next_id, 1);
    /* the server's side of each is still open: freed with the simulator, reported then */
    sim_free(w->s);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(w->sv[i].closes, 1);
        CHECK_EQ(w->sv[i].info.error, PURE_ECLOSED);
    }
    free(w);
}

/* pure_link_close right after queueing 1 MiB (and even before the handshake completes) sends
 * everything first: before, the queued message was dropped. */
static void test_graceful_close_sends_everything(void)
{
    for (int before_handshake = 0; before_handshake < 2; before_handshake++) {
        world *w = world_new(5 + (uint64_t)before_handshake);
        connect_one(w, 0);
        if (!before_handshake)
            CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
        static uint8_t big[1 << 20];
        CHECK_EQ(pure_link_send(w->c[0].link, "a", 1), 0);
        CHECK_EQ(pure_link_send(w->c[0].link, "", 0), 1);
        CHECK_EQ(pure_link_send(w->c[0].link, big, sizeof big), 2);
        CHECK_EQ(pure_link_close(w->c[0].link, 0, "bye"), 0);
        CHECK_EQ(pure_link_send(w->c[0].link, "x", 1), PURE_ECLOSED);
        CHECK_EQ(pure_link_close(w->c[0].link, 0, "again"), PURE_ESTATE);
        CHECK_EQ(w->c[0].closes, 0); /* not before the peer has it all */
        CHECK(sim_run(w->s, closed_both0, w, 20 * SIM_S));
        CHECK_EQ(w->sv[0].messages, 3);
        CHECK_EQ(w->c[0].info.error, 0);
        CHECK_EQ(w->c[0].info.first_unacked, 3);
        CHECK_EQ(w->c[0].info.next_id, 3);
        CHECK_EQ(w->sv[0].info.error, 0);
        world_free(w);
    }
}

/* pure_link_abort closes at once and says what the peer may not have. */
static void test_abort_reports_unacked(void)
{
    world *w = world_new(7);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    static uint8_t big[1 << 20];
    CHECK_EQ(pure_link_send(w->c[0].link, big, sizeof big), 0);
    pure_link *l = w->c[0].link;
    CHECK_EQ(pure_link_abort(l, PURE_CLOSE_APP + 3, "gone"), 0);
    CHECK_EQ(w->c[0].closes, 1);
    CHECK_EQ(w->c[0].info.first_unacked, 0);
    CHECK_EQ(w->c[0].info.next_id, 1);
    CHECK(sim_run(w->s, closed_both0, w, 5 * SIM_S));
    CHECK_EQ(w->sv[0].messages, 0);
    CHECK_EQ(w->sv[0].info.error, PURE_ERESET);
    CHECK_EQ(w->sv[0].info.peer_code, PURE_CLOSE_APP + 3);
    /* codes 1..0xff are Pure's own: an application cannot send them */
    world_free(w);
}

static void test_close_codes_checked(void)
{
    world *w = world_new(12);
    connect_one(w, 0);
    CHECK_EQ(pure_link_close(w->c[0].link, 1, "x"), PURE_EINVAL);
    CHECK_EQ(pure_link_abort(w->c[0].link, 0xff, "x"), PURE_EINVAL);
    CHECK_EQ(pure_link_close(NULL, 0, "x"), PURE_EINVAL);
    CHECK_EQ(w->c[0].closes, 0);
    world_free(w);
}

static uint64_t packets_out(world *w, int ep)
{
    pure_ctx_stats st;
    pure_ctx_stats_get(sim_ctx(w->s, ep), &st);
    return st.datagrams_out;
}

/* A client waiting for a reply notices a dead server though its request was acknowledged and
 * nothing is in flight: its probe after idle_timeout/2 (1 s) of silence goes unanswered for
 * idle_timeout (2 s). Before, the link was still open 8 s after the server stopped. */
static void test_dead_server_found_while_waiting(void)
{
    world *w = world_new(8);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    CHECK_EQ(pure_link_send(w->c[0].link, "request", 7), 0);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 100 * SIM_MS); /* delivered and acknowledged */
    CHECK_EQ(w->sv[0].messages, 1);
    uint64_t last_heard = w->c[0].link->last_recv;
    uint64_t killed = sim_now(w->s);
    sim_kill(w->s, w->srv);
    CHECK(sim_run(w->s, closed_c0, w, killed + 10 * SIM_S));
    CHECK_EQ(w->c[0].info.error, PURE_ETIMEDOUT);
    CHECK(w->c[0].closed_at <= last_heard + 3 * SIM_S + 10 * SIM_MS);
    printf("dead server found %.2f s after its last packet (idle_timeout 2 s)\n",
           (double)(w->c[0].closed_at - last_heard) / 1e9);
    world_free(w);
}

/* The same after a quiet spell longer than idle_timeout, with no timer on either side: the
 * request's time is when it went out, not the last time the context had been given (which
 * pure_link_send, on the per-message path, does not refresh). Before, the watch counted from that
 * stale time, was over before it began, and the link stayed open for ever. */
static void test_dead_server_found_after_quiet(void)
{
    world *w = world_new(13);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 20 * SIM_S);
    CHECK_EQ(pure_ctx_deadline(sim_ctx(w->s, w->cli)), UINT64_MAX);
    CHECK_EQ(pure_link_send(w->c[0].link, "request", 7), 0);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 100 * SIM_MS);
    CHECK_EQ(w->sv[0].messages, 1);
    uint64_t last_heard = w->c[0].link->last_recv;
    sim_kill(w->s, w->srv);
    CHECK(sim_run(w->s, closed_c0, w, sim_now(w->s) + 10 * SIM_S));
    CHECK_EQ(w->c[0].info.error, PURE_ETIMEDOUT);
    CHECK(w->c[0].closed_at <= last_heard + 3 * SIM_S + 10 * SIM_MS);
    world_free(w);
}

/* With the server alive, the watch ends: after idle_timeout the link keeps no timer and sends
 * nothing (an idle link costs nothing), and at most two PINGs were spent. */
static void test_watch_ends_on_idle_link(void)
{
    world *w = world_new(9);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    CHECK_EQ(pure_link_send(w->c[0].link, "request", 7), 0);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 100 * SIM_MS);
    uint64_t before = packets_out(w, w->cli);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 10 * SIM_S);
    uint64_t mid = packets_out(w, w->cli);
    CHECK(mid - before <= 2);
    CHECK_EQ(pure_ctx_deadline(sim_ctx(w->s, w->cli)), UINT64_MAX);
    CHECK_EQ(pure_ctx_deadline(sim_ctx(w->s, w->srv)), UINT64_MAX);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 3600 * SIM_S);
    CHECK_EQ(packets_out(w, w->cli), mid);
    CHECK_EQ(w->c[0].closes, 0);
    CHECK_EQ(w->sv[0].closes, 0);
    world_free(w);
}

/* A graceful close towards a dead peer ends with PURE_ETIMEDOUT and the unacknowledged ids. */
static void test_graceful_close_to_dead_peer(void)
{
    world *w = world_new(10);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    sim_kill(w->s, w->srv);
    uint64_t t0 = sim_now(w->s);
    static uint8_t big[300000];
    CHECK_EQ(pure_link_send(w->c[0].link, big, sizeof big), 0);
    CHECK_EQ(pure_link_close(w->c[0].link, 0, "bye"), 0);
    CHECK(sim_run(w->s, closed_c0, w, t0 + 10 * SIM_S));
    CHECK_EQ(w->c[0].info.error, PURE_ETIMEDOUT);
    CHECK_EQ(w->c[0].info.first_unacked, 0);
    CHECK_EQ(w->c[0].info.next_id, 1);
    CHECK(w->c[0].closed_at <= t0 + 2 * SIM_S + 10 * SIM_MS);
    world_free(w);
}

/* Nothing at the address, or a responder with another key: the client's error comes within the
 * handshake timeout (3 s here). */
static void test_connect_errors_within_handshake_timeout(void)
{
    world *w = world_new(11);
    pure_addr nowhere = sim_addr(w->s, w->srv);
    nowhere.bytes[3] = 99; /* no endpoint there */
    uint8_t key[32];
    memset(key, 7, sizeof key);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), &nowhere,
                          pure_ctx_public_key(sim_ctx(w->s, w->srv)), "svc", &w->c[0],
                          &w->c[0].link, 0),
             0);
    pure_addr to = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), &to, key, "svc", &w->c[1], &w->c[1].link, 0), 0);
    sim_run(w->s, NULL, NULL, 10 * SIM_S);
    CHECK_EQ(w->c[0].closes, 1);
    CHECK_EQ(w->c[0].info.error, PURE_ETIMEDOUT);
    CHECK(w->c[0].closed_at <= 3 * SIM_S + 10 * SIM_MS);
    CHECK_EQ(w->c[1].closes, 1);
    CHECK_EQ(w->c[1].info.error, PURE_EKEY);
    CHECK(w->c[1].closed_at <= 3 * SIM_S + 10 * SIM_MS);
    printf("no responder: %s after %.2f s; wrong key: %s after %.2f s\n",
           pure_strerror(w->c[0].info.error), (double)w->c[0].closed_at / 1e9,
           pure_strerror(w->c[1].info.error), (double)w->c[1].closed_at / 1e9);
    world_free(w);
}

/* A message sent after the link's send list was flushed and everything was acknowledged goes
 * out at once: pure_link_send's fast path (link.c) may not append to a link that is off the send
 * list, or the message waits for whatever puts the link back (here nothing would). Then a run
 * of small messages, most through the fast path, arrives whole and in order. */
static int sv0_has(void *arg)
{
    return W->sv[0].messages >= *(int *)arg;
}

static void test_send_after_flush_goes_out(void)
{
    world *w = world_new(11);
    connect_one(w, 0);
    CHECK(sim_run(w->s, established0, w, 5 * SIM_S));
    pure_link *l = w->c[0].link;
    CHECK_EQ(pure_link_send(l, "one", 3), 0);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 200 * SIM_MS); /* delivered and acknowledged */
    CHECK_EQ(w->sv[0].messages, 1);
    CHECK_EQ(pure_link_backlog(l), 0);
    uint64_t t0 = sim_now(w->s);
    CHECK_EQ(pure_link_send(l, "two", 3), 1);
    int want = 2;
    CHECK(sim_run(w->s, sv0_has, &want, t0 + 30 * SIM_MS)); /* one way is 10 ms */
    CHECK_EQ(w->sv[0].messages, 2);
    sim_run(w->s, NULL, NULL, sim_now(w->s) + 200 * SIM_MS);
    /* again, now with a run of messages each side of a flush */
    uint8_t m[61] = {0};
    for (int round = 0; round < 3; round++) {
        t0 = sim_now(w->s);
        for (int i = 0; i < 100; i++)
            CHECK(pure_link_send(l, m, sizeof m) >= 0);
        want += 100;
        CHECK(sim_run(w->s, sv0_has, &want, t0 + 30 * SIM_MS));
        CHECK_EQ(w->sv[0].messages, want);
        sim_run(w->s, NULL, NULL, sim_now(w->s) + 200 * SIM_MS);
    }
    world_free(w);
}

int main(void)
{
    RUN(test_ack_fills_small_packet_then_ping);
    RUN(test_no_message_after_abort);
    RUN(test_no_message_after_client_abort);
    RUN(test_ctx_free_reports_every_link);
    RUN(test_graceful_close_sends_everything);
    RUN(test_abort_reports_unacked);
    RUN(test_close_codes_checked);
    RUN(test_dead_server_found_while_waiting);
    RUN(test_watch_ends_on_idle_link);
    RUN(test_dead_server_found_after_quiet);
    RUN(test_graceful_close_to_dead_peer);
    RUN(test_connect_errors_within_handshake_timeout);
    RUN(test_send_after_flush_goes_out);
    return pure_test_finish();
}
