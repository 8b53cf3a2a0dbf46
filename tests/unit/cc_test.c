/* SPDX-License-Identifier: MIT */
/* cc_test.c: NewReno and CUBIC window arithmetic, driven by simulated round trips on virtual
 * time and checked against hand-computed values and the RFC 9438 curve. */
#include "cc.h"
#include "test.h"

#define MSS 1000
#define MS 1000000ull

static pure_rtt rtt_of(uint64_t srtt)
{
    pure_rtt r;
    pure_rtt_init(&r, srtt);
    pure_rtt_sample(&r, srtt, 0, 0);
    return r;
}

/* One round trip of a sender that always has data: a full window leaves at *now and its
 * acknowledgements come back in `acks` equal pieces spread over the RTT (acks = 1 is one ACK frame
 * for the whole window; acks = cwnd / MSS is one per packet). */
static void round_trip(pure_cc *cc, uint64_t *now, const pure_rtt *r, uint64_t acks)
{
    uint64_t sent = *now, w = cc->cwnd, left = w;
    pure_cc_on_sent(cc, w);
    for (uint64_t i = 0; i < acks; i++) {
        uint64_t piece = i + 1 == acks ? left : w / acks;
        left -= piece;
        *now += r->smoothed / acks;
        pure_cc_on_acked(cc, piece, sent, *now, r, 0);
    }
    CHECK_EQ(cc->bytes_in_flight, 0);
}

static void test_init_and_flight(void)
{
    pure_cc cc;
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    CHECK(cc.ops == &pure_cc_newreno_ops);
    CHECK_EQ(cc.cwnd, 10 * MSS);
    CHECK(cc.ssthresh == UINT64_MAX);
    CHECK_EQ(pure_cc_available(&cc), 10 * MSS);
    pure_cc_on_sent(&cc, 4000);
    CHECK_EQ(cc.bytes_in_flight, 4000);
    CHECK_EQ(pure_cc_available(&cc), 6000);
    pure_cc_on_sent(&cc, 7000);
    CHECK_EQ(pure_cc_available(&cc), 0); /* over the window: none, not a wrapped huge value */
    pure_cc_on_discarded(&cc, 2000);
    CHECK_EQ(cc.bytes_in_flight, 9000);
    CHECK_EQ(cc.cwnd, 10 * MSS); /* discarding is not a congestion signal */
    pure_cc_on_discarded(&cc, 1u << 20);
    CHECK_EQ(cc.bytes_in_flight, 0);

    pure_cc_init(&cc, PURE_CC_CUBIC, 1472, 5);
    CHECK(cc.ops == &pure_cc_cubic_ops);
    CHECK_EQ(cc.cwnd, 14720);
}

static void test_newreno_slow_start_doubles(void)
{
    pure_rtt r = rtt_of(50 * MS);
    /* The window doubles every round trip whether acknowledged per packet or in one frame. */
    uint64_t acks_per_rtt[] = {1, 3, 0};
    for (int k = 0; k < 3; k++) {
        pure_cc cc;
        uint64_t now = 0;
        pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, now);
        for (int i = 0; i < 5; i++) {
            uint64_t acks = acks_per_rtt[k] ? acks_per_rtt[k] : cc.cwnd / MSS;
            round_trip(&cc, &now, &r, acks);
            CHECK_EQ(cc.cwnd, (10 * MSS) << (i + 1));
        }
    }
}

static void test_newreno_halves_once_per_recovery(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(50 * MS);
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    pure_cc_on_acked(&cc, 30000, 0, 10, &r, 0); /* slow start: 10000 + 30000 */
    CHECK_EQ(cc.cwnd, 40000);

    pure_cc_on_sent(&cc, 40000);
    pure_cc_on_lost(&cc, 1000, 100, 200);
    CHECK_EQ(cc.cwnd, 20000);
    CHECK_EQ(cc.ssthresh, 20000);
    CHECK_EQ(cc.recovery_start, 200);
    CHECK_EQ(cc.bytes_in_flight, 39000);

    /* More losses from the same flight: sent at or before the recovery start, ignored. */
    pure_cc_on_lost(&cc, 1000, 150, 300);
    pure_cc_on_lost(&cc, 1000, 200, 300);
    CHECK_EQ(cc.cwnd, 20000);
    CHECK_EQ(cc.recovery_start, 200);
    CHECK_EQ(cc.bytes_in_flight, 37000);

    /* Acknowledgements of that flight do not grow the window either. */
    pure_cc_on_acked(&cc, 10000, 199, 310, &r, 0);
    CHECK_EQ(cc.cwnd, 20000);
    CHECK_EQ(cc.bytes_in_flight, 27000);

    /* A packet sent after the recovery started ends it: its loss is a new congestion event. */
    pure_cc_on_lost(&cc, 1000, 201, 400);
    CHECK_EQ(cc.cwnd, 10000);
    CHECK_EQ(cc.recovery_start, 400);
}

static void test_newreno_congestion_avoidance(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(50 * MS);
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    pure_cc_on_acked(&cc, 30000, 0, 10, &r, 0);
    pure_cc_on_lost(&cc, 0, 20, 100); /* cwnd = ssthresh = 20000 */
    CHECK_EQ(cc.cwnd, 20000);
    uint64_t now = 1000;
    /* +1 mss per window acknowledged, however the acknowledgements are cut. */
    round_trip(&cc, &now, &r, 20); /* per packet */
    CHECK_EQ(cc.cwnd, 21000);
    round_trip(&cc, &now, &r, 1); /* the whole window in one ACK frame */
    CHECK_EQ(cc.cwnd, 22000);
    round_trip(&cc, &now, &r, 7); /* uneven pieces (22000 / 7 does not divide) */
    CHECK_EQ(cc.cwnd, 23000);
    for (int i = 0; i < 10; i++)
        round_trip(&cc, &now, &r, 5);
    CHECK_EQ(cc.cwnd, 33000);

    /* Half a window of acknowledgements grows nothing yet; the other half completes one mss. */
    pure_cc_on_sent(&cc, 33000);
    pure_cc_on_acked(&cc, 16500, now, now + 1, &r, 0);
    CHECK_EQ(cc.cwnd, 33000);
    pure_cc_on_acked(&cc, 16500, now, now + 2, &r, 0);
    CHECK_EQ(cc.cwnd, 34000);
}

static void test_newreno_crossing_ssthresh(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(50 * MS);
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    cc.ssthresh = 15000;
    /* 5000 of these bytes finish slow start; the other 5000 count towards avoidance. */
    pure_cc_on_acked(&cc, 10000, 0, 1, &r, 0);
    CHECK_EQ(cc.cwnd, 15000);
    pure_cc_on_acked(&cc, 9999, 0, 2, &r, 0);
    CHECK_EQ(cc.cwnd, 15000);
    pure_cc_on_acked(&cc, 1, 0, 3, &r, 0);
    CHECK_EQ(cc.cwnd, 16000);
}

static void test_min_window_and_persistent(void)
{
    uint64_t algos[] = {PURE_CC_NEWRENO, PURE_CC_CUBIC};
    for (int a = 0; a < 2; a++) {
        pure_cc cc;
        pure_rtt r = rtt_of(50 * MS);
        pure_cc_init(&cc, (enum pure_cc_algo)algos[a], MSS, 0);
        for (uint64_t t = 1; t <= 10; t++)
            pure_cc_on_lost(&cc, 0, t * 10, t * 10 + 5);
        CHECK_EQ(cc.cwnd, 2 * MSS); /* floor */
        CHECK_EQ(cc.ssthresh, 2 * MSS);

        pure_cc_init(&cc, (enum pure_cc_algo)algos[a], MSS, 0);
        pure_cc_on_acked(&cc, 90000, 0, 1, &r, 0);
        pure_cc_on_lost(&cc, 0, 10, 1000);
        uint64_t ssthresh = cc.ssthresh;
        CHECK_EQ(ssthresh, a == 0 ? 50000 : 70000);
        pure_cc_on_persistent_congestion(&cc, 2000);
        CHECK_EQ(cc.cwnd, 2 * MSS);
        CHECK_EQ(cc.ssthresh, ssthresh);
        CHECK_EQ(cc.has_recovery, 0);
        /* Slow start again towards the remembered ssthresh... */
        pure_cc_on_acked(&cc, 2000, 2500, 3000, &r, 0);
        CHECK_EQ(cc.cwnd, 4000);
        /* ...and the next loss is a new congestion event even though little time has passed. */
        pure_cc_on_lost(&cc, 0, 2600, 3100);
        CHECK_EQ(cc.cwnd, a == 0 ? 2000 : 2800);
        CHECK_EQ(cc.recovery_start, 3100);
    }
}

static void test_app_limited(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(50 * MS);
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    pure_cc_on_sent(&cc, 5000);
    pure_cc_on_acked(&cc, 5000, 0, 10, &r, 1);
    CHECK_EQ(cc.cwnd, 10000);
    CHECK_EQ(cc.bytes_in_flight, 0);
}

static void test_time_zero_is_a_time(void)
{
    /* Virtual time starts at 0: a recovery period that began at 0 must still filter losses of
     * packets sent at 0. */
    uint64_t algos[] = {PURE_CC_NEWRENO, PURE_CC_CUBIC};
    for (int a = 0; a < 2; a++) {
        pure_cc cc;
        pure_cc_init(&cc, (enum pure_cc_algo)algos[a], MSS, 0);
        pure_cc_on_sent(&cc, 3000);
        pure_cc_on_lost(&cc, 1000, 0, 0);
        uint64_t after = cc.cwnd;
        CHECK_EQ(after, a == 0 ? 5000 : 7000);
        pure_cc_on_lost(&cc, 1000, 0, 0);
        CHECK_EQ(cc.cwnd, after);
        pure_cc_on_lost(&cc, 1000, 1, 2);
        CHECK(cc.cwnd < after);
    }
}

static void test_window_ceiling(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(50 * MS);
    pure_cc_init(&cc, PURE_CC_NEWRENO, MSS, 0);
    for (int i = 0; i < 40; i++)
        pure_cc_on_acked(&cc, UINT64_MAX / 4, 0, (uint64_t)i, &r, 0);
    CHECK(cc.cwnd == PURE_CC_MAX_WINDOW);
    pure_cc_init(&cc, PURE_CC_CUBIC, MSS, 0);
    for (int i = 0; i < 40; i++)
        pure_cc_on_acked(&cc, UINT64_MAX / 4, 0, (uint64_t)i, &r, 0);
    CHECK(cc.cwnd == PURE_CC_MAX_WINDOW);
}

/* ---- CUBIC ---- */

static void test_icbrt(void)
{
    for (uint64_t x = 0; x < 300000; x++) {
        uint64_t y = pure_cc_icbrt(x);
        if (!(y * y * y <= x && (y + 1) * (y + 1) * (y + 1) > x)) {
            CHECK_EQ(x, -1); /* report the first bad x and stop */
            break;
        }
    }
    /* Exact cubes and their neighbours across the whole range. */
    for (uint64_t k = 2; k < 2642245; k = k * 3 / 2 + 1) {
        CHECK_EQ(pure_cc_icbrt(k * k * k), k);
        CHECK_EQ(pure_cc_icbrt(k * k * k - 1), k - 1);
        CHECK_EQ(pure_cc_icbrt(k * k * k + 1), k);
    }
    CHECK_EQ(pure_cc_icbrt(2642245ull * 2642245 * 2642245), 2642245);
    CHECK_EQ(pure_cc_icbrt(UINT64_MAX), 2642245); /* 2642246^3 > 2^64 */
    CHECK_EQ(pure_cc_icbrt(1ull << 63), 2097152);
}

static void test_cubic_k(void)
{
    /* K = cbrt(deficit / (0.4 * mss)) seconds, by hand:
     * 30 segments: cbrt(75) = 4.2171 s; 300: cbrt(750) = 9.0856 s; 4: cbrt(10) = 2.1544 s;
     * 6 segments of 1472 bytes: cbrt(15) = 2.4662 s. */
    CHECK_EQ(pure_cc_cubic_k_ms(30000, 1000), 4217);
    CHECK_EQ(pure_cc_cubic_k_ms(300000, 1000), 9085);
    CHECK_EQ(pure_cc_cubic_k_ms(4000, 1000), 2154);
    CHECK_EQ(pure_cc_cubic_k_ms(6 * 1472, 1472), 2466);
    CHECK_EQ(pure_cc_cubic_k_ms(0, 1000), 0);
    /* The largest deficit possible: 0.3 GiB of 1-byte segments must not overflow:
     * cbrt(322122547 / 0.4) s = 930.4 s. */
    CHECK_EQ(pure_cc_cubic_k_ms(PURE_CC_MAX_WINDOW * 3 / 10, 1) / 1000, 930);
}

/* Builds a CUBIC controller that reduced from `w` bytes at time *now, then moves *now 1 ms on so
 * that packets sent from then are outside the recovery period. */
static void cubic_after_loss(pure_cc *cc, uint64_t w, uint64_t *now, const pure_rtt *r)
{
    pure_cc_init(cc, PURE_CC_CUBIC, MSS, 0);
    pure_cc_on_acked(cc, w - cc->cwnd, 0, 0, r, 0);
    pure_cc_on_lost(cc, 0, *now, *now);
    *now += MS;
}

static void test_cubic_reduction_and_fast_convergence(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 10;
    cubic_after_loss(&cc, 100000, &now, &r);
    CHECK_EQ(cc.cwnd, 70000);
    CHECK_EQ(cc.ssthresh, 70000);
    CHECK_EQ(cc.u.cubic.w_max, 100000);
    CHECK_EQ(cc.u.cubic.cwnd_prior, 100000);
    pure_cc_on_lost(&cc, 0, 10, 20); /* same recovery period */
    CHECK_EQ(cc.cwnd, 70000);

    /* A new loss below the old maximum: fast convergence lowers the plateau to
     * 70000 * (1 + 0.7) / 2 = 59500, the window falls to 0.7 * 70000. */
    pure_cc_on_lost(&cc, 0, 30, 40);
    CHECK_EQ(cc.u.cubic.w_max, 59500);
    CHECK_EQ(cc.cwnd, 49000);

    /* A loss at or above the maximum remembers the window itself. */
    now = 10;
    cubic_after_loss(&cc, 100000, &now, &r);
    cc.cwnd = 120000;
    pure_cc_on_lost(&cc, 0, 30, 40);
    CHECK_EQ(cc.u.cubic.w_max, 120000);
    CHECK_EQ(cc.cwnd, 84000);
}

static void test_cubic_epoch_start(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 10;
    cubic_after_loss(&cc, 100000, &now, &r);
    CHECK_EQ(cc.u.cubic.in_epoch, 0);
    pure_cc_on_sent(&cc, 1000);
    pure_cc_on_acked(&cc, 1000, 5, 500, &r, 0); /* sent before the loss: no epoch yet */
    CHECK_EQ(cc.u.cubic.in_epoch, 0);
    pure_cc_on_sent(&cc, 1000);
    pure_cc_on_acked(&cc, 1000, now, now + 500, &r, 0);
    CHECK_EQ(cc.u.cubic.in_epoch, 1);
    CHECK_EQ(cc.u.cubic.epoch_start, now + 500);
    CHECK_EQ(cc.u.cubic.k_ms, 4217);
    CHECK_EQ(cc.u.cubic.origin, 100000);
    /* The curve starts at the reduced window (within the cube-root truncation) and plateaus at
     * W_max at t = K. */
    uint64_t w0 = pure_cc_cubic_window(&cc, 0);
    CHECK(w0 >= 69990 && w0 <= 70010);
    CHECK_EQ(pure_cc_cubic_window(&cc, 4217 * MS), 100000);
    /* 1 s past K: +0.4 segment; 5 s past K: +0.4 * 125 = 50 segments. */
    CHECK_EQ(pure_cc_cubic_window(&cc, 5217 * MS), 100400);
    CHECK_EQ(pure_cc_cubic_window(&cc, 9217 * MS), 150000);
}

/* W_cubic(t) of RFC 9438 in doubles for the test's reference (plain arithmetic, no libm). */
static double w_cubic_ref(double t_s, double k_s, double w_max)
{
    double d = t_s - k_s;
    return w_max + 0.4 * MSS * d * d * d;
}

/* A 1000-segment window on a 100 ms path, so that the curve, not the Reno estimate, rules:
 * K = cbrt(300 / 0.4) = cbrt(750) = 9.0856 s by hand. Over 14 s the window must follow the
 * concave rise, the plateau at W_max and the start of the convex probe. */
static void cubic_follow_curve(uint64_t acks_per_rtt)
{
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 1000 * MS;
    const double w_max = 1000 * MSS, k_s = 9.0856030;
    cubic_after_loss(&cc, (uint64_t)w_max, &now, &r);
    CHECK_EQ(cc.cwnd, 700 * MSS);
    int checked = 0;
    uint64_t t0 = 0;
    double tol_below = 0.001, tol_above = acks_per_rtt ? 0.015 : 0.001;
    for (int i = 0; i < 140; i++) {
        round_trip(&cc, &now, &r, acks_per_rtt ? acks_per_rtt : cc.cwnd / MSS);
        if (i == 0) {
            CHECK_EQ(cc.u.cubic.k_ms, 9085);
            t0 = cc.u.cubic.epoch_start;
        }
        /* Every half second: close to W_cubic(t). Per-packet acknowledgements stay within 0.1%
         * (aiming one RTT ahead cancels the RTT it takes to get there; aiming at W(t) instead
         * trails by over 1%). Summed acknowledgements land up to one RTT ahead: 1.5%. */
        if (i % 5 == 4) {
            double t = (double)(now - t0) / 1e9;
            double want = w_cubic_ref(t, k_s, w_max);
            double got = (double)cc.cwnd;
            if (!(got > want * (1 - tol_below) && got < want * (1 + tol_above))) {
                fprintf(stderr, "acks %llu t=%.2f s: cwnd %.0f, W_cubic %.0f\n",
                        (unsigned long long)acks_per_rtt, t, got, want);
                CHECK(0);
            }
            checked++;
        }
    }
    CHECK_EQ(checked, 28);
    CHECK(cc.u.cubic.w_est < cc.cwnd); /* the Reno estimate never took over */
    /* 14 s in, convex: W = 1e6 + 400 * (14 - 9.0856)^3 ~= 1047470. */
    CHECK(cc.cwnd > 1035000 && cc.cwnd < 1060000);
}

static void test_cubic_follows_curve(void)
{
    cubic_follow_curve(0); /* per packet */
    cubic_follow_curve(1); /* one ACK frame per window */
    cubic_follow_curve(4);
}

static void test_cubic_reno_friendly(void)
{
    /* A small window on a short path: Reno's +9/17 segment per RTT outruns the curve, whose K is
     * cbrt(6 / 0.4) = 2.47 s. After 10 RTTs of 10 ms Reno-friendly CUBIC sits near
     * 14000 + 10 * 529 = 19294 bytes, while the curve is still at about
     * 20000 - 400 * (2.466 - 0.1)^3 = 14700. */
    pure_cc cc;
    pure_rtt r = rtt_of(10 * MS);
    uint64_t now = 1000 * MS;
    cubic_after_loss(&cc, 20000, &now, &r);
    CHECK_EQ(cc.cwnd, 14000);
    for (int i = 0; i < 10; i++)
        round_trip(&cc, &now, &r, cc.cwnd / MSS);
    CHECK(cc.cwnd >= 19000 && cc.cwnd <= 19400);
    uint64_t curve = pure_cc_cubic_window(&cc, now - cc.u.cubic.epoch_start);
    CHECK(curve < 15500);
    CHECK(cc.u.cubic.w_est >= 19000);
    /* Past cwnd_prior (20000) alpha becomes 1: one whole segment per RTT, like Reno. */
    for (int i = 0; i < 5; i++)
        round_trip(&cc, &now, &r, cc.cwnd / MSS);
    uint64_t before = cc.cwnd;
    CHECK(before > 20000);
    round_trip(&cc, &now, &r, 1);
    CHECK(cc.cwnd >= before + 990 && cc.cwnd <= before + 1010);
}

static void test_cubic_growth_capped_per_rtt(void)
{
    /* However far the curve has run ahead (here 10 s into a K = 0 epoch: W = cwnd + 400 segments),
     * one window of acknowledgements grows the window to at most 1.5 times (RFC 9438 4.2). */
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 10;
    cubic_after_loss(&cc, 100000, &now, &r);
    pure_cc_on_persistent_congestion(&cc, now);
    cc.ssthresh = 2000; /* straight into avoidance */
    pure_cc_on_sent(&cc, 2000);
    pure_cc_on_acked(&cc, 1, now, now + 1, &r, 0); /* opens the epoch at now + 1 */
    CHECK_EQ(cc.u.cubic.k_ms, 0);
    pure_cc_on_acked(&cc, 1999, now, now + 1 + 10000 * MS, &r, 0);
    CHECK(cc.cwnd >= 2998 && cc.cwnd <= 3000);
}

static void test_cubic_persistent_then_convex(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 10;
    cubic_after_loss(&cc, 100000, &now, &r);
    pure_cc_on_persistent_congestion(&cc, now);
    CHECK_EQ(cc.cwnd, 2000);
    CHECK_EQ(cc.u.cubic.w_max, 0);
    /* Slow start back to ssthresh (70000) with the remainder in avoidance: RFC 9438 4.8 wants
     * K = 0 and the window at the start of avoidance as the plateau. */
    pure_cc_on_acked(&cc, 68000, now, now + 1, &r, 0);
    CHECK_EQ(cc.cwnd, 70000);
    CHECK_EQ(cc.u.cubic.in_epoch, 0);
    pure_cc_on_acked(&cc, 1000, now, now + 2, &r, 0);
    CHECK_EQ(cc.u.cubic.k_ms, 0);
    CHECK_EQ(cc.u.cubic.origin, 70000);
    CHECK_EQ(cc.u.cubic.epoch_start, now + 2);
}

static void test_cubic_app_limited_restarts_epoch(void)
{
    pure_cc cc;
    pure_rtt r = rtt_of(100 * MS);
    uint64_t now = 1000 * MS;
    cubic_after_loss(&cc, 100000, &now, &r);
    round_trip(&cc, &now, &r, 10);
    uint64_t w = cc.cwnd;
    CHECK_EQ(cc.u.cubic.in_epoch, 1);
    /* Ten idle seconds acknowledged while app-limited: no growth, and the epoch restarts so the
     * idle time is not credited as probing. */
    now += 10000 * MS;
    pure_cc_on_sent(&cc, 1000);
    pure_cc_on_acked(&cc, 1000, now - 1, now, &r, 1);
    CHECK_EQ(cc.cwnd, w);
    CHECK_EQ(cc.u.cubic.in_epoch, 0);
    round_trip(&cc, &now, &r, 10);
    CHECK(cc.cwnd < w + w / 10); /* without the restart it would jump to 1.5 * w */
    CHECK(cc.u.cubic.k_ms > 0 && cc.u.cubic.origin == 100000);
}

/* The delivery rate's peak over quarter-RTT intervals (bwe.h), which the first slow start's exit
 * is taken from (recovery.c): a whole-RTT interval that straddles a speed-up reads half of it; a
 * burst of ACKs shorter than PURE_BWE_MIN_INTERVAL is not a rate; app-limited intervals say
 * nothing. */
static void test_bwe_peak(void)
{
    pure_bwe e = {0};
    uint64_t now = 1000, srtt = 40 * MS;
    pure_bwe_on_ack(&e, 0, now, srtt, 0); /* starts the intervals */
    /* 20 ms at 1 MB/s, then 20 ms at 3 MB/s: ACKs of 1000 B every 1 ms, then every 1/3 ms */
    for (int i = 0; i < 20; i++)
        pure_bwe_on_ack(&e, 1000, now += MS, srtt, 0);
    for (int i = 0; i < 61; i++)
        pure_bwe_on_ack(&e, 1000, now += MS / 3, srtt, 0);
    CHECK(e.max_bps >= 1900000 && e.max_bps <= 2100000);   /* the 40 ms interval: the mean */
    CHECK(e.peak_bps >= 2900000 && e.peak_bps <= 3100000); /* a 10 ms one: the new rate */
    CHECK_EQ(pure_bwe_bytes(e.peak_bps, srtt), e.peak_bps / 25);
    /* on a 1 ms path (quarter: 250 us), 100 ACKs of 1000 B within 0.5 ms (a GRO batch) are
     * measured over PURE_BWE_MIN_INTERVAL, not as 200 MB/s */
    pure_bwe g = {0};
    pure_bwe_on_ack(&g, 0, now, MS, 0);
    for (int i = 0; i < 100; i++)
        pure_bwe_on_ack(&g, 1000, now += 5000, MS, 0);
    pure_bwe_on_ack(&g, 1000, now += MS / 2, MS, 0);
    CHECK(g.peak_bps >= 100000000 && g.peak_bps <= 102000000);
    /* an app-limited sender's fast ACKs are not the path's rate */
    pure_bwe f = {0};
    pure_bwe_on_ack(&f, 0, now, srtt, 0);
    for (int i = 0; i < 60; i++)
        pure_bwe_on_ack(&f, 1000, now += MS / 3, srtt, 1);
    CHECK_EQ(f.peak_bps, 0);
}

/* pure_cc_cap: the window and ssthresh fall to the cap (never below the minimum window, never
 * raised), and CUBIC's next epoch plateaus there instead of at the overshoot it replaced. */
static void test_cap(void)
{
    pure_cc cc;
    pure_cc_init(&cc, PURE_CC_CUBIC, MSS, 0);
    cc.cwnd = 458 * MSS;
    CHECK_EQ(pure_cc_on_congestion(&cc, 0, MS), 0);
    CHECK_EQ(cc.cwnd, 320 * MSS + 600); /* 0.7 of 458 packets */
    pure_cc_cap(&cc, 212 * MSS);
    CHECK_EQ(cc.cwnd, 212 * MSS);
    CHECK_EQ(cc.ssthresh, 212 * MSS);
    CHECK_EQ(cc.u.cubic.w_max, 212 * MSS);
    pure_cc_cap(&cc, 300 * MSS); /* never raises */
    CHECK_EQ(cc.cwnd, 212 * MSS);
    pure_rtt r = rtt_of(40 * MS);
    pure_cc_on_sent(&cc, MSS);
    pure_cc_on_acked(&cc, MSS, 2 * MS, 50 * MS, &r, 0); /* the epoch starts on the plateau */
    CHECK_EQ(cc.u.cubic.k_ms, 0);
    CHECK_EQ(cc.u.cubic.origin, 212 * MSS);
    pure_cc_cap(&cc, 1); /* the minimum window at least */
    CHECK_EQ(cc.cwnd, (uint64_t)PURE_CC_MIN_PACKETS * MSS);
    pure_cc n;
    pure_cc_init(&n, PURE_CC_NEWRENO, MSS, 0);
    pure_cc_cap(&n, 5 * MSS);
    CHECK_EQ(n.cwnd, 5 * MSS);
    CHECK_EQ(n.ssthresh, 5 * MSS);
}

/* A cap's maximum is an estimate: the first loss below it sets W_max to that window without
 * fast convergence (a cap read high is not a new flow); losses at or above it keep it an
 * estimate; after the first loss below it, fast convergence works as before. */
static void test_cap_no_fast_convergence(void)
{
    pure_cc cc;
    pure_cc_init(&cc, PURE_CC_CUBIC, MSS, 0);
    cc.cwnd = 400 * MSS;
    pure_cc_on_congestion(&cc, 0, MS);
    pure_cc_cap(&cc, 243 * MSS); /* read high: the path holds 212 */
    /* a second reduction at the cap (retransmissions into the still-full queue) */
    CHECK_EQ(pure_cc_on_congestion(&cc, 2 * MS, 3 * MS), 0);
    CHECK_EQ(cc.u.cubic.w_max, 243 * MSS);
    CHECK_EQ(cc.u.cubic.w_max_est, 1);
    CHECK_EQ(cc.cwnd, 243 * MSS * 7 / 10);
    /* grown back to 214 packets, a loss: below the estimate, no fast convergence */
    cc.cwnd = 214 * MSS;
    pure_cc_on_congestion(&cc, 4 * MS, 5 * MS);
    CHECK_EQ(cc.u.cubic.w_max, 214 * MSS); /* fast convergence would say 181.9 packets */
    CHECK_EQ(cc.u.cubic.w_max_est, 0);
    CHECK_EQ(cc.cwnd, 214 * MSS * 7 / 10);
    /* the next loss below that maximum is a share being taken: fast convergence */
    cc.cwnd = 200 * MSS;
    pure_cc_on_congestion(&cc, 6 * MS, 7 * MS);
    CHECK_EQ(cc.u.cubic.w_max, 200 * MSS * 17 / 20);
    /* persistent congestion forgets the estimate with the maximum */
    pure_cc_cap(&cc, 100 * MSS);
    CHECK_EQ(cc.u.cubic.w_max_est, 1);
    pure_cc_on_persistent_congestion(&cc, 8 * MS);
    CHECK_EQ(cc.u.cubic.w_max_est, 0);
}

int main(void)
{
    RUN(test_init_and_flight);
    RUN(test_newreno_slow_start_doubles);
    RUN(test_newreno_halves_once_per_recovery);
    RUN(test_newreno_congestion_avoidance);
    RUN(test_newreno_crossing_ssthresh);
    RUN(test_min_window_and_persistent);
    RUN(test_app_limited);
    RUN(test_time_zero_is_a_time);
    RUN(test_window_ceiling);
    RUN(test_icbrt);
    RUN(test_cubic_k);
    RUN(test_cubic_reduction_and_fast_convergence);
    RUN(test_cubic_epoch_start);
    RUN(test_cubic_follows_curve);
    RUN(test_cubic_reno_friendly);
    RUN(test_cubic_growth_capped_per_rtt);
    RUN(test_cubic_persistent_then_convex);
    RUN(test_cubic_app_limited_restarts_epoch);
    RUN(test_bwe_peak);
    RUN(test_cap);
    RUN(test_cap_no_fast_convergence);
    return pure_test_finish();
}
