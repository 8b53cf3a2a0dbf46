/* SPDX-License-Identifier: MIT */
/* replay_test.c: the RFC 6479 replay window against a straightforward reference model. */
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "test.h"

/* check + commit, as the receive path does around a successful decrypt. */
static int accept(pure_replay *r, uint64_t pn)
{
    int rc = pure_replay_check(r, pn);
    if (rc == 0)
        pure_replay_commit(r, pn);
    return rc;
}

static void test_in_order(void)
{
    pure_replay r;
    pure_replay_init(&r);
    for (uint64_t pn = 0; pn < 5000; pn++)
        CHECK_EQ(accept(&r, pn), 0);
    for (uint64_t pn = 5000 - PURE_REPLAY_WINDOW; pn < 5000; pn++)
        CHECK_EQ(pure_replay_check(&r, pn), -1); /* each seen once */
    CHECK_EQ(pure_replay_check(&r, 5000 - PURE_REPLAY_WINDOW - 1), -2);
    CHECK_EQ(pure_replay_check(&r, 0), -2);
}

static void test_zero_and_first(void)
{
    pure_replay r;
    pure_replay_init(&r);
    CHECK_EQ(pure_replay_check(&r, 0), 0);
    CHECK_EQ(pure_replay_check(&r, 12345), 0);
    CHECK_EQ(accept(&r, 0), 0);
    CHECK_EQ(accept(&r, 0), -1);
    CHECK_EQ(pure_replay_check(&r, UINT64_MAX), -2);
}

static void test_reorder_inside_window(void)
{
    pure_replay r;
    pure_replay_init(&r);
    CHECK_EQ(accept(&r, 1000), 0);
    /* Everything within the window below 1000 arrives late, in reverse, and is accepted once. */
    for (uint64_t pn = 999; pn > 1000 - PURE_REPLAY_WINDOW; pn--)
        CHECK_EQ(accept(&r, pn), 0);
    for (uint64_t pn = 999; pn > 1000 - PURE_REPLAY_WINDOW; pn--)
        CHECK_EQ(accept(&r, pn), -1);
    /* Holes stay fresh while in the window, even as the top advances across word boundaries. */
    pure_replay_init(&r);
    for (uint64_t pn = 0; pn < 3000; pn += 2)
        CHECK_EQ(accept(&r, pn), 0);
    for (uint64_t pn = 2999; pn > 2999 - PURE_REPLAY_WINDOW; pn -= 2) /* 2999 is the new top */
        CHECK_EQ(accept(&r, pn), 0);
}

static void test_duplicates_and_check_is_pure(void)
{
    pure_replay r, copy;
    pure_replay_init(&r);
    CHECK_EQ(accept(&r, 7), 0);
    memcpy(&copy, &r, sizeof(r));
    /* check alone (a packet that then fails to decrypt) changes nothing. */
    CHECK_EQ(pure_replay_check(&r, 100000), 0);
    CHECK_EQ(pure_replay_check(&r, 6), 0);
    CHECK(memcmp(&copy, &r, sizeof(r)) == 0);
    CHECK_EQ(accept(&r, 7), -1);
    CHECK_EQ(accept(&r, 6), 0);
    CHECK_EQ(accept(&r, 6), -1);
    /* Committing a duplicate or too-old number is ignored. */
    pure_replay_commit(&r, 7);
    CHECK_EQ(pure_replay_check(&r, 8), 0);
}

static void test_too_old(void)
{
    pure_replay r;
    pure_replay_init(&r);
    CHECK_EQ(accept(&r, 10000), 0);
    CHECK_EQ(pure_replay_check(&r, 10000 - PURE_REPLAY_WINDOW + 1), 0);
    CHECK_EQ(pure_replay_check(&r, 10000 - PURE_REPLAY_WINDOW), -2);
    CHECK_EQ(pure_replay_check(&r, 0), -2);
}

static void test_huge_jumps(void)
{
    pure_replay r;
    pure_replay_init(&r);
    CHECK_EQ(accept(&r, 5), 0);
    CHECK_EQ(accept(&r, 1ull << 40), 0);
    CHECK_EQ(pure_replay_check(&r, 5), -2);
    /* Nothing from before the jump may linger, including bits that were above the new top in
     * its word: move the top a little further and scan the whole window. */
    CHECK_EQ(accept(&r, (1ull << 40) + 100), 0);
    {
        uint64_t top = (1ull << 40) + 100;
        int stale = 0;
        for (uint64_t pn = top - PURE_REPLAY_WINDOW + 1; pn < top; pn++)
            stale += pn != (1ull << 40) && pure_replay_check(&r, pn) != 0;
        CHECK_EQ(stale, 0);
    }
    CHECK_EQ(accept(&r, (1ull << 40) - 1), 0);
    CHECK_EQ(accept(&r, (1ull << 40) - 1), -1);
    /* A jump of exactly one ring: the old bits in the recycled words must not survive. */
    pure_replay_init(&r);
    for (uint64_t pn = 0; pn < 64; pn++)
        CHECK_EQ(accept(&r, pn), 0);
    CHECK_EQ(accept(&r, 64 + PURE_REPLAY_BITS), 0);
    for (uint64_t pn = 64 + PURE_REPLAY_BITS - 1; pn > 64 + PURE_REPLAY_BITS - PURE_REPLAY_WINDOW;
         pn--)
        CHECK_EQ(pure_replay_check(&r, pn), 0);
    CHECK_EQ(accept(&r, UINT64_MAX - 1), 0);
    CHECK_EQ(accept(&r, UINT64_MAX - 1), -1);
    CHECK_EQ(accept(&r, UINT64_MAX - 2), 0);
}

/* Random traffic (bursts forward, reordering, duplicates) against a model that remembers every
 * number: the window must agree wherever the model says "within the window". */
static void test_against_model(void)
{
    enum {
        N = 60000
    };
    static uint8_t seen[N];
    pure_replay r;
    uint64_t top = 0, state = 12345;
    int have = 0, mismatches = 0;
    pure_replay_init(&r);
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < 200000; i++) {
        uint64_t pn;
        int want, got;
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t rnd = state >> 33;
        if (!have || rnd % 4 == 0)
            pn = top + rnd % 50; /* forward */
        else
            pn = top > rnd % 1200 ? top - rnd % 1200 : 0; /* late or duplicate */
        if (pn >= N)
            break;
        if (have && pn + PURE_REPLAY_WINDOW <= top)
            want = -2;
        else
            want = seen[pn] ? -1 : 0;
        got = accept(&r, pn);
        mismatches += got != want;
        if (got == 0) {
            seen[pn] = 1;
            if (!have || pn > top)
                top = pn;
            have = 1;
        }
    }
    CHECK_EQ(mismatches, 0);
}

int main(void)
{
    RUN(test_in_order);
    RUN(test_zero_and_first);
    RUN(test_reorder_inside_window);
    RUN(test_duplicates_and_check_is_pure);
    RUN(test_too_old);
    RUN(test_huge_jumps);
    RUN(test_against_model);
    return pure_test_finish();
}
