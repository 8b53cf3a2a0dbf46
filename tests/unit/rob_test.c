/* SPDX-License-Identifier: MIT */
/* rob_test.c: the reorder buffer (rob.c): puts across the ring's wrap, growth by doubling that
 * keeps every held byte at its offset (also bytes that wrapped in the old ring), the limit the
 * caller passes, the in-order run it hands out (a gap, a run cut at the wrap), puts outside the
 * ring refused, allocation failure, and a randomized run (overlapping, duplicate, out-of-order
 * puts, growth, consumption) checked byte for byte against a flat model of the stream. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "rob.h"
#include "support/talloc.h"
#include "test.h"

/* Range bookkeeping comes from the plain counting allocator; the ring from one that fills new
 * blocks with junk and poisons freed ones, so a byte the growth copy missed or read from the
 * wrong place shows as a mismatch. */
static const pure_alloc A = {t_alloc, t_free, NULL, NULL};
static long ring_live;
static uint64_t ring_bytes;
static void *r_alloc(void *user, size_t n)
{
    uint8_t *p = t_alloc(user, n);
    if (p) {
        memset(p, 0xa5, n);
        ring_live++;
        ring_bytes = n;
    }
    return p;
}
static void r_free(void *user, void *p, size_t n)
{
    memset(p, 0x5a, n);
    ring_live--;
    t_free(user, p, n);
}
static const pure_alloc RA = {r_alloc, r_free, NULL, NULL};

/* The stream byte at offset o: differs between o and o + any power of two up to 2^20, so a byte
 * stored at the wrong ring index is noticed. */
static uint8_t sb(uint64_t o)
{
    return (uint8_t)((o * 2654435761u) >> 11 ^ (o >> 16));
}

static uint8_t src[1 << 17];
static const uint8_t *stream(uint64_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        src[i] = sb(off + i);
    return src;
}

static int put(pure_rob *r, uint64_t at, uint64_t off, size_t len)
{
    return pure_rob_put(r, &A, at, off, stream(off, len), len);
}

/* 1 if every byte the ring claims to hold is the stream's byte at that offset. */
static int holds_stream(const pure_rob *r)
{
    for (uint32_t k = 0; k < r->held.n; k++)
        for (uint64_t o = r->held.r[k].start; o < r->held.r[k].end; o++)
            if (r->ring[o & (r->cap - 1)] != sb(o))
                return 0;
    return 1;
}

static void test_put_wrap_and_next(void)
{
    pure_rob r;
    pure_rob_init(&r);
    CHECK(pure_rob_empty(&r));
    CHECK_EQ(pure_rob_cap(&r), 0);
    CHECK_EQ(put(&r, 0, 10, 5), PURE_EINVAL); /* no ring yet */
    CHECK_EQ(pure_rob_reserve(&r, &RA, 100, UINT64_MAX), 0);
    CHECK_EQ(pure_rob_cap(&r), PURE_ROB_FIRST);
    uint64_t cap = PURE_ROB_FIRST, at = 3 * cap - 100; /* the point sits 100 bytes before a wrap */
    /* a put straddling the wrap, above a gap */
    CHECK_EQ(put(&r, at, at + 50, 200), 0);
    CHECK_EQ(pure_rob_top(&r), at + 250);
    const uint8_t *p = NULL;
    CHECK_EQ(pure_rob_next(&r, at, &p), 0); /* the gap [at, at + 50) */
    /* fill the gap: the run goes to the wrap first, then on from index 0 */
    CHECK_EQ(put(&r, at, at, 50), 0);
    size_t n = pure_rob_next(&r, at, &p);
    CHECK_EQ(n, 100);
    CHECK(p == r.ring + (at & (cap - 1)));
    CHECK(memcmp(p, stream(at, 100), 100) == 0);
    n = pure_rob_next(&r, at + 100, &p);
    CHECK_EQ(n, 150);
    CHECK(p == r.ring);
    CHECK(memcmp(p, stream(at + 100, 150), 150) == 0);
    /* consuming part of a run: the next call starts where the point is */
    n = pure_rob_next(&r, at + 180, &p);
    CHECK_EQ(n, 70);
    CHECK(p == r.ring + 80);
    CHECK_EQ(pure_rob_next(&r, at + 250, &p), 0);
    CHECK(pure_rob_empty(&r));
    CHECK_EQ(pure_rob_top(&r), 0);
    /* the ring's whole size and no more: [at, at + cap) */
    at += 250;
    CHECK_EQ(put(&r, at, at + 1, cap - 1), 0);
    CHECK_EQ(put(&r, at, at, 1), 0);
    CHECK(holds_stream(&r));
    CHECK_EQ(put(&r, at, at + cap, 1), PURE_EINVAL); /* one past */
    CHECK_EQ(put(&r, at, at + 5, cap), PURE_EINVAL); /* ends one past */
    CHECK_EQ(put(&r, at + 1, at, 1), PURE_EINVAL);   /* below the point */
    CHECK(holds_stream(&r));
    CHECK_EQ(put(&r, at, at + 7, 0), 0); /* empty: nothing */
    pure_rob_trim(&r, at + cap - 10);
    CHECK_EQ(r.held.n, 1);
    CHECK_EQ(r.held.r[0].start, at + cap - 10);
    pure_rob_shrink(&r, &RA); /* holds bytes: keeps the ring */
    CHECK_EQ(pure_rob_cap(&r), cap);
    pure_rob_trim(&r, at + cap);
    pure_rob_shrink(&r, &RA);
    CHECK_EQ(pure_rob_cap(&r), 0);
    CHECK_EQ(ring_live, 0);
    pure_rob_free(&r, &RA, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_growth(void)
{
    pure_rob r;
    pure_rob_init(&r);
    uint64_t cap = PURE_ROB_FIRST;
    CHECK_EQ(pure_rob_size_for(&r, 1), cap);
    CHECK_EQ(pure_rob_size_for(&r, cap + 1), 2 * cap);
    CHECK_EQ(pure_rob_reserve(&r, &RA, cap + 1, 2 * cap - 1), PURE_EAGAIN); /* past the limit */
    CHECK_EQ(pure_rob_cap(&r), 0);
    CHECK_EQ(ring_live, 0);
    CHECK_EQ(pure_rob_reserve(&r, &RA, 0, 0), 0); /* nothing needed */
    CHECK_EQ(pure_rob_reserve(&r, &RA, cap, cap), 0);
    CHECK_EQ(ring_bytes, cap);
    /* bytes that wrap in the old ring: [5 cap - 1000, 5 cap + 3000), and one run further on */
    uint64_t at = 5 * cap - 2000;
    CHECK_EQ(put(&r, at, at + 1000, 4000), 0);
    CHECK_EQ(put(&r, at, at + 9000, 100), 0);
    CHECK_EQ(pure_rob_reserve(&r, &RA, cap, cap), 0); /* enough already */
    CHECK_EQ(pure_rob_reserve(&r, &RA, 3 * cap, 4 * cap - 1), PURE_EAGAIN);
    CHECK_EQ(pure_rob_cap(&r), cap);
    CHECK(holds_stream(&r));
    CHECK_EQ(pure_rob_reserve(&r, &RA, 3 * cap, 4 * cap), 0); /* doubles twice */
    CHECK_EQ(pure_rob_cap(&r), 4 * cap);
    CHECK_EQ(ring_live, 1); /* the old ring was freed */
    CHECK(holds_stream(&r));
    /* the grown ring takes what did not fit before */
    CHECK_EQ(put(&r, at, at + 3 * cap, 10), 0);
    CHECK(holds_stream(&r));
    const uint8_t *p;
    CHECK_EQ(put(&r, at, at, 1000), 0);
    CHECK_EQ(pure_rob_next(&r, at, &p), 5000);
    CHECK(memcmp(p, stream(at, 5000), 5000) == 0);
    /* allocation failure: PURE_ENOMEM, the ring and what it holds unchanged */
    t_fail = 1;
    CHECK_EQ(pure_rob_reserve(&r, &RA, 5 * cap, UINT64_MAX), PURE_ENOMEM);
    CHECK_EQ(pure_rob_cap(&r), 4 * cap);
    CHECK(holds_stream(&r));
    t_fail = 0;
    pure_rob_free(&r, &RA, &A);
    CHECK_EQ(ring_live, 0);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_bookkeeping_full(void)
{
    pure_rob r;
    pure_rob_init(&r);
    r.held.max = 3; /* a small bound instead of PURE_ROB_MAX_RANGES */
    CHECK_EQ(pure_rob_reserve(&r, &RA, 1000, UINT64_MAX), 0);
    CHECK_EQ(put(&r, 0, 10, 1), 0);
    CHECK_EQ(put(&r, 0, 20, 1), 0);
    CHECK_EQ(put(&r, 0, 30, 1), 0);
    r.ring[40] = 0x77;
    CHECK_EQ(put(&r, 0, 40, 1), PURE_ENOMEM); /* a fourth run: refused, nothing stored */
    CHECK_EQ(r.ring[40], 0x77);
    CHECK_EQ(put(&r, 0, 11, 9), 0); /* joining two runs needs no new one */
    CHECK_EQ(r.held.n, 2);
    CHECK(holds_stream(&r));
    pure_rob_free(&r, &RA, &A);
    CHECK_EQ(t_live, 0);
}

/* ---- randomized against a flat model ---- */

/* The model: held[o % SPAN] is 1 if the byte at stream offset o is held. Everything held lies
 * within the ring's size (at most 1 MiB) above the point, so offsets SPAN apart never meet. */
#define SPAN (1u << 21)
static uint8_t held[SPAN];
static int m_get(uint64_t o)
{
    return held[o & (SPAN - 1)];
}
static void m_set(uint64_t o, uint64_t n, uint8_t v)
{
    for (uint64_t i = 0; i < n; i++)
        held[(o + i) & (SPAN - 1)] = v;
}
static uint64_t rng_state = 7;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The model's expectation of pure_rob_next at `at`. */
static uint64_t model_run(uint64_t at, uint64_t cap)
{
    uint64_t n = 0;
    while (m_get(at + n))
        n++;
    uint64_t to_wrap = cap - (at & (cap - 1));
    return n < to_wrap ? n : to_wrap;
}

/* The rob's held set equals the model's, and every held byte is the stream's. */
static int agrees(const pure_rob *r, uint64_t at, uint64_t hi)
{
    uint32_t k = 0;
    for (uint64_t o = at; o < hi; o++) {
        int in = 0;
        while (k < r->held.n && r->held.r[k].end <= o)
            k++;
        if (k < r->held.n && r->held.r[k].start <= o)
            in = 1;
        if (in != m_get(o) || (in && r->ring[o & (r->cap - 1)] != sb(o)))
            return 0;
    }
    return r->held.n == 0 || r->held.r[r->held.n - 1].end <= hi;
}

static void test_random_against_model(void)
{
    pure_rob r;
    pure_rob_init(&r);
    memset(held, 0, sizeof held);
    uint64_t at = 0, hi = 0, cap = 0; /* the point, past the highest byte held, the model's size */
    int bad = 0, wraps = 0, grown_wrapped = 0, runs_cut = 0, overlaps = 0;
    for (int step = 0; step < 100000 && !bad; step++) {
        int op = (int)(rnd() % 16);
        if (op < 10 && cap) { /* a put, mostly near the point, some duplicates and overlaps */
            uint64_t len = 1 + rnd() % 1500, room = cap - len;
            uint64_t off =
                at + (rnd() % 4 ? rnd() % (room < 20000 ? room + 1 : 20000) : rnd() % (room + 1));
            uint64_t wrap = (at | (cap - 1)) + 1; /* the next offset at ring index 0 */
            uint64_t run = at;
            while (m_get(run))
                run++;
            if (rnd() % 4 == 0 && run + len - at <= cap)
                off = run; /* extends the in-order run (as in-order packets do) */
            else if (rnd() % 6 == 0 && wrap - at >= len && wrap - at + len <= cap && len > 1)
                off = wrap - 1 - rnd() % (len - 1); /* straddles the wrap */
            if (rnd() % 50 == 0)
                off = at + cap - len + 1 + rnd() % 3; /* just past the ring: refused */
            int dup = 0;
            for (uint64_t o = off; o < off + len; o++)
                dup |= m_get(o);
            int want = off < at || off + len - at > cap ? PURE_EINVAL : 0;
            if (put(&r, at, off, (size_t)len) != want)
                bad = 1;
            if (want == 0) {
                m_set(off, len, 1);
                hi = off + len > hi ? off + len : hi;
                wraps += (off & (cap - 1)) + len > cap;
                overlaps += dup;
            }
        } else if (op < 13) { /* consume the in-order run, all or a part */
            const uint8_t *p = NULL;
            uint64_t n = pure_rob_next(&r, at, &p), want = model_run(at, cap);
            if (n != want || (n && p != r.ring + (at & (cap - 1))))
                bad = 1;
            for (uint64_t i = 0; i < n && !bad; i++)
                bad = p[i] != sb(at + i);
            runs_cut += n && n == cap - (at & (cap - 1)) && m_get(at + n);
            uint64_t take = n && rnd() % 3 == 0 ? 1 + rnd() % n : n;
            m_set(at, take, 0);
            at += take;
            if (rnd() % 8 == 0) { /* skip ahead (the bytes came in order with a packet) */
                uint64_t skip = rnd() % 3000;
                m_set(at, skip, 0);
                at += skip;
                pure_rob_trim(&r, at);
            }
            hi = hi > at ? hi : at;
        } else if (op < 15) { /* reserve, within a limit that sometimes refuses */
            uint64_t n = rnd() % (cap ? 3 * cap : PURE_ROB_FIRST);
            uint64_t limit = rnd() % 2 ? (1u << 19) : rnd() % (1u << 20);
            uint64_t size = cap ? cap : PURE_ROB_FIRST;
            while (size < n)
                size *= 2;
            int want = n <= cap ? 0 : size > limit ? PURE_EAGAIN : 0;
            int wrapped = 0;
            for (uint32_t k = 0; k < r.held.n; k++)
                wrapped |= (r.held.r[k].start & ~(cap - 1)) != ((r.held.r[k].end - 1) & ~(cap - 1));
            if (pure_rob_reserve(&r, &RA, n, limit) != want)
                bad = 1;
            if (want == 0 && n > cap) {
                grown_wrapped += wrapped;
                cap = size;
                if (!agrees(&r, at, hi))
                    bad = 1;
            }
            if (pure_rob_cap(&r) != cap)
                bad = 1;
        } else if (step % 16 == 0) { /* now and then: everything arrives, the ring goes back */
            m_set(at, hi - at, 0);
            at = hi;
            const uint8_t *p;
            if (pure_rob_next(&r, at, &p) != 0 || !pure_rob_empty(&r))
                bad = 1;
            pure_rob_shrink(&r, &RA);
            cap = 0;
            if (ring_live != 0)
                bad = 1;
        }
        if (step % 256 == 0 && !agrees(&r, at, hi))
            bad = 1;
        if (bad)
            fprintf(stderr, "rob model mismatch at step %d (op %d, at %llu, cap %llu)\n", step, op,
                    (unsigned long long)at, (unsigned long long)cap);
    }
    CHECK_EQ(bad, 0);
    CHECK(agrees(&r, at, hi));
    /* the run reached the cases it is for */
    CHECK(wraps > 1000);
    CHECK(overlaps > 1000);
    CHECK(runs_cut > 20);
    CHECK(grown_wrapped > 50);
    pure_rob_free(&r, &RA, &A);
    CHECK_EQ(ring_live, 0);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

int main(void)
{
    RUN(test_put_wrap_and_next);
    RUN(test_growth);
    RUN(test_bookkeeping_full);
    RUN(test_random_against_model);
    return pure_test_finish();
}
