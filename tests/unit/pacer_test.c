/* SPDX-License-Identifier: MIT */
/* pacer_test.c: the pacer's rate, burst cap, next-send time, debt, and behaviour before the first
 * RTT sample and at the extremes of window, RTT and time. */
#include "pacer.h"
#include "test.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

static void test_unpaced_before_first_sample(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536, 1472);
    /* srtt == 0: nothing blocks, however much is sent. */
    for (int i = 0; i < 100; i++) {
        CHECK(pure_pacer_allowance(&p, 0, 14720, 0) == UINT64_MAX);
        CHECK_EQ(pure_pacer_next(&p, 0, 1472, 14720, 0), 0);
        pure_pacer_on_sent(&p, 65536);
    }
    /* The first sample finds a full bucket, not a debt from the unpaced flight: a full bucket
     * at this rate is 1 ms of it (1.25 * 14720 B / 1 ms = 18.4 B/us). */
    CHECK_EQ(pure_pacer_next(&p, 0, 65536, 14720, 1 * MS), 0);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 14720, 1 * MS), 18400);
}

static void test_burst_and_rate(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536, 1472);
    /* cwnd 100 MB over 100 ms: 1.25 * 1e8 / 0.1 s = 1.25 GB/s = 1250 bytes per us; 1 ms of that
     * is more than the largest burst, so the burst is the whole 64 KiB. */
    uint64_t cwnd = 100000000, srtt = 100 * MS, t = 7 * S;
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 65536);
    pure_pacer_on_sent(&p, 65536);
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 0);
    CHECK_EQ(pure_pacer_allowance(&p, t + 1 * US, cwnd, srtt), 1250);
    CHECK_EQ(pure_pacer_allowance(&p, t + 10 * US, cwnd, srtt), 12500);
    /* Long idle: capped at the burst, not 6 GB. */
    CHECK_EQ(pure_pacer_allowance(&p, t + 5 * S, cwnd, srtt), 65536);
}

/* The burst follows the rate (TSO autosizing): about 1 ms of it, at least two packets, at most
 * the largest burst. A 10-packet switch queue at 50 Mbit/s is not hit by a 64-packet train. */
static void test_burst_follows_rate(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 64 * 1472, 1472);
    /* 50 Mbit/s at 40 ms: a BDP of 250 kB; 1.25 * 250000 / 40 ms = 7812.5 B/ms */
    CHECK_EQ(pure_pacer_allowance(&p, 1 * S, 250000, 40 * MS), 7812);
    pure_pacer_on_sent(&p, 7812);
    CHECK_EQ(pure_pacer_allowance(&p, 10 * S, 250000, 40 * MS), 7812); /* idle: still 1 ms */
    /* very slow: two packets */
    CHECK_EQ(pure_pacer_allowance(&p, 20 * S, 14720, 1 * S), 2 * 1472);
    /* loopback-like: 1 MB over 100 us is far more than 1 ms allows: the whole train */
    CHECK_EQ(pure_pacer_allowance(&p, 30 * S, 1000000, 100 * US), 64 * 1472);
    /* a bucket filled at a fast rate gives no more than the slow rate's burst when it slows */
    CHECK_EQ(pure_pacer_allowance(&p, 30 * S, 250000, 40 * MS), 7812);
    /* next() aims at the rate's burst, not the largest one */
    pure_pacer_on_sent(&p, 7812);
    CHECK_EQ(pure_pacer_next(&p, 30 * S, 1u << 20, 250000, 40 * MS), 30 * S + 999936);
}

/* Bursts follow the path's RTT when a queue (in the network or in a busy peer's socket) inflates
 * srtt: the rate stays 1.25 * cwnd / srtt, the burst is 1 ms of 1.25 * cwnd / path_rtt. */
static void test_burst_follows_path_rtt(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 64 * 1472, 1472);
    pure_pacer_path_sample(&p, 0); /* ignored */
    CHECK_EQ(pure_pacer_allowance(&p, 1 * S, 250000, 40 * MS), 7812);
    pure_pacer_path_sample(&p, 10 * MS);
    CHECK_EQ(p.path_rtt, 10 * MS); /* the first sample is taken whole */
    pure_pacer_path_sample(&p, 18 * MS);
    CHECK_EQ(p.path_rtt, 11 * MS); /* then smoothed: 7/8 of the old, 1/8 of the new */
    pure_pacer_path_sample(&p, 3 * MS);
    CHECK_EQ(p.path_rtt, 10 * MS);
    /* 1 ms of 1.25 * 250000 / 10 ms: four times the burst, still at the srtt's rate */
    CHECK_EQ(pure_pacer_allowance(&p, 10 * S, 250000, 40 * MS), 31250);
    pure_pacer_on_sent(&p, 31250);
    CHECK_EQ(pure_pacer_allowance(&p, 10 * S + 1 * MS, 250000, 40 * MS), 7812);
    /* a path RTT above srtt (a stale one) does not shrink the burst below srtt's */
    CHECK_EQ(pure_pacer_allowance(&p, 20 * S, 250000, 5 * MS), 62500);
    /* the thousand-link server of docs/performance.md: srtt 60 ms on a 0.1 ms path, cwnd 24 kB:
     * two packets by srtt, the whole window by the path */
    pure_pacer_path_reset(&p);
    CHECK_EQ(p.path_rtt, 0);
    CHECK_EQ(pure_pacer_allowance(&p, 30 * S, 24000, 60 * MS), 2 * 1472);
    pure_pacer_path_sample(&p, 100 * US);
    CHECK_EQ(pure_pacer_allowance(&p, 40 * S, 24000, 60 * MS), 64 * 1472);
}

static void test_fractions_accumulate(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536, 1472);
    /* 1.25 bytes per us, asked every 100 ns: each call alone would round to 0 bytes, yet after
     * 1 ms the bucket must hold 1250. */
    uint64_t cwnd = 100000, srtt = 100 * MS, t = 0;
    pure_pacer_allowance(&p, t, cwnd, srtt);
    pure_pacer_on_sent(&p, 2944); /* the burst at this rate: two packets */
    for (int i = 0; i < 10000; i++) {
        t += 100;
        pure_pacer_allowance(&p, t, cwnd, srtt);
    }
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 1250);
}

static void test_next(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536, 1472);
    uint64_t cwnd = 100000, srtt = 100 * MS, t = 3 * S;
    pure_pacer_allowance(&p, t, cwnd, srtt);
    CHECK_EQ(pure_pacer_next(&p, t, 1472, cwnd, srtt), t); /* bytes already there */
    pure_pacer_on_sent(&p, 2944);
    /* 1472 bytes at 1.25 B/us: 1177.6 us, rounded up to the nanosecond. */
    uint64_t when = pure_pacer_next(&p, t, 1472, cwnd, srtt);
    CHECK_EQ(when, t + 1177600);
    CHECK(pure_pacer_allowance(&p, when - 1, cwnd, srtt) < 1472);
    CHECK(pure_pacer_allowance(&p, when, cwnd, srtt) >= 1472);
    /* Asking for more than the burst waits for a full bucket (two packets at this rate), not
     * forever. */
    pure_pacer_on_sent(&p, 1472);
    uint64_t full = pure_pacer_next(&p, when, 1u << 30, cwnd, srtt);
    CHECK_EQ(full, when + 2944ull * 800);
    CHECK_EQ(pure_pacer_allowance(&p, full, cwnd, srtt), 2944);
    /* Never earlier than now. */
    CHECK_EQ(pure_pacer_next(&p, full + 5, 100, cwnd, srtt), full + 5);
}

static void test_debt(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536, 1472);
    uint64_t cwnd = 100000, srtt = 100 * MS;
    pure_pacer_allowance(&p, 0, cwnd, srtt);
    /* One packet past the allowance (2944 at this rate): repaid before the next send. */
    pure_pacer_on_sent(&p, 2944 + 1250);
    CHECK_EQ(pure_pacer_allowance(&p, 1 * MS, cwnd, srtt), 0);
    CHECK_EQ(pure_pacer_next(&p, 1 * MS, 1250, cwnd, srtt), 2 * MS);
    CHECK_EQ(pure_pacer_allowance(&p, 2 * MS, cwnd, srtt), 1250);
    /* A wildly oversized charge costs at most one burst of debt. */
    pure_pacer_on_sent(&p, 1ull << 40);
    CHECK_EQ(pure_pacer_next(&p, 2 * MS, 1, cwnd, srtt), 2 * MS + (65536 + 1) * 800);
    /* Asked long after the debt is repaid (without an allowance call between): now. */
    CHECK_EQ(pure_pacer_next(&p, 3 * S, 1, cwnd, srtt), 3 * S);
}

static void test_long_run_rate(void)
{
    /* A sender that always waits for pure_pacer_next and sends 1472-byte packets moves, over 10 s,
     * the initial burst plus 1.25 * cwnd / srtt * 10 s, to within a packet. */
    pure_pacer p;
    pure_pacer_init(&p, 64 * 1472, 1472);
    uint64_t cwnd = 1472 * 300, srtt = 20 * MS, t = 1, sent = 0;
    /* A wrong pure_pacer_next would spin here: bound the wake-ups (about 188 000 are needed). */
    for (int wakeups = 0; wakeups < 1000000; wakeups++) {
        uint64_t a = pure_pacer_allowance(&p, t, cwnd, srtt);
        while (a >= 1472) {
            pure_pacer_on_sent(&p, 1472);
            sent += 1472;
            a -= 1472;
        }
        t = pure_pacer_next(&p, t, 1472, cwnd, srtt);
        if (t > 10 * S)
            break;
    }
    /* 1.25 * 441600 / 0.02 = 27.6 MB/s; 276 MB in 10 s. */
    uint64_t want = 27600 + 276000000; /* the first burst: 1 ms of the rate */
    CHECK(sent + 1472 >= want && sent <= want + 1472);
    /* The rate changes at once with the window: doubling cwnd doubles it. */
    uint64_t start = t, before = sent;
    for (int wakeups = 0; wakeups < 1000000; wakeups++) {
        uint64_t a = pure_pacer_allowance(&p, t, 2 * cwnd, srtt);
        while (a >= 1472) {
            pure_pacer_on_sent(&p, 1472);
            sent += 1472;
            a -= 1472;
        }
        t = pure_pacer_next(&p, t, 1472, 2 * cwnd, srtt);
        if (t > start + 1 * S)
            break;
    }
    CHECK(sent - before + 2 * 1472 >= 55200000 && sent - before <= 55200000 + 2 * 1472);
}

static void test_extremes(void)
{
    pure_pacer p;
    /* 1 GiB window over 1 us, years into the process's life: no overflow, the burst goes at once
     * and refills within nanoseconds. */
    uint64_t years = 3ull * 365 * 24 * 3600 * S;
    pure_pacer_init(&p, 65536, 1472);
    CHECK_EQ(pure_pacer_allowance(&p, years, 1ull << 30, 1 * US), 65536);
    pure_pacer_on_sent(&p, 65536);
    CHECK_EQ(pure_pacer_allowance(&p, years, 1ull << 30, 1 * US), 0);
    /* 1.25 * 2^30 / 1000 ns = 1342177 B/ns: full after 1 ns. */
    CHECK_EQ(pure_pacer_next(&p, years, 65536, 1ull << 30, 1 * US), years + 1);
    CHECK_EQ(pure_pacer_allowance(&p, years + 1, 1ull << 30, 1 * US), 65536);
    /* After years of idle at the same window: still just the burst. */
    CHECK_EQ(pure_pacer_allowance(&p, 2 * years, 1ull << 30, 1 * US), 65536);

    /* Two packets over 10 s: 1.25 * 2944 / 10 s = 368 B/s; 1472 bytes take exactly 4 s. */
    pure_pacer_init(&p, 65536, 1472);
    pure_pacer_allowance(&p, years, 2944, 10 * S);
    pure_pacer_on_sent(&p, 2944);
    CHECK_EQ(pure_pacer_next(&p, years, 1472, 2944, 10 * S), years + 4 * S);
    CHECK_EQ(pure_pacer_allowance(&p, years + 4 * S - 1, 2944, 10 * S), 1471);
    CHECK_EQ(pure_pacer_allowance(&p, years + 4 * S, 2944, 10 * S), 1472);

    /* Time running backwards credits nothing and breaks nothing. */
    CHECK_EQ(pure_pacer_allowance(&p, years, 2944, 10 * S), 1472);

    /* Burst 0 means the default; an absurd burst is clamped. */
    pure_pacer_init(&p, 0, 1472);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 1ull << 30, MS), PURE_PACER_DEFAULT_BURST);
    pure_pacer_init(&p, UINT64_MAX, 1472);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 1ull << 30, MS), PURE_PACER_MAX_BURST);
    pure_pacer_on_sent(&p, PURE_PACER_MAX_BURST);
    /* 1.25 * 2^30 B / 10 s: 1 ms of it is 134217 bytes */
    CHECK_EQ(pure_pacer_allowance(&p, 60 * S, 1ull << 30, 10 * S), 134217);
    CHECK_EQ(pure_pacer_allowance(&p, 61 * S, 1ull << 40, 1 * MS), PURE_PACER_MAX_BURST);
}

/* At 1.25 * 100000 B / 100 ms = 1250 B/ms the burst is two packets (2944 B). A caller that comes
 * back when pure_pacer_next said gets what the rate earned; one that wakes late (a busy loop) gets
 * what the rate earned all along, not only one burst's worth, so late wake-ups do not lower the
 * rate; never more than the whole burst (65536). Without the late credit the first two checks
 * below give 2944. */
static void test_late_wakeup(void)
{
    uint64_t cwnd = 100000, srtt = 100 * MS;
    for (int late = 0; late < 3; late++) {
        pure_pacer p;
        pure_pacer_init(&p, 65536, 1472);
        CHECK_EQ(pure_pacer_allowance(&p, 0, cwnd, srtt), 2944);
        pure_pacer_on_sent(&p, 2944);
        uint64_t t = pure_pacer_next(&p, 0, 1472, cwnd, srtt);
        CHECK_EQ(t, 1177600); /* 1472 B at 1250 B/ms */
        uint64_t wake = t + (late == 0 ? 0 : late == 1 ? 10 * MS : 10 * S);
        uint64_t got = pure_pacer_allowance(&p, wake, cwnd, srtt);
        CHECK_EQ(got, late == 0 ? 1472 : late == 1 ? 13972 : 65536); /* 11.1776 ms of the rate */
        /* the late burst is spent; the next wait owes nothing more */
        pure_pacer_on_sent(&p, got);
        uint64_t t2 = pure_pacer_next(&p, wake, 1472, cwnd, srtt);
        CHECK_EQ(t2, wake + 1177600);
        CHECK_EQ(pure_pacer_allowance(&p, t2, cwnd, srtt), 1472);
    }
}

int main(void)
{
    RUN(test_unpaced_before_first_sample);
    RUN(test_burst_and_rate);
    RUN(test_burst_follows_rate);
    RUN(test_burst_follows_path_rtt);
    RUN(test_fractions_accumulate);
    RUN(test_next);
    RUN(test_debt);
    RUN(test_long_run_rate);
    RUN(test_extremes);
    RUN(test_late_wakeup);
    return pure_test_finish();
}
