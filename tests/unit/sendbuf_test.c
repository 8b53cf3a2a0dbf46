/* SPDX-License-Identifier: MIT */
/* sendbuf_test.c: the send ring (sendbuf.c): copies across the wrap, growth that keeps every live
 * byte at its offset, PURE_EAGAIN at the backlog limit (and the one oversized write an empty
 * buffer takes), release and shrink, allocation failure, and a randomized run against a flat
 * copy of the stream. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "sendbuf.h"
#include "support/talloc.h"
#include "test.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

/* An allocator with realloc: it moves every block (new block, copy old_size bytes, poison and
 * free the old one), so a ring that read from its old block or copied the wrong size shows. */
static int reallocs, realloc_fail;
static void *t_realloc(void *user, void *p, size_t old, size_t n)
{
    if (realloc_fail)
        return NULL;
    reallocs++;
    uint8_t *q = t_alloc(user, n);
    if (q && p) {
        memcpy(q, p, old);
        memset(p, 0xee, old);
        t_free(user, p, old);
    }
    return q;
}
static const pure_alloc R = {t_alloc, t_free, NULL, t_realloc};
static const pure_alloc *cur = &A; /* what append() writes with */

/* The stream byte at offset o. */
static uint8_t at(uint64_t o)
{
    return (uint8_t)((o * 7 + (o >> 8)) & 0xff);
}

static void fill(uint8_t *b, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = at(off + i);
}

static int holds(const pure_sendbuf *s, uint64_t from, uint64_t to)
{
    static uint8_t tmp[1 << 17];
    if (to - from > sizeof tmp)
        return 0;
    pure_sendbuf_copy(s, from, tmp, (size_t)(to - from));
    for (uint64_t o = from; o < to; o++)
        if (tmp[o - from] != at(o))
            return 0;
    return 1;
}

static int append(pure_sendbuf *s, size_t n, uint64_t limit)
{
    static uint8_t b[1 << 17];
    fill(b, s->end, n);
    /* split into two pieces like a length prefix and a body */
    size_t x = n < 4 ? n : 4;
    return pure_sendbuf_write(s, cur, b, x, b + x, n - x, limit);
}

static void test_wraparound(void)
{
    pure_sendbuf s = {0};
    CHECK_EQ(append(&s, 10000, 1 << 20), 0);
    CHECK_EQ(s.cap, 16384); /* the first ring */
    pure_sendbuf_release(&s, 8000);
    CHECK_EQ(s.base, 8000);
    CHECK_EQ(append(&s, 10000, 1 << 20), 0); /* live 12000 fits: wraps instead of growing */
    CHECK_EQ(s.cap, 16384);
    CHECK_EQ(s.end, 20000);
    CHECK(holds(&s, 8000, 20000));
    CHECK(holds(&s, 16380, 16390)); /* straddling the physical end of the ring */
    /* a u32 straddling the wrap */
    for (uint64_t o = 16380; o <= 16384; o++) {
        uint32_t want = (uint32_t)at(o) << 24 | (uint32_t)at(o + 1) << 16 |
                        (uint32_t)at(o + 2) << 8 | at(o + 3);
        CHECK_EQ(pure_sendbuf_get_u32(&s, o), want);
    }
    uint8_t none = 0x5a;
    pure_sendbuf_copy(&s, 9000, &none, 0); /* zero length copies nothing */
    CHECK_EQ(none, 0x5a);
    /* where a run lies (what a packet is sealed from): one piece, or two across the wrap */
    const uint8_t *p[2];
    size_t n[2];
    CHECK_EQ(pure_sendbuf_pieces(&s, 9000, 0, p, n), 0);
    CHECK_EQ(pure_sendbuf_pieces(&s, 9000, 100, p, n), 1);
    CHECK(p[0] == s.buf + 9000 && n[0] == 100);
    CHECK_EQ(pure_sendbuf_pieces(&s, 16380, 10, p, n), 2);
    CHECK(p[0] == s.buf + 16380 && n[0] == 4 && p[1] == s.buf && n[1] == 6);
    CHECK(p[1][0] == at(16384) && p[0][3] == at(16383));
    CHECK_EQ(pure_sendbuf_pieces(&s, 16384, 10, p, n), 1);
    CHECK(p[0] == s.buf && n[0] == 10);
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
}

static void test_growth_keeps_data(void)
{
    pure_sendbuf s = {0};
    CHECK_EQ(append(&s, 12000, 1 << 20), 0);
    pure_sendbuf_release(&s, 11000);
    CHECK_EQ(append(&s, 10000, 1 << 20), 0); /* wrapped: [11000, 22000) */
    CHECK_EQ(s.cap, 16384);
    CHECK_EQ(append(&s, 10000, 1 << 20), 0); /* live 21000: grows to 32768 */
    CHECK_EQ(s.cap, 32768);
    CHECK(holds(&s, 11000, 32000));
    CHECK_EQ(t_live, 1);                     /* the old ring was freed */
    CHECK_EQ(append(&s, 50000, 1 << 20), 0); /* grows by more than one doubling at once */
    CHECK_EQ(s.cap, 131072);
    CHECK(holds(&s, 11000, 82000));
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* The same growth through the allocator's realloc: one call per growth, wrapped live bytes
 * re-laid at their offsets, and a failed realloc leaves the ring as it was. */
static void test_growth_by_realloc(void)
{
    cur = &R;
    reallocs = 0;
    pure_sendbuf s = {0};
    CHECK_EQ(append(&s, 12000, 1 << 20), 0);
    pure_sendbuf_release(&s, 11000);
    CHECK_EQ(append(&s, 10000, 1 << 20), 0); /* wrapped: [11000, 22000) */
    CHECK_EQ(s.cap, 16384);
    int before = reallocs;
    CHECK_EQ(append(&s, 10000, 1 << 20), 0); /* live 21000: grows to 32768 */
    CHECK_EQ(s.cap, 32768);
    CHECK_EQ(reallocs, before + 1);
    CHECK(holds(&s, 11000, 32000));
    CHECK_EQ(t_live, 1);
    pure_sendbuf_release(&s, 30000);
    CHECK_EQ(append(&s, 20000, 1 << 20), 0); /* wraps the 32 KiB ring: [30000, 52000) */
    CHECK_EQ(s.cap, 32768);
    realloc_fail = 1;
    CHECK_EQ(append(&s, 20000, 1 << 20), PURE_ENOMEM);
    realloc_fail = 0;
    CHECK_EQ(s.cap, 32768);
    CHECK(holds(&s, 30000, 52000));
    CHECK_EQ(append(&s, 50000, 1 << 20), 0); /* two doublings at once, from a wrapped ring */
    CHECK_EQ(s.cap, 131072);
    CHECK(holds(&s, 30000, 102000));
    pure_sendbuf_free(&s, &R);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
    cur = &A;
}

static void test_backlog_limit(void)
{
    pure_sendbuf s = {0};
    const uint64_t limit = 20000;
    CHECK_EQ(append(&s, 15000, limit), 0);
    CHECK_EQ(append(&s, 5000, limit), 0); /* exactly at the limit */
    CHECK_EQ(s.end - s.base, 20000);
    uint64_t end = s.end, cap = s.cap;
    CHECK_EQ(append(&s, 1, limit), PURE_EAGAIN);
    CHECK_EQ(s.end, end); /* refused writes change nothing */
    CHECK_EQ(s.cap, cap);
    CHECK(cap >= 20000 && cap <= 32768); /* never more than the limit rounded up to a power of 2 */
    pure_sendbuf_release(&s, 1);         /* one byte acknowledged: one byte of room */
    CHECK_EQ(append(&s, 2, limit), PURE_EAGAIN);
    CHECK_EQ(append(&s, 1, limit), 0);
    CHECK(holds(&s, 1, 20001));
    pure_sendbuf_release(&s, s.end);
    /* an empty buffer takes one write larger than the whole limit (a message bigger than the
     * backlog can still be sent), and then nothing more until it is acknowledged */
    CHECK_EQ(append(&s, 50000, limit), 0);
    CHECK(holds(&s, 20001, 70001));
    CHECK_EQ(append(&s, 1, limit), PURE_EAGAIN);
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
    /* no limit at all (send_backlog UINT64_MAX): the first growth rounded the limit up to a
     * power of two past 2^63, which wrapped to 0 and looped for ever */
    pure_sendbuf u = {0};
    CHECK_EQ(append(&u, 5000, UINT64_MAX), 0);
    CHECK_EQ(append(&u, 100000, UINT64_MAX), 0);
    CHECK(holds(&u, 0, 105000));
    pure_sendbuf_free(&u, &A);
    CHECK_EQ(t_live, 0);
}

static void test_release_shrink(void)
{
    pure_sendbuf s = {0};
    CHECK_EQ(append(&s, 100, 1 << 20), 0);
    pure_sendbuf_release(&s, 50);
    pure_sendbuf_release(&s, 20); /* going backwards is ignored */
    CHECK_EQ(s.base, 50);
    pure_sendbuf_shrink(&s, &A); /* not empty: kept */
    CHECK(s.buf != NULL);
    CHECK(holds(&s, 50, 100));
    pure_sendbuf_release(&s, 1000); /* beyond the end: clamped */
    CHECK_EQ(s.base, 100);
    CHECK_EQ(s.end, 100);
    pure_sendbuf_shrink(&s, &A);
    CHECK(s.buf == NULL);
    CHECK_EQ(s.cap, 0);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(s.base, 100);                /* offsets survive */
    CHECK_EQ(append(&s, 30, 1 << 20), 0); /* and the ring comes back on the next write */
    CHECK_EQ(s.end, 130);
    CHECK(holds(&s, 100, 130));
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
}

static void test_alloc_failure(void)
{
    pure_sendbuf s = {0};
    t_fail = 1;
    CHECK_EQ(append(&s, 10, 1 << 20), PURE_ENOMEM);
    CHECK_EQ(s.end, 0);
    t_fail = 0;
    CHECK_EQ(append(&s, 16000, 1 << 20), 0);
    t_fail = 1;
    CHECK_EQ(append(&s, 1000, 1 << 20), PURE_ENOMEM); /* growth fails: old data intact */
    CHECK_EQ(s.end, 16000);
    CHECK(holds(&s, 0, 16000));
    t_fail = 0;
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
}

static void test_random(void)
{
    pure_sendbuf s = {0};
    uint64_t x = 12345;
    int bad = 0;
    const uint64_t limit = 100000;
    for (int step = 0; step < 3000 && !bad; step++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = x >> 33;
        if (r % 3) {
            size_t n = (size_t)(r % 9000);
            uint64_t live = s.end - s.base;
            int rc = append(&s, n, limit);
            int want = (live + n > limit && live > 0) ? PURE_EAGAIN : 0;
            if (rc != want)
                bad++;
        } else {
            uint64_t live = s.end - s.base;
            pure_sendbuf_release(&s, s.base + (live ? (r >> 8) % (live + 1) : 0));
            if ((r >> 4) % 7 == 0)
                pure_sendbuf_shrink(&s, &A);
        }
        if (s.end > s.base && !holds(&s, s.base, s.end))
            bad++;
    }
    CHECK_EQ(bad, 0);
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

int main(void)
{
    RUN(test_wraparound);
    RUN(test_growth_keeps_data);
    RUN(test_growth_by_realloc);
    RUN(test_backlog_limit);
    RUN(test_release_shrink);
    RUN(test_alloc_failure);
    RUN(test_random);
    return pure_test_finish();
}
