/* SPDX-License-Identifier: MIT */
/* fanout_test.c: shared sends and slow-peer detection end to end in the simulator. A broker
 * publishes each message once, as one shared buffer sent on every subscriber's link, over lossy,
 * reordering, duplicating paths: every healthy subscriber gets every message once, in order and
 * intact. One subscriber stops reading (pure_link_pause_recv): the broker sees it by its queue
 * statistics and its queue limit (PURE_EFULL) and drops it, while the others go on. One
 * subscriber's process dies: its link times out. Throughout, every shared buffer is released
 * exactly once: after every link that took it had it acknowledged, or dropped it (abort,
 * timeout), or when the broker's context is freed with links open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test.h"

#define SUBS 6
#define MSGS 3000
#define LIMIT (512u << 10)

typedef struct sub {
    int ep;
    pure_link *link;  /* the subscriber's side */
    pure_link *blink; /* the broker's side */
    uint64_t next;    /* next sequence number expected */
    uint64_t bad;
    int closed, slow, dead;
} sub;

static sim *S;
static int broker;
static sub subs[SUBS];
static int released[MSGS];
static int published;
static int dropped_slow;       /* links the broker dropped as slow */
static uint64_t slow_age_seen; /* oldest_age when it was dropped */
static int healthy_full;       /* PURE_EFULL or EAGAIN for a healthy subscriber: must not be */

static size_t msg_len(uint64_t seq)
{
    return 64 + (size_t)(sim_mix(seq) % 1400);
}

static void fill(uint8_t *m, size_t len, uint64_t seq)
{
    memcpy(m, &seq, 8);
    for (size_t i = 8; i < len; i++)
        m[i] = (uint8_t)(seq * 31 + i);
}

static void on_release(void *user, const void *data, size_t len)
{
    (void)len;
    uint64_t seq = (uint64_t)(uintptr_t)user;
    released[seq]++;
    free((void *)data);
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    (void)svc, (void)key, (void)user;
    for (int i = 0; i < SUBS; i++)
        if (!subs[i].blink && !subs[i].closed) {
            /* the subscribers connect one at a time: the i-th accepted is the i-th */
            subs[i].blink = l;
            pure_link_set_user(l, &subs[i]);
            CHECK_EQ(pure_link_set_queue_limit(l, LIMIT), 0);
            return 0;
        }
    return -1;
}

static void on_closed_broker(pure_link *l, void *user, const pure_close_info *info)
{
    (void)info;
    sub *s = user;
    if (s && s->blink == l)
        s->blink = NULL;
}

static void on_channel_message(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t len)
{
    (void)l;
    sub *s = user;
    uint64_t seq;
    if (ch != 1 || len < 8) {
        s->bad++;
        return;
    }
    memcpy(&seq, d, 8);
    uint8_t want[1500];
    if (seq != s->next || len != msg_len(seq) || (fill(want, len, seq), memcmp(want, d, len))) {
        if (getenv("FANOUT_DEBUG") && s->bad < 3)
            printf("sub %d: got seq %llu len %zu, want seq %llu len %zu\n", (int)(s - subs),
                   (unsigned long long)seq, len, (unsigned long long)s->next, msg_len(s->next));
        s->bad++;
    }
    s->next = seq + 1;
}

static void on_closed_sub(pure_link *l, void *user, const pure_close_info *info)
{
    (void)l;
    sub *s = user;
    if (getenv("FANOUT_DEBUG"))
        printf("subscriber %d closed: %s at %.3f s\n", (int)(s - subs), pure_strerror(info->error),
               (double)sim_now(S) / 1e9);
    if (s) {
        s->closed = 1;
        s->link = NULL;
    }
}

static const pure_callbacks BCB = {.on_accept = on_accept, .on_closed = on_closed_broker};
static const pure_callbacks SCB = {.on_channel_message = on_channel_message,
                                   .on_closed = on_closed_sub};

/* One message to every subscriber still connected, from one buffer. */
static void publish(uint64_t seq)
{
    size_t len = msg_len(seq);
    uint8_t *m = malloc(len);
    fill(m, len, seq);
    pure_shared *sh;
    CHECK_EQ(pure_shared_new(sim_ctx(S, broker), m, len, on_release, (void *)(uintptr_t)seq, &sh),
             0);
    for (int i = 0; i < SUBS; i++) {
        pure_link *bl = subs[i].blink;
        if (!bl)
            continue;
        int64_t rc = getenv("FANOUT_COPY") ? pure_link_send_on(bl, 1, m, len)
                                           : pure_link_send_shared(bl, 1, sh);
        if (rc >= 0)
            continue;
        if (!subs[i].slow) {
            if (getenv("FANOUT_DEBUG") && healthy_full < 5)
                printf("sub %d: seq %llu: %s\n", i, (unsigned long long)seq,
                       pure_strerror((int)rc));
            healthy_full++;
            continue;
        }
        /* the slow one: the limit says so, the statistics say how slow */
        CHECK_EQ(rc, PURE_EFULL);
        pure_queue_stats q;
        CHECK_EQ(pure_link_queue_stats(bl, PURE_CHANNEL_ALL, sim_now(S), &q, sizeof q), 0);
        CHECK(q.bytes + len + 4 > LIMIT);
        CHECK(q.full >= 1);
        if (q.oldest_age > 200 * SIM_MS) {
            slow_age_seen = q.oldest_age;
            dropped_slow++;
            CHECK_EQ(pure_link_abort(bl, PURE_CLOSE_APP, "too slow"), 0);
        }
    }
    pure_shared_unref(sh); /* the links hold theirs */
    published++;
}

static void test_fanout(void)
{
    S = sim_new(23);
    pure_settings st;
    pure_settings_default(&st);
    st.allow_any = 1;
    st.callbacks = &BCB;
    st.idle_timeout = 2 * SIM_S;
    broker = sim_add(S, &st);
    pure_ctx_add_service(sim_ctx(S, broker), "feed");
    sim_path lossy = {.delay = 10 * SIM_MS,
                      .jitter = 2 * SIM_MS,
                      .loss = 0.01,
                      .reorder = 0.02,
                      .reorder_delay = 5 * SIM_MS,
                      .duplicate = 0.01};
    for (int i = 0; i < SUBS; i++) {
        memset(&subs[i], 0, sizeof subs[i]);
        pure_settings cs;
        pure_settings_default(&cs);
        cs.callbacks = &SCB;
        cs.idle_timeout = 2 * SIM_S;
        subs[i].ep = sim_add(S, &cs);
        sim_set_path(S, broker, subs[i].ep, &lossy);
        sim_set_path(S, subs[i].ep, broker, &lossy);
        pure_addr to = sim_addr(S, broker);
        CHECK_EQ(pure_connect(sim_ctx(S, subs[i].ep), &to, pure_ctx_public_key(sim_ctx(S, broker)),
                              "feed", &subs[i], &subs[i].link, sim_now(S)),
                 0);
        sim_run(S, NULL, NULL, sim_now(S) + 100 * SIM_MS);
        CHECK(subs[i].blink != NULL);
    }
    subs[1].slow = 1;
    if (!getenv("FANOUT_NOPAUSE"))
        CHECK_EQ(pure_link_pause_recv(subs[1].link), 0); /* reads nothing more */
    subs[2].dead = 1;
    /* 6 Mbit/s of 64..1464-byte messages, one a millisecond: the slow one's 1 MiB of credit
     * and then the queue limit fill within two seconds */
    for (uint64_t seq = 0; seq < MSGS; seq++) {
        if (seq == MSGS - 100) /* too late to fill its queue: it times out */
            sim_kill(S, subs[2].ep);
        publish(seq);
        sim_run(S, NULL, NULL, sim_now(S) + SIM_MS);
    }
    sim_run(S, NULL, NULL,
            sim_now(S) + 5 * SIM_S); /* everything acknowledged; the dead one timed out */
    CHECK_EQ(healthy_full, 0);
    CHECK_EQ(dropped_slow, 1);
    CHECK(subs[1].blink == NULL && subs[1].closed);
    CHECK(subs[2].blink == NULL); /* timed out */
    for (int i = 0; i < SUBS; i++) {
        if (i == 1 || i == 2)
            continue;
        CHECK_EQ(subs[i].next, MSGS);
        CHECK_EQ(subs[i].bad, 0);
        CHECK(subs[i].blink != NULL);
        pure_queue_stats q;
        CHECK_EQ(pure_link_queue_stats(subs[i].blink, 1, sim_now(S), &q, sizeof q), 0);
        CHECK_EQ(q.bytes, 0);
        CHECK_EQ(q.messages, 0);
        CHECK_EQ(q.oldest_age, 0);
    }
    /* everything acknowledged or dropped: every buffer released, once */
    for (int i = 0; i < MSGS; i++)
        CHECK_EQ(released[i], 1);
    printf("fan-out: %d messages to %d subscribers; the slow one dropped at an oldest age of "
           "%.0f ms\n",
           published, SUBS, (double)slow_age_seen / 1e6);
    sim_free(S);
}

/* The context freed with links open and shared messages unacknowledged: released then, once. */
static void test_free_with_links_open(void)
{
    memset(released, 0, sizeof released);
    S = sim_new(5);
    pure_settings st;
    pure_settings_default(&st);
    st.allow_any = 1;
    st.callbacks = &BCB;
    broker = sim_add(S, &st);
    pure_ctx_add_service(sim_ctx(S, broker), "feed");
    for (int i = 0; i < SUBS; i++) {
        memset(&subs[i], 0, sizeof subs[i]);
        pure_settings cs;
        pure_settings_default(&cs);
        cs.callbacks = &SCB;
        subs[i].ep = sim_add(S, &cs);
        pure_addr to = sim_addr(S, broker);
        CHECK_EQ(pure_connect(sim_ctx(S, subs[i].ep), &to, pure_ctx_public_key(sim_ctx(S, broker)),
                              "feed", &subs[i], &subs[i].link, sim_now(S)),
                 0);
        sim_run(S, NULL, NULL, sim_now(S) + 100 * SIM_MS);
    }
    for (uint64_t seq = 0; seq < 50; seq++)
        publish(seq);
    sim_run(S, NULL, NULL, sim_now(S) + 5 * SIM_MS); /* on their way, none acknowledged */
    for (int i = 0; i < 50; i++)
        CHECK_EQ(released[i], 0);
    sim_free(S);
    for (int i = 0; i < 50; i++)
        CHECK_EQ(released[i], 1);
}

/* The limit's other half: after PURE_EFULL, on_writable comes once the link holds at most half
 * its limit, and sends go again. */
static int writable_calls;
static uint64_t writable_bytes;
static void on_writable(pure_link *l, void *user)
{
    (void)user;
    pure_queue_stats q;
    CHECK_EQ(pure_link_queue_stats(l, PURE_CHANNEL_ALL, sim_now(S), &q, sizeof q), 0);
    writable_bytes = q.bytes;
    writable_calls++;
}

static void test_writable_after_full(void)
{
    static const pure_callbacks wcb = {
        .on_accept = on_accept, .on_closed = on_closed_broker, .on_writable = on_writable};
    memset(subs, 0, sizeof subs);
    S = sim_new(9);
    pure_settings st;
    pure_settings_default(&st);
    st.allow_any = 1;
    st.callbacks = &wcb;
    broker = sim_add(S, &st);
    pure_ctx_add_service(sim_ctx(S, broker), "feed");
    pure_settings cs;
    pure_settings_default(&cs);
    cs.callbacks = &SCB;
    subs[0].ep = sim_add(S, &cs);
    pure_addr to = sim_addr(S, broker);
    CHECK_EQ(pure_connect(sim_ctx(S, subs[0].ep), &to, pure_ctx_public_key(sim_ctx(S, broker)),
                          "feed", &subs[0], &subs[0].link, sim_now(S)),
             0);
    sim_run(S, NULL, NULL, sim_now(S) + 100 * SIM_MS);
    pure_link *bl = subs[0].blink;
    CHECK(bl != NULL);
    CHECK_EQ(pure_link_set_queue_limit(bl, 20000), 0); /* on_accept set LIMIT: now 20 kB */
    uint8_t m[1000];
    memset(m, 7, sizeof m);
    int64_t rc = 0;
    int sent = 0;
    while ((rc = pure_link_send_on(bl, 2, m, sizeof m)) >= 0)
        sent++;
    CHECK_EQ(rc, PURE_EFULL);
    CHECK_EQ(sent, 19); /* 19 x 1004 bytes fit in 20,000; the 20th does not */
    CHECK_EQ(writable_calls, 0);
    sim_run(S, NULL, NULL, sim_now(S) + 200 * SIM_MS);
    CHECK_EQ(writable_calls, 1);
    CHECK(writable_bytes <= 10000);
    CHECK(pure_link_send_on(bl, 2, m, sizeof m) >= 0);
    sim_free(S);
}

int main(void)
{
    RUN(test_fanout);
    RUN(test_free_with_links_open);
    RUN(test_writable_after_full);
    return pure_test_finish();
}
