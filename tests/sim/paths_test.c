/* SPDX-License-Identifier: MIT */
/* paths_test: Pure through a bottleneck with a queue, in virtual time (issue #25): 50 Mbit/s,
 * 40 ms RTT, a drop-tail queue of Q packets (1 BDP = 170), 1,500 x 16 KiB. Before the pacing and
 * loss-response changes, a 10-packet queue gave 8.7 Mbit/s with 4.8% of Pure's packets lost
 * (GSO trains of up to 64 packets into the queue, and its drops taken for noise); random loss
 * with spare capacity must still cost almost nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "sim.h"
#include "sim_ref.h"
#include "test.h"

#define RATE 50000000ull
#define MSGS 1500
#define SIZE 16384

typedef struct result {
    double mbps;        /* the whole transfer, handshake and slow start included */
    double steady_mbps; /* from 1 s on */
    double loss_pct;    /* of the datagrams Pure sent on the bottleneck from 1 s on (slow
                           start's overshoot is once per transfer, not the steady state) */
    uint64_t lost;      /* datagrams lost on the bottleneck in the whole transfer */
    int size_fell;      /* the datagram size fell after the search had raised it (every 5 ms) */
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

/* The link's datagram size, sampled every 5 ms: did it ever fall below what the search had
 * reached? */
typedef struct size_watch {
    uint64_t top;
    int fell;
} size_watch;

/* Runs the drain until `until` or until every message is in, watching the datagram size. */
static void run_watching(run *r, pure_link *l, size_watch *w, uint64_t until)
{
    pure_link_stats ls;
    for (uint64_t t = sim_now(r->s) + 5 * SIM_MS; t <= until && !all_in(NULL); t += 5 * SIM_MS) {
        sim_run(r->s, all_in, NULL, t);
        pure_link_stats_get(l, &ls);
        w->fell |= ls.datagram_size < w->top;
        if (ls.datagram_size > w->top)
            w->top = ls.datagram_size;
    }
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
    size_watch w = {0};
    run_watching(&r, l, &w, 1 * SIM_S);
    r.at_1s = r.got;
    sim_stats at_1s = *sim_path_stats(r.s, c, sv);
    run_watching(&r, l, &w, 120 * SIM_S);
    CHECK(all_in(NULL));
    const sim_stats *ps = sim_path_stats(r.s, c, sv);
    result res;
    double bits = (double)(SIZE + 4) * 8;
    res.mbps = MSGS * bits / ((double)r.done_at / 1e9) / 1e6;
    res.steady_mbps = (double)(MSGS - r.at_1s) * bits / ((double)(r.done_at - SIM_S) / 1e9) / 1e6;
    res.loss_pct = 100.0 * (double)(ps->lost - at_1s.lost) / (double)(ps->sent - at_1s.sent);
    res.lost = ps->lost;
    res.size_fell = w.fell;
    sim_free(r.s);
    return res;
}

static void show(const char *path, uint64_t seed, result r)
{
    printf("  %-24s seed %llu: %5.1f Mbit/s (%5.1f from 1 s), %.2f%% of its packets lost from 1 s, "
           "%llu in all%s\n",
           path, (unsigned long long)seed, r.mbps, r.steady_mbps, r.loss_pct,
           (unsigned long long)r.lost, r.size_fell ? "; the datagram size fell" : "");
}

/* A switch's shallow buffer: Pure must fill most of the link without overflowing it. Slow start's
 * overshoot is paid once: it ends at what the path delivered (recovery.c, exit_at_hold), not at
 * 0.7 of a window that doubled while the loss was on its way back (before: 274-276 packets lost
 * at 10 packets, 364 at 20); and ACKs every millisecond (acktr.h, PURE_ACK_SPACING) free the
 * window as the path delivers (before: 37.1-38.4 Mbit/s from 1 s at 10 packets, 43.0 at 20). */
static void test_shallow_queue(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        result r = drain(seed, 10, 0);
        show("10-packet queue", seed, r);
        CHECK(r.steady_mbps >= 43.0); /* before: 8.7, then 37.1-38.4 */
        CHECK(r.loss_pct < 2.0);      /* before: 4.8% */
        CHECK(r.lost <= 250);         /* before: 274-276 */
        CHECK(!r.size_fell);          /* congestion is no black hole (pmtud.c) */
        r = drain(seed, 20, 0);
        show("20-packet queue", seed, r);
        CHECK(r.steady_mbps >= 45.0); /* before: 43.0 */
        CHECK(r.loss_pct < 2.0);
        CHECK(r.lost <= 250); /* before: 364 */
        CHECK(!r.size_fell);  /* before: slow start's tail fell to 1200 */
    }
}

/* From a quarter of the BDP up, the link is kept busy; at a quarter BDP the whole transfer, slow
 * start's overshoot included, gets 90% of it (before: 44.4 Mbit/s, 366 packets lost). */
static void test_deeper_queues(void)
{
    static const uint64_t q[] = {42, 170, 680};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        result r = drain(1, q[i], 0);
        char name[32];
        snprintf(name, sizeof name, "%llu-packet queue", (unsigned long long)q[i]);
        show(name, 1, r);
        CHECK(r.steady_mbps >= 45.0); /* 90% of the link */
        CHECK(!r.size_fell);          /* before: at 42 packets, slow start's tail fell to 1200 */
        if (q[i] == 42) {
            CHECK(r.mbps >= 45.0);
            CHECK(r.lost <= 250);
        }
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
        CHECK(!r.size_fell);
        r = drain(seed, 170, 0.02);
        show("1 BDP, 2% random loss", seed, r);
        CHECK(r.steady_mbps >= 25.0); /* 50% */
    }
}

/* ---- flows through one shared bottleneck (sim_bottleneck_add), measured from 5 to 20 s ---- */

#define WARM (5 * SIM_S)
#define END (20 * SIM_S)

/* A Pure flow that always has data: a client pumping 16 KiB messages, a server counting. */
typedef struct flow {
    sim *s;
    int cli, srv;
    pure_link *cl;
    uint64_t bytes;
} flow;

static uint8_t fmsg[SIZE];

static void fpump(flow *f)
{
    while (f->cl && pure_link_send(f->cl, fmsg, sizeof fmsg) >= 0)
        ;
}
static int f_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    pure_link_set_user(l, u);
    return 0;
}
static void f_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    ((flow *)u)->bytes += n;
}
static void f_writable(pure_link *l, void *u)
{
    fpump(u);
}
static const pure_callbacks fcbs = {
    .on_accept = f_accept, .on_message = f_message, .on_writable = f_writable};

static void route(sim *s, int a, int b, int fwd, int rev)
{
    sim_path d = {.delay = 20 * SIM_MS};
    sim_set_path(s, a, b, &d);
    sim_set_path(s, b, a, &d);
    sim_path_bottleneck(s, a, b, fwd);
    sim_path_bottleneck(s, b, a, rev);
}

static void flow_add(flow *f, sim *s, int fwd, int rev)
{
    memset(f, 0, sizeof *f);
    f->s = s;
    for (int server = 0; server < 2; server++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &fcbs;
        st.user = f;
        st.allow_any = 1;
        st.crypto = &pure_crypto_null;
        int ep = sim_add(s, &st);
        if (server) {
            f->srv = ep;
            pure_ctx_add_service(sim_ctx(s, ep), "bulk");
        } else {
            f->cli = ep;
        }
    }
    route(s, f->cli, f->srv, fwd, rev);
    pure_addr to = sim_addr(s, f->srv);
    CHECK_EQ(pure_connect(sim_ctx(s, f->cli), &to, pure_ctx_public_key(sim_ctx(s, f->srv)), "bulk",
                          f, &f->cl, sim_now(s)),
             0);
    fpump(f);
}

static double mbit(uint64_t bytes)
{
    return (double)bytes * 8 / ((double)(END - WARM) / 1e9) / 1e6;
}

static double jain(double a, double b)
{
    return (a + b) * (a + b) / (2 * (a * a + b * b));
}

/* A path's bottleneck: 50 Mbit/s, `packets` deep (0: 1000 with CoDel). */
static sim *bottleneck_sim(uint64_t seed, uint32_t packets, int *fwd, int *rev)
{
    sim *s = sim_new(seed);
    sim_bottleneck b = {.rate = RATE, .limit_packets = packets ? packets : 1000, .codel = !packets};
    *fwd = sim_bottleneck_add(s, &b);
    *rev = sim_bottleneck_add(s, &b);
    return s;
}

/* CoDel (RFC 8289, 5 ms target): Pure alone keeps the median queueing delay at the target or
 * below, as the QUIC stacks do (before: 11.8 ms, 99% of its CoDel drops taken as random). */
static void test_codel_keeps_queue_short(void)
{
    int fwd, rev;
    sim *s = bottleneck_sim(1, 0, &fwd, &rev);
    flow f;
    flow_add(&f, s, fwd, rev);
    sim_run(s, NULL, NULL, WARM);
    uint64_t b0 = f.bytes;
    sim_bottleneck_stats_reset(s, fwd);
    sim_run(s, NULL, NULL, END);
    sim_bottleneck_stats bs;
    sim_bottleneck_stats_get(s, fwd, &bs);
    double m = mbit(f.bytes - b0);
    printf("  CoDel: %.1f Mbit/s, queueing delay median %.1f ms, p95 %.1f ms\n", m,
           (double)bs.qdelay_median / 1e6, (double)bs.qdelay_p95 / 1e6);
    CHECK(bs.qdelay_median <= 5 * SIM_MS);
    CHECK(m >= 43.0); /* and still about 90% of the link */
    sim_free(s);
}

/* CoDel from a cold start, slow start included (the first 4.5 s, as long as a 1,500 x 16 KiB
 * drain takes): slow start leaves a queue of 60-140 ms before CoDel's drops end it, and the
 * decaying maximum of queueing delay that loss_is_congestion weighs against kept CoDel's later
 * drops at 8-16 ms looking random for a second and more (before PURE_QUEUE_CAP: 40 of 53 drops
 * taken as random, median queueing 5.3 ms over the run, as on real sockets). */
static void test_codel_after_slow_start(void)
{
    int fwd, rev;
    sim *s = bottleneck_sim(1, 0, &fwd, &rev);
    flow f;
    flow_add(&f, s, fwd, rev);
    sim_run(s, NULL, NULL, 4500 * SIM_MS);
    sim_bottleneck_stats bs;
    sim_bottleneck_stats_get(s, fwd, &bs);
    pure_link_stats st;
    pure_link_stats_get(f.cl, &st);
    printf(
        "  CoDel from a cold start: queueing median %.1f ms, %llu losses, %llu taken as random\n",
        (double)bs.qdelay_median / 1e6, (unsigned long long)st.packets_lost,
        (unsigned long long)st.random_losses);
    CHECK(bs.qdelay_median <= 4 * SIM_MS);
    CHECK(st.packets_lost > 0);
    CHECK(st.random_losses * 4 <= st.packets_lost);
    sim_free(s);
}

/* CoDel marking ECN-capable packets CE instead of dropping them (fq_codel's default): Pure hears
 * the marks as congestion, so the queue stays near the target with no loss at all. Before Pure
 * read ECN, the marks changed nothing: CoDel marked on while the queue grew to its 1000-packet
 * limit (a median near 200 ms) and tail drops took over. */
static void test_codel_ecn_marks(void)
{
    int fwd, rev;
    sim *s = sim_new(1);
    sim_bottleneck b = {.rate = RATE, .limit_packets = 1000, .codel = 1, .ecn = 1};
    fwd = sim_bottleneck_add(s, &b);
    rev = sim_bottleneck_add(s, &b);
    flow f;
    flow_add(&f, s, fwd, rev);
    sim_run(s, NULL, NULL, WARM);
    uint64_t b0 = f.bytes;
    sim_bottleneck_stats_reset(s, fwd);
    sim_run(s, NULL, NULL, END);
    sim_bottleneck_stats bs;
    sim_bottleneck_stats_get(s, fwd, &bs);
    pure_link_stats cs;
    pure_link_stats_get(f.cl, &cs);
    double m = mbit(f.bytes - b0);
    printf("  CoDel with ECN: %.1f Mbit/s, queueing median %.1f ms, p95 %.1f ms; %llu marked, "
           "%llu dropped (CoDel) + %llu (tail); the sender heard of %llu marks, lost %llu\n",
           m, (double)bs.qdelay_median / 1e6, (double)bs.qdelay_p95 / 1e6,
           (unsigned long long)bs.marked_codel, (unsigned long long)bs.dropped_codel,
           (unsigned long long)bs.dropped_queue, (unsigned long long)cs.ecn_ce_reported,
           (unsigned long long)cs.packets_lost);
    CHECK(bs.marked_codel > 0);
    CHECK(cs.ecn_ce_reported > 0);
    CHECK(bs.qdelay_median <= 5 * SIM_MS);
    CHECK_EQ(bs.dropped_queue, 0);
    CHECK(bs.dropped_codel <= bs.marked_codel / 10); /* marks, not drops, do the work */
    CHECK(m >= 43.0);
    sim_free(s);
}

/* Two Pure flows, the second starting 1 s after the first, share a bottleneck fairly. */
static void test_two_flows_share(void)
{
    static const uint32_t queues[] = {20, 42, 0, 680};
    static const char *names[] = {"20-packet queue", "0.25 BDP", "CoDel", "4 BDP"};
    for (size_t i = 0; i < sizeof queues / sizeof *queues; i++) {
        int fwd, rev;
        sim *s = bottleneck_sim(2, queues[i], &fwd, &rev);
        flow a, b;
        flow_add(&a, s, fwd, rev);
        sim_run(s, NULL, NULL, 1 * SIM_S);
        flow_add(&b, s, fwd, rev);
        sim_run(s, NULL, NULL, WARM);
        uint64_t a0 = a.bytes, b0 = b.bytes;
        sim_run(s, NULL, NULL, END);
        double x = mbit(a.bytes - a0), y = mbit(b.bytes - b0);
        printf("  two Pure flows, %s: %.1f + %.1f Mbit/s, Jain %.3f\n", names[i], x, y, jain(x, y));
        /* Behind 4 BDP a CUBIC cycle is seconds long and the first flow's head start lasts (two
         * reference CUBIC flows: 0.88 in paths_sim --controls); the second flow must not be held
         * at the share it measured when its slow start ended (recovery.c, exit_at_hold only on
         * a shallow queue: 0.70 without that condition). */
        CHECK(jain(x, y) >= (queues[i] == 680 ? 0.9 : 0.95));
        CHECK(x + y >= 42.5); /* 85% of the link */
        sim_free(s);
    }
}

/* Pure beside a CUBIC flow of the simulator's own (sim_ref: ACK-clocked, unpaced) under CoDel,
 * over six seeds: their shares within 1.5x of each other in sum (each seed within 2x), the link
 * used. Before: Pure took 46.7 Mbit/s to CUBIC's 2.1. (Behind a 20-packet drop-tail queue Pure
 * still takes 1.65x in sum: docs/congestion.md.) */
static void test_beside_cubic_under_codel(void)
{
    double sum_p = 0, sum_c = 0;
    for (uint64_t seed = 3; seed <= 8; seed++) {
        int fwd, rev;
        sim *s = bottleneck_sim(seed, 0, &fwd, &rev);
        sim_ref *r = sim_ref_new(s, SIM_REF_CUBIC, 1472, 0);
        route(s, sim_ref_sender(r), sim_ref_receiver(r), fwd, rev);
        flow f;
        flow_add(&f, s, fwd, rev);
        sim_run(s, NULL, NULL, WARM);
        sim_ref_stats r0, r1;
        sim_ref_stats_get(r, &r0);
        uint64_t f0 = f.bytes;
        sim_run(s, NULL, NULL, END);
        sim_ref_stats_get(r, &r1);
        double p = mbit(f.bytes - f0), c = mbit(r1.bytes_received - r0.bytes_received);
        printf("  Pure beside CUBIC under CoDel, seed %llu: %.1f and %.1f Mbit/s (%.2fx)\n",
               (unsigned long long)seed, p, c, p / c);
        CHECK(p <= 2 * c && c <= 2 * p);
        CHECK(p + c >= 42.5);
        sum_p += p;
        sum_c += c;
        sim_free(s);
        sim_ref_free(r);
    }
    printf("  in sum: %.2fx\n", sum_p / sum_c);
    CHECK(sum_p <= 1.5 * sum_c && sum_c <= 1.5 * sum_p);
}

int main(void)
{
    RUN(test_shallow_queue);
    RUN(test_deeper_queues);
    RUN(test_random_loss_keeps_the_link);
    RUN(test_codel_keeps_queue_short);
    RUN(test_codel_after_slow_start);
    RUN(test_codel_ecn_marks);
    RUN(test_two_flows_share);
    RUN(test_beside_cubic_under_codel);
    return pure_test_finish();
}
