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
    pure_pacer_init(&p, 65536);
    /* srtt == 0: nothing blocks, however much is sent. */
    for (int i = 0; i < 100; i++) {
        CHECK(pure_pacer_allowance(&p, 0, 14720, 0) == UINT64_MAX);
        CHECK_EQ(pure_pacer_next(&p, 0, 1472, 14720, 0), 0);
        pure_pacer_on_sent(&p, 65536);
    }
    /* The first sample finds a full bucket, not a debt from the unpaced flight. */
    CHECK_EQ(pure_pacer_next(&p, 0, 65536, 14720, 1 * MS), 0);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 14720, 1 * MS), 65536);
}

static void test_burst_and_rate(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536);
    /* cwnd 100 000 B over 100 ms: 1.25 * 1e5 / 0.1 s = 1.25 MB/s = 1.25 bytes per us. */
    uint64_t cwnd = 100000, srtt = 100 * MS, t = 7 * S;
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 65536);
    pure_pacer_on_sent(&p, 65536);
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 0);
    CHECK_EQ(pure_pacer_allowance(&p, t + 1 * MS, cwnd, srtt), 1250);
    CHECK_EQ(pure_pacer_allowance(&p, t + 10 * MS, cwnd, srtt), 12500);
    /* Long idle: capped at the burst, not 1.25 MB. */
    CHECK_EQ(pure_pacer_allowance(&p, t + 5 * S, cwnd, srtt), 65536);
}

static void test_fractions_accumulate(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536);
    /* 1.25 bytes per us, asked every 100 ns: each call alone would round to 0 bytes, yet after
     * 1 ms the bucket must hold 1250. */
    uint64_t cwnd = 100000, srtt = 100 * MS, t = 0;
    pure_pacer_allowance(&p, t, cwnd, srtt);
    pure_pacer_on_sent(&p, 65536);
    for (int i = 0; i < 10000; i++) {
        t += 100;
        pure_pacer_allowance(&p, t, cwnd, srtt);
    }
    CHECK_EQ(pure_pacer_allowance(&p, t, cwnd, srtt), 1250);
}

static void test_next(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536);
    uint64_t cwnd = 100000, srtt = 100 * MS, t = 3 * S;
    pure_pacer_allowance(&p, t, cwnd, srtt);
    CHECK_EQ(pure_pacer_next(&p, t, 1472, cwnd, srtt), t); /* bytes already there */
    pure_pacer_on_sent(&p, 65536);
    /* 1472 bytes at 1.25 B/us: 1177.6 us, rounded up to the nanosecond. */
    uint64_t when = pure_pacer_next(&p, t, 1472, cwnd, srtt);
    CHECK_EQ(when, t + 1177600);
    CHECK(pure_pacer_allowance(&p, when - 1, cwnd, srtt) < 1472);
    CHECK(pure_pacer_allowance(&p, when, cwnd, srtt) >= 1472);
    /* Asking for more than the burst waits for a full bucket, not forever. */
    pure_pacer_on_sent(&p, 1472);
    uint64_t full = pure_pacer_next(&p, when, 1u << 30, cwnd, srtt);
    CHECK_EQ(full, when + 65536ull * 800);
    CHECK_EQ(pure_pacer_allowance(&p, full, cwnd, srtt), 65536);
    /* Never earlier than now. */
    CHECK_EQ(pure_pacer_next(&p, full + 5, 100, cwnd, srtt), full + 5);
}

static void test_debt(void)
{
    pure_pacer p;
    pure_pacer_init(&p, 65536);
    uint64_t cwnd = 100000, srtt = 100 * MS;
    pure_pacer_allowance(&p, 0, cwnd, srtt);
    /* One packet past the allowance: the overrun is repaid before the next send. */
    pure_pacer_on_sent(&p, 65536 + 1250);
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
    pure_pacer_init(&p, 64 * 1472);
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
    uint64_t want = 64 * 1472 + 276000000;
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
    pure_pacer_init(&p, 65536);
    CHECK_EQ(pure_pacer_allowance(&p, years, 1ull << 30, 1 * US), 65536);
    pure_pacer_on_sent(&p, 65536);
    CHECK_EQ(pure_pacer_allowance(&p, years, 1ull << 30, 1 * US), 0);
    /* 1.25 * 2^30 / 1000 ns = 1342177 B/ns: full after 1 ns. */
    CHECK_EQ(pure_pacer_next(&p, years, 65536, 1ull << 30, 1 * US), years + 1);
    CHECK_EQ(pure_pacer_allowance(&p, years + 1, 1ull << 30, 1 * US), 65536);
    /* After years of idle at the same window: still just the burst. */
    CHECK_EQ(pure_pacer_allowance(&p, 2 * years, 1ull << 30, 1 * US), 65536);

    /* Two packets over 10 s: 1.25 * 2944 / 10 s = 368 B/s; 1472 bytes take exactly 4 s. */
    pure_pacer_init(&p, 65536);
    pure_pacer_allowance(&p, years, 2944, 10 * S);
    pure_pacer_on_sent(&p, 65536);
    CHECK_EQ(pure_pacer_next(&p, years, 1472, 2944, 10 * S), years + 4 * S);
    CHECK_EQ(pure_pacer_allowance(&p, years + 4 * S - 1, 2944, 10 * S), 1471);
    CHECK_EQ(pure_pacer_allowance(&p, years + 4 * S, 2944, 10 * S), 1472);

    /* Time running backwards credits nothing and breaks nothing. */
    CHECK_EQ(pure_pacer_allowance(&p, years, 2944, 10 * S), 1472);

    /* Burst 0 means the default; an absurd burst is clamped. */
    pure_pacer_init(&p, 0);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 14720, MS), PURE_PACER_DEFAULT_BURST);
    pure_pacer_init(&p, UINT64_MAX);
    CHECK_EQ(pure_pacer_allowance(&p, 0, 14720, MS), PURE_PACER_MAX_BURST);
    pure_pacer_on_sent(&p, PURE_PACER_MAX_BURST);
    CHECK_EQ(pure_pacer_allowance(&p, 60 * S, 1ull << 30, 10 * S), PURE_PACER_MAX_BURST);
}

int main(void)
{
    RUN(test_unpaced_before_first_sample);
    RUN(test_burst_and_rate);
    RUN(test_fractions_accumulate);
    RUN(test_next);
    RUN(test_debt);
    RUN(test_long_run_rate);
    RUN(test_extremes);
    return pure_test_finish();
}
