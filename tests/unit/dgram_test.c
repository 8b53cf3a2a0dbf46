/* SPDX-License-Identifier: MIT */
/* dgram_test: the datagram queue (dgram.c): whole datagrams out in the order they went in, empty
 * ones too, the 64 KiB limit refusing what would pass it (nothing queued), the buffer sliding and
 * growing, clearing counted as dropped, and a failed allocation leaving the queue as it was. */
#include <stdlib.h>
#include <string.h>

#include "dgram.h"
#include "pure.h"
#include "test.h"

static int fail;
static void *t_alloc(void *u, size_t n)
{
    (void)u;
    return fail ? NULL : malloc(n);
}
static void t_free(void *u, void *p, size_t n)
{
    (void)u, (void)n;
    free(p);
}
static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

static void fill(uint8_t *p, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(id * 31 + i);
}

static void test_fifo(void)
{
    pure_dgq q;
    memset(&q, 0, sizeof q);
    const uint8_t *p;
    CHECK_EQ(pure_dgq_peek(&q, &p), -1);
    static uint8_t m[2000];
    uint32_t in = 0, out = 0;
    /* many rounds: pushes and pops interleaved so the buffer slides and grows */
    for (int round = 0; round < 500; round++) {
        for (int k = 0; k < 3; k++) {
            size_t n = (size_t)((in * 7919u) % 1500u);
            fill(m, n, in);
            CHECK_EQ(pure_dgq_push(&q, &A, m, n), 0);
            in++;
        }
        for (int k = 0; k < (round ? 3 : 1); k++) { /* two stay queued: the buffer slides */
            int32_t n = pure_dgq_peek(&q, &p);
            CHECK_EQ(n, (int32_t)((out * 7919u) % 1500u));
            fill(m, (size_t)n, out);
            CHECK(memcmp(p, m, (size_t)n) == 0);
            pure_dgq_pop(&q);
            out++;
        }
    }
    CHECK_EQ(q.count, 2);
    pure_dgq_clear(&q, &A);
    CHECK_EQ(q.dropped, in - out);
    CHECK_EQ(pure_dgq_peek(&q, &p), -1);
    CHECK(q.buf == NULL);
}

static void test_limits(void)
{
    pure_dgq q;
    memset(&q, 0, sizeof q);
    static uint8_t m[70000];
    int n = 0;
    while (pure_dgq_push(&q, &A, m, 1000) == 0)
        n++;
    CHECK_EQ(n, PURE_DGQ_LIMIT / 1002); /* each takes its length and 2 bytes */
    uint32_t count = q.count, tail = q.tail;
    CHECK_EQ(pure_dgq_push(&q, &A, m, 1000), PURE_EAGAIN); /* nothing changed */
    CHECK_EQ(q.count, count);
    CHECK_EQ(q.tail, tail);
    pure_dgq_clear(&q, &A);
    CHECK_EQ(pure_dgq_push(&q, &A, m, 65536), PURE_EAGAIN); /* more than a u16 */
    fail = 1;
    CHECK_EQ(pure_dgq_push(&q, &A, m, 10), PURE_ENOMEM);
    fail = 0;
    CHECK_EQ(q.count, 0);
    CHECK_EQ(pure_dgq_push(&q, &A, m, 0), 0); /* an empty datagram is one */
    const uint8_t *p;
    CHECK_EQ(pure_dgq_peek(&q, &p), 0);
    pure_dgq_pop(&q);
    pure_dgq_pop(&q); /* popping an empty queue does nothing */
    CHECK_EQ(q.count, 0);
    pure_dgq_clear(&q, &A);
}

int main(void)
{
    RUN(test_fifo);
    RUN(test_limits);
    return pure_test_finish();
}
