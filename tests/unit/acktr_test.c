/* SPDX-License-Identifier: MIT */
/* acktr_test.c: the ACK tracker (acktr.c): ranges split by a gap and merged when it fills, the
 * bound on ranges (the oldest fall off), the ACK delay measured from the largest packet number,
 * immediate ACKs (a gap, reordering, a PING, ack_every), the deadline armed once and cleared by
 * the ACK, a forced ACK after a dropped packet, allocation failure, and a randomized run of
 * arrivals, PINGs, timers and ACKs sent, against a model kept as a bitmap of packet numbers. */
#include <string.h>

#include "acktr.h"
#include "support/talloc.h"
#include "test.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

#define DELAY 5000000ull /* max_ack_delay: 5 ms */
#define EVERY 4u         /* ack_every */

static int same(const pure_acktr *t, const uint64_t *pairs, uint32_t n)
{
    uint32_t m;
    const pure_range *r = pure_acktr_ranges(t, &m);
    if (m != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (r[i].start != pairs[2 * i] || r[i].end != pairs[2 * i + 1])
            return 0;
    return 1;
}

static int rx(pure_acktr *t, uint64_t pn, int eliciting, uint64_t now)
{
    return pure_acktr_on_packet(t, &A, pn, eliciting, now, now, DELAY, EVERY, 0);
}

static void test_split_merge_and_delay(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    CHECK(!pure_acktr_wanted(&t));
    CHECK(pure_acktr_deadline(&t) == UINT64_MAX);
    CHECK_EQ(rx(&t, 0, 1, 1000), 0); /* the first packet, in order: the deadline is armed */
    CHECK_EQ(pure_acktr_deadline(&t), 1000 + DELAY);
    CHECK(pure_acktr_wanted(&t) && !pure_acktr_due(&t, EVERY));
    CHECK_EQ(rx(&t, 1, 1, 2000), 0);
    CHECK_EQ(pure_acktr_deadline(&t), 1000 + DELAY); /* armed once, not pushed back */
    CHECK_EQ(rx(&t, 4, 1, 3000), 1);                 /* a gap: at once */
    CHECK(pure_acktr_due(&t, EVERY));
    CHECK(same(&t, (const uint64_t[]){0, 2, 4, 5}, 2));
    CHECK_EQ(pure_acktr_delay(&t, 3000 + 7999), 7); /* µs since the largest arrived */
    pure_acktr_on_sent(&t);
    CHECK(!pure_acktr_wanted(&t) && !pure_acktr_due(&t, EVERY));
    CHECK(pure_acktr_deadline(&t) == UINT64_MAX);
    CHECK(same(&t, (const uint64_t[]){0, 2, 4, 5}, 2)); /* ranges stay for later ACKs */
    /* reordering: an old packet fills part of the gap, another joins the ranges */
    CHECK_EQ(rx(&t, 3, 1, 4000), 1);
    CHECK(same(&t, (const uint64_t[]){0, 2, 3, 5}, 2));
    CHECK_EQ(pure_acktr_delay(&t, 5000), 2); /* the largest (4) arrived at 3000 */
    CHECK_EQ(rx(&t, 2, 1, 4500), 1);
    CHECK(same(&t, (const uint64_t[]){0, 5}, 1));
    pure_acktr_on_sent(&t);
    /* the next in order is not immediate; a non-eliciting packet owes nothing but is recorded */
    CHECK_EQ(rx(&t, 5, 0, 6000), 0);
    CHECK(!pure_acktr_wanted(&t) && pure_acktr_deadline(&t) == UINT64_MAX);
    CHECK_EQ(pure_acktr_delay(&t, 7000), 1);
    CHECK_EQ(rx(&t, 6, 1, 7000), 0);
    CHECK(!pure_acktr_due(&t, EVERY));
    /* the deadline: nothing before it, the ACK owed at once after it */
    CHECK_EQ(pure_acktr_on_timer(&t, 7000 + DELAY - 1), 0);
    CHECK(!pure_acktr_due(&t, EVERY));
    CHECK_EQ(pure_acktr_on_timer(&t, 7000 + DELAY), 1);
    CHECK(pure_acktr_due(&t, EVERY));
    CHECK(pure_acktr_deadline(&t) == UINT64_MAX);
    CHECK_EQ(pure_acktr_on_timer(&t, 7000 + 2 * DELAY), 0); /* fires once */
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

/* A slow path: packets a little under a millisecond apart, fewer than ack_every of them. The
 * first one that finds the first waiting packet PURE_ACK_SPACING old makes the ACK due; before,
 * all of them waited for the deadline. */
static void test_spacing(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    uint64_t gap = PURE_ACK_SPACING * 2 / 3;
    CHECK_EQ(rx(&t, 0, 1, 1000), 0);
    CHECK_EQ(rx(&t, 1, 1, 1000 + gap), 0);
    CHECK_EQ(rx(&t, 2, 0, 1000 + 2 * gap), 0); /* not eliciting: owes nothing itself */
    CHECK(!pure_acktr_due(&t, EVERY));
    CHECK_EQ(rx(&t, 3, 1, 1000 + 2 * gap), 1);
    CHECK(pure_acktr_due(&t, EVERY));
    pure_acktr_on_sent(&t);
    /* counted from the first packet left waiting after the ACK, not from the last ACK */
    CHECK_EQ(rx(&t, 4, 1, 1000 + 5 * gap), 0);
    CHECK_EQ(rx(&t, 5, 1, 1000 + 5 * gap + PURE_ACK_SPACING - 1), 0);
    CHECK_EQ(rx(&t, 6, 1, 1000 + 5 * gap + PURE_ACK_SPACING), 1);
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

static void test_every_ping_force(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    CHECK_EQ(pure_acktr_force(&t), -1); /* nothing received: nothing to acknowledge */
    CHECK(!pure_acktr_wanted(&t));
    for (uint64_t pn = 0; pn < EVERY - 1; pn++)
        CHECK_EQ(rx(&t, pn, 1, 100 * pn), 0);
    CHECK(!pure_acktr_due(&t, EVERY));
    CHECK_EQ(rx(&t, EVERY - 1, 1, 1000), 1); /* the ack_every-th */
    CHECK(pure_acktr_due(&t, EVERY));
    pure_acktr_on_sent(&t);
    /* a PING in the packet: at once */
    pure_acktr_ack_now(&t);
    CHECK_EQ(rx(&t, EVERY, 1, 2000), 1);
    pure_acktr_on_sent(&t);
    /* a dropped packet: an ACK of what came before goes at once, although nothing new came */
    CHECK_EQ(pure_acktr_force(&t), 0);
    CHECK(pure_acktr_due(&t, EVERY));
    pure_acktr_on_sent(&t);
    CHECK(!pure_acktr_wanted(&t));
    /* an idle link forgets its ranges: the next packet starts them again */
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
    CHECK(same(&t, NULL, 0));
    CHECK_EQ(rx(&t, 50, 1, 3000), 1); /* not the successor of "nothing": a gap */
    CHECK(same(&t, (const uint64_t[]){50, 51}, 1));
    pure_acktr_free(&t, &A);
}

/* Sparing (a transmit key's last quarter, rekey.c): a gap, reordering or a duplicate and
 * PURE_ACK_SPACING make nothing due at once; the packets are recorded, the deadline is armed by
 * the first, and ack_every packets, the deadline or a PING still make the ACK due. */
static void test_sparing(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    uint64_t now = 1000;
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 0, 1, now, now, DELAY, EVERY, 1), 0);
    CHECK(pure_acktr_deadline(&t) == now + DELAY);
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 5, 1, now, now, DELAY, EVERY, 1), 0); /* a gap */
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 2, 1, now + PURE_ACK_SPACING, now + PURE_ACK_SPACING,
                                  DELAY, EVERY, 1),
             0); /* late, and the first has waited PURE_ACK_SPACING */
    CHECK(!pure_acktr_due(&t, EVERY));
    CHECK(pure_acktr_wanted(&t)); /* a packet that goes anyway carries the ACK */
    uint64_t r[] = {0, 1, 2, 3, 5, 6};
    CHECK(same(&t, r, 3));
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 2, 1, now, now, DELAY, EVERY, 1), 1); /* the 4th */
    pure_acktr_on_sent(&t);
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 9, 1, now, now, DELAY, EVERY, 1), 0);
    CHECK_EQ(pure_acktr_on_timer(&t, now + DELAY), 1); /* the deadline still comes */
    CHECK(pure_acktr_due(&t, EVERY));
    pure_acktr_on_sent(&t);
    pure_acktr_ack_now(&t); /* a PING in the packet */
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 11, 1, now, now, DELAY, EVERY, 1), 1);
    /* the same gap, not sparing: due at once */
    pure_acktr_on_sent(&t);
    CHECK_EQ(pure_acktr_on_packet(&t, &A, 14, 1, now, now, DELAY, EVERY, 0), 1);
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

static void test_bound_and_alloc_failure(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    /* every other packet: each its own range; only the newest PURE_ACK_MAX_RANGES stay */
    for (uint64_t i = 0; i < PURE_ACK_MAX_RANGES + 5; i++)
        rx(&t, 2 * i, 1, i);
    uint32_t n;
    const pure_range *r = pure_acktr_ranges(&t, &n);
    CHECK_EQ(n, PURE_ACK_MAX_RANGES);
    CHECK_EQ(r[0].start, 10);
    CHECK_EQ(r[n - 1].start, 2 * (PURE_ACK_MAX_RANGES + 4));
    /* one older than everything kept: it goes in and falls off at once */
    rx(&t, 1, 1, 100);
    r = pure_acktr_ranges(&t, &n);
    CHECK_EQ(n, PURE_ACK_MAX_RANGES);
    CHECK_EQ(r[0].start, 10);
    /* filling a gap merges two ranges */
    rx(&t, 11, 1, 101);
    r = pure_acktr_ranges(&t, &n);
    CHECK_EQ(n, PURE_ACK_MAX_RANGES - 1);
    CHECK(r[0].start == 10 && r[0].end == 13);
    pure_acktr_free(&t, &A);

    /* out of memory: the packet number is not recorded, nothing else breaks */
    pure_acktr_init(&t);
    t_fail = 1;
    CHECK_EQ(rx(&t, 0, 1, 0), 0);
    CHECK(same(&t, NULL, 0));
    CHECK(pure_acktr_wanted(&t)); /* still owed: the peer hears an (empty) ACK */
    t_fail = 0;
    CHECK_EQ(rx(&t, 1, 1, 0), 1); /* 0 is not there, so 1 leaves a gap */
    CHECK(same(&t, (const uint64_t[]){1, 2}, 1));
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* ---- randomized against a model ---- */

#define U (1u << 18)    /* packet numbers the run may use */
static uint8_t got[U];  /* the model: 1 if the tracker should still list this packet number */
static uint64_t lo, hi; /* every packet number set in got lies in [lo, hi) */
static int dropped_runs;

static uint64_t rng_state = 99;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int model_runs(void)
{
    int runs = 0;
    for (uint64_t i = lo; i < hi; i++)
        runs += got[i] && (i == lo || !got[i - 1]);
    return runs;
}

/* Adds pn to the model, then drops its lowest runs until at most PURE_ACK_MAX_RANGES are left. */
static void model_add(uint64_t pn)
{
    got[pn] = 1;
    lo = pn < lo ? pn : lo;
    hi = pn + 1 > hi ? pn + 1 : hi;
    while (model_runs() > PURE_ACK_MAX_RANGES) {
        dropped_runs++;
        while (!got[lo])
            lo++;
        while (got[lo])
            got[lo++] = 0;
    }
    while (lo < hi && !got[lo])
        lo++;
}

static int ranges_match(const pure_acktr *t)
{
    uint32_t n, k = 0;
    const pure_range *r = pure_acktr_ranges(t, &n);
    if (n && (r[0].start < lo || r[n - 1].end > hi))
        return 0;
    for (uint64_t i = lo; i < hi; i++) {
        while (k < n && r[k].end <= i)
            k++;
        int in = k < n && r[k].start <= i;
        if (in != got[i])
            return 0;
    }
    return 1;
}

static void test_random_against_model(void)
{
    pure_acktr t;
    pure_acktr_init(&t);
    memset(got, 0, sizeof got);
    lo = U;
    hi = 0;
    /* the model: the largest packet number seen and when, eliciting packets since the last ACK,
     * when the first of them came, and whether something asked for an ACK at once */
    int64_t largest = -1;
    uint64_t largest_at = 0, armed_from = UINT64_MAX, now = 0, next = 0;
    uint32_t unacked = 0;
    int immediate = 0, bad = 0, gaps = 0, fills = 0, by_timer = 0, by_count = 0, by_spacing = 0;
    for (int step = 0; step < 200000 && !bad && next < U - 64; step++) {
        now += rnd() % 8 ? rnd() % 2000000 : rnd() % 8000000; /* up to 2 ms, some to 8 ms */
        int op = (int)(rnd() % 20);
        if (op < 14) { /* a packet: mostly the next one, some skipped ahead, some late */
            uint64_t pn = next;
            int r = (int)(rnd() % 10);
            if (r == 0 && next > 0) {
                pn = next - 1 - rnd() % (next < 40 ? next : 40); /* late (maybe a duplicate) */
                fills += !got[pn];
            } else if (r == 1) {
                pn = next + 1 + rnd() % 5; /* a gap */
                gaps++;
            }
            next = pn >= next ? pn + 1 : next;
            int elic = rnd() % 4 != 0;
            int want_now = elic && (immediate || (int64_t)pn != largest + 1);
            model_add(pn);
            if ((int64_t)pn >= largest) {
                largest = (int64_t)pn;
                largest_at = now;
            }
            int spaced = elic && armed_from != UINT64_MAX && now >= armed_from + PURE_ACK_SPACING;
            if (elic) {
                unacked++;
                immediate |= want_now;
            }
            int due = elic && (immediate || unacked >= EVERY || spaced);
            by_count += due && !immediate && unacked >= EVERY;
            by_spacing += due && !immediate && unacked < EVERY;
            immediate |= spaced;
            if (elic && !due && armed_from == UINT64_MAX)
                armed_from = now; /* the deadline is armed by the first packet left waiting */
            if (rx(&t, pn, elic, now) != due)
                bad = 1;
        } else if (op < 16) { /* a PING in the next packet */
            pure_acktr_ack_now(&t);
            immediate = 1;
        } else if (op < 18) { /* the timer */
            /* a deadline only while an ACK waits, from the first packet left waiting (one armed
             * before the ACK became due at once stays, and may still fire) */
            uint64_t at = armed_from != UINT64_MAX ? armed_from + DELAY : UINT64_MAX;
            if (pure_acktr_deadline(&t) != at)
                bad = 1;
            int fires = at != UINT64_MAX && now >= at;
            if (pure_acktr_on_timer(&t, now) != fires)
                bad = 1;
            if (fires) {
                immediate = 1;
                armed_from = UINT64_MAX;
                by_timer += unacked > 0;
            }
        } else { /* a packet goes out: with an ACK if one is owed, now or later */
            if (pure_acktr_wanted(&t) != (unacked > 0 || immediate))
                bad = 1;
            if (pure_acktr_wanted(&t)) {
                if (largest >= 0 && pure_acktr_delay(&t, now) != (now - largest_at) / 1000)
                    bad = 1;
                if (!ranges_match(&t))
                    bad = 1;
                pure_acktr_on_sent(&t);
                unacked = 0;
                immediate = 0;
                armed_from = UINT64_MAX;
                if (pure_acktr_deadline(&t) != UINT64_MAX || pure_acktr_due(&t, EVERY))
                    bad = 1;
            }
        }
        if (pure_acktr_due(&t, EVERY) != (unacked > 0 && (immediate || unacked >= EVERY)))
            bad = 1;
        if (step % 16 == 0 && !ranges_match(&t))
            bad = 1;
        if (bad)
            fprintf(stderr, "acktr model mismatch at step %d (op %d)\n", step, op);
    }
    CHECK_EQ(bad, 0);
    printf("  %d gaps, %d fills, ACKs due by the timer %d, by count %d, by spacing %d\n", gaps,
           fills, by_timer, by_count, by_spacing);
    CHECK(gaps > 100 && fills > 100 && by_timer > 100 && by_count > 100 && by_spacing > 100 &&
          dropped_runs > 100);
    pure_acktr_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

int main(void)
{
    RUN(test_split_merge_and_delay);
    RUN(test_spacing);
    RUN(test_every_ping_force);
    RUN(test_sparing);
    RUN(test_bound_and_alloc_failure);
    RUN(test_random_against_model);
    return pure_test_finish();
}
