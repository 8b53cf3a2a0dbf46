/* SPDX-License-Identifier: MIT */
/* shared_test.c: shared message bodies in a stream (shared.c) and the marks that date messages
 * (qwatch.c). A randomized stream of copied and shared messages, acknowledged in random steps,
 * against a flat copy of it: every range copies out byte-exact (across the ring's wrap and
 * the bodies' edges), length prefixes read back, the ring holds only what was copied, and every
 * shared buffer is released exactly once (when the acknowledged prefix passes its last use, or
 * when the queue is freed). Then allocation failures, and the marks' ages. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "qwatch.h"
#include "shared.h"
#include "support/talloc.h"
#include "test.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

#define NSH 5
static pure_shared *sh[NSH];
static uint8_t body[NSH][3000];
static int released[NSH];
static size_t lens[NSH];

static void on_release(void *user, const void *data, size_t len)
{
    int i = (int)(intptr_t)user;
    released[i]++;
    CHECK(data == body[i]);
    CHECK_EQ(len, lens[i]);
}

/* A buffer as pure_shared_new makes it (the unit test has no context): freed with the last
 * reference. */
static void make(int i, size_t len, uint32_t seed)
{
    for (size_t k = 0; k < len; k++)
        body[i][k] = (uint8_t)(seed * 31 + k * 7 + (k >> 5));
    sh[i] = t_alloc(NULL, sizeof(pure_shared));
    memset(sh[i], 0, sizeof *sh[i]);
    sh[i]->data = body[i];
    sh[i]->len = lens[i] = len;
    sh[i]->release = on_release;
    sh[i]->user = (void *)(intptr_t)i;
    sh[i]->a = A;
    sh[i]->refs = 1;
    released[i] = 0;
}

static uint8_t flat[1 << 22];

static void test_random(void)
{
    srand(7);
    for (int round = 0; round < 40; round++) {
        long live0 = t_live;
        for (int i = 0; i < NSH; i++)
            make(i, (size_t)(i == 0 ? 0 : 1 + rand() % 3000), (uint32_t)round * 10 + (uint32_t)i);
        pure_sendbuf s;
        memset(&s, 0, sizeof s);
        pure_shq *q = NULL;
        uint64_t copied_bytes = 0, shared_bytes = 0;
        uint64_t boundaries[4096];
        int nb = 0, next_msg = 0;
        uint64_t ring_peak = 0;
        /* a stream that may start with copied messages (the queue made later, offsets as is) */
        for (int step = 0; step < 600; step++) {
            int r = rand() % 10;
            if (r < 5 && s.end + 3004 < sizeof flat && nb < 4096) {
                uint64_t at = s.end;
                int rc;
                if (r < 2) { /* a copied message */
                    uint8_t m[700];
                    size_t len = (size_t)(rand() % 700);
                    for (size_t k = 0; k < len; k++)
                        m[k] = (uint8_t)rand();
                    uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16),
                                      (uint8_t)(len >> 8), (uint8_t)len};
                    rc = q ? pure_shq_write(&s, q, &A, hdr, 4, m, len, 1 << 20)
                           : pure_sendbuf_write(&s, &A, hdr, 4, m, len, 1 << 20);
                    if (rc == 0) {
                        memcpy(flat + at, hdr, 4);
                        memcpy(flat + at + 4, m, len);
                        copied_bytes += 4 + len;
                    }
                } else { /* a shared one */
                    int i = rand() % NSH;
                    rc = pure_shq_write_shared(&s, &q, &A, sh[i], 1 << 20);
                    if (rc == 0) {
                        size_t len = sh[i]->len;
                        uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16),
                                          (uint8_t)(len >> 8), (uint8_t)len};
                        memcpy(flat + at, hdr, 4);
                        memcpy(flat + at + 4, body[i], len);
                        copied_bytes += 4;
                        shared_bytes += len;
                    }
                }
                if (rc == 0)
                    boundaries[nb++] = at;
                else
                    CHECK_EQ(rc, PURE_EAGAIN);
            } else if (r < 8 && s.end > s.base) { /* copy out a random range, as a packet */
                uint64_t off = s.base + (uint64_t)rand() % (s.end - s.base);
                size_t len = (size_t)(1 + rand() % 2000);
                if (off + len > s.end)
                    len = (size_t)(s.end - off);
                uint8_t out[2000];
                pure_shq_copy(&s, q, off, out, len);
                CHECK(memcmp(out, flat + off, len) == 0);
                /* each length prefix still held reads back */
                for (int m = next_msg; m < nb; m++)
                    if (boundaries[m] >= s.base) {
                        uint64_t b = boundaries[m];
                        uint32_t want = (uint32_t)flat[b] << 24 | (uint32_t)flat[b + 1] << 16 |
                                        (uint32_t)flat[b + 2] << 8 | flat[b + 3];
                        CHECK_EQ(pure_shq_get_u32(&s, q, b), want);
                        break;
                    }
            } else if (s.end > s.base) { /* acknowledge a prefix, often inside a body */
                uint64_t to = s.base + 1 + (uint64_t)rand() % (s.end - s.base);
                pure_shq_release(&s, q, to);
                while (next_msg < nb && boundaries[next_msg] < s.base)
                    next_msg++;
            }
            /* the ring never holds a shared body: it grows for the copied bytes alone */
            uint64_t ring = s.end - s.base - pure_shq_held(q);
            if (ring > ring_peak)
                ring_peak = ring;
            CHECK(s.cap <= 256 || s.cap < 2 * ring_peak);
        }
        (void)copied_bytes;
        (void)shared_bytes;
        /* references: the queue's, released when the prefix passes them or the queue goes */
        if (rand() % 2) {
            pure_shq_release(&s, q, s.end);
            for (int i = 0; i < NSH; i++)
                CHECK_EQ(released[i], 0); /* the caller's reference is still held */
        }
        pure_shq_free(&q, &A);
        CHECK(q == NULL);
        pure_sendbuf_free(&s, &A);
        for (int i = 0; i < NSH; i++) {
            CHECK_EQ(sh[i]->refs, 1);
            pure_shared_drop(sh[i]); /* the caller's: the last one */
            CHECK_EQ(released[i], 1);
        }
        CHECK_EQ(t_live, live0);
    }
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_alloc_failure(void)
{
    make(1, 100, 1);
    pure_sendbuf s;
    memset(&s, 0, sizeof s);
    pure_shq *q = NULL;
    t_fail = 1;
    CHECK_EQ(pure_shq_write_shared(&s, &q, &A, sh[1], 1 << 20), PURE_ENOMEM);
    t_fail = 0;
    CHECK_EQ(s.end, 0);
    CHECK_EQ(sh[1]->refs, 1); /* no reference taken */
    /* the backlog counts shared bytes: past it PURE_EAGAIN, unless nothing is queued */
    CHECK_EQ(pure_shq_write_shared(&s, &q, &A, sh[1], 50), 0);
    CHECK_EQ(pure_shq_write_shared(&s, &q, &A, sh[1], 150), PURE_EAGAIN);
    CHECK_EQ(pure_shq_write(&s, q, &A, "abcd", 4, "x", 1, 108), PURE_EAGAIN);
    CHECK_EQ(pure_shq_write(&s, q, &A, "abcd", 4, "x", 1, 109), 0);
    CHECK_EQ(sh[1]->refs, 2);
    CHECK_EQ(pure_shq_held(q), 100);
    pure_shq_free(&q, &A);
    pure_sendbuf_free(&s, &A);
    CHECK_EQ(sh[1]->refs, 1);
    CHECK_EQ(released[1], 0);
    pure_shared_drop(sh[1]);
    CHECK_EQ(released[1], 1);
}

static void test_marks(void)
{
    pure_qmarks m;
    memset(&m, 0, sizeof m);
    CHECK_EQ(pure_qmarks_oldest(&m, 0), UINT64_MAX);
    /* messages at offsets 0, 10, 20 accepted at times 100, 100, 200 */
    pure_qmarks_note(&m, 0, 0, 100);
    pure_qmarks_note(&m, 0, 10, 100);
    pure_qmarks_note(&m, 0, 20, 200);
    CHECK_EQ(m.n, 2);
    CHECK_EQ(pure_qmarks_oldest(&m, 0), 100);
    CHECK_EQ(pure_qmarks_oldest(&m, 10), 100); /* the second message: still 100 */
    CHECK_EQ(pure_qmarks_oldest(&m, 20), 200);
    CHECK_EQ(m.n, 1);
    /* full: later messages take the newest mark's time (an age never under-estimated) */
    for (uint64_t k = 1; k <= 10; k++)
        pure_qmarks_note(&m, 20, 20 + k * 10, 200 + k * 100);
    CHECK_EQ(m.n, PURE_QMARKS);
    CHECK_EQ(pure_qmarks_oldest(&m, 20 + 9 * 10), 200 + (PURE_QMARKS - 1) * 100);
    /* the queue emptied: a new message starts afresh */
    pure_qmarks_note(&m, 500, 500, 5000);
    CHECK_EQ(m.n, 1);
    CHECK_EQ(pure_qmarks_oldest(&m, 500), 5000);
    /* a mark for a send that failed takes the next one's time */
    pure_qmarks_note(&m, 500, 510, 6000);
    pure_qmarks_note(&m, 500, 510, 7000);
    CHECK_EQ(pure_qmarks_oldest(&m, 510), 7000);
    /* a head before every mark: accepted before watching began, unknown */
    pure_qmarks z;
    memset(&z, 0, sizeof z);
    pure_qmarks_note(&z, 0, 40, 10);
    CHECK_EQ(pure_qmarks_oldest(&z, 0), UINT64_MAX);
}

int main(void)
{
    RUN(test_random);
    RUN(test_alloc_failure);
    RUN(test_marks);
    return pure_test_finish();
}
