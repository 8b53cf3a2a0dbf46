/* SPDX-License-Identifier: MIT */
/* msgparse_fuzz.c: libFuzzer target for the message framer (msgparse.c).
 *
 * Input layout:
 *   byte 0       maximum message size selector (max_len = byte * 37, so 0 allows only empty ones)
 *   byte 1       stop after this many messages (0 = never stop)
 *   byte 2       number k of split points (taken modulo 17)
 *   k x 2 bytes  split points (big-endian, modulo the stream length)
 *   rest         the stream bytes
 * The stream is fed three ways: (1) whole, in one pure_msgparse_feed; (2) cut at the split points;
 * (3) one byte at a time. All three must deliver the same messages, return the same code and end
 * on the same boundary state, and all three must agree with a straightforward reference parse of
 * the stream. A sized allocator checks that every free passes the size that was allocated and
 * that nothing is left allocated after pure_msgparse_free. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgparse.h"
#include "pure.h"
#include "varint.h"
#include "wire.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "msgparse_fuzz: %s (line %d)\n", what, __LINE__);                          \
        abort();                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- a sized allocator: a header holds the size, free must pass the same size ---- */

static size_t g_live;

static void *sized_alloc(void *user, size_t n)
{
    (void)user;
    uint8_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    g_live++;
    return p + 16;
}

static void sized_free(void *user, void *q, size_t n)
{
    (void)user;
    uint8_t *p = (uint8_t *)q - 16;
    size_t had;
    memcpy(&had, p, sizeof had);
    if (had != n)
        FAIL("free size differs from the allocated size");
    g_live--;
    free(p);
}

/* ---- the record of delivered messages: u32 length + bytes, concatenated ---- */

typedef struct record {
    uint8_t *buf;
    size_t len, cap;
    unsigned count, stop_after;
} record;

static void rec_add(record *r, const uint8_t *d, size_t n)
{
    if (r->len + 4 + n > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + 4 + n)
            cap *= 2;
        r->buf = realloc(r->buf, cap);
        if (!r->buf)
            abort();
        r->cap = cap;
    }
    pure_put_u32be(r->buf + r->len, (uint32_t)n);
    if (n)
        memcpy(r->buf + r->len + 4, d, n);
    r->len += 4 + n;
    r->count++;
}

static int on_msg(void *arg, const uint8_t *d, size_t n)
{
    record *r = arg;
    if (n && !d)
        FAIL("message with no data pointer");
    rec_add(r, d, n);
    return r->stop_after && r->count == r->stop_after;
}

/* Feeds stream [0, n) cut at the sorted points cuts[0..k). Returns the last feed's code. */
static int run(const uint8_t *s, size_t n, const size_t *cuts, size_t k, uint32_t max_len,
               record *r, int *boundary)
{
    static const pure_alloc a = {sized_alloc, sized_free, NULL, NULL};
    pure_msgparse m;
    pure_msgparse_init(&m, max_len);
    int rc = 0;
    size_t from = 0;
    for (size_t i = 0; i <= k && rc == 0; i++) {
        size_t to = i < k ? cuts[i] : n;
        if (to < from)
            FAIL("cuts not sorted");
        rc = pure_msgparse_feed(&m, &a, s + from, to - from, on_msg, r);
        from = to;
    }
    *boundary = pure_msgparse_at_boundary(&m);
    pure_msgparse_free(&m, &a);
    if (g_live != 0)
        FAIL("allocations left after pure_msgparse_free");
    return rc;
}

/* The reference: the framing rules written out plainly over the whole stream. */
static int reference(const uint8_t *s, size_t n, uint32_t max_len, record *r, int *boundary)
{
    *boundary = 1;
    if (n < 4) {
        *boundary = n == 0; /* partial preamble: the parser holds bytes of it */
        return 0;
    }
    if (memcmp(s, PURE_STREAM_PREAMBLE, 4) != 0)
        return PURE_EPROTO;
    size_t p = 4;
    while (p < n) {
        if (n - p < 4) {
            *boundary = 0;
            return 0;
        }
        uint32_t len = pure_get_u32be(s + p);
        if (len > max_len)
            return PURE_EMSGSIZE;
        if (n - p - 4 < len) {
            *boundary = 0;
            return 0;
        }
        if (on_msg(r, s + p + 4, len))
            return 1;
        p += 4 + (size_t)len;
    }
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint32_t max_len = (uint32_t)data[0] * 37;
    unsigned stop_after = data[1];
    size_t k = data[2] % 17;
    data += 3;
    size -= 3;
    if (size < 2 * k)
        k = size / 2;
    size_t cuts[17];
    const uint8_t *s = data + 2 * k;
    size_t n = size - 2 * k;
    for (size_t i = 0; i < k; i++)
        cuts[i] = n ? (size_t)((data[2 * i] << 8 | data[2 * i + 1]) % (n + 1)) : 0;
    qsort(cuts, k, sizeof cuts[0], cmp_size);

    record whole = {.stop_after = stop_after}, split = {.stop_after = stop_after},
           bytes = {.stop_after = stop_after}, ref = {.stop_after = stop_after};
    int b_whole, b_split, b_bytes, b_ref;
    int rc_whole = run(s, n, NULL, 0, max_len, &whole, &b_whole);
    int rc_split = run(s, n, cuts, k, max_len, &split, &b_split);
    /* one byte at a time (bounded so the target stays fast) */
    size_t nb = n < 512 ? n : 512;
    size_t *each = malloc((nb ? nb : 1) * sizeof *each);
    for (size_t i = 0; i < nb; i++)
        each[i] = i;
    int rc_bytes = run(s, n, each, nb, max_len, &bytes, &b_bytes);
    free(each);
    int rc_ref = reference(s, n, max_len, &ref, &b_ref);

    if (rc_whole != rc_ref || rc_split != rc_ref || rc_bytes != rc_ref)
        FAIL("return codes differ between feeding patterns");
    if (whole.count != ref.count || split.count != ref.count || bytes.count != ref.count ||
        whole.len != ref.len || split.len != ref.len || bytes.len != ref.len ||
        (ref.len &&
         (memcmp(whole.buf, ref.buf, ref.len) != 0 || memcmp(split.buf, ref.buf, ref.len) != 0 ||
          memcmp(bytes.buf, ref.buf, ref.len) != 0)))
        FAIL("delivered messages differ between feeding patterns");
    if (rc_ref == 0 && (b_whole != b_ref || b_split != b_ref || b_bytes != b_ref))
        FAIL("boundary state differs");
    free(whole.buf);
    free(split.buf);
    free(bytes.buf);
    free(ref.buf);
    return 0;
}
