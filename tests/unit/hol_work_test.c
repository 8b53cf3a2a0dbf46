/* SPDX-License-Identifier: MIT */
/* hol_work_test: bench/hol_work.h, what the head-of-line benchmark's C peers (peers/ngtcp2/hol.c,
 * peers/tls/hol.c) count with: the framer on every split, the server's bulk log and its answer to
 * the goodput query, the client's request pacing and window, and the options. */
#include "../../bench/hol_work.h"
#include "../test.h"

typedef struct seen {
    int smalls, empties, queries;
    uint8_t last[HOL_SMALL_MAX];
    size_t last_len;
} seen;

static void on_small(void *arg, const uint8_t *d, size_t n)
{
    seen *s = arg;
    if (!n)
        s->empties++;
    else
        s->smalls++;
    memcpy(s->last, d, n);
    s->last_len = n;
}

/* 3 x (a 61-byte request, a bulk frame of 1000 + i bytes), then an empty frame. */
static size_t stream(uint8_t *buf)
{
    size_t n = 0;
    for (uint32_t i = 0; i < 3; i++) {
        hol_put32(buf + n, 61);
        memset(buf + n + 4, 0x40 + (int)i, 61);
        n += 65;
        hol_put32(buf + n, 1000 + i);
        memset(buf + n + 4, 7, 1000 + i);
        n += 1004 + i;
    }
    hol_put32(buf + n, 0);
    return n + 4;
}

static void test_framer_any_split(void)
{
    static uint8_t buf[8192];
    size_t len = stream(buf);
    static const size_t splits[] = {1, 3, 4, 5, 61, 64, 65, 66, 1000, 8192};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        hol_framer f = {0};
        seen s = {0};
        uint64_t bulk = 0;
        for (size_t off = 0; off < len; off += splits[k]) {
            size_t n = len - off < splits[k] ? len - off : splits[k];
            CHECK_EQ(hol_feed(&f, buf + off, n, on_small, &s, &bulk), 0);
        }
        CHECK_EQ(s.smalls, 3);
        CHECK_EQ(s.empties, 1);
        CHECK_EQ(bulk, 3 * 1000 + 3);
        CHECK_EQ(f.hdr_have, 0);
        CHECK_EQ(f.body_left, 0);
    }
    /* a frame over the limit: an error, not a wait for 4 GiB */
    hol_framer f = {0};
    seen s = {0};
    uint64_t bulk = 0;
    uint8_t big[4];
    hol_put32(big, HOL_MAX_FRAME + 1);
    CHECK_EQ(hol_feed(&f, big, 4, on_small, &s, &bulk), -1);
    hol_framer g = {0};
    hol_put32(big, HOL_MAX_FRAME);
    CHECK_EQ(hol_feed(&g, big, 4, on_small, &s, &bulk), 0);
}

static void test_bulklog_and_query(void)
{
    hol_bulklog l = {0};
    uint64_t t = 5000000000ull;
    hol_bulklog_add(&l, 100, t);
    hol_bulklog_add(&l, 50, t + 500000); /* same millisecond: one entry */
    hol_bulklog_add(&l, 10, t + 2000000);
    for (int i = 1; i <= 10000; i++) /* grows past its first allocation */
        hol_bulklog_add(&l, 1, t + 2000000 + (uint64_t)i * 1000000);
    CHECK_EQ(l.n, 10002);
    CHECK_EQ(hol_bulklog_at(&l, t - 1), 0);
    CHECK_EQ(hol_bulklog_at(&l, t), 150);
    CHECK_EQ(hol_bulklog_at(&l, t + 1999999), 150);
    CHECK_EQ(hol_bulklog_at(&l, t + 2000000), 160);
    CHECK_EQ(hol_bulklog_at(&l, UINT64_MAX), 10160);

    /* the query for [t + 1 ms, t + 3 ms) is answered with 160 + 1 - 150 bytes and the total */
    uint8_t q[4 + HOL_QUERY_LEN], out[4 + HOL_SMALL_MAX];
    hol_query_frame(q, t + 1000000, t + 3000000);
    CHECK_EQ(hol_get32(q), HOL_QUERY_LEN);
    size_t n = hol_server_reply(&l, q + 4, HOL_QUERY_LEN, out);
    CHECK_EQ(n, 4 + HOL_QUERY_LEN);
    hol_client c = {0};
    hol_client_small(&c, out + 4, n - 4);
    CHECK_EQ(c.answered_query, 1);
    CHECK_EQ(c.query_bytes, 11);
    CHECK_EQ(c.query_total, 10160);
    /* anything else small is echoed unchanged */
    uint8_t req[61];
    memset(req, 0xab, sizeof req);
    n = hol_server_reply(&l, req, sizeof req, out);
    CHECK_EQ(n, 65);
    CHECK(memcmp(out + 4, req, 61) == 0);
    hol_bulklog_free(&l);
}

static void test_client_pacing(void)
{
    hol_opts o;
    hol_opts_default(&o);
    o.warmup = 0.01, o.duration = 0.02, o.rate = 1000;
    hol_client c;
    CHECK_EQ(hol_client_start(&c, &o), 0);
    CHECK_EQ(c.bulk_len, 4 + (1u << 20));
    CHECK_EQ(hol_get32(c.bulk_frame), 1u << 20);
    CHECK_EQ(c.bulk_frame[4 + 252], 1); /* byte i = i % 251 */
    static uint8_t buf[65536];
    /* at t0 one request is due; 2.5 ms later two more; each carries its due time */
    CHECK_EQ(hol_take_due(&c, c.t0, buf, sizeof buf), 65);
    CHECK_EQ(hol_get64(buf + 4), c.t0);
    CHECK_EQ(buf[12], 0xab);
    CHECK_EQ(hol_take_due(&c, c.t0 + 2500000, buf, sizeof buf), 130);
    CHECK_EQ(hol_get64(buf + 65 + 4), c.t0 + 2000000);
    CHECK_EQ(c.sent_in_window, 0); /* all due in the warm-up */
    /* a buffer with room for one takes one at a time */
    CHECK_EQ(hol_take_due(&c, c.t0 + 12000000, buf, 70), 65);
    /* none due at or after the window's end (30 requests in all: 10 warm-up + 20 window) */
    size_t n;
    while ((n = hol_take_due(&c, c.to + 1000000000, buf, sizeof buf)) > 0)
        ;
    CHECK_EQ(c.next_seq, 30);
    CHECK_EQ(c.sent_in_window, 20);
    CHECK(hol_requests_done(&c));
    /* answers: only the window's count; the echo of a request due at `from` counts */
    uint8_t body[61];
    memset(body, 0xab, sizeof body);
    hol_put64(body, c.t0); /* warm-up */
    hol_client_small(&c, body, sizeof body);
    CHECK_EQ(c.n_rtt, 0);
    for (int i = 0; i < 20; i++) {
        hol_put64(body, c.from + (uint64_t)i * c.interval);
        hol_client_small(&c, body, sizeof body);
    }
    CHECK_EQ(c.n_rtt, 20);
    CHECK(hol_all_answered(&c));
    uint64_t v[] = {10, 20, 30, 40};
    CHECK(hol_pct_us(v, 4, 0.5) == 0.03);
    CHECK(hol_pct_us(v, 4, 0.999) == 0.04);
    CHECK(hol_pct_us(v, 0, 0.5) == -1);
    hol_client_free(&c);
}

static void test_options(void)
{
    hol_opts o;
    hol_opts_default(&o);
    CHECK_EQ(o.mode, -1);
    CHECK_EQ(hol_opt(&o, "--mode", "separate"), 1);
    CHECK_EQ(o.mode, HOL_SEPARATE);
    CHECK_EQ(hol_opt(&o, "--mode", "both"), -1);
    CHECK_EQ(hol_opt(&o, "--mode", NULL), -1);
    CHECK_EQ(hol_opt(&o, "--rate", "500"), 1);
    CHECK_EQ(o.rate, 500);
    CHECK_EQ(hol_opt(&o, "--rate", "0"), -1);
    CHECK_EQ(hol_opt(&o, "--size", "65"), -1);
    CHECK_EQ(hol_opt(&o, "--size", "7"), -1);
    CHECK_EQ(hol_opt(&o, "--bulk", "64"), -1);
    CHECK_EQ(hol_opt(&o, "--bulk", "12x"), -1);
    CHECK_EQ(hol_opt(&o, "--duration", "0"), -1);
    CHECK_EQ(hol_opt(&o, "--warmup", "0"), 1);
    CHECK_EQ(hol_opt(&o, "--peer-key", "x"), 0);
}

int main(void)
{
    RUN(test_framer_any_split);
    RUN(test_bulklog_and_query);
    RUN(test_client_pacing);
    RUN(test_options);
    return pure_test_finish();
}
