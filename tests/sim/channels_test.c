/* SPDX-License-Identifier: MIT */
/* channels_test: channels in the simulator. Head-of-line independence under loss (small
 * requests on one channel while another carries bulk: their round trips stay close to those of
 * the requests alone, and far below those with the bulk on the same channel), priorities (an
 * urgent channel's message overtakes megabytes queued on another), and every message on every
 * channel whole, in order per channel, once, under loss, reordering and duplication. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test.h"

#define NCH 6 /* channels 0..5 used by the soak */

typedef struct cx {
    sim *s;
    int cli, srv;
    pure_link *cl, *sl;
    int echo_ch;              /* the server echoes this channel's messages back on it (-1: none) */
    uint64_t next_rx[2][NCH]; /* [side][channel]: the next sequence number expected */
    uint64_t tx_seq[NCH];     /* the client's next sequence number per channel */
    uint64_t acked[NCH];      /* on_channel_acked: the client's last id + 1 per channel */
    uint64_t bad_acks;        /* on_channel_acked going backwards or on channel 0 */
    uint64_t bad, received[2][NCH];
    uint64_t *rtt;
    size_t n_rtt, cap_rtt;
    int closed;
    uint64_t urgent_at; /* when the urgent message arrived (priorities) */
    uint64_t bulk_msgs_before_urgent;
} cx;

/* A message: seq u64 | sent-at u64 | bytes derived from (channel, seq). */
static void fill(uint8_t *m, size_t len, uint32_t ch, uint64_t seq, uint64_t now)
{
    memcpy(m, &seq, 8);
    memcpy(m + 8, &now, 8);
    for (size_t i = 16; i < len; i++)
        m[i] = (uint8_t)(seq * 31 + i + ch * 7);
}

static int check(const uint8_t *m, size_t len, uint32_t ch, uint64_t want)
{
    uint64_t seq;
    if (len < 16)
        return 0;
    memcpy(&seq, m, 8);
    if (seq != want)
        return 0;
    for (size_t i = 16; i < len; i++)
        if (m[i] != (uint8_t)(seq * 31 + i + ch * 7))
            return 0;
    return 1;
}

static void got(pure_link *l, cx *c, uint32_t ch, const uint8_t *d, size_t len)
{
    int side = l == c->sl;
    if (ch >= NCH || side == 0) {
        if (side == 0 && ch < NCH && len == 61) { /* an echo: its own order, not checked */
            uint64_t sent;
            memcpy(&sent, d + 8, 8);
            if (c->n_rtt == c->cap_rtt) {
                c->cap_rtt = c->cap_rtt ? 2 * c->cap_rtt : 1024;
                c->rtt = realloc(c->rtt, c->cap_rtt * sizeof *c->rtt);
            }
            c->rtt[c->n_rtt++] = sim_now(c->s) - sent;
            return;
        }
        c->bad++;
        return;
    }
    if (!check(d, len, ch, c->next_rx[side][ch]))
        c->bad++;
    c->next_rx[side][ch]++;
    c->received[side][ch]++;
    if (len != 61) {
        /* not a request: nothing to echo or time */
    } else if (side == 1 && (int)ch == c->echo_ch) {
        int64_t rc = pure_link_send_on(l, ch, d, len);
        if (rc < 0)
            c->bad++;
    }
    if (side == 1 && ch == 3 && !c->urgent_at)
        c->urgent_at = sim_now(c->s), c->bulk_msgs_before_urgent = c->received[1][1];
}

static void on_message(pure_link *l, void *user, const uint8_t *d, size_t len)
{
    got(l, user, 0, d, len);
}
static void on_channel_message(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t len)
{
    got(l, user, ch, d, len);
}
static void on_channel_acked(pure_link *l, void *user, uint32_t ch, uint64_t through)
{
    cx *c = user;
    if (l != c->cl || ch == 0 || ch >= NCH || through + 1 <= c->acked[ch])
        c->bad_acks++;
    else
        c->acked[ch] = through + 1;
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    (void)svc, (void)key;
    cx *c = user;
    c->sl = l;
    pure_link_set_user(l, c);
    return 0;
}
static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)info;
    cx *c = user;
    if (c) {
        c->closed = 1;
        if (l == c->cl)
            c->cl = NULL;
        if (l == c->sl)
            c->sl = NULL;
    }
}

static const pure_callbacks CB = {.on_accept = on_accept,
                                  .on_message = on_message,
                                  .on_closed = on_closed,
                                  .on_channel_message = on_channel_message,
                                  .on_channel_acked = on_channel_acked};

static uint32_t srv_max_channels = 16;
static uint32_t cli_version = PURE_SETTINGS_VERSION;

static cx *cx_new(uint64_t seed, const sim_path *p)
{
    cx *c = calloc(1, sizeof *c);
    c->s = sim_new(seed);
    c->echo_ch = -1;
    for (int server = 0; server < 2; server++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &CB;
        st.user = c;
        st.allow_any = 1;
        if (server)
            st.max_channels = srv_max_channels;
        else
            st.version = cli_version;
        int ep = sim_add(c->s, &st);
        if (server) {
            c->srv = ep;
            pure_ctx_add_service(sim_ctx(c->s, ep), "svc");
        } else {
            c->cli = ep;
        }
    }
    sim_set_path(c->s, c->cli, c->srv, p);
    sim_set_path(c->s, c->srv, c->cli, p);
    pure_addr to = sim_addr(c->s, c->srv);
    pure_connect(sim_ctx(c->s, c->cli), &to, pure_ctx_public_key(sim_ctx(c->s, c->srv)), "svc", c,
                 &c->cl, 0);
    sim_run(c->s, NULL, NULL, 200 * SIM_MS);
    return c;
}

static void cx_free(cx *c)
{
    sim_free(c->s);
    free(c->rtt);
    free(c);
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(cx *c, double q)
{
    if (!c->n_rtt)
        return UINT64_MAX;
    qsort(c->rtt, c->n_rtt, sizeof *c->rtt, cmp64);
    return c->rtt[(size_t)(q * (double)(c->n_rtt - 1))];
}

/* Keeps channel bulk_ch's backlog full of 1 MiB messages. */
static void bulk_fill(cx *c, int bulk_ch, uint64_t *seq, uint8_t *m)
{
    while (c->cl) {
        (void)seq;
        fill(m, 1 << 20, (uint32_t)bulk_ch, c->tx_seq[bulk_ch], sim_now(c->s));
        if (pure_link_send_on(c->cl, (uint32_t)bulk_ch, m, 1 << 20) < 0)
            break;
        c->tx_seq[bulk_ch]++;
    }
}

/* 61-byte requests on req_ch every ms for `dur`, echoed; bulk on bulk_ch (-1: none). Returns the
 * p99 round trip in ns. */
static uint64_t avg_packet; /* the client's average datagram in the last hol_run */

static uint64_t hol_run(int bulk_ch, int req_ch, double loss, uint64_t *p50)
{
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 200000000ull, .queue = 1 << 20, .loss = loss};
    cx *c = cx_new(42, &p);
    CHECK(c->cl && c->sl);
    c->echo_ch = req_ch;
    uint8_t *m = malloc(1 << 20);
    uint64_t bseq = 0, end = sim_now(c->s) + 3 * SIM_S;
    /* requests the application could not hand over yet (the channel's queue is full of bulk):
     * they go as soon as it takes them, each timed from when it was due */
    static uint64_t due[4096];
    size_t head = 0, tail = 0;
    while (sim_now(c->s) < end && c->cl) {
        due[tail++ % 4096] = sim_now(c->s);
        while (head < tail) {
            uint8_t r[61];
            fill(r, sizeof r, (uint32_t)req_ch, c->tx_seq[req_ch], due[head % 4096]);
            if (pure_link_send_on(c->cl, (uint32_t)req_ch, r, sizeof r) < 0)
                break;
            c->tx_seq[req_ch]++;
            head++;
        }
        if (bulk_ch >= 0)
            bulk_fill(c, bulk_ch, &bseq, m);
        sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_S); /* the last echoes */
    CHECK_EQ(c->bad, 0);
    CHECK(c->n_rtt > 2000 || (bulk_ch == req_ch && c->n_rtt > 10));
    *p50 = pct(c, 0.5);
    if (c->cl) {
        pure_link_stats a;
        pure_link_stats_get(c->cl, &a);
        avg_packet = a.packets_sent ? a.bytes_sent / a.packets_sent : 0;
    }
    if (getenv("CHAN_DEBUG") && c->cl) {
        pure_link_stats a, b;
        pure_link_stats_get(c->cl, &a);
        pure_link_stats_get(c->sl, &b);
        printf("client: sent %llu lost %llu retx %llu ptos %llu random %llu cwnd %llu; server "
               "received %llu sent %llu\n",
               (unsigned long long)a.packets_sent, (unsigned long long)a.packets_lost,
               (unsigned long long)a.bytes_retransmitted, (unsigned long long)a.ptos,
               (unsigned long long)a.random_losses, (unsigned long long)a.cwnd,
               (unsigned long long)b.packets_received, (unsigned long long)b.packets_sent);
    }
    uint64_t p99 = pct(c, 0.99);
    printf("bulk on %d, requests on %d, loss %.2f: %zu round trips, p50 %.1f ms p99 %.1f ms, "
           "%llu bulk messages\n",
           bulk_ch, req_ch, loss, c->n_rtt, (double)*p50 / 1e6, (double)p99 / 1e6,
           (unsigned long long)c->received[1][bulk_ch < 0 ? 0 : bulk_ch]);
    free(m);
    cx_free(c);
    return p99;
}

/* The target: at 1% loss, the requests' p99 with bulk on another channel is at most
 * twice their p99 alone; with the bulk on their own channel it is far worse (what channels
 * end). */
static void test_hol_independence(void)
{
    uint64_t p50a, p50s, p50x;
    if (getenv("CHAN_DEBUG")) {
        hol_run(1, 2, 0, &p50a);
        hol_run(0, 0, 0, &p50a);
    }
    uint64_t alone = hol_run(-1, 2, 0.01, &p50a);
    uint64_t separate = hol_run(1, 2, 0.01, &p50s);
    /* the bulk goes in full packets though the small requests on another channel start bursts
     * (a padded packet joining a burst of small ones once cut the bulk to their size) */
    CHECK(avg_packet > 1000);
    uint64_t same = hol_run(0, 0, 0.01, &p50x);
    CHECK(separate <= 2 * alone);
    CHECK(same > 2 * separate);
}

/* An urgent channel's message queued behind megabytes on another channel leaves at once. */
static void test_priority_overtakes(void)
{
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 100000000ull, .queue = 1 << 20};
    cx *c = cx_new(7, &p);
    CHECK(c->cl && c->sl);
    uint8_t *m = malloc(1 << 20);
    uint64_t bseq = 0;
    CHECK_EQ(pure_link_set_priority(c->cl, 3, 0, 0), 0);
    CHECK_EQ(pure_link_set_priority(c->cl, 1, 6, 1), 0);
    bulk_fill(c, 1, &bseq, m); /* 8 MiB backlog, 256 KiB not yet sent */
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 30 * SIM_MS);
    bulk_fill(c, 1, &bseq, m);
    uint64_t at = sim_now(c->s);
    uint8_t r[61];
    fill(r, sizeof r, 3, 0, at);
    CHECK_EQ(pure_link_send_on(c->cl, 3, r, sizeof r), 0);
    sim_run(c->s, NULL, NULL, at + 200 * SIM_MS);
    CHECK(c->urgent_at != 0);
    printf("urgent message after %.1f ms (one way 10 ms), %llu bulk messages before it\n",
           (double)(c->urgent_at - at) / 1e6, (unsigned long long)c->bulk_msgs_before_urgent);
    CHECK(c->urgent_at - at < 25 * SIM_MS); /* the next packet, not after the queued megabytes */
    CHECK_EQ(c->bad, 0);
    free(m);
    cx_free(c);
}

/* Messages of random sizes on channels 0..5 under loss, reordering and duplication: every one
 * arrives whole, in order on its channel, once; then a graceful close reports nothing unacked. */
static void test_soak_channels(void)
{
    sim_path p = {.delay = 5 * SIM_MS,
                  .jitter = SIM_MS,
                  .loss = 0.05,
                  .reorder = 0.02,
                  .reorder_delay = 3 * SIM_MS,
                  .duplicate = 0.02};
    cx *c = cx_new(99, &p);
    CHECK(c->cl && c->sl);
    uint8_t *m = malloc(300000);
    uint64_t seq[NCH] = {0};
    uint64_t x = 12345;
    for (int round = 0; round < 400 && c->cl; round++) {
        for (int k = 0; k < 8; k++) {
            x = sim_mix(x + 1);
            uint32_t ch = (uint32_t)(x % NCH);
            size_t len = 16 + (size_t)((x >> 8) % ((x >> 40) % 16 == 0 ? 300000 - 16 : 3000));
            fill(m, len, ch, seq[ch], 0);
            if (pure_link_send_on(c->cl, ch, m, len) >= 0)
                seq[ch]++;
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 5 * SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 30 * SIM_S);
    CHECK_EQ(c->bad, 0);
    for (int ch = 0; ch < NCH; ch++) {
        CHECK_EQ(c->received[1][ch], seq[ch]);
        uint64_t first = 0, next = 0;
        if (c->cl) {
            CHECK_EQ(pure_link_channel_unacked(c->cl, (uint32_t)ch, &first, &next), 0);
            CHECK_EQ(first, seq[ch]);
            CHECK_EQ(next, seq[ch]);
            if (ch > 0)
                CHECK_EQ(c->acked[ch], seq[ch]); /* on_channel_acked told of every message */
        }
    }
    CHECK(c->cl && pure_link_backlog(c->cl) == 0);
    CHECK_EQ(c->bad_acks, 0);
    free(m);
    cx_free(c);
}

/* A peer that sends on a channel above this side's max_channels is closed with a protocol error;
 * a context with max_channels 0 refuses pure_link_send_on for any channel but 0. */
static int client_error;
static void on_closed_err(pure_link *l, void *user, const pure_close_info *info)
{
    (void)l, (void)user;
    client_error = info->error;
}

static void test_channel_limit(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    srv_max_channels = 4;
    cx *c = cx_new(5, &p);
    srv_max_channels = 16;
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_send_on(c->cl, 17, "x", 1), PURE_EINVAL);
    uint8_t m[20];
    fill(m, sizeof m, 4, 0, 0);
    CHECK_EQ(pure_link_send_on(c->cl, 4, m, sizeof m), 0);
    fill(m, sizeof m, 5, 0, 0);
    CHECK_EQ(pure_link_send_on(c->cl, 5, m, sizeof m), 0);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
    CHECK(c->closed);
    CHECK(c->cl == NULL && c->sl == NULL);
    CHECK_EQ(c->bad, 0);
    cx_free(c);
    /* an older caller (settings version 5) has no channels */
    cli_version = 5;
    c = cx_new(6, &p);
    cli_version = PURE_SETTINGS_VERSION;
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_send_on(c->cl, 1, "x", 1), PURE_EINVAL);
    CHECK(pure_link_send_on(c->cl, 0, "x", 1) >= 0);
    cx_free(c);
    (void)on_closed_err;
    (void)client_error;
}

int main(void)
{
    RUN(test_hol_independence);
    RUN(test_priority_overtakes);
    RUN(test_soak_channels);
    RUN(test_channel_limit);
    return pure_test_finish();
}
