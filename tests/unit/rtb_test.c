/* SPDX-License-Identifier: MIT */
/* rtb_test.c: the retransmission buffer (rtb.c): named edge cases (ACK-only packets, the ring
 * growing across its wrap, the loss thresholds at their exact edges, stale, duplicate and
 * invalid ACKs, discards, allocation failure), and randomized runs checked against a model that
 * keeps every packet's fate in an array. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "rtb.h"
#include "support/talloc.h"
#include "test.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

/* ---- helpers ---- */

/* A live packet sent at `time`, its data_off derived from the time so entries can be told apart. */
static int send_live(pure_rtb *b, uint64_t time)
{
    pure_sent s = {.time = time,
                   .data_off = time * 1000 + 7,
                   .data_len = 100,
                   .size = 1200,
                   .flags = PURE_SENT_ELICITING | PURE_SENT_LIVE};
    return pure_rtb_on_sent(b, &A, &s);
}

static int send_ack_only(pure_rtb *b, uint64_t time)
{
    pure_sent s = {.time = time, .size = 50};
    return pure_rtb_on_sent(b, &A, &s);
}

/* An ACK frame of one inclusive range [lo, hi]. */
static pure_ack_frame ack1(uint64_t lo, uint64_t hi)
{
    pure_ack_frame f = {.largest = hi, .n = 1};
    f.r[0].lo = lo;
    f.r[0].hi = hi;
    return f;
}

/* Walks the ACK, storing the packet numbers reported (at most cap); returns how many, or -1 if
 * the frame was refused. */
static int acked(pure_rtb *b, const pure_ack_frame *f, uint64_t *out, int cap)
{
    pure_rtb_iter it;
    if (pure_rtb_acked_begin(b, &it, f) != 0)
        return -1;
    int n = 0;
    uint64_t pn;
    while (pure_rtb_acked_next(b, &it, &pn) != NULL)
        if (n < cap)
            out[n++] = pn;
    return n;
}

static int lost(pure_rtb *b, uint64_t delay, uint64_t now, uint64_t *out, int cap)
{
    pure_rtb_iter it;
    int n = 0;
    uint64_t pn;
    pure_rtb_lost_begin(b, &it, delay, now);
    while (pure_rtb_lost_next(b, &it, &pn) != NULL)
        if (n < cap)
            out[n++] = pn;
    return n;
}

static int discarded(pure_rtb *b, uint64_t first, uint64_t *out, int cap)
{
    pure_rtb_iter it;
    int n = 0;
    uint64_t pn;
    pure_rtb_discard_begin(b, &it, first);
    while (pure_rtb_discard_next(b, &it, &pn) != NULL)
        if (n < cap)
            out[n++] = pn;
    return n;
}

/* ---- named cases ---- */

static void test_ack_only(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    uint64_t got[8];
    /* ACK-only packets of an idle buffer are not kept: no ring, nothing in flight */
    CHECK_EQ(send_ack_only(&b, 1), 0);
    CHECK_EQ(send_ack_only(&b, 2), 0);
    CHECK_EQ(pure_rtb_next_pn(&b), 2);
    CHECK_EQ(pure_rtb_in_flight(&b), 0);
    CHECK(b.sent == NULL);
    pure_ack_frame f = ack1(0, 1);
    CHECK_EQ(acked(&b, &f, got, 8), 0);
    CHECK_EQ(b.largest_acked, 1);
    /* an ACK-only packet inside a flight is a placeholder, never reported */
    CHECK_EQ(send_live(&b, 3), 0);     /* 2 */
    CHECK_EQ(send_ack_only(&b, 4), 0); /* 3 */
    CHECK_EQ(send_live(&b, 5), 0);     /* 4 */
    CHECK_EQ(pure_rtb_in_flight(&b), 2);
    f = ack1(2, 4);
    CHECK_EQ(acked(&b, &f, got, 8), 2);
    CHECK_EQ(got[0], 4);
    CHECK_EQ(got[1], 2);
    CHECK_EQ(pure_rtb_in_flight(&b), 0);
    pure_rtb_free(&b, &A);
    CHECK_EQ(t_live, 0);
}

/* The ring grows while its live packets straddle the wrap: every entry keeps its number. */
static void test_grow_across_wrap(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    uint64_t got[64];
    for (uint64_t t = 0; t < 8; t++)
        CHECK_EQ(send_live(&b, 100 + t), 0);
    CHECK_EQ(b.cap, 8);
    pure_ack_frame f = ack1(0, 4);
    CHECK_EQ(acked(&b, &f, got, 64), 5);
    CHECK_EQ(lost(&b, 1000, 108, got, 64), 0);
    CHECK_EQ(b.lo, 5);
    for (uint64_t t = 8; t < 20; t++) /* 8..12 reuse slots 0..4, then the ring doubles twice */
        CHECK_EQ(send_live(&b, 100 + t), 0);
    CHECK_EQ(b.cap, 16);
    CHECK_EQ(pure_rtb_in_flight(&b), 15);
    f = ack1(5, 19);
    pure_rtb_iter it;
    CHECK_EQ(pure_rtb_acked_begin(&b, &it, &f), 0);
    uint64_t pn, want = 19;
    int n = 0;
    const pure_sent *e;
    while ((e = pure_rtb_acked_next(&b, &it, &pn)) != NULL) {
        CHECK_EQ(pn, want);
        CHECK_EQ(e->time, 100 + pn);
        CHECK_EQ(e->data_off, (100 + pn) * 1000 + 7);
        CHECK(!(e->flags & PURE_SENT_LIVE));
        want--;
        n++;
    }
    CHECK_EQ(n, 15);
    CHECK_EQ(pure_rtb_in_flight(&b), 0);
    pure_rtb_free(&b, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* Lost exactly 3 packet numbers behind the largest acknowledged, or delay after being sent. */
static void test_thresholds(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    uint64_t got[8];
    for (uint64_t t = 0; t < 5; t++)
        CHECK_EQ(send_live(&b, 10 * t), 0); /* pn t sent at 10t */
    /* before any ACK nothing is lost, however old */
    CHECK_EQ(lost(&b, 1, 1000, got, 8), 0);
    CHECK_EQ(pure_rtb_loss_time(&b), UINT64_MAX);
    pure_ack_frame f = ack1(3, 3);
    CHECK_EQ(acked(&b, &f, got, 8), 1);
    /* pn 0 is 3 behind: lost; 1 and 2 are not, and the time threshold is far */
    CHECK_EQ(lost(&b, 100, 40, got, 8), 1);
    CHECK_EQ(got[0], 0);
    CHECK_EQ(pure_rtb_loss_time(&b), 110); /* pn 1, sent at 10 */
    /* one tick before its time: nothing; at it exactly: lost */
    CHECK_EQ(lost(&b, 100, 109, got, 8), 0);
    CHECK_EQ(pure_rtb_loss_time(&b), 110);
    CHECK_EQ(lost(&b, 100, 110, got, 8), 1);
    CHECK_EQ(got[0], 1);
    CHECK_EQ(pure_rtb_loss_time(&b), 120);
    /* a packet above the largest acknowledged is never lost (pn 4) */
    CHECK_EQ(lost(&b, 0, 10000, got, 8), 1);
    CHECK_EQ(got[0], 2);
    CHECK_EQ(pure_rtb_loss_time(&b), UINT64_MAX);
    CHECK_EQ(pure_rtb_in_flight(&b), 1);
    /* a lost packet acknowledged late is not reported again */
    f = ack1(0, 2);
    CHECK_EQ(acked(&b, &f, got, 8), 0);
    pure_rtb_free(&b, &A);
}

static void test_invalid_stale_duplicate(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    uint64_t got[8];
    for (uint64_t t = 0; t < 4; t++)
        CHECK_EQ(send_live(&b, t), 0);
    pure_ack_frame f = ack1(0, 4); /* 4 was never sent */
    CHECK_EQ(acked(&b, &f, got, 8), -1);
    CHECK_EQ(b.largest_acked, UINT64_MAX);
    CHECK_EQ(pure_rtb_in_flight(&b), 4);
    f = ack1(2, 3);
    CHECK_EQ(acked(&b, &f, got, 8), 2);
    CHECK_EQ(acked(&b, &f, got, 8), 0); /* duplicate */
    f = ack1(1, 1);
    CHECK_EQ(acked(&b, &f, got, 8), 1); /* stale: older than the largest, still news */
    CHECK_EQ(b.largest_acked, 3);       /* the largest does not go back */
    /* two ranges, largest first: [3,3] and [0,1] */
    f = (pure_ack_frame){.largest = 3, .n = 2};
    f.r[0].lo = 3, f.r[0].hi = 3, f.r[1].lo = 0, f.r[1].hi = 1;
    CHECK_EQ(acked(&b, &f, got, 8), 1);
    CHECK_EQ(got[0], 0);
    CHECK_EQ(pure_rtb_in_flight(&b), 0);
    pure_rtb_free(&b, &A);
}

static void test_discard_and_skip(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    uint64_t got[8];
    for (uint64_t t = 0; t < 6; t++)
        CHECK_EQ(send_live(&b, t), 0);
    pure_ack_frame f = ack1(1, 1);
    CHECK_EQ(acked(&b, &f, got, 8), 1);
    CHECK_EQ(discarded(&b, 3, got, 8), 3);
    CHECK_EQ(got[0], 3);
    CHECK_EQ(got[2], 5);
    CHECK_EQ(pure_rtb_next_pn(&b), 6); /* numbers stay used */
    CHECK_EQ(pure_rtb_in_flight(&b), 2);
    f = ack1(0, 5);
    CHECK_EQ(acked(&b, &f, got, 8), 2); /* 2 and 0 only */
    CHECK_EQ(discarded(&b, 0, got, 8), 0);
    CHECK_EQ(pure_rtb_skip(&b), 6);
    CHECK_EQ(pure_rtb_next_pn(&b), 7);
    pure_rtb_free(&b, &A);
    CHECK_EQ(b.lo, 7);
}

static void test_alloc_failure(void)
{
    pure_rtb b;
    pure_rtb_init(&b);
    t_fail = 1;
    CHECK_EQ(send_live(&b, 1), PURE_ENOMEM);
    CHECK_EQ(pure_rtb_next_pn(&b), 0);
    CHECK_EQ(pure_rtb_in_flight(&b), 0);
    CHECK_EQ(send_ack_only(&b, 1), 0); /* needs no ring */
    t_fail = 0;
    for (uint64_t t = 0; t < 8; t++)
        CHECK_EQ(send_live(&b, t), 0);
    t_fail = 1;
    CHECK_EQ(send_live(&b, 9), PURE_ENOMEM); /* the ninth needs a larger ring */
    CHECK_EQ(pure_rtb_next_pn(&b), 9);
    CHECK_EQ(pure_rtb_in_flight(&b), 8);
    t_fail = 0;
    CHECK_EQ(send_live(&b, 9), 0);
    pure_ack_frame f = ack1(1, 9);
    uint64_t got[16];
    CHECK_EQ(acked(&b, &f, got, 16), 9);
    pure_rtb_free(&b, &A);
    CHECK_EQ(t_live, 0);
}

/* ---- the model ---- */

enum {
    M_UNTRACKED,
    M_LIVE,
    M_ACKED,
    M_LOST,
    M_DISCARDED,
    M_FORGOTTEN
};

typedef struct mpkt {
    uint8_t st;
    uint64_t time;
} mpkt;

#define MAXP 40000

static mpkt M[MAXP];
static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct model {
    uint64_t next, largest, now, delay, first_live, live;
} model;

static void model_advance(model *m)
{
    while (m->first_live < m->next && M[m->first_live].st != M_LIVE)
        m->first_live++;
}

/* A random ACK frame: mostly of recent packets, sometimes stale, of everything, or invalid. */
static void random_ack(const model *m, pure_ack_frame *f)
{
    uint64_t r = rnd() % 100, largest;
    if (r < 3)
        largest = m->next + rnd() % 3; /* never sent */
    else if (r < 65)
        largest = m->next - 1 - rnd() % (m->next < 24 ? m->next : 24);
    else
        largest = rnd() % m->next;
    memset(f, 0, sizeof *f);
    f->largest = largest;
    f->r[0].hi = largest;
    f->r[0].lo = rnd() % 8 == 0 ? 0 : largest - rnd() % (largest < 12 ? largest + 1 : 12);
    f->n = 1;
    uint32_t want = 1 + (uint32_t)(rnd() % 6);
    while (f->n < want && f->r[f->n - 1].lo >= 2) {
        uint64_t prev = f->r[f->n - 1].lo;
        uint64_t hi = prev - 2 - rnd() % (prev - 1 < 6 ? prev - 1 : 6);
        f->r[f->n].hi = hi;
        f->r[f->n].lo = hi - rnd() % (hi < 5 ? hi + 1 : 5);
        f->n++;
    }
}

static int check_ack(pure_rtb *b, model *m, const pure_ack_frame *f)
{
    int bad = 0;
    pure_rtb_iter it;
    int rc = pure_rtb_acked_begin(b, &it, f);
    if (f->largest >= m->next)
        return rc != PURE_EPROTO || b->largest_acked != m->largest;
    if (rc != 0)
        return 1;
    if (m->largest == UINT64_MAX || f->largest > m->largest)
        m->largest = f->largest;
    /* expected: every live packet in the ranges, range by range, largest first */
    const pure_sent *e;
    uint64_t pn;
    for (uint32_t i = 0; i < f->n; i++) {
        uint64_t lo = f->r[i].lo > m->first_live ? f->r[i].lo : m->first_live;
        for (uint64_t q = f->r[i].hi + 1; q-- > lo;) {
            if (M[q].st != M_LIVE)
                continue;
            e = pure_rtb_acked_next(b, &it, &pn);
            if (!e || pn != q || e->time != M[q].time || e->data_off != M[q].time * 1000 + 7 ||
                (e->flags & PURE_SENT_LIVE))
                return 1;
            M[q].st = M_ACKED;
            m->live--;
        }
    }
    bad |= pure_rtb_acked_next(b, &it, &pn) != NULL; /* nothing more: none twice, none extra */
    return bad;
}

static int check_lost(pure_rtb *b, model *m)
{
    pure_rtb_iter it;
    uint64_t pn, loss_time = UINT64_MAX;
    const pure_sent *e;
    pure_rtb_lost_begin(b, &it, m->delay, m->now);
    if (m->largest != UINT64_MAX)
        for (uint64_t q = m->first_live; q < m->largest; q++) {
            if (M[q].st != M_LIVE)
                continue;
            if (m->largest - q >= 3 || M[q].time + m->delay <= m->now) {
                e = pure_rtb_lost_next(b, &it, &pn);
                if (!e || pn != q || e->time != M[q].time)
                    return 1;
                M[q].st = M_LOST;
                m->live--;
            } else if (M[q].time + m->delay < loss_time) {
                loss_time = M[q].time + m->delay;
            }
        }
    if (pure_rtb_lost_next(b, &it, &pn) != NULL)
        return 1;
    return pure_rtb_loss_time(b) != loss_time;
}

static int check_discard(pure_rtb *b, model *m, uint64_t first)
{
    pure_rtb_iter it;
    uint64_t pn;
    const pure_sent *e;
    pure_rtb_discard_begin(b, &it, first);
    for (uint64_t q = first > m->first_live ? first : m->first_live; q < m->next; q++) {
        if (M[q].st != M_LIVE)
            continue;
        e = pure_rtb_discard_next(b, &it, &pn);
        if (!e || pn != q || e->time != M[q].time)
            return 1;
        M[q].st = M_DISCARDED;
        m->live--;
    }
    return pure_rtb_discard_next(b, &it, &pn) != NULL;
}

/* One step of the run: returns non-zero on a mismatch with the model. */
static int random_step(pure_rtb *b, model *m, int ack_weight)
{
    uint64_t r = rnd() % 1000;
    m->now += rnd() % 4;
    if (r < 500 || m->next == 0) { /* send */
        int live = rnd() % 5 != 0;
        int fail = rnd() % 64 == 0;
        t_fail = fail;
        int rc = live ? send_live(b, m->now) : send_ack_only(b, m->now);
        t_fail = 0;
        if (rc != 0)
            return !fail || rc != PURE_ENOMEM;
        M[m->next].st = live ? M_LIVE : M_UNTRACKED;
        M[m->next].time = m->now;
        m->live += (uint64_t)live;
        m->next++;
    } else if (r < 500 + (uint64_t)ack_weight) { /* an ACK, then loss detection, as on receipt */
        pure_ack_frame f;
        random_ack(m, &f);
        if (check_ack(b, m, &f) || check_lost(b, m))
            return 1;
    } else if (r < 990) { /* the loss timer */
        if (pure_rtb_loss_time(b) <= m->now && check_lost(b, m))
            return 1;
    } else if (r < 997) {
        if (check_discard(b, m, m->next - rnd() % (m->next < 10 ? m->next + 1 : 10)))
            return 1;
    } else { /* buffers released: usually idle, sometimes not (the link is freed) */
        if (m->live && rnd() % 4)
            return 0;
        for (uint64_t q = m->first_live; q < m->next; q++)
            if (M[q].st == M_LIVE)
                M[q].st = M_FORGOTTEN;
        m->live = 0;
        pure_rtb_free(b, &A);
    }
    model_advance(m);
    return pure_rtb_next_pn(b) != m->next || pure_rtb_in_flight(b) != m->live ||
           b->largest_acked != m->largest;
}

static void random_run(uint64_t seed, int ack_weight)
{
    pure_rtb b;
    pure_rtb_init(&b);
    memset(M, 0, sizeof M);
    rng = seed;
    model m = {.largest = UINT64_MAX, .delay = 5 + rnd() % 40};
    int bad = 0;
    uint32_t max_cap = 0;
    while (m.next < MAXP - 1 && !bad) {
        bad = random_step(&b, &m, ack_weight);
        if (b.cap > max_cap)
            max_cap = b.cap;
    }
    if (bad)
        fprintf(stderr, "seed %llu: mismatch at pn %llu\n", (unsigned long long)seed,
                (unsigned long long)m.next);
    CHECK_EQ(bad, 0);
    CHECK(max_cap >= 16); /* the run did grow the ring (and wrapped it many times) */
    pure_rtb_free(&b, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

static void test_random_short_flights(void)
{
    for (uint64_t seed = 1; seed <= 8; seed++)
        random_run(seed * 0x9e3779b97f4a7c15ull, 300);
}

/* Few ACKs: long flights, the ring grows to hundreds of entries. */
static void test_random_long_flights(void)
{
    for (uint64_t seed = 1; seed <= 8; seed++)
        random_run(seed * 0xda942042e4dd58b5ull, 40);
}

int main(void)
{
    RUN(test_ack_only);
    RUN(test_grow_across_wrap);
    RUN(test_thresholds);
    RUN(test_invalid_stale_duplicate);
    RUN(test_discard_and_skip);
    RUN(test_alloc_failure);
    RUN(test_random_short_flights);
    RUN(test_random_long_flights);
    return pure_test_finish();
}
