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
#include "support/talloc.h"
#include "tparams.h"
#include "test.h"

#define NCH 6 /* channels 0..5 used by the soak */

typedef struct cx {
    sim *s;
    int cli, srv;
    pure_link *cl, *sl;
    int echo_ch;          /* the server echoes this channel's messages back on it (-1: none) */
    int echo_all;         /* the server echoes every message on its channel; both check */
    uint64_t echo_failed; /* echo_all: echoes the server's link refused (queue full) */
    uint8_t *dg_seen;     /* datagrams the server got, by id (a byte each) */
    int abort_after;      /* the server aborts once it has this many of channel 3 (0: no) */
    int close_error;      /* the client's on_closed */
    int64_t pre_send_rc;  /* pure_link_send_on's result before the handshake (pre_send_channel) */
    uint64_t close_first[NCH], close_next[NCH];
    pure_datagram_stats close_dg; /* the client's datagram stats as its on_closed read them */
    uint64_t dg_bad, dg_dup, dg_count;
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
    if (c->echo_all) {
        if (ch >= NCH || !check(d, len, ch, c->next_rx[side][ch]))
            c->bad++;
        if (ch < NCH) {
            c->next_rx[side][ch]++;
            c->received[side][ch]++;
        }
        if (side == 1 && pure_link_send_on(l, ch, d, len) < 0)
            c->echo_failed++;
        return;
    }
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
    if (side == 1 && ch == 3 && c->abort_after && c->received[1][3] == (uint64_t)c->abort_after) {
        pure_link_abort(l, PURE_CLOSE_APP, "enough");
        return;
    }
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

/* A datagram: id u32 | bytes derived from the id; the server checks it whole and new. */
static void dg_fill(uint8_t *m, size_t len, uint32_t id)
{
    memcpy(m, &id, 4);
    for (size_t i = 4; i < len; i++)
        m[i] = (uint8_t)(id * 13 + i);
}

static void on_datagram(pure_link *l, void *user, const uint8_t *d, size_t len)
{
    cx *c = user;
    uint32_t id;
    if (l != c->sl || len < 4 || !c->dg_seen) {
        c->dg_bad++;
        return;
    }
    memcpy(&id, d, 4);
    for (size_t i = 4; i < len; i++)
        if (d[i] != (uint8_t)(id * 13 + i)) {
            c->dg_bad++;
            return;
        }
    if (id >= 100000 || c->dg_seen[id]++)
        c->dg_dup++;
    c->dg_count++;
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
        if (l == c->cl) {
            c->close_error = info->error;
            for (uint32_t ch = 0; ch < NCH; ch++)
                pure_link_channel_unacked(l, ch, &c->close_first[ch], &c->close_next[ch]);
            pure_link_datagram_stats(l, &c->close_dg);
        }
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
                                  .on_channel_acked = on_channel_acked,
                                  .on_datagram = on_datagram};

static uint32_t srv_max_channels = 16;
static uint32_t srv_max_datagram = 65535;
static uint64_t srv_max_rx_memory; /* 0: the default */
static uint32_t cli_version = PURE_SETTINGS_VERSION;

/* The server announces 16 channels and 65535-byte datagrams whatever its settings say. */
static int srv_claims;
/* cx_new sends a message on this channel (if not 0) before the handshake completes. */
static uint32_t pre_send_channel;

static int use_talloc; /* both sides allocate through the test allocator (support/talloc.h) */

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
            st.max_channels = srv_max_channels, st.max_datagram_size = srv_max_datagram;
        if (server && srv_max_rx_memory) /* both sides: the client's limit must fit too */
            st.max_receive_memory = srv_max_rx_memory;
        if (srv_max_rx_memory)
            st.max_message_size = 65536, st.recv_window = 65536;
        else
            st.version = cli_version;
        if (use_talloc)
            st.alloc = t_alloc, st.free = t_free, st.realloc = NULL;
        int ep = sim_add(c->s, &st);
        if (server && srv_claims) { /* a peer that announces more than it takes (a liar or a bug) */
            pure_test_wire tw = {.set_announce = 1,
                                 .announce = {.max_channels = 16,
                                              .max_datagram_size = 65535,
                                              .features = PURE_TP_F_ECN}};
            pure_test_set_wire(sim_ctx(c->s, ep), &tw);
        }
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
    if (pre_send_channel) /* before the handshake: the peer's limit is not known yet */
        c->pre_send_rc = pure_link_send_on(c->cl, pre_send_channel, "early", 5);
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
/* Channels 0..NCH-1 under loss, reordering and duplication, messages up to 300 KB: each channel's
 * messages all arrive in order and are all acknowledged. With fail_every, both sides' allocations
 * fail every fail_every-th time once the link is up (rings, ranges, records of packets sent,
 * reorder and assembly buffers, the channels themselves): a refused send is made again later,
 * and nothing sent is lost, nothing closes. */
static void soak_channels(unsigned fail_every)
{
    sim_path p = {.delay = 5 * SIM_MS,
                  .jitter = SIM_MS,
                  .loss = 0.05,
                  .reorder = 0.02,
                  .reorder_delay = 3 * SIM_MS,
                  .duplicate = 0.02};
    use_talloc = fail_every != 0;
    cx *c = cx_new(99, &p);
    use_talloc = 0;
    t_fail_every = fail_every;
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
    t_fail_every = 0;
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
    CHECK_EQ(t_live, 0);
}

static void test_soak_channels(void)
{
    soak_channels(0);
}

static void test_soak_channels_memory_failing(void)
{
    soak_channels(3);
    soak_channels(7);
}

/* Both directions carry channels 0..5 under loss (the server echoes everything): CHAN_CREDIT
 * frames then share packets with channel 0's data, and a lost one must bring both back (a lost
 * packet's channel 0 bytes were once forgotten when it also held CHAN_CREDIT). */
static void test_both_ways_lossy(void)
{
    sim_path p = {.delay = 5 * SIM_MS, .loss = 0.03};
    cx *c = cx_new(31, &p);
    CHECK(c->cl && c->sl);
    c->echo_all = 1;
    uint8_t *m = malloc(70000);
    uint64_t x = 777;
    for (int round = 0; round < 300 && c->cl; round++) {
        for (int k = 0; k < 4; k++) {
            x = sim_mix(x + 1);
            uint32_t ch = (uint32_t)(x % NCH);
            size_t len = 16 + (size_t)((x >> 8) % 60000);
            fill(m, len, ch, c->tx_seq[ch], 0);
            if (pure_link_send_on(c->cl, ch, m, len) >= 0)
                c->tx_seq[ch]++;
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 10 * SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 20 * SIM_S);
    CHECK_EQ(c->bad, 0);
    CHECK_EQ(c->echo_failed, 0);
    if (c->sl) {
        pure_link_stats st;
        pure_link_stats_get(c->sl, &st);
        printf("server: %llu packets lost, %llu probe timeouts\n",
               (unsigned long long)st.packets_lost, (unsigned long long)st.ptos);
    }
    for (int ch = 0; ch < NCH; ch++) {
        CHECK_EQ(c->received[1][ch], c->tx_seq[ch]);
        CHECK_EQ(c->received[0][ch], c->tx_seq[ch]);
    }
    free(m);
    cx_free(c);
}

/* Datagrams under loss, duplication and reordering, beside bulk on a channel: each arrives whole
 * or not at all, never twice; the sender's counters add up (sent = received + declared lost, as
 * no ACK range is ever forgotten here); nothing is sent again. */
static void test_datagrams_lossy(void)
{
    sim_path p = {.delay = 5 * SIM_MS,
                  .loss = 0.05,
                  .duplicate = 0.05,
                  .reorder = 0.02,
                  .reorder_delay = 2 * SIM_MS,
                  .bandwidth = 100000000ull,
                  .queue = 1 << 20};
    sim_path clean = {.delay = 5 * SIM_MS};
    cx *c = cx_new(17, &clean);
    CHECK(c->cl && c->sl);
    sim_set_path(c->s, c->cli, c->srv, &p);
    sim_set_path(c->s, c->srv, c->cli, &p);
    c->dg_seen = calloc(100000, 1);
    uint8_t *m = malloc(1 << 20);
    uint8_t d[1500];
    size_t max = pure_link_datagram_max(c->cl);
    CHECK(max >= 1169);
    CHECK_EQ(pure_link_send_datagram(c->cl, d, max + 1), PURE_EMSGSIZE);
    uint32_t id = 0;
    uint64_t refused = 0;
    for (int ms = 0; ms < 2000 && c->cl; ms++) {
        bulk_fill(c, 1, NULL, m);
        for (int k = 0; k < 5; k++) {
            size_t len = 4 + (size_t)(sim_mix(id) % (max - 3));
            dg_fill(d, len, id);
            int rc = pure_link_send_datagram(c->cl, d, len);
            if (rc == 0)
                id++;
            else
                refused += rc == PURE_EAGAIN;
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 2 * SIM_S);
    pure_datagram_stats a, b;
    pure_link_datagram_stats(c->cl, &a);
    pure_link_datagram_stats(c->sl, &b);
    printf("datagrams: %u queued, %llu refused, sent %llu, received %llu, lost %llu, dropped "
           "%llu; %llu bulk messages beside them\n",
           id, (unsigned long long)refused, (unsigned long long)a.sent,
           (unsigned long long)b.received, (unsigned long long)a.lost,
           (unsigned long long)a.dropped, (unsigned long long)c->received[1][1]);
    CHECK_EQ(c->dg_bad, 0);
    CHECK_EQ(c->dg_dup, 0);
    CHECK_EQ(b.received, c->dg_count);
    CHECK_EQ(a.sent, id);                               /* every queued one went out */
    CHECK(b.received < a.sent);                         /* some were lost ... */
    CHECK(a.lost > 0);                                  /* ... and declared so */
    CHECK(b.received + a.lost >= a.sent);               /* none vanished uncounted */
    CHECK(b.received + a.lost <= a.sent + a.sent / 20); /* reordered ones may be declared lost */
    CHECK_EQ(c->bad, 0);
    CHECK(c->received[1][1] > 5); /* the bulk went on beside them (~40 Mbit/s) */
    free(m);
    free(c->dg_seen);
    cx_free(c);
}

/* A receiver with a small budget (max_receive_memory 384 KiB; five channels whose windows grow
 * past it, messages up to 64 KiB, under loss and reordering): every message arrives whole, in
 * order per channel, once, and the channels' buffers stay within the budget and the one message
 * that may finish past it. Without the held grants, the one channel that may go past the budget
 * and the release of empty buffers when memory is short, the channels all waited on each other
 * (a few messages of each arrived). */
static void test_small_memory(void)
{
    sim_path p = {.delay = 5 * SIM_MS, .loss = 0.03, .reorder = 0.05, .reorder_delay = 3 * SIM_MS};
    srv_max_rx_memory = 384 << 10;
    cx *c = cx_new(23, &p);
    srv_max_rx_memory = 0;
    CHECK(c->cl && c->sl);
    uint8_t *m = malloc(65536);
    uint64_t x = 99;
    for (int round = 0; round < 200 && c->cl; round++) {
        for (int k = 0; k < 3; k++) {
            x = sim_mix(x + 1);
            uint32_t ch = 1 + (uint32_t)(x % (NCH - 1));
            size_t len = 16 + (size_t)((x >> 8) % (65536 - 16));
            fill(m, len, ch, c->tx_seq[ch], 0);
            if (pure_link_send_on(c->cl, ch, m, len) >= 0)
                c->tx_seq[ch]++;
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 5 * SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 60 * SIM_S);
    CHECK_EQ(c->bad, 0);
    for (int ch = 1; ch < NCH; ch++)
        CHECK_EQ(c->received[1][ch], c->tx_seq[ch]);
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sim_ctx(c->s, c->srv), &g, sizeof g);
    printf("small memory: peak %llu bytes held (budget %u)\n", (unsigned long long)g.rx_memory_peak,
           384u << 10);
    /* one channel may finish its message past it: its assembly buffer (old and new at once as it
     * doubles) and its ring, at most 3 x max_message_size */
    CHECK(g.rx_memory_peak <= (384u << 10) + 3 * 65536 + 4096);
    free(m);
    cx_free(c);
}

/* The peer's application aborts after reading 4 of 12 messages on channel 3 while the rest have
 * reached its Pure (all 12 in one flight): the CLOSE's CHAN_DELIVERED makes the client's report
 * exact per channel: ids 4..11 of channel 3 were not delivered, every message of channel 2 was
 * (ACKs alone would say all of channel 3 arrived, or nothing: neither is what the application
 * had). */
static void test_close_report_per_channel(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    cx *c = cx_new(41, &p);
    CHECK(c->cl && c->sl);
    c->abort_after = 4;
    uint8_t m[200];
    for (int i = 0; i < 5; i++) {
        fill(m, sizeof m, 2, c->tx_seq[2], 0);
        CHECK(pure_link_send_on(c->cl, 2, m, sizeof m) >= 0);
        c->tx_seq[2]++;
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 50 * SIM_MS); /* channel 2 arrives first */
    for (int i = 0; i < 12; i++) {
        fill(m, sizeof m, 3, c->tx_seq[3], 0);
        CHECK(pure_link_send_on(c->cl, 3, m, sizeof m) >= 0);
        c->tx_seq[3]++;
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 200 * SIM_MS);
    CHECK(c->closed && c->cl == NULL);
    CHECK_EQ(c->close_error, PURE_ERESET);
    CHECK_EQ(c->received[1][3], 4);
    CHECK_EQ(c->close_first[3], 4); /* exactly what the peer's application had */
    CHECK_EQ(c->close_next[3], 12);
    CHECK_EQ(c->close_first[2], 5);
    CHECK_EQ(c->close_next[2], 5);
    CHECK_EQ(c->bad, 0);
    cx_free(c);
}

/* Datagrams still queued when the link ends never go, and on_closed already sees them counted
 * dropped (sent + dropped = queued): before, they were counted only when the link was freed,
 * after on_closed, so its stats said 0 of 12 went or were dropped. An abort, and a graceful
 * close with bulk data ahead of them that the window holds back. */
static void test_datagrams_queued_at_close(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    for (int graceful = 0; graceful < 2; graceful++) {
        cx *c = cx_new(19, &p);
        CHECK(c->cl && c->sl);
        c->dg_seen = calloc(100000, 1);
        uint8_t d[1000];
        if (graceful) { /* a window's worth ahead, so some datagrams wait behind it */
            uint8_t *m = malloc(1 << 20);
            fill(m, 1 << 20, 0, 0, 0);
            CHECK(pure_link_send(c->cl, m, 1 << 20) >= 0);
            free(m);
        }
        for (uint32_t i = 0; i < 12; i++) {
            dg_fill(d, sizeof d, i);
            CHECK_EQ(pure_link_send_datagram(c->cl, d, sizeof d), 0);
        }
        if (graceful) {
            sim_run(c->s, NULL, NULL, sim_now(c->s) + 6 * SIM_MS); /* a few went */
            CHECK_EQ(pure_link_close(c->cl, 0, "done"), 0);
            pure_link_abort(c->cl, 0, "now"); /* the rest never will */
        } else {
            pure_link_abort(c->cl, 0, "now");
        }
        CHECK(c->closed && c->cl == NULL);
        CHECK_EQ(c->close_dg.sent + c->close_dg.dropped, 12);
        CHECK(c->close_dg.dropped > 0);
        sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_S);
        CHECK_EQ(c->dg_bad, 0);
        CHECK(c->dg_count <= c->close_dg.sent);
        free(c->dg_seen);
        cx_free(c);
    }
}

/* A side with max_datagram_size 0 takes none and says so in the handshake: its peer's
 * pure_link_send_datagram refuses (PURE_EINVAL) and the link carries on. A peer that announced
 * datagrams it does not take, and gets one, closes the link (protocol error). */
static void test_datagram_refused(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    srv_max_datagram = 0;
    cx *c = cx_new(8, &p);
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_datagram_max(c->sl), 0);
    CHECK_EQ(pure_link_send_datagram(c->sl, "x", 1), PURE_EINVAL);
    CHECK_EQ(pure_link_peer_datagram_max(c->cl), 0);
    CHECK_EQ(pure_link_datagram_max(c->cl), 0);
    CHECK_EQ(pure_link_send_datagram(c->cl, "abcd", 4), PURE_EINVAL);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
    CHECK(!c->closed);
    CHECK(c->cl && c->sl);
    cx_free(c);

    srv_claims = 1;
    c = cx_new(8, &p);
    srv_claims = 0;
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_send_datagram(c->cl, "abcd", 4), 0);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
    CHECK(c->closed);
    CHECK(c->cl == NULL && c->sl == NULL);
    cx_free(c);
    srv_max_datagram = 65535;
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
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_peer_channels(c->cl), 4); /* the server announced 4 */
    CHECK_EQ(pure_link_send_on(c->cl, 17, "x", 1), PURE_EINVAL);
    uint8_t m[20];
    fill(m, sizeof m, 4, 0, 0);
    CHECK_EQ(pure_link_send_on(c->cl, 4, m, sizeof m), 0);
    fill(m, sizeof m, 5, 0, 0);
    CHECK_EQ(pure_link_send_on(c->cl, 5, m, sizeof m), PURE_EINVAL);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
    CHECK(!c->closed);
    CHECK_EQ(c->bad, 0);
    cx_free(c);
    /* a server that announced more channels than its max_channels closes a link that uses them */
    srv_claims = 1;
    c = cx_new(5, &p);
    srv_claims = 0;
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_send_on(c->cl, 5, m, sizeof m), 0);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
    CHECK(c->closed);
    CHECK(c->cl == NULL && c->sl == NULL);
    CHECK_EQ(c->bad, 0);
    cx_free(c);
    /* a message on channel 6 taken while the handshake ran, to a server that turns out to take 4:
     * it can never go, so the link closes at once with PURE_EINVAL (not a silent stall) */
    pre_send_channel = 6;
    c = cx_new(5, &p);
    pre_send_channel = 0;
    CHECK_EQ(c->pre_send_rc, 0);
    CHECK(c->closed);
    CHECK_EQ(c->close_error, PURE_EINVAL);
    CHECK(c->cl == NULL);
    cx_free(c);
    /* and on channel 3, which it takes: delivered */
    pre_send_channel = 3;
    c = cx_new(5, &p);
    pre_send_channel = 0;
    CHECK_EQ(c->pre_send_rc, 0);
    CHECK(!c->closed);
    CHECK_EQ(c->received[1][3], 1);
    cx_free(c);
    srv_max_channels = 16;
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
    RUN(test_soak_channels_memory_failing);
    RUN(test_both_ways_lossy);
    RUN(test_small_memory);
    RUN(test_datagrams_lossy);
    RUN(test_datagram_refused);
    RUN(test_datagrams_queued_at_close);
    RUN(test_close_report_per_channel);
    RUN(test_channel_limit);
    return pure_test_finish();
}
