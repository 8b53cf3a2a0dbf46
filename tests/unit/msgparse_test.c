/* SPDX-License-Identifier: MIT */
/* msgparse_test.c: the receiver's message framer (msgparse.c): the preamble check, a stream split
 * at every possible point (and every pair of points), zero-length messages, whole messages
 * delivered straight from the input, the maximum size (PURE_EMSGSIZE), the stop return,
 * boundaries, shrinking, and allocation through the injected allocator: memory follows the bytes
 * that arrived, never the length announced; it is capped at the length and at cap_limit, and a
 * big buffer is freed once its message is delivered. */
#include <stdlib.h>
#include <string.h>

#include "msgparse.h"
#include "pure.h"
#include "support/talloc.h"
#include "test.h"
#include "varint.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

/* What the callback saw. */
typedef struct seen {
    int count;
    size_t lens[64];
    uint8_t bytes[8192];
    size_t used;
    int stop_at;            /* return 1 on this message number (1-based); 0 never */
    const uint8_t *lo, *hi; /* the input piece, to tell zero-copy deliveries */
    int in_place;           /* deliveries pointing into [lo, hi) */
} seen;

static int on_msg(void *arg, const uint8_t *d, size_t n)
{
    seen *s = arg;
    if (s->count < 64)
        s->lens[s->count] = n;
    if (s->used + n <= sizeof s->bytes) {
        memcpy(s->bytes + s->used, d, n);
        s->used += n;
    }
    if (s->lo && d >= s->lo && d + n <= s->hi)
        s->in_place++;
    s->count++;
    return s->stop_at && s->count == s->stop_at;
}

/* The stream: preamble, then messages of the given sizes with body byte i = (i + k) % 251 for
 * message k. Returns its length. */
static size_t build(uint8_t *out, const size_t *sizes, int n)
{
    size_t len = 0;
    memcpy(out, "pure", 4);
    len = 4;
    for (int k = 0; k < n; k++) {
        pure_put_u32be(out + len, (uint32_t)sizes[k]);
        len += 4;
        for (size_t i = 0; i < sizes[k]; i++)
            out[len++] = (uint8_t)((i + (size_t)k) % 251);
    }
    return len;
}

static int matches(const seen *s, const size_t *sizes, int n)
{
    if (s->count != n)
        return 0;
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        if (s->lens[k] != sizes[k])
            return 0;
        for (size_t i = 0; i < sizes[k]; i++)
            if (s->bytes[off + i] != (uint8_t)((i + (size_t)k) % 251))
                return 0;
        off += sizes[k];
    }
    return 1;
}

static void test_preamble(void)
{
    pure_msgparse m;
    seen s = {0};
    pure_msgparse_init(&m, 100);
    /* split over calls: nothing decided until four bytes are in */
    CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)"pu", 2, on_msg, &s), 0);
    CHECK_EQ(pure_msgparse_at_boundary(&m), 0);
    CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)"r", 1, on_msg, &s), 0);
    CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)"e", 1, on_msg, &s), 0);
    CHECK_EQ(pure_msgparse_at_boundary(&m), 1);
    pure_msgparse_free(&m, &A);

    static const char *bad[] = {"PURE", "purx", "xure", "pur\0", "\0\0\0\0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pure_msgparse_init(&m, 100);
        CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)bad[i], 4, on_msg, &s), PURE_EPROTO);
        pure_msgparse_free(&m, &A);
    }
    /* a bad byte arriving last, alone */
    pure_msgparse_init(&m, 100);
    CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)"pur", 3, on_msg, &s), 0);
    CHECK_EQ(pure_msgparse_feed(&m, &A, (const uint8_t *)"E", 1, on_msg, &s), PURE_EPROTO);
    pure_msgparse_free(&m, &A);
    CHECK_EQ(s.count, 0);
    CHECK_EQ(t_live, 0);
}

static const size_t SIZES[] = {0, 5, 1, 0, 37, 300, 0, 4};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static int feed_split(const uint8_t *b, size_t n, size_t c1, size_t c2, seen *s)
{
    pure_msgparse m;
    pure_msgparse_init(&m, 1000);
    int rc = pure_msgparse_feed(&m, &A, b, c1, on_msg, s);
    if (rc == 0)
        rc = pure_msgparse_feed(&m, &A, b + c1, c2 - c1, on_msg, s);
    if (rc == 0)
        rc = pure_msgparse_feed(&m, &A, b + c2, n - c2, on_msg, s);
    int boundary = pure_msgparse_at_boundary(&m);
    pure_msgparse_free(&m, &A);
    return rc == 0 && boundary ? 0 : -1;
}

static void test_every_split(void)
{
    uint8_t b[600];
    size_t n = build(b, SIZES, NSIZES);
    int bad = 0;
    /* every single split point and every pair of split points */
    for (size_t c1 = 0; c1 <= n; c1++)
        for (size_t c2 = c1; c2 <= n; c2++) {
            static seen s;
            memset(&s, 0, sizeof s);
            if (feed_split(b, n, c1, c2, &s) != 0 || !matches(&s, SIZES, NSIZES))
                bad++;
        }
    CHECK_EQ(bad, 0);
    /* one byte at a time: each message is delivered by the byte that completes it, not before
     * and not later (ends[k]: stream bytes up to the end of message k) */
    size_t ends[NSIZES], at = 4;
    for (int k = 0; k < NSIZES; k++)
        ends[k] = at += 4 + SIZES[k];
    pure_msgparse m;
    pure_msgparse_init(&m, 1000);
    static seen s;
    memset(&s, 0, sizeof s);
    int rc = 0, early_or_late = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = pure_msgparse_feed(&m, &A, b + i, 1, on_msg, &s);
        int due = 0;
        while (due < NSIZES && ends[due] <= i + 1)
            due++;
        if (s.count != due)
            early_or_late++;
    }
    CHECK_EQ(early_or_late, 0);
    CHECK_EQ(rc, 0);
    CHECK(matches(&s, SIZES, NSIZES));
    CHECK_EQ(pure_msgparse_at_boundary(&m), 1);
    pure_msgparse_free(&m, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_in_place_and_boundary(void)
{
    uint8_t b[600];
    size_t n = build(b, SIZES, NSIZES);
    pure_msgparse m;
    pure_msgparse_init(&m, 1000);
    static seen s;
    memset(&s, 0, sizeof s);
    s.lo = b;
    s.hi = b + n;
    CHECK_EQ(pure_msgparse_feed(&m, &A, b, n, on_msg, &s), 0);
    CHECK(matches(&s, SIZES, NSIZES));
    CHECK_EQ(s.in_place, NSIZES); /* all whole in one piece: no copy */
    CHECK_EQ(t_live, 0);          /* and no assembly buffer */
    pure_msgparse_free(&m, &A);

    /* a message cut in two is assembled in the buffer, then the buffer can be shrunk */
    pure_msgparse_init(&m, 1000);
    memset(&s, 0, sizeof s);
    size_t cut = 4 + 4 + 0 + 4 + 3; /* inside the 5-byte message */
    CHECK_EQ(pure_msgparse_feed(&m, &A, b, cut, on_msg, &s), 0);
    CHECK_EQ(s.count, 1);
    CHECK_EQ(pure_msgparse_at_boundary(&m), 0);
    pure_msgparse_shrink(&m, &A); /* in a body: the buffer stays */
    CHECK(m.body != NULL);
    CHECK_EQ(pure_msgparse_feed(&m, &A, b + cut, 2, on_msg, &s), 0);
    CHECK_EQ(s.count, 2);
    CHECK_EQ(s.lens[1], 5);
    CHECK_EQ(pure_msgparse_at_boundary(&m), 1);
    CHECK_EQ(t_live, 1);
    pure_msgparse_shrink(&m, &A);
    CHECK_EQ(t_live, 0);
    CHECK(m.body == NULL);
    /* and is rebuilt on demand */
    s.lo = NULL;
    CHECK_EQ(pure_msgparse_feed(&m, &A, b + cut + 2, n - cut - 2, on_msg, &s), 0);
    CHECK(matches(&s, SIZES, NSIZES));
    pure_msgparse_free(&m, &A);
    CHECK_EQ(t_live, 0);
    /* a length prefix split across pieces leaves the parser off a boundary */
    pure_msgparse_init(&m, 1000);
    CHECK_EQ(pure_msgparse_feed(&m, &A, b, 6, on_msg, &s), 0);
    CHECK_EQ(pure_msgparse_at_boundary(&m), 0);
    pure_msgparse_free(&m, &A);
}

static void test_zero_length(void)
{
    static const size_t zeros[] = {0, 0, 0};
    uint8_t b[64];
    size_t n = build(b, zeros, 3);
    CHECK_EQ(n, 16);
    for (size_t c = 0; c <= n; c++) {
        seen s = {0};
        pure_msgparse m;
        pure_msgparse_init(&m, 0); /* max 0 still allows empty messages */
        CHECK_EQ(pure_msgparse_feed(&m, &A, b, c, on_msg, &s), 0);
        CHECK_EQ(pure_msgparse_feed(&m, &A, b + c, n - c, on_msg, &s), 0);
        CHECK_EQ(s.count, 3);
        CHECK(s.lens[0] == 0 && s.lens[1] == 0 && s.lens[2] == 0);
        pure_msgparse_free(&m, &A);
    }
    CHECK_EQ(t_live, 0);
}

static void test_max_size(void)
{
    uint8_t b[300];
    /* exactly the maximum passes, in one piece or split */
    static const size_t at_max[] = {100, 100};
    size_t n = build(b, at_max, 2);
    for (size_t c = 0; c <= n; c += 7) {
        seen s = {0};
        pure_msgparse m;
        pure_msgparse_init(&m, 100);
        CHECK_EQ(pure_msgparse_feed(&m, &A, b, c, on_msg, &s), 0);
        CHECK_EQ(pure_msgparse_feed(&m, &A, b + c, n - c, on_msg, &s), 0);
        CHECK_EQ(s.count, 2);
        pure_msgparse_free(&m, &A);
    }
    /* one byte more is PURE_EMSGSIZE as soon as the length is known, whole or split; the
     * messages before it are delivered */
    static const size_t over[] = {3, 101};
    n = build(b, over, 2);
    size_t len_end = 4 + 4 + 3 + 4; /* the second length prefix is complete here */
    for (size_t c = 0; c <= n; c++) {
        seen s = {0};
        pure_msgparse m;
        pure_msgparse_init(&m, 100);
        int rc1 = pure_msgparse_feed(&m, &A, b, c, on_msg, &s);
        int rc2 = rc1 ? rc1 : pure_msgparse_feed(&m, &A, b + c, n - c, on_msg, &s);
        if (c >= len_end)
            CHECK_EQ(rc1, PURE_EMSGSIZE);
        else
            CHECK_EQ(rc1, 0);
        CHECK_EQ(rc2, PURE_EMSGSIZE);
        CHECK_EQ(s.count, 1);
        pure_msgparse_free(&m, &A);
        CHECK_EQ(t_live, 0);
    }
    /* a huge declared length against a huge maximum is refused too */
    uint8_t h[8] = {'p', 'u', 'r', 'e', 0xff, 0xff, 0xff, 0xff};
    seen s = {0};
    pure_msgparse m;
    pure_msgparse_init(&m, 1u << 30);
    CHECK_EQ(pure_msgparse_feed(&m, &A, h, 8, on_msg, &s), PURE_EMSGSIZE);
    pure_msgparse_free(&m, &A);
}

static void test_stop(void)
{
    uint8_t b[600];
    size_t n = build(b, SIZES, NSIZES);
    for (int stop = 1; stop <= NSIZES; stop++) {
        /* whole, and split so the stopping message is assembled */
        for (int split = 0; split < 2; split++) {
            static seen s;
            memset(&s, 0, sizeof s);
            s.stop_at = stop;
            pure_msgparse m;
            pure_msgparse_init(&m, 1000);
            int rc = 0;
            if (split) {
                for (size_t i = 0; i < n && rc == 0; i += 3)
                    rc = pure_msgparse_feed(&m, &A, b + i, n - i < 3 ? n - i : 3, on_msg, &s);
            } else {
                rc = pure_msgparse_feed(&m, &A, b, n, on_msg, &s);
            }
            CHECK_EQ(rc, 1);
            CHECK_EQ(s.count, stop); /* nothing after the stop was delivered */
            pure_msgparse_free(&m, &A);
        }
    }
    CHECK_EQ(t_live, 0);
}

static void test_alloc_failure(void)
{
    uint8_t b[600];
    size_t n = build(b, SIZES, NSIZES);
    seen s = {0};
    pure_msgparse m;
    pure_msgparse_init(&m, 1000);
    t_fail = 1;
    /* whole messages need no memory */
    CHECK_EQ(pure_msgparse_feed(&m, &A, b, n, on_msg, &s), 0);
    CHECK(matches(&s, SIZES, NSIZES));
    pure_msgparse_free(&m, &A);
    /* a message cut in two does */
    pure_msgparse_init(&m, 1000);
    memset(&s, 0, sizeof s);
    CHECK_EQ(pure_msgparse_feed(&m, &A, b, 4 + 4 + 4 + 2, on_msg, &s), PURE_ENOMEM);
    /* the preamble and the length prefix were taken, the message's two bytes were not: fed again
     * once memory is back, they make it whole, and nothing is lost or delivered twice */
    CHECK_EQ(m.unfed, 2);
    t_fail = 0;
    CHECK_EQ(pure_msgparse_feed(&m, &A, b + 4 + 4 + 4, n - 12, on_msg, &s), 0);
    CHECK(matches(&s, SIZES, NSIZES));
    pure_msgparse_free(&m, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* ---- memory follows the bytes received ---- */

/* A byte-counting allocator (sizes from the interface), with an optional realloc. */
static int64_t mem_live, mem_peak, mem_allocs, mem_biggest; /* biggest: one block */
static void *cnt_alloc(void *user, size_t n)
{
    (void)user;
    mem_live += (int64_t)n;
    mem_allocs++;
    if (mem_live > mem_peak)
        mem_peak = mem_live;
    if ((int64_t)n > mem_biggest)
        mem_biggest = (int64_t)n;
    return malloc(n);
}
static void cnt_free(void *user, void *p, size_t n)
{
    (void)user;
    mem_live -= (int64_t)n;
    free(p);
}
static void *cnt_realloc(void *user, void *p, size_t old, size_t n)
{
    (void)user;
    void *q = realloc(p, n);
    if (q) {
        mem_live += (int64_t)n - (int64_t)old;
        mem_allocs++;
        if (mem_live > mem_peak)
            mem_peak = mem_live;
        if ((int64_t)n > mem_biggest)
            mem_biggest = (int64_t)n;
    }
    return q;
}
static const pure_alloc CA = {cnt_alloc, cnt_free, NULL, NULL};
static const pure_alloc CR = {cnt_alloc, cnt_free, NULL, cnt_realloc};

static void mem_reset(void)
{
    mem_live = mem_peak = mem_allocs = mem_biggest = 0;
}

/* Counts deliveries and checks the bytes of message k: byte i is (i * 7 + k) & 255. */
typedef struct bigseen {
    int count;
    size_t len;
    int bad;
} bigseen;

static int on_big(void *arg, const uint8_t *d, size_t n)
{
    bigseen *b = arg;
    for (size_t i = 0; i < n; i++)
        if (d[i] != (uint8_t)((i * 7 + (size_t)b->count) & 255)) {
            b->bad++;
            break;
        }
    b->len = n;
    b->count++;
    return 0;
}

/* Feeds bytes [from, to) of the body of message k (length len) in pieces of `piece`. */
static int feed_body(pure_msgparse *m, const pure_alloc *a, size_t from, size_t to, size_t piece,
                     int k, bigseen *b)
{
    static uint8_t buf[65536];
    int rc = 0;
    for (size_t at = from; at < to && rc == 0; at += piece) {
        size_t n = to - at < piece ? to - at : piece;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)(((at + i) * 7 + (size_t)k) & 255);
        rc = pure_msgparse_feed(m, a, buf, n, on_big, b);
    }
    return rc;
}

/* The fault of issue #11: a 16 MiB announcement followed by a few bytes allocated 16 MiB. Now the
 * buffer holds what arrived (at least PURE_MSGPARSE_MIN, at most twice what arrived), grows to
 * exactly the message's length (not the next power of two), and is freed after delivery. */
static void test_memory_follows_bytes(void)
{
    for (int with_realloc = 0; with_realloc < 2; with_realloc++) {
        const pure_alloc *a = with_realloc ? &CR : &CA;
        const uint32_t len = 10000001; /* over 8 MiB, not a power of two */
        mem_reset();
        pure_msgparse m;
        pure_msgparse_init(&m, 16u << 20);
        uint8_t h[8] = {'p', 'u', 'r', 'e'};
        pure_put_u32be(h + 4, len);
        bigseen b = {0};
        CHECK_EQ(pure_msgparse_feed(&m, a, h, 8, on_big, &b), 0);
        CHECK_EQ(mem_live, 0); /* the announcement alone costs nothing */
        CHECK_EQ(feed_body(&m, a, 0, 1400, 1400, 0, &b), 0);
        CHECK(mem_live <= (int64_t)PURE_MSGPARSE_MIN);
        int64_t worst = 0; /* the largest buffer / bytes-held ratio seen, in percent */
        for (size_t have = 1400; have < len; have += 61440) {
            size_t to = have + 61440 < len ? have + 61440 : len;
            CHECK_EQ(feed_body(&m, a, have, to, 1400, 0, &b), 0);
            if (to < len) {
                CHECK_EQ(mem_live, m.body_cap);
                int64_t ratio = mem_live * 100 / (int64_t)to;
                if (ratio > worst)
                    worst = ratio;
            }
        }
        CHECK(worst <= 200);
        CHECK_EQ(b.count, 1);
        CHECK_EQ(b.len, len);
        CHECK_EQ(b.bad, 0);
        CHECK_EQ(mem_biggest, len); /* capped at the length: not 16 MiB */
        /* in place with realloc; else the old buffer lives while it is copied */
        CHECK(with_realloc ? mem_peak == len : mem_peak < 2 * (int64_t)len);
        CHECK_EQ(mem_live, 0); /* over PURE_MSGPARSE_KEEP: freed once delivered */
        CHECK(m.body == NULL);
        CHECK(mem_allocs <= 20); /* doubling: a few dozen growths at most, not one per piece */
        pure_msgparse_free(&m, a);
        CHECK_EQ(mem_live, 0);
    }
}

/* A buffer up to PURE_MSGPARSE_KEEP stays for the next message; a message shorter than
 * PURE_MSGPARSE_MIN gets a buffer of its own length. */
static void test_small_buffers_kept(void)
{
    mem_reset();
    pure_msgparse m;
    pure_msgparse_init(&m, 1u << 20);
    uint8_t h[8] = {'p', 'u', 'r', 'e'};
    pure_put_u32be(h + 4, 100);
    bigseen b = {0};
    CHECK_EQ(pure_msgparse_feed(&m, &CA, h, 8, on_big, &b), 0);
    CHECK_EQ(feed_body(&m, &CA, 0, 100, 30, 0, &b), 0);
    CHECK_EQ(b.count, 1);
    CHECK_EQ(mem_live, 100);
    /* then a 40,000-byte message in pieces: grows to its length, kept after delivery */
    pure_put_u32be(h + 4, 40000);
    CHECK_EQ(pure_msgparse_feed(&m, &CA, h + 4, 4, on_big, &b), 0);
    CHECK_EQ(feed_body(&m, &CA, 0, 40000, 1400, 1, &b), 0);
    CHECK_EQ(b.count, 2);
    CHECK_EQ(b.bad, 0);
    CHECK_EQ(mem_live, 40000);
    int64_t allocs = mem_allocs;
    /* the next one of the same size needs no allocation at all */
    CHECK_EQ(pure_msgparse_feed(&m, &CA, h + 4, 4, on_big, &b), 0);
    CHECK_EQ(feed_body(&m, &CA, 0, 40000, 1400, 2, &b), 0);
    CHECK_EQ(b.count, 3);
    CHECK_EQ(mem_allocs, allocs);
    pure_msgparse_free(&m, &CA);
    CHECK_EQ(mem_live, 0);
}

/* Empty messages never allocate, even with their length prefix split across pieces. */
static void test_empty_never_allocates(void)
{
    mem_reset();
    pure_msgparse m;
    pure_msgparse_init(&m, 100);
    static const uint8_t st[] = {'p', 'u', 'r', 'e', 0, 0, 0, 0, 0, 0, 0, 0};
    bigseen b = {0};
    for (size_t i = 0; i < sizeof st; i++)
        CHECK_EQ(pure_msgparse_feed(&m, &CA, st + i, 1, on_big, &b), 0);
    CHECK_EQ(b.count, 2);
    CHECK_EQ(mem_allocs, 0);
    pure_msgparse_free(&m, &CA);
}

/* cap_limit: the buffer never grows past it; the feed stops with PURE_EAGAIN and says how many
 * bytes it left, and goes on where it stopped once the limit is raised. */
static void test_cap_limit(void)
{
    for (int with_realloc = 0; with_realloc < 2; with_realloc++) {
        const pure_alloc *a = with_realloc ? &CR : &CA;
        mem_reset();
        pure_msgparse m;
        pure_msgparse_init(&m, 1u << 20);
        const uint32_t len = 100000;
        uint8_t st[8 + 100000 + 8];
        memcpy(st, "pure", 4);
        pure_put_u32be(st + 4, len);
        for (uint32_t i = 0; i < len; i++)
            st[8 + i] = (uint8_t)((i * 7) & 255);
        pure_put_u32be(st + 8 + len, 3); /* a second message starts: "abc" follows */
        bigseen b = {0};
        m.cap_limit = 5000;
        /* 6,000 body bytes in one piece: 5,000 fit, 1,000 are left */
        CHECK_EQ(pure_msgparse_feed(&m, a, st, 8 + 6000, on_big, &b), PURE_EAGAIN);
        CHECK_EQ(m.unfed, 1000);
        CHECK_EQ(m.body_cap, 5000);
        CHECK_EQ(mem_live, 5000);
        /* at the limit already: nothing of the next piece goes in */
        CHECK_EQ(pure_msgparse_feed(&m, a, st + 8 + 5000, 10, on_big, &b), PURE_EAGAIN);
        CHECK_EQ(m.unfed, 10);
        CHECK_EQ(b.count, 0);
        /* raised: the rest in 1,400-byte pieces, each within a limit that grows with it */
        size_t at = 8 + 5000;
        int rc = 0;
        while (at < sizeof st - 8) {
            m.cap_limit = (uint32_t)(at - 8 + 1400);
            size_t n = sizeof st - 8 - at < 1400 ? sizeof st - 8 - at : 1400;
            rc = pure_msgparse_feed(&m, a, st + at, n, on_big, &b);
            CHECK(rc == 0 || rc == PURE_EAGAIN);
            at += n - (rc == PURE_EAGAIN ? m.unfed : 0);
            CHECK(m.body_cap <= m.cap_limit);
        }
        CHECK_EQ(b.count, 1);
        CHECK_EQ(b.len, len);
        CHECK_EQ(b.bad, 0);
        CHECK(mem_biggest <= (int64_t)len);
        /* the next message's prefix and body: a limit of 0 still allows what needs no memory */
        m.cap_limit = 0;
        static const uint8_t two[] = {0, 0, 0, 3, 'x', 'y', 'z', 0, 0, 0, 0};
        CHECK_EQ(pure_msgparse_feed(&m, a, two, sizeof two, on_big, &b), 0);
        CHECK_EQ(b.count, 3);
        pure_msgparse_free(&m, a);
        CHECK_EQ(mem_live, 0);
    }
}

/* A piece that starts inside a message, as nearly every packet of a stream of small messages
 * does: the message is assembled (the slow path), the whole ones after it are delivered in place
 * (the fast path), and a stop on any of them leaves exactly the bytes after it unfed. */
static void test_split_then_whole(void)
{
    static const size_t sizes[] = {9, 61, 61, 0, 61, 20};
    uint8_t b[400];
    size_t n = build(b, sizes, 6);
    size_t cut = 4 + 4 + 5; /* inside the first message's body */
    for (int stop = 0; stop <= 6; stop++) {
        seen s = {0};
        s.stop_at = stop;
        pure_msgparse m;
        pure_msgparse_init(&m, 1000);
        CHECK_EQ(pure_msgparse_feed(&m, &A, b, cut, on_msg, &s), 0);
        CHECK_EQ(s.count, 0);
        /* the second piece ends 10 bytes into the last message */
        size_t piece = n - cut - 10;
        s.lo = b + cut;
        s.hi = b + cut + piece;
        int rc = pure_msgparse_feed(&m, &A, b + cut, piece, on_msg, &s);
        if (stop == 0 || stop == 6) {
            CHECK_EQ(rc, 0);
            CHECK_EQ(m.unfed, 0);
            CHECK_EQ(s.count, 5);
            CHECK_EQ(s.in_place, 4); /* all but the assembled first */
            CHECK(!pure_msgparse_at_boundary(&m));
            CHECK_EQ(pure_msgparse_feed(&m, &A, b + cut + piece, 10, on_msg, &s), stop ? 1 : 0);
            CHECK(matches(&s, sizes, 6));
        } else {
            CHECK_EQ(rc, 1);
            CHECK_EQ(s.count, stop);
            size_t after = 4; /* the end of message `stop` in the stream */
            for (int k = 0; k < stop; k++)
                after += 4 + sizes[k];
            CHECK_EQ(m.unfed, cut + piece - after);
            CHECK(pure_msgparse_at_boundary(&m));
        }
        pure_msgparse_free(&m, &A);
    }
    CHECK_EQ(t_live, 0);
}

int main(void)
{
    RUN(test_preamble);
    RUN(test_every_split);
    RUN(test_in_place_and_boundary);
    RUN(test_zero_length);
    RUN(test_max_size);
    RUN(test_stop);
    RUN(test_split_then_whole);
    RUN(test_alloc_failure);
    RUN(test_memory_follows_bytes);
    RUN(test_small_buffers_kept);
    RUN(test_empty_never_allocates);
    RUN(test_cap_limit);
    return pure_test_finish();
}
