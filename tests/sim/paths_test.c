/* SPDX-License-Identifier: MIT */
/* paths_test: Pure through a bottleneck with a queue, in virtual time (issue #25): 50 Mbit/s,
 * 40 ms RTT, a drop-tail queue of Q packets (1 BDP = 170), 1,500 x 16 KiB. Before the pacing and
 * loss-response changes, a 10-packet queue gave 8.7 Mbit/s with 4.8% of Pure's packets lost
 * (GSO trains of up to 64 packets into the queue, and its drops taken for noise); random loss
 * with spare capacity must still cost almost nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test.h"

#define RATE 50000000ull
#define MSGS 1500
#define SIZE 16384

typedef struct result {
    double mbps;        /* the whole transfer, handshake and slow start included */
    double steady_mbps; /* from 1 s on */
    double loss_pct;    /* of the datagrams Pure sent on the bottleneck from 1 s on (slow
                           start's overshoot is once per transfer, not the steady state) */
} result;

typedef struct run {
    sim *s;
    uint64_t got, at_1s, done_at;
} run;

static run *R;

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    return 0;
}
static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    if (++R->got == MSGS)
        R->done_at = sim_now(R->s);
}
static const pure_callbacks cbs = {.on_accept = on_accept, .on_message = on_message};

static int all_in(void *arg)
{
    return R->got >= MSGS;
}

static result drain(uint64_t seed, uint64_t queue_packets, double loss)
{
    run r = {0};
    R = &r;
    r.s = sim_new(seed);
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    st.allow_any = 1;
    st.send_queue = 0;
    st.send_backlog = 64u << 20;
    int c = sim_add(r.s, &st), sv = sim_add(r.s, &st);
    pure_ctx_add_service(sim_ctx(r.s, sv), "svc");
    sim_path up = {
        .delay = 20 * SIM_MS, .bandwidth = RATE, .queue = queue_packets * 1500, .loss = loss};
    sim_path down = {.delay = 20 * SIM_MS, .bandwidth = RATE};
    sim_set_path(r.s, c, sv, &up);
    sim_set_path(r.s, sv, c, &down);
    pure_addr to = sim_addr(r.s, sv);
    pure_link *l;
    CHECK_EQ(pure_connect(sim_ctx(r.s, c), &to, pure_ctx_public_key(sim_ctx(r.s, sv)), "svc", NULL,
                          &l, 0),
             0);
    static uint8_t m[SIZE];
    for (int i = 0; i < MSGS; i++)
        CHECK(pure_link_send(l, m, sizeof m) >= 0);
    sim_run(r.s, NULL, NULL, 1 * SIM_S);
    r.at_1s = r.got;
    sim_stats at_1s = *sim_path_stats(r.s, c, sv);
    CHECK(sim_run(r.s, all_in, NULL, 120 * SIM_S));
    const sim_stats *ps = sim_path_stats(r.s, c, sv);
    result res;
    double bits = (double)(SIZE + 4) * 8;
    res.mbps = MSGS * bits / ((double)r.done_at / 1e9) / 1e6;
    res.steady_mbps = (double)(MSGS - r.at_1s) * bits / ((double)(r.done_at - SIM_S) / 1e9) / 1e6;
    res.loss_pct = 100.0 * (double)(ps->lost - at_1s.lost) / (double)(ps->sent - at_1s.sent);
    sim_free(r.s);
    return res;
}

static void show(const char *path, uint64_t seed, result r)
{
    printf(
        "  %-24s seed %llu: %5.1f Mbit/s (%5.1f from 1 s), %.2f%% of its packets lost from 1 s\n",
        path, (unsigned long long)seed, r.mbps, r.steady_mbps, r.loss_pct);
}

/* A switch's shallow buffer: Pure must fill most of the link without overflowing it. */
static void test_shallow_queue(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        result r = drain(seed, 10, 0);
        show("10-packet queue", seed, r);
        CHECK(r.steady_mbps >= 35.0); /* before: 8.7 */
        CHECK(r.loss_pct < 2.0);      /* before: 4.8% */
        r = drain(seed, 20, 0);
        show("20-packet queue", seed, r);
        CHECK(r.steady_mbps >= 38.0);
        CHECK(r.loss_pct < 2.0);
    }
}

/* From a quarter of the BDP up, the link is kept busy. */
static void test_deeper_queues(void)
{
    static const uint64_t q[] = {42, 170, 680};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        result r = drain(1, q[i], 0);
        char name[32];
        snprintf(name, sizeof name, "%llu-packet queue", (unsigned long long)q[i]);
        show(name, 1, r);
        CHECK(r.steady_mbps >= 45.0); /* 90% of the link */
    }
}

/* Random loss on a path with room: a retransmission, not the window (quinn and ngtcp2 keep
 * about a tenth of the link at 0.5%). */
static void test_random_loss_keeps_the_link(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        result r = drain(seed, 170, 0.005);
        show("1 BDP, 0.5% random loss", seed, r);
        CHECK(r.steady_mbps >= 35.0); /* 70% */
        r = drain(seed, 170, 0.02);
        show("1 BDP, 2% random loss", seed, r);
        CHECK(r.steady_mbps >= 25.0); /* 50% */
    }
}

int main(void)
{
    RUN(test_shallow_queue);
    RUN(test_deeper_queues);
    RUN(test_random_loss_keeps_the_link);
    return pure_test_finish();
}
