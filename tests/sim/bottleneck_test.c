/* SPDX-License-Identifier: MIT */
/* bottleneck_test: the path emulator's parts in virtual time. CoDel's control law (tools/codel.h,
 * shared with udpfwd), the simulator's shared bottleneck (rate shaping, drop-tail in packets and
 * in bytes, flows of different endpoints competing in one FIFO, CoDel at dequeue, queueing-delay
 * statistics), and the reference flow (sim_ref.h): alone it fills a bottleneck with a 1 BDP
 * queue, two of them share it fairly. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "../../tools/codel.h"
#include "sim.h"
#include "sim_ref.h"
#include "test.h"

/* ---- CoDel alone: a queue whose head always waited `sojourn` ---- */

/* Dequeues one packet every `step` ns from t for `len` ns, each having waited `sojourn` with
 * `left` bytes behind it; records the times of the drops. Returns the number of drops. */
static int codel_feed(struct codel *c, uint64_t *t, uint64_t len, uint64_t step, uint64_t sojourn,
                      uint64_t left, uint64_t *drops, int cap)
{
    int n = 0;
    for (uint64_t end = *t + len; *t < end; *t += step) {
        int v;
        /* a drop takes the next packet from the queue at the same instant */
        while ((v = codel_judge(c, *t, sojourn, left, false)) == CODEL_DROP)
            if (n < cap)
                drops[n++] = *t;
    }
    return n;
}

static void test_codel_control_law(void)
{
    struct codel c;
    codel_init(&c, 0, 0, 1500, false);
    CHECK_EQ(c.target, 5000000);
    CHECK_EQ(c.interval, 100000000);
    uint64_t t = SIM_S, drops[200];
    /* below target: never a drop */
    CHECK_EQ(codel_feed(&c, &t, SIM_S, SIM_MS, 4 * SIM_MS, 100000, drops, 200), 0);
    /* above target but at most one MTU left queued: never a drop */
    CHECK_EQ(codel_feed(&c, &t, SIM_S, SIM_MS, 50 * SIM_MS, 1500, drops, 200), 0);
    /* above target with a standing queue: the first drop one interval after it began, then
     * each drop (the count-th) followed by the next interval/sqrt(count) later (to the 1 ms
     * dequeue step) */
    uint64_t t0 = t;
    int n = codel_feed(&c, &t, 2 * SIM_S, SIM_MS, 20 * SIM_MS, 100000, drops, 200);
    CHECK(n > 5);
    CHECK(drops[0] >= t0 + 100 * SIM_MS && drops[0] <= t0 + 101 * SIM_MS);
    for (int i = 1; i < n; i++) {
        double want = 100e6 / sqrt((double)i), gap = (double)(drops[i] - drops[i - 1]);
        CHECK(fabs(gap - want) <= 1.0e6);
        if (fabs(gap - want) > 1.0e6)
            fprintf(stderr, "drop %d: gap %.0f ns, want %.0f\n", i, gap, want);
    }
    /* the spacing shrinks: ~2 s of dropping takes ~(2 s / 0.2 s)^2 = 100 drops */
    CHECK(n >= 80 && n <= 120);
    CHECK_EQ(c.drops, (uint64_t)n);
    CHECK_EQ(c.count, (uint32_t)n);
    /* one packet below target ends the episode */
    CHECK_EQ(codel_judge(&c, t, 1 * SIM_MS, 100000, false), CODEL_PASS);
    CHECK(!c.dropping);
    /* above again soon after: the next episode starts from the count it had reached (the drops
     * since the last episode began), so the first gap is already short */
    t += SIM_MS;
    uint64_t t1 = t;
    uint32_t before = c.count;
    int m = codel_feed(&c, &t, 300 * SIM_MS, SIM_MS, 20 * SIM_MS, 100000, drops, 200);
    CHECK(m >= 2);
    CHECK(drops[0] >= t1 + 100 * SIM_MS && drops[0] <= t1 + 101 * SIM_MS);
    CHECK(c.count >= before - 1);
    double want = 100e6 / sqrt((double)before - 1);
    CHECK(m >= 2 && fabs((double)(drops[1] - drops[0]) - want) <= 1.0e6);
    /* the queue found empty resets the state */
    codel_empty(&c);
    CHECK(!c.dropping);
    CHECK_EQ(c.first_above, 0);
}

static void test_codel_ecn_marks(void)
{
    struct codel c;
    codel_init(&c, 0, 0, 1500, true);
    uint64_t t = SIM_S;
    int marks = 0, drops = 0;
    for (uint64_t end = t + SIM_S; t < end; t += SIM_MS) {
        int v = codel_judge(&c, t, 20 * SIM_MS, 100000, true);
        marks += v == CODEL_MARK;
        drops += v == CODEL_DROP;
    }
    CHECK(marks > 5);
    CHECK_EQ(drops, 0);
    CHECK_EQ(c.marks, (uint64_t)marks);
    /* a packet that is not ECN-capable is dropped all the same */
    t += 200 * SIM_MS;
    int v;
    int dropped = 0;
    for (int i = 0; i < 300; i++, t += SIM_MS)
        while ((v = codel_judge(&c, t, 20 * SIM_MS, 100000, false)) == CODEL_DROP)
            dropped++;
    CHECK(dropped > 0);
}

static void test_qdelay_hist(void)
{
    static struct qdelay_hist h;
    memset(&h, 0, sizeof h);
    CHECK_EQ(qdelay_quantile(&h, 0.5), 0);
    for (int i = 1; i <= 100; i++)
        qdelay_add(&h, (uint64_t)i * SIM_MS);
    CHECK(llabs((long long)qdelay_quantile(&h, 0.5) - 50 * (long long)SIM_MS) <= 50000);
    CHECK(llabs((long long)qdelay_quantile(&h, 0.95) - 95 * (long long)SIM_MS) <= 50000);
    CHECK_EQ(h.max_ns, 100 * SIM_MS);
    qdelay_add(&h, 100 * SIM_S); /* beyond the last bucket: counted there */
    CHECK_EQ(h.n, 101);
}

/* ---- constant-rate agents ---- */

typedef struct cbr {
    sim *s;
    int ep, to;
    uint64_t every, next, stop;
    uint32_t size;
    int poisson; /* exponential gaps of mean `every` instead of a fixed period */
    uint64_t sent;
} cbr;

typedef struct sink {
    uint64_t packets, bytes, first, last;
} sink;

static void cbr_read(void *arg, int from, const uint8_t *d, size_t n, uint64_t now)
{
    (void)arg, (void)from, (void)d, (void)n, (void)now;
}

static uint64_t cbr_deadline(void *arg)
{
    cbr *c = arg;
    return c->next < c->stop ? c->next : UINT64_MAX;
}

static void cbr_timeout(void *arg, uint64_t now)
{
    cbr *c = arg;
    uint8_t d[1472] = {0x80};
    while (c->next <= now && c->next < c->stop) {
        sim_send(c->s, c->ep, c->to, d, c->size);
        c->sent++;
        if (c->poisson)
            c->next += (uint64_t)(-log(1 - sim_rand01(c->s)) * (double)c->every) + 1;
        else
            c->next += c->every;
    }
}

static void sink_read(void *arg, int from, const uint8_t *d, size_t n, uint64_t now)
{
    sink *k = arg;
    (void)from, (void)d;
    if (k->packets++ == 0)
        k->first = now;
    k->last = now;
    k->bytes += n;
}

static uint64_t sink_deadline(void *arg)
{
    (void)arg;
    return UINT64_MAX;
}

static void sink_timeout(void *arg, uint64_t now)
{
    (void)arg, (void)now;
}

static const sim_agent_ops cbr_ops = {cbr_read, cbr_deadline, cbr_timeout};
static const sim_agent_ops sink_ops = {sink_read, sink_deadline, sink_timeout};

/* A stream at twice the bottleneck's rate: it leaves at the rate, the excess is dropped at the
 * tail and counted, the queue never holds more than its limit, and a datagram's queueing delay is
 * at most the limit's serialisation time. */
static void droptail_case(uint32_t limit_packets, uint64_t limit_bytes, uint32_t want_max)
{
    sim *s = sim_new(1);
    sink k = {0};
    cbr c = {.s = s, .size = 1000, .every = 400000 /* 20 Mbit/s */, .stop = 2 * SIM_S};
    c.ep = sim_add_agent(s, &cbr_ops, &c);
    c.to = sim_add_agent(s, &sink_ops, &k);
    sim_bottleneck b = {
        .rate = 10000000, .limit_packets = limit_packets, .limit_bytes = limit_bytes};
    int bn = sim_bottleneck_add(s, &b);
    CHECK_EQ(bn, 0);
    sim_path_bottleneck(s, c.ep, c.to, bn);
    sim_run(s, NULL, NULL, 3 * SIM_S);
    sim_bottleneck_stats st;
    sim_bottleneck_stats_get(s, bn, &st);
    CHECK_EQ(c.sent, 5000);
    CHECK_EQ(st.enqueued, c.sent);
    CHECK_EQ(st.forwarded + st.dropped_queue, c.sent);
    CHECK_EQ(st.dropped_codel, 0);
    CHECK_EQ(k.packets, st.forwarded);
    CHECK_EQ(st.max_packets, want_max);
    /* the rate: 1000 bytes every 800 us, to within one datagram */
    double rate = (double)(k.bytes - 1000) * 8 / ((double)(k.last - k.first) / 1e9);
    CHECK(fabs(rate - 10e6) < 0.001 * 10e6);
    CHECK(st.dropped_queue >= 2400 && st.dropped_queue <= 2500 - want_max + 1);
    CHECK(st.qdelay_max <= (uint64_t)want_max * 800000);
    CHECK(st.qdelay_p95 >= (uint64_t)want_max * 800000 - 850000);
    const sim_stats *ps = sim_path_stats(s, c.ep, c.to);
    CHECK_EQ(ps->lost, st.dropped_queue);
    sim_free(s);
}

static void test_droptail_rate(void)
{
    droptail_case(20, 0, 20);
    droptail_case(0, 10000, 10);
    droptail_case(50, 10000, 10); /* whichever limit is tighter */
}

/* Two endpoints' streams through one bottleneck: they share its rate and its queue. */
static void test_shared_between_endpoints(void)
{
    sim *s = sim_new(2);
    sink k1 = {0}, k2 = {0};
    cbr a = {.s = s,
             .size = 1000,
             .every = 1333333 /* 6 Mbit/s */,
             .stop = 4 * SIM_S,
             .poisson = 1}; /* a fixed period would let one stream take the queue's free slots */
    cbr b = a;
    a.ep = sim_add_agent(s, &cbr_ops, &a);
    a.to = sim_add_agent(s, &sink_ops, &k1);
    b.next = 600000; /* not in lockstep */
    b.ep = sim_add_agent(s, &cbr_ops, &b);
    b.to = sim_add_agent(s, &sink_ops, &k2);
    sim_bottleneck cfg = {.rate = 10000000, .limit_packets = 30};
    int bn = sim_bottleneck_add(s, &cfg);
    sim_path_bottleneck(s, a.ep, a.to, bn);
    sim_path_bottleneck(s, b.ep, b.to, bn);
    sim_run(s, NULL, NULL, 5 * SIM_S);
    sim_bottleneck_stats st;
    sim_bottleneck_stats_get(s, bn, &st);
    CHECK_EQ(st.enqueued, a.sent + b.sent);
    CHECK_EQ(k1.packets + k2.packets, st.forwarded);
    /* together 12 Mbit/s into 10: ~5 each, and the queue they share is full */
    double r1 = (double)k1.bytes * 8 / 4, r2 = (double)k2.bytes * 8 / 4;
    CHECK(r1 + r2 > 9.9e6 && r1 + r2 < 10.2e6);
    CHECK(fabs(r1 - r2) < 0.1 * (r1 + r2));
    printf("  6 + 6 Mbit/s into 10: %.2f and %.2f Mbit/s out\n", r1 / 1e6, r2 / 1e6);
    CHECK_EQ(st.max_packets, 30);
    sim_free(s);
}

/* ---- the reference flow ---- */

#define RATE 50000000ull
#define BDP_PKTS 170 /* 50 Mbit/s x 40 ms / 1472 bytes */

static sim_ref *ref_flow(sim *s, int cc, int bn, uint64_t start)
{
    sim_ref *r = sim_ref_new(s, cc, 1472, start);
    sim_path p = {.delay = 20 * SIM_MS};
    sim_set_path(s, sim_ref_sender(r), sim_ref_receiver(r), &p);
    sim_set_path(s, sim_ref_receiver(r), sim_ref_sender(r), &p);
    sim_path_bottleneck(s, sim_ref_sender(r), sim_ref_receiver(r), bn);
    return r;
}

static uint64_t ref_bytes(const sim_ref *r)
{
    sim_ref_stats st;
    sim_ref_stats_get(r, &st);
    return st.bytes_received;
}

/* Alone, each controller fills a 50 Mbit/s, 40 ms bottleneck with a 1 BDP drop-tail queue to
 * more than 90% (measured from 5 s to 30 s, after slow start's overshoot). */
static void test_ref_alone_fills(void)
{
    for (int cc = SIM_REF_NEWRENO; cc <= SIM_REF_CUBIC; cc++) {
        sim *s = sim_new(3);
        sim_bottleneck b = {.rate = RATE, .limit_packets = BDP_PKTS};
        int bn = sim_bottleneck_add(s, &b);
        sim_ref *r = ref_flow(s, cc, bn, 0);
        sim_run(s, NULL, NULL, 5 * SIM_S);
        uint64_t b0 = ref_bytes(r);
        sim_run(s, NULL, NULL, 30 * SIM_S);
        double util = (double)(ref_bytes(r) - b0) * 8 / 25.0 / (double)RATE;
        sim_ref_stats st;
        sim_ref_stats_get(r, &st);
        sim_bottleneck_stats bs;
        sim_bottleneck_stats_get(s, bn, &bs);
        printf("  %s alone: %.1f%% of the link, %" PRIu64 " lost, %" PRIu64
               " RTOs, min RTT %.1f ms, queue p50 %.1f ms\n",
               cc ? "CUBIC" : "NewReno", util * 100, st.lost, st.rtos, (double)st.min_rtt / 1e6,
               (double)bs.qdelay_median / 1e6);
        CHECK(util > 0.90);
        CHECK(util <= 1.0);
        CHECK(st.lost > 0); /* it did find the queue's limit */
        CHECK(st.min_rtt >= 40 * SIM_MS && st.min_rtt < 41 * SIM_MS);
        sim_ref_free(r);
        sim_free(s);
    }
}

/* Two flows of the same controller, the second starting 2 s later, share the bottleneck fairly:
 * Jain's index over the last 30 s at least 0.9, and together they still fill it. */
static void test_ref_pair_fair(void)
{
    for (int cc = SIM_REF_NEWRENO; cc <= SIM_REF_CUBIC; cc++) {
        sim *s = sim_new(4);
        sim_bottleneck b = {.rate = RATE, .limit_packets = BDP_PKTS};
        int bn = sim_bottleneck_add(s, &b);
        sim_ref *r1 = ref_flow(s, cc, bn, 0), *r2 = ref_flow(s, cc, bn, 2 * SIM_S);
        sim_run(s, NULL, NULL, 10 * SIM_S);
        uint64_t a0 = ref_bytes(r1), b0 = ref_bytes(r2);
        sim_run(s, NULL, NULL, 40 * SIM_S);
        double x = (double)(ref_bytes(r1) - a0), y = (double)(ref_bytes(r2) - b0);
        double jain = (x + y) * (x + y) / (2 * (x * x + y * y));
        double util = (x + y) * 8 / 30.0 / (double)RATE;
        printf("  two %s flows: %.1f and %.1f Mbit/s, Jain %.3f, %.1f%% of the link\n",
               cc ? "CUBIC" : "NewReno", x * 8 / 30e6, y * 8 / 30e6, jain, util * 100);
        CHECK(jain >= 0.9);
        CHECK(util > 0.9);
        sim_ref_free(r1);
        sim_ref_free(r2);
        sim_free(s);
    }
}

/* CoDel at the bottleneck: with a deep (4 BDP) queue a flow alone keeps it standing (the median
 * queueing delay is tens of ms); under CoDel the median is near the 5 ms target and the link is
 * still mostly full. */
static void test_ref_codel(void)
{
    for (int codel = 0; codel <= 1; codel++) {
        sim *s = sim_new(5);
        sim_bottleneck b = {.rate = RATE, .limit_packets = 4 * BDP_PKTS, .codel = codel};
        int bn = sim_bottleneck_add(s, &b);
        sim_ref *r = ref_flow(s, SIM_REF_NEWRENO, bn, 0);
        sim_run(s, NULL, NULL, 5 * SIM_S);
        sim_bottleneck_stats_reset(s, bn);
        uint64_t b0 = ref_bytes(r);
        sim_run(s, NULL, NULL, 30 * SIM_S);
        sim_bottleneck_stats st;
        sim_bottleneck_stats_get(s, bn, &st);
        double util = (double)(ref_bytes(r) - b0) * 8 / 25.0 / (double)RATE;
        printf("  NewReno, 4 BDP queue%s: %.1f%% of the link, queueing p50 %.1f ms p95 %.1f ms, "
               "%" PRIu64 " CoDel drops, %" PRIu64 " tail drops\n",
               codel ? " + CoDel" : "", util * 100, (double)st.qdelay_median / 1e6,
               (double)st.qdelay_p95 / 1e6, st.dropped_codel, st.dropped_queue);
        if (codel) {
            CHECK(st.dropped_codel > 0);
            CHECK(st.qdelay_median < 10 * SIM_MS);
            CHECK(util > 0.75);
        } else {
            CHECK_EQ(st.dropped_codel, 0);
            CHECK(st.qdelay_median > 30 * SIM_MS);
        }
        sim_ref_free(r);
        sim_free(s);
    }
}

int main(void)
{
    RUN(test_codel_control_law);
    RUN(test_codel_ecn_marks);
    RUN(test_qdelay_hist);
    RUN(test_droptail_rate);
    RUN(test_shared_between_endpoints);
    RUN(test_ref_alone_fills);
    RUN(test_ref_pair_fair);
    RUN(test_ref_codel);
    return pure_test_finish();
}
