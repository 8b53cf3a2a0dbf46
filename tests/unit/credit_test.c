/* SPDX-License-Identifier: MIT */
/* credit_test.c: flow credit (credit.c): a grant falls due exactly when half the window is
 * consumed, the window doubles only when that took less than two round trips and stops at its
 * maximum (also one that is not a power of two), the send limit never moves back, and a
 * randomized run of consumption, time and held-back grants against a model: the limit granted
 * never reaches past the maximum window beyond what was consumed, never moves back, and follows
 * the doubling rule. */
#include "credit.h"
#include "test.h"

#define MS 1000000ull
#define KIB 1024ull

static void test_due_and_doubling(void)
{
    pure_credit c;
    pure_credit_init(&c, 64 * KIB);
    CHECK_EQ(pure_credit_granted(&c), 64 * KIB);
    CHECK_EQ(pure_credit_window(&c), 64 * KIB);
    CHECK_EQ(pure_credit_peer(&c), 64 * KIB);
    CHECK(!pure_credit_due(&c, 0));
    CHECK(!pure_credit_due(&c, 32 * KIB - 1)); /* one byte short of half */
    CHECK(pure_credit_due(&c, 32 * KIB));      /* exactly half */
    /* fast (within 2 RTT of the last grant): the window doubles */
    uint64_t rtt = 10 * MS, now = 100 * MS;
    c.time = now - 2 * rtt + 1;
    pure_credit_grant(&c, 32 * KIB, rtt, 1024 * KIB, now);
    CHECK_EQ(pure_credit_window(&c), 128 * KIB);
    CHECK_EQ(pure_credit_granted(&c), 32 * KIB + 128 * KIB);
    CHECK_EQ(c.time, now);
    /* slow (two round trips or more): the same window again */
    now += 2 * rtt;
    CHECK(pure_credit_due(&c, 96 * KIB));
    pure_credit_grant(&c, 96 * KIB, rtt, 1024 * KIB, now);
    CHECK_EQ(pure_credit_window(&c), 128 * KIB);
    CHECK_EQ(pure_credit_granted(&c), 96 * KIB + 128 * KIB);
    /* no RTT estimate yet: doubles */
    now += 100 * MS;
    pure_credit_grant(&c, 160 * KIB, 0, 1024 * KIB, now);
    CHECK_EQ(pure_credit_window(&c), 256 * KIB);
    /* a maximum that is not a power of two: 256 -> 512 -> 640, then it stays */
    for (int i = 0; i < 4; i++) {
        uint64_t consumed = pure_credit_granted(&c) - pure_credit_window(&c) / 2;
        CHECK(pure_credit_due(&c, consumed));
        pure_credit_grant(&c, consumed, rtt, 640 * KIB, now + 1);
        CHECK(pure_credit_window(&c) <= 640 * KIB);
        CHECK(pure_credit_granted(&c) - consumed <= 640 * KIB);
    }
    CHECK_EQ(pure_credit_window(&c), 640 * KIB);
}

static void test_peer_limit(void)
{
    pure_credit c;
    pure_credit_init(&c, 4096);
    CHECK_EQ(pure_credit_on_frame(&c, 4096), 0); /* the same: nothing new */
    CHECK_EQ(pure_credit_on_frame(&c, 100), 0);  /* lower (a late frame): ignored */
    CHECK_EQ(pure_credit_peer(&c), 4096);
    CHECK_EQ(pure_credit_on_frame(&c, 4097), 1);
    CHECK_EQ(pure_credit_peer(&c), 4097);
    CHECK_EQ(pure_credit_on_frame(&c, UINT64_MAX), 1);
    CHECK_EQ(pure_credit_on_frame(&c, 5000), 0);
    CHECK(pure_credit_peer(&c) == UINT64_MAX);
    /* the receive side is untouched by the peer's frames */
    CHECK_EQ(pure_credit_granted(&c), 4096);
}

/* ---- randomized against a model ---- */

static uint64_t rng_state = 1234;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int doubled, kept_below_max, held, at_max; /* what the runs went through */

static void random_run(uint64_t window, uint64_t window_max, int steps)
{
    pure_credit c;
    pure_credit_init(&c, window);
    /* the model */
    uint64_t w = window, granted = window, last = 0, consumed = 0, now = 0, peer = window;
    int bad = 0;
    for (int step = 0; step < steps && !bad; step++) {
        uint64_t rtt = rnd() % 8 == 0 ? 0 : 1 + rnd() % (50 * MS);
        /* the reader keeps up (well within two round trips) or does not */
        now += rnd() % 2 ? rnd() % (rtt / 2 + 1) : 2 * rtt + rnd() % (20 * MS);
        /* it consumes some of what the peer could send (never past the grant) */
        uint64_t room = granted - consumed;
        consumed += rnd() % 2 ? room / 2 + rnd() % (room / 2 + 1) : rnd() % (room / 4 + 1);
        int due = granted - consumed <= w / 2;
        if (pure_credit_due(&c, consumed) != due)
            bad = 1;
        if (due && rnd() % 5 == 0) { /* held back (paused, or short of memory): no grant */
            held++;
        } else if (due) {
            uint64_t before = granted;
            if (w < window_max && (rtt == 0 || now - last < 2 * rtt)) {
                w = 2 * w < window_max ? 2 * w : window_max;
                doubled++;
            } else {
                kept_below_max += w < window_max;
            }
            granted = consumed + w;
            last = now;
            pure_credit_grant(&c, consumed, rtt, window_max, now);
            /* never past the maximum window beyond what was consumed; never back */
            if (pure_credit_granted(&c) - consumed > window_max ||
                pure_credit_granted(&c) <= before)
                bad = 1;
            at_max += w == window_max;
        }
        if (pure_credit_granted(&c) != granted || pure_credit_window(&c) != w ||
            pure_credit_window(&c) > window_max || pure_credit_window(&c) < window)
            bad = 1;
        /* the peer's frames: some new, some late or repeated */
        uint64_t lim = peer + (rnd() % 3 == 0 ? rnd() % 100000 : 0) - (rnd() % 3 == 0 ? 5000 : 0);
        int raises = lim > peer;
        if (pure_credit_on_frame(&c, lim) != raises)
            bad = 1;
        peer = raises ? lim : peer;
        if (pure_credit_peer(&c) != peer)
            bad = 1;
        if (bad)
            fprintf(stderr, "credit model mismatch at step %d (window %llu, max %llu)\n", step,
                    (unsigned long long)window, (unsigned long long)window_max);
    }
    CHECK_EQ(bad, 0);
}

static void test_random_against_model(void)
{
    for (int run = 0; run < 300; run++) {
        uint64_t window = 4096 + rnd() % (1u << 20);
        uint64_t max = run % 10 == 0 ? window : window + rnd() % (1ull << 32);
        random_run(window, max, 2000);
    }
    CHECK(doubled > 1000 && kept_below_max > 1000 && held > 1000 && at_max > 1000);
}

int main(void)
{
    RUN(test_due_and_doubling);
    RUN(test_peer_limit);
    RUN(test_random_against_model);
    return pure_test_finish();
}
