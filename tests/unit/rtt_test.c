/* SPDX-License-Identifier: MIT */
/* rtt_test.c: the RFC 9002 RTT estimator against hand-computed values. */
#include "rtt.h"
#include "test.h"

#define MS 1000000ull

static void test_init(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    CHECK_EQ(r.smoothed, 333 * MS);
    CHECK_EQ(r.var, 333 * MS / 2);
    CHECK_EQ(r.has_sample, 0);
    /* 333 + 4 * 166.5 + 25 ms */
    CHECK_EQ(pure_rtt_pto(&r, 25 * MS), 1024 * MS);
    /* 9/8 * 333 ms, truncated to the nanosecond */
    CHECK_EQ(pure_rtt_loss_delay(&r), 374625000);
}

static void test_first_sample(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    /* The first sample ignores ack_delay entirely and replaces the initial guesses. */
    pure_rtt_sample(&r, 100 * MS, 20 * MS, 25 * MS);
    CHECK_EQ(r.has_sample, 1);
    CHECK_EQ(r.latest, 100 * MS);
    CHECK_EQ(r.min, 100 * MS);
    CHECK_EQ(r.smoothed, 100 * MS);
    CHECK_EQ(r.var, 50 * MS);
    CHECK_EQ(pure_rtt_pto(&r, 25 * MS), (100 + 200 + 25) * MS);
    CHECK_EQ(pure_rtt_loss_delay(&r), 112500000);
}

/* The handshake's round trip: taken as the first sample only, and only below the initial guess. */
static void test_handshake_sample(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    pure_rtt_handshake_sample(&r, 0, 25 * MS); /* no time passed: nothing known */
    CHECK_EQ(r.has_sample, 0);
    pure_rtt_handshake_sample(&r, PURE_RTT_INITIAL, 25 * MS); /* no better than the guess */
    CHECK_EQ(r.has_sample, 0);
    CHECK_EQ(r.smoothed, PURE_RTT_INITIAL);
    pure_rtt_handshake_sample(&r, 20 * MS, 25 * MS);
    CHECK_EQ(r.has_sample, 1);
    CHECK_EQ(r.smoothed, 20 * MS);
    CHECK_EQ(r.min, 20 * MS);
    CHECK_EQ(pure_rtt_pto(&r, 25 * MS), (20 + 40 + 25) * MS); /* not 1,024 ms */
    pure_rtt_handshake_sample(&r, 5 * MS, 25 * MS);           /* a sample exists: ignored */
    CHECK_EQ(r.smoothed, 20 * MS);
    CHECK_EQ(r.min, 20 * MS);
}

static void test_ewma_and_ack_delay(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    pure_rtt_sample(&r, 100 * MS, 0, 25 * MS);

    /* 120 ms with 10 ms ack delay: 120 - 100 >= 10, so adjusted = 110 ms.
     * var = (3 * 50 + |100 - 110|) / 4 = 40 ms; smoothed = (7 * 100 + 110) / 8 = 101.25 ms. */
    pure_rtt_sample(&r, 120 * MS, 10 * MS, 25 * MS);
    CHECK_EQ(r.latest, 120 * MS);
    CHECK_EQ(r.min, 100 * MS);
    CHECK_EQ(r.var, 40 * MS);
    CHECK_EQ(r.smoothed, 101250000);

    /* 110 ms reporting 50 ms delay: capped to max_ack_delay 25 ms, and 110 - 25 would dip below
     * min (100 ms), so nothing is subtracted: adjusted = 110 ms.
     * var = (3 * 40 + 8.75) / 4 = 32.1875 ms; smoothed = (7 * 101.25 + 110) / 8 = 102.34375 ms. */
    pure_rtt_sample(&r, 110 * MS, 50 * MS, 25 * MS);
    CHECK_EQ(r.var, 32187500);
    CHECK_EQ(r.smoothed, 102343750);
    CHECK_EQ(r.min, 100 * MS);
}

static void test_ack_delay_cap(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    pure_rtt_sample(&r, 100 * MS, 0, 25 * MS);
    /* 200 ms with a claimed 50 ms delay: only max_ack_delay (25 ms) may be subtracted, so
     * adjusted = 175 ms: var = (150 + 75) / 4 = 56.25 ms, smoothed = (700 + 175) / 8 = 109.375 ms.
     * (Subtracting the full 50 would give 106.25 ms.) */
    pure_rtt_sample(&r, 200 * MS, 50 * MS, 25 * MS);
    CHECK_EQ(r.smoothed, 109375000);
    CHECK_EQ(r.var, 56250000);
    /* PTO = 109.375 + 4 * 56.25 + 25 = 359.375 ms */
    CHECK_EQ(pure_rtt_pto(&r, 25 * MS), 359375000);
    /* loss delay follows max(smoothed, latest) = latest = 200 ms: 225 ms */
    CHECK_EQ(pure_rtt_loss_delay(&r), 225 * MS);
}

static void test_min_rtt(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    pure_rtt_sample(&r, 100 * MS, 0, 25 * MS);
    /* min follows the raw sample, not the ack-delay-adjusted one. */
    pure_rtt_sample(&r, 80 * MS, 20 * MS, 25 * MS);
    CHECK_EQ(r.min, 80 * MS);
    /* 80 - 80 < 20: no subtraction, adjusted = 80: smoothed = (700 + 80) / 8 = 97.5 ms. */
    CHECK_EQ(r.smoothed, 97500000);
    pure_rtt_sample(&r, 90 * MS, 5 * MS, 25 * MS);
    CHECK_EQ(r.min, 80 * MS);
}

static void test_granularity_floors(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    /* A 40 us loopback path: var = 20 us, 4 * var = 80 us < 1 ms, so the spread is 1 ms. */
    pure_rtt_sample(&r, 40000, 0, 0);
    CHECK_EQ(pure_rtt_pto(&r, 0), 40000 + MS);
    CHECK_EQ(pure_rtt_pto(&r, 25 * MS), 40000 + MS + 25 * MS);
    /* 9/8 * 40 us = 45 us, floored to 1 ms */
    CHECK_EQ(pure_rtt_loss_delay(&r), MS);
    /* Converges on a steady path: smoothed -> 40 us, var -> 0. */
    for (int i = 0; i < 200; i++)
        pure_rtt_sample(&r, 40000, 0, 0);
    CHECK_EQ(r.smoothed, 40000);
    CHECK_EQ(r.var, 0);
}

static void test_steady_convergence(void)
{
    pure_rtt r;
    pure_rtt_init(&r, PURE_RTT_INITIAL);
    pure_rtt_sample(&r, 10 * MS, 0, 0);
    /* A jump to 50 ms: smoothed approaches 50 ms with gain 1/8 per sample. After n samples the
     * remaining gap is 40 ms * (7/8)^n; after 20 samples 40 * 0.0692 = 2.77 ms. */
    for (int i = 0; i < 20; i++)
        pure_rtt_sample(&r, 50 * MS, 0, 0);
    CHECK(r.smoothed > 50 * MS - 2800000 && r.smoothed < 50 * MS - 2700000);
    CHECK_EQ(r.min, 10 * MS);
}

static void test_saturation(void)
{
    pure_rtt r;
    pure_rtt_init(&r, UINT64_MAX);
    /* Absurd inputs must not wrap into tiny timeouts. */
    CHECK(pure_rtt_pto(&r, UINT64_MAX) == UINT64_MAX);
    CHECK(pure_rtt_loss_delay(&r) > r.smoothed);
    pure_rtt_sample(&r, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    pure_rtt_sample(&r, UINT64_MAX, 0, 0);
    CHECK(r.smoothed >= UINT64_MAX / 32);
    CHECK(pure_rtt_pto(&r, 0) > r.smoothed);
}

int main(void)
{
    RUN(test_init);
    RUN(test_first_sample);
    RUN(test_handshake_sample);
    RUN(test_ewma_and_ack_delay);
    RUN(test_ack_delay_cap);
    RUN(test_min_rtt);
    RUN(test_granularity_floors);
    RUN(test_steady_convergence);
    RUN(test_saturation);
    return pure_test_finish();
}
