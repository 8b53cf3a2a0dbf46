/* SPDX-License-Identifier: MIT */
/* msgparse_test.c: the receiver's message framer (msgparse.c): the preamble check, a stream split
 * at every possible point (and every pair of points), zero-length messages, whole messages
 * delivered straight from the input, the maximum size (PURE_EMSGSIZE), the stop return,
 * boundaries, shrinking, and allocation through the injected allocator. */
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
    int stop_at;                  /* return 1 on this message number (1-based); 0 never */
    const uint8_t *lo, *hi;       /* the input piece, to tell zero-copy deliveries */
    int in_place;                 /* deliveries pointing into [lo, hi) */
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
    /* one byte at a time */
    pure_msgparse m;
    pure_msgparse_init(&m, 1000);
    static seen s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = pure_msgparse_feed(&m, &A, b + i, 1, on_msg, &s);
        if (i + 1 < n && s.count == NSIZES)
            bad++;
    }
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
    t_fail = 0;
    pure_msgparse_free(&m, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

int main(void)
{
    RUN(test_preamble);
    RUN(test_every_split);
    RUN(test_in_place_and_boundary);
    RUN(test_zero_length);
    RUN(test_max_size);
    RUN(test_stop);
    RUN(test_alloc_failure);
    return pure_test_finish();
}
