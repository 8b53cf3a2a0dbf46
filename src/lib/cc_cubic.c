/* SPDX-License-Identifier: MIT */
/* cc_cubic.c: CUBIC congestion control (RFC 9438) with fast convergence and the Reno-friendly
 * region, in integer arithmetic (the library does not link libm). See cc.h.
 *
 * Units: windows in bytes; the curve's time in whole milliseconds, which is far finer than the
 * curve moves (its slope near the plateau is zero, and K is seconds for any real window). */
#include "cc.h"

#define NS_PER_MS 1000000ull

/* C = 0.4 segments/s^3. With t in ms, (t - K)^3 is in ms^3 = 1e-9 s^3, so
 * W(t) - origin = 0.4 * mss * d^3 / 1e9 = mss * d^3 / CUBE_DIV bytes. */
#define CUBE_DIV 2500000000ull

/* Beyond this many ms from K the cube no longer fits in 63 bits; by then (35 minutes) the curve
 * is far past any window, and the result is clamped anyway. */
#define CUBIC_MAX_D_MS ((1ull << 21) - 1)

uint64_t pure_cc_icbrt(uint64_t x)
{
    /* Digit-by-digit cube root (Hacker's Delight, 11-2) widened to 64 bits: decides one bit of
     * the root per step, using (2y + 1)^3 - (2y)^3 = 3 * 2y * (2y + 1) + 1. Exact floor, no
     * division, 22 steps. */
    uint64_t y = 0;
    for (int s = 63; s >= 0; s -= 3) {
        y <<= 1;
        uint64_t b = 3 * y * (y + 1) + 1;
        if ((x >> s) >= b) {
            x -= b << s;
            y++;
        }
    }
    return y;
}

/* a * b / c without overflow provided (c - 1) * b fits in 64 bits; saturates when the result
 * does not. */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
    if (b == 0 || a <= UINT64_MAX / b)
        return a * b / c;
    uint64_t q = a / c, r = a % c;
    if (q > UINT64_MAX / b)
        return UINT64_MAX;
    uint64_t hi = q * b, lo = r * b / c;
    return hi > UINT64_MAX - lo ? UINT64_MAX : hi + lo;
}

uint64_t pure_cc_cubic_k_ms(uint64_t deficit, uint32_t mss)
{
    /* K = cbrt(deficit / (C * mss)) s = cbrt(deficit * 1e9 / (0.4 * mss)) ms. deficit is at most
     * PURE_CC_MAX_WINDOW, so deficit * CUBE_DIV < 2^62. */
    return pure_cc_icbrt(mul_div(deficit, CUBE_DIV, mss ? mss : 1));
}

uint64_t pure_cc_cubic_window(const pure_cc *cc, uint64_t t)
{
    const struct pure_cc_cubic *c = &cc->u.cubic;
    uint64_t t_ms = t / NS_PER_MS;
    int below = t_ms < c->k_ms;
    uint64_t d = below ? c->k_ms - t_ms : t_ms - c->k_ms;
    if (d > CUBIC_MAX_D_MS)
        d = CUBIC_MAX_D_MS;
    /* d^3 < 2^63, and mul_div multiplies mss (< 2^16) only by a remainder below CUBE_DIV (< 2^32):
     * exact here. */
    uint64_t delta = mul_div(d * d * d, cc->mss, CUBE_DIV);
    if (below)
        return delta > c->origin ? 0 : c->origin - delta;
    if (delta > PURE_CC_MAX_WINDOW || c->origin + delta > PURE_CC_MAX_WINDOW)
        return PURE_CC_MAX_WINDOW;
    return c->origin + delta;
}

/* Starts a congestion-avoidance epoch at `now` from the current window (RFC 9438 4.2, 4.3). */
static void epoch_begin(pure_cc *cc, uint64_t now)
{
    struct pure_cc_cubic *c = &cc->u.cubic;
    c->in_epoch = 1;
    c->epoch_start = now;
    if (c->w_max <= cc->cwnd) {
        /* Already at or past the last maximum (or none known, e.g. after persistent congestion,
         * RFC 9438 4.8): start on the convex side at once, K = 0, plateau at the current window. */
        c->k_ms = 0;
        c->origin = cc->cwnd;
    } else {
        c->k_ms = pure_cc_cubic_k_ms(c->w_max - cc->cwnd, cc->mss);
        c->origin = c->w_max;
    }
    c->w_est = cc->cwnd;
    c->est_rem = 0;
    c->cwnd_rem = 0;
}

static void cubic_on_ack(pure_cc *cc, uint64_t acked, uint64_t sent_time, uint64_t now,
                         const pure_rtt *rtt)
{
    acked = pure_cc_slow_start(cc, acked);
    if (acked == 0)
        return;
    struct pure_cc_cubic *c = &cc->u.cubic;
    if (!c->in_epoch)
        epoch_begin(cc, now);
    uint64_t t = now > c->epoch_start ? now - c->epoch_start : 0;
    uint64_t srtt = rtt ? rtt->smoothed : 0;

    /* Reno-friendly estimate (RFC 9438 4.3): W_est grows by alpha segments per window acked;
     * alpha = 9/17 until W_est regains the window before the last reduction, then 1 (Reno's own
     * rate). Carried remainders keep summed acknowledgements exact. */
    uint64_t an = PURE_CUBIC_ALPHA_NUM, ad = PURE_CUBIC_ALPHA_DEN;
    if (c->w_est >= c->cwnd_prior)
        an = ad = 1;
    /* acked <= 2^30 and mss < 2^16 (pure_cc_init): the product stays below 2^50. */
    c->est_rem += acked * cc->mss * an;
    uint64_t div = ad * cc->cwnd;
    c->w_est += c->est_rem / div;
    c->est_rem %= div;

    uint64_t w_now = pure_cc_cubic_window(cc, t);
    if (w_now < c->w_est) {
        /* Reno-friendly region: Reno would be ahead of the curve, so follow Reno. */
        if (c->w_est > cc->cwnd)
            cc->cwnd = c->w_est > PURE_CC_MAX_WINDOW ? PURE_CC_MAX_WINDOW : c->w_est;
        c->cwnd_rem = 0;
        return;
    }
    /* Concave or convex region (RFC 9438 4.4, 4.5): aim for where the curve will be one RTT from
     * now, limited to [cwnd, 1.5 * cwnd], and close (target - cwnd) / cwnd of the gap per
     * acknowledged byte's share of the window. */
    uint64_t target = pure_cc_cubic_window(cc, t + srtt);
    uint64_t hi = cc->cwnd + cc->cwnd / 2;
    if (target > hi)
        target = hi;
    if (target <= cc->cwnd)
        return;
    c->cwnd_rem += (target - cc->cwnd) * acked;
    uint64_t inc = c->cwnd_rem / cc->cwnd;
    c->cwnd_rem %= cc->cwnd;
    if (inc >= target - cc->cwnd) {
        /* An acknowledgement of a window or more at once reaches the target and stops there. */
        cc->cwnd = target;
        c->cwnd_rem = 0;
    } else {
        cc->cwnd += inc;
    }
}

static void cubic_on_congestion(pure_cc *cc, uint64_t sent_time, uint64_t now)
{
    struct pure_cc_cubic *c = &cc->u.cubic;
    uint64_t floor = (uint64_t)PURE_CC_MIN_PACKETS * cc->mss;
    c->cwnd_prior = cc->cwnd;
    /* Fast convergence (RFC 9438 4.7): a loss below the previous maximum means a new flow is
     * taking a share, so plan to plateau lower, at (1 + beta) / 2 of this window, releasing
     * bandwidth sooner. Not against pure_cc_cap's maximum (the first slow start's exit on a
     * shallow queue), which is an estimate from a quarter-RTT delivery rate: when it reads high
     * (243 packets on a path that holds 212, real timers) the first loss below it is that
     * error, not a new flow, and fast convergence would plateau 15% below what the path holds
     * (1.2 s under the BDP in a 4.4 s drain). The estimate stays one while losses come at or
     * above it; the first below it sets w_max without fast convergence. */
    uint64_t w_max = c->w_max;
    if (cc->cwnd < w_max && !c->w_max_est)
        c->w_max =
            cc->cwnd * (PURE_CUBIC_BETA_DEN + PURE_CUBIC_BETA_NUM) / (2 * PURE_CUBIC_BETA_DEN);
    else
        c->w_max = cc->cwnd;
    c->w_max_est = c->w_max_est && cc->cwnd >= w_max;
    cc->ssthresh = cc->cwnd * PURE_CUBIC_BETA_NUM / PURE_CUBIC_BETA_DEN;
    if (cc->ssthresh < floor)
        cc->ssthresh = floor;
    cc->cwnd = cc->ssthresh;
    c->in_epoch = 0;
}

static void cubic_on_persistent_congestion(pure_cc *cc, uint64_t now)
{
    struct pure_cc_cubic *c = &cc->u.cubic;
    cc->cwnd = (uint64_t)PURE_CC_MIN_PACKETS * cc->mss;
    /* RFC 9438 4.8: after a timeout the first epoch uses K = 0 and the window at its start as
     * W_max; forgetting w_max makes epoch_begin do exactly that. */
    c->w_max = 0;
    c->w_max_est = 0;
    c->in_epoch = 0;
}

static void cubic_on_app_limited(pure_cc *cc, uint64_t now)
{
    /* The curve is a function of time; time spent not using the window must not count as time
     * the window was probed, or the first acknowledgement after an idle spell would jump to a
     * window the path never carried. Restart the epoch from the current window. */
    cc->u.cubic.in_epoch = 0;
}

static void cubic_on_cap(pure_cc *cc)
{
    /* The window the path holds is the maximum to plateau at, not the overshoot it replaced. */
    cc->u.cubic.w_max = cc->u.cubic.cwnd_prior = cc->cwnd;
    cc->u.cubic.w_max_est = 1;
    cc->u.cubic.in_epoch = 0;
}

const struct pure_cc_ops pure_cc_cubic_ops = {
    .name = "cubic",
    .on_ack = cubic_on_ack,
    .on_congestion = cubic_on_congestion,
    .on_persistent_congestion = cubic_on_persistent_congestion,
    .on_app_limited = cubic_on_app_limited,
    .on_cap = cubic_on_cap,
};
