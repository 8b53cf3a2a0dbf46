/* SPDX-License-Identifier: MIT */
/* ranges_test.c: the interval set (ranges.c): merging, removal and splitting, trimming, the
 * queries, growth up to the cap, allocation failure, and a randomized run against a bitmap. */
#include <stdlib.h>
#include <string.h>

#include "ranges.h"
#include "support/talloc.h"
#include "test.h"

/* ---- allocators: counting (with size check), and one that fails on demand ---- */

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

/* The set as a string "[a,b)[c,d)" for exact comparisons. */
static int same(const pure_ranges *s, const uint64_t *pairs, uint32_t n)
{
    if (s->n != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (s->r[i].start != pairs[2 * i] || s->r[i].end != pairs[2 * i + 1])
            return 0;
    return 1;
}

static int well_formed(const pure_ranges *s)
{
    if (s->n > s->cap || s->n > s->max)
        return 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->r[i].start >= s->r[i].end)
            return 0;
        if (i && s->r[i - 1].end >= s->r[i].start) /* disjoint and not touching */
            return 0;
    }
    return 1;
}

static void test_add_merge(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 1000);
    CHECK(pure_ranges_empty(&s));
    CHECK_EQ(pure_ranges_add(&s, &A, 10, 20), 0);
    CHECK_EQ(pure_ranges_add(&s, &A, 30, 40), 0);
    CHECK_EQ(pure_ranges_add(&s, &A, 50, 60), 0);
    CHECK(same(&s, (const uint64_t[]){10, 20, 30, 40, 50, 60}, 3));
    CHECK_EQ(pure_ranges_add(&s, &A, 5, 5), 0); /* empty: nothing */
    CHECK_EQ(pure_ranges_add(&s, &A, 7, 3), 0);
    CHECK(same(&s, (const uint64_t[]){10, 20, 30, 40, 50, 60}, 3));
    /* touching on the left and on the right merges */
    CHECK_EQ(pure_ranges_add(&s, &A, 20, 25), 0);
    CHECK_EQ(pure_ranges_add(&s, &A, 27, 30), 0);
    CHECK(same(&s, (const uint64_t[]){10, 25, 27, 40, 50, 60}, 3));
    /* filling the hole exactly joins two */
    CHECK_EQ(pure_ranges_add(&s, &A, 25, 27), 0);
    CHECK(same(&s, (const uint64_t[]){10, 40, 50, 60}, 2));
    /* inside an existing range: nothing changes */
    CHECK_EQ(pure_ranges_add(&s, &A, 12, 18), 0);
    CHECK(same(&s, (const uint64_t[]){10, 40, 50, 60}, 2));
    /* one add swallowing several ranges and extending both ends */
    CHECK_EQ(pure_ranges_add(&s, &A, 70, 80), 0);
    CHECK_EQ(pure_ranges_add(&s, &A, 5, 75), 0);
    CHECK(same(&s, (const uint64_t[]){5, 80}, 1));
    /* the in-order fast path: appending at the end */
    CHECK_EQ(pure_ranges_add(&s, &A, 80, 81), 0);
    CHECK_EQ(pure_ranges_add(&s, &A, 81, 90), 0);
    CHECK(same(&s, (const uint64_t[]){5, 90}, 1));
    /* before everything, not touching */
    CHECK_EQ(pure_ranges_add(&s, &A, 0, 4), 0);
    CHECK(same(&s, (const uint64_t[]){0, 4, 5, 90}, 2));
    /* the top of the u64 space */
    CHECK_EQ(pure_ranges_add(&s, &A, UINT64_MAX - 10, UINT64_MAX), 0);
    CHECK(same(&s, (const uint64_t[]){0, 4, 5, 90, UINT64_MAX - 10, UINT64_MAX}, 3));
    CHECK(well_formed(&s));
    pure_ranges_free(&s, &A);
    CHECK_EQ(s.n, 0);
    CHECK(s.r == NULL);
}

static void test_remove_split(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 1000);
    pure_ranges_add(&s, &A, 0, 100);
    /* the middle: split in two */
    CHECK_EQ(pure_ranges_remove(&s, &A, 40, 60), 0);
    CHECK(same(&s, (const uint64_t[]){0, 40, 60, 100}, 2));
    /* the left edge of one range, the right edge of another */
    CHECK_EQ(pure_ranges_remove(&s, &A, 0, 10), 0);
    CHECK_EQ(pure_ranges_remove(&s, &A, 90, 200), 0);
    CHECK(same(&s, (const uint64_t[]){10, 40, 60, 90}, 2));
    /* across the gap: trims both */
    CHECK_EQ(pure_ranges_remove(&s, &A, 30, 70), 0);
    CHECK(same(&s, (const uint64_t[]){10, 30, 70, 90}, 2));
    /* nothing there, or empty */
    CHECK_EQ(pure_ranges_remove(&s, &A, 30, 70), 0);
    CHECK_EQ(pure_ranges_remove(&s, &A, 20, 20), 0);
    CHECK(same(&s, (const uint64_t[]){10, 30, 70, 90}, 2));
    /* exactly one whole range */
    CHECK_EQ(pure_ranges_remove(&s, &A, 10, 30), 0);
    CHECK(same(&s, (const uint64_t[]){70, 90}, 1));
    /* several whole ranges and part of another */
    pure_ranges_add(&s, &A, 100, 110);
    pure_ranges_add(&s, &A, 120, 130);
    CHECK_EQ(pure_ranges_remove(&s, &A, 0, 125), 0);
    CHECK(same(&s, (const uint64_t[]){125, 130}, 1));
    CHECK_EQ(pure_ranges_remove(&s, &A, 0, UINT64_MAX), 0);
    CHECK(pure_ranges_empty(&s));
    pure_ranges_free(&s, &A);
}

static void test_trim_drop(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 1000);
    pure_ranges_add(&s, &A, 10, 20);
    pure_ranges_add(&s, &A, 30, 40);
    pure_ranges_add(&s, &A, 50, 60);
    pure_ranges_trim_below(&s, 5); /* below everything: no change */
    CHECK(same(&s, (const uint64_t[]){10, 20, 30, 40, 50, 60}, 3));
    pure_ranges_trim_below(&s, 20); /* exactly the end of the first */
    CHECK(same(&s, (const uint64_t[]){30, 40, 50, 60}, 2));
    pure_ranges_trim_below(&s, 35); /* inside one */
    CHECK(same(&s, (const uint64_t[]){35, 40, 50, 60}, 2));
    pure_ranges_drop_first(&s);
    CHECK(same(&s, (const uint64_t[]){50, 60}, 1));
    pure_ranges_trim_below(&s, 1000);
    CHECK(pure_ranges_empty(&s));
    pure_ranges_drop_first(&s); /* on empty: harmless */
    CHECK(pure_ranges_empty(&s));
    pure_ranges_free(&s, &A);
}

static void test_queries(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 1000);
    CHECK_EQ(pure_ranges_contains(&s, 0), 0);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 7), 7);
    CHECK(pure_ranges_next_start(&s, 0) == UINT64_MAX);
    pure_ranges_add(&s, &A, 10, 20);
    pure_ranges_add(&s, &A, 30, 40);
    CHECK_EQ(pure_ranges_contains(&s, 9), 0);
    CHECK_EQ(pure_ranges_contains(&s, 10), 1);
    CHECK_EQ(pure_ranges_contains(&s, 19), 1);
    CHECK_EQ(pure_ranges_contains(&s, 20), 0); /* end is exclusive */
    CHECK_EQ(pure_ranges_contains(&s, 30), 1);
    CHECK_EQ(pure_ranges_contains(&s, 40), 0);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 10), 20);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 15), 20);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 20), 20);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 25), 25);
    CHECK_EQ(pure_ranges_contiguous_end(&s, 5), 5);
    CHECK_EQ(pure_ranges_next_start(&s, 0), 10);
    CHECK_EQ(pure_ranges_next_start(&s, 10), 30); /* strictly after x */
    CHECK_EQ(pure_ranges_next_start(&s, 15), 30);
    CHECK_EQ(pure_ranges_next_start(&s, 29), 30);
    CHECK(pure_ranges_next_start(&s, 30) == UINT64_MAX);
    CHECK(pure_ranges_next_start(&s, 1000) == UINT64_MAX);
    /* UINT64_MAX is never in a set of half-open u64 ranges */
    CHECK_EQ(pure_ranges_contains(&s, UINT64_MAX), 0);
    CHECK(pure_ranges_next_start(&s, UINT64_MAX) == UINT64_MAX);
    pure_ranges_free(&s, &A);
}

static void test_cap(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 6);
    for (uint64_t i = 0; i < 6; i++)
        CHECK_EQ(pure_ranges_add(&s, &A, 10 * i, 10 * i + 5), 0);
    CHECK_EQ(s.n, 6);
    CHECK(s.cap <= 6);
    pure_range before[6];
    memcpy(before, s.r, sizeof before);
    /* a seventh disjoint range does not fit: -1, unchanged */
    CHECK_EQ(pure_ranges_add(&s, &A, 100, 105), -1);
    CHECK_EQ(s.n, 6);
    CHECK(memcmp(before, s.r, sizeof before) == 0);
    /* a split needs a seventh slot too */
    CHECK_EQ(pure_ranges_remove(&s, &A, 21, 23), -1);
    CHECK_EQ(s.n, 6);
    CHECK(memcmp(before, s.r, sizeof before) == 0);
    /* merging and trimming still work at the cap */
    CHECK_EQ(pure_ranges_add(&s, &A, 5, 10), 0);
    CHECK_EQ(s.n, 5);
    CHECK_EQ(pure_ranges_add(&s, &A, 100, 105), 0);
    CHECK_EQ(s.n, 6);
    CHECK_EQ(pure_ranges_remove(&s, &A, 20, 23), 0);
    CHECK_EQ(s.r[1].start, 23);
    CHECK(well_formed(&s));
    pure_ranges_free(&s, &A);

    /* growth through the allocator: storage doubles from 4 and never passes max */
    pure_ranges_init(&s, 100);
    uint32_t caps_seen = 0, last_cap = 0;
    for (uint64_t i = 0; i < 100; i++) {
        CHECK_EQ(pure_ranges_add(&s, &A, 3 * i, 3 * i + 1), 0);
        if (s.cap != last_cap) {
            caps_seen++;
            CHECK(s.cap >= s.n && s.cap <= 100);
            last_cap = s.cap;
        }
    }
    CHECK_EQ(s.n, 100);
    CHECK_EQ(s.cap, 100);
    CHECK_EQ(caps_seen, 6); /* 4, 8, 16, 32, 64, 100 */
    CHECK_EQ(t_live, 1);    /* old storage is freed on growth */
    CHECK_EQ(pure_ranges_add(&s, &A, 1000, 1001), -1);
    for (uint64_t i = 0; i < 100; i++)
        CHECK(pure_ranges_contains(&s, 3 * i) && !pure_ranges_contains(&s, 3 * i + 1));
    pure_ranges_free(&s, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_alloc_failure(void)
{
    pure_ranges s;
    pure_ranges_init(&s, 100);
    for (uint64_t i = 0; i < 4; i++)
        pure_ranges_add(&s, &A, 10 * i, 10 * i + 5);
    CHECK_EQ(s.cap, 4);
    t_fail = 1;
    CHECK_EQ(pure_ranges_add(&s, &A, 100, 101), -1);
    CHECK_EQ(pure_ranges_remove(&s, &A, 1, 2), -1);
    CHECK_EQ(s.n, 4);
    CHECK(pure_ranges_contains(&s, 1) && pure_ranges_contains(&s, 30));
    CHECK_EQ(pure_ranges_add(&s, &A, 5, 10), 0); /* a merge needs no memory */
    t_fail = 0;
    CHECK_EQ(pure_ranges_add(&s, &A, 100, 101), 0);
    pure_ranges_free(&s, &A);
    CHECK_EQ(t_live, 0);
}

/* ---- randomized against a bitmap ---- */

#define U 300
static uint64_t rng_state = 42;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int model_runs(const uint8_t *m)
{
    int runs = 0;
    for (int i = 0; i < U; i++)
        if (m[i] && (i == 0 || !m[i - 1]))
            runs++;
    return runs;
}

static void random_against_model(uint32_t max)
{
    pure_ranges s;
    pure_ranges_init(&s, max);
    uint8_t m[U] = {0}, next[U];
    int mismatches = 0;
    for (int step = 0; step < 20000; step++) {
        int op = (int)(rnd() % 10);
        uint64_t a = rnd() % U, b = a + rnd() % 40;
        if (b > U)
            b = U;
        memcpy(next, m, sizeof m);
        int rc = 0;
        if (op < 5) {
            for (uint64_t x = a; x < b; x++)
                next[x] = 1;
            rc = pure_ranges_add(&s, &A, a, b);
        } else if (op < 9) {
            for (uint64_t x = a; x < b; x++)
                next[x] = 0;
            rc = pure_ranges_remove(&s, &A, a, b);
        } else if (rnd() % 4 == 0) {
            uint64_t lim = rnd() % U;
            for (uint64_t x = 0; x < lim; x++)
                next[x] = 0;
            pure_ranges_trim_below(&s, lim);
        } else {
            int first = 1;
            for (int x = 0; x < U; x++) { /* drop the lowest run */
                if (next[x])
                    first = 0, next[x] = 0;
                else if (!first)
                    break;
            }
            pure_ranges_drop_first(&s);
        }
        if (rc == 0) {
            memcpy(m, next, sizeof m);
        } else if (model_runs(next) <= (int)max) {
            mismatches++; /* refused although the result would have fitted */
        }
        if (!well_formed(&s) || s.n != (uint32_t)model_runs(m)) {
            mismatches++;
            break;
        }
        for (int x = 0; x < U; x++)
            if (pure_ranges_contains(&s, (uint64_t)x) != m[x])
                mismatches++;
        uint64_t q = rnd() % U;
        uint64_t ce = q;
        while (ce < U && m[ce])
            ce++;
        if (pure_ranges_contiguous_end(&s, q) != ce)
            mismatches++;
        uint64_t ns = UINT64_MAX;
        for (uint64_t x = q + 1; x < U; x++)
            if (m[x] && !m[x - 1]) {
                ns = x;
                break;
            }
        if (pure_ranges_next_start(&s, q) != ns)
            mismatches++;
        if (mismatches)
            break;
    }
    CHECK_EQ(mismatches, 0);
    pure_ranges_free(&s, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_random_uncapped(void)
{
    random_against_model(1u << 16);
}
static void test_random_capped(void)
{
    random_against_model(5);
}

int main(void)
{
    RUN(test_add_merge);
    RUN(test_remove_split);
    RUN(test_trim_drop);
    RUN(test_queries);
    RUN(test_cap);
    RUN(test_alloc_failure);
    RUN(test_random_uncapped);
    RUN(test_random_capped);
    return pure_test_finish();
}
