/* SPDX-License-Identifier: MIT */
/* pacer.c: token-bucket pacing at 1.25 * cwnd / srtt, bursts of about 1 ms of the path's rate;
 * see pacer.h.
 *
 * The rate is kept as the fraction num / den bytes per nanosecond, num = 5 * cwnd and
 * den = 4 * srtt, and never formed as a number: a 1 GiB window over 1 us is 1.3 MB/ns while two
 * packets over 10 s is 3e-8 B/ns, and no fixed-point scale holds both. Products stay in 64 bits
 * because the inputs are clamped (cwnd < 2^40, srtt < 2^36 ns, burst <= 2^24) and elapsed time is
 * only ever multiplied when it is shorter than the time to fill the bucket. */
#include "pacer.h"

#define CWND_CAP (1ull << 40)
#define SRTT_CAP (1ull << 36) /* 68 s */

struct rate {
    uint64_t num, den;
};

static struct rate rate_of(uint64_t cwnd, uint64_t srtt)
{
    if (cwnd == 0)
        cwnd = 1;
    if (cwnd > CWND_CAP)
        cwnd = CWND_CAP;
    if (srtt > SRTT_CAP)
        srtt = SRTT_CAP;
    return (struct rate){5 * cwnd, 4 * srtt};
}

static uint64_t div_ceil(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* The cap on tokens at rate r: PURE_PACER_BURST_NS of it, or of the path's rate (the same window
 * over the path's RTT without queueing) when that is faster, between min_burst and burst. num <
 * 2^43 and PURE_PACER_BURST_NS < 2^20: the product fits. */
static uint64_t cap_at(const pure_pacer *p, struct rate r)
{
    uint64_t den = p->path_rtt && 4 * p->path_rtt < r.den ? 4 * p->path_rtt : r.den;
    uint64_t c = PURE_PACER_BURST_NS * r.num / den;
    return c < p->min_burst ? p->min_burst : c > p->burst ? p->burst : c;
}

/* cap_at, raised by what the rate earned between the time the caller was told to come back
 * (p->due) and `now`, up to the whole burst. */
static uint64_t cap_late(const pure_pacer *p, uint64_t now, struct rate r)
{
    uint64_t cap = cap_at(p, r);
    if (now <= p->due || cap >= p->burst)
        return cap;
    uint64_t late = now - p->due, room = p->burst - cap;
    /* room < 2^24, den < 2^38: the product fits; below it, late * num < room * den + num. */
    if (late >= div_ceil(room * r.den, r.num))
        return p->burst;
    return cap + late * r.num / r.den;
}

/* The bucket at time `now` (>= p->last) without changing it; *at receives the time the result is
 * exact for, which trails `now` by the sub-byte remainder so that no fraction of a byte is lost
 * between frequent calls. Requires has_last. */
static int64_t tokens_at(const pure_pacer *p, uint64_t now, struct rate r, uint64_t *at)
{
    *at = p->last;
    int64_t cap = (int64_t)(now == p->late_at ? p->late_cap : cap_at(p, r));
    if (p->tokens >= cap) { /* filled at a faster rate: no more than this rate's burst now */
        *at = now > p->last ? now : p->last;
        return cap;
    }
    if (now <= p->last)
        return p->tokens;
    uint64_t elapsed = now - p->last;
    /* room <= 2 * burst <= 2^25 and den < 2^38: the product fits. */
    uint64_t room = (uint64_t)(cap - p->tokens);
    if (elapsed >= div_ceil(room * r.den, r.num)) {
        *at = now;
        return cap;
    }
    /* elapsed * num < room * den + num < 2^64 by the test above. */
    uint64_t added = elapsed * r.num / r.den;
    *at = p->last + added * r.den / r.num;
    return p->tokens + (int64_t)added;
}

void pure_pacer_init(pure_pacer *p, uint64_t burst_bytes, uint32_t mss)
{
    if (burst_bytes == 0)
        burst_bytes = PURE_PACER_DEFAULT_BURST;
    if (burst_bytes > PURE_PACER_MAX_BURST)
        burst_bytes = PURE_PACER_MAX_BURST;
    p->burst = burst_bytes;
    p->min_burst = 2ull * (mss ? mss : 1);
    if (p->min_burst > burst_bytes)
        p->min_burst = burst_bytes;
    p->tokens = (int64_t)burst_bytes;
    p->last = 0;
    p->due = UINT64_MAX; /* none: no time is later */
    p->late_at = UINT64_MAX;
    p->late_cap = 0;
    p->path_rtt = 0;
    p->has_last = 0;
    p->unpaced = 0;
}

void pure_pacer_path_sample(pure_pacer *p, uint64_t rtt)
{
    if (rtt == 0)
        return;
    if (rtt > SRTT_CAP)
        rtt = SRTT_CAP;
    /* smoothed as srtt is (RFC 9002's 7/8): the network's queue counts, only hosts' waits do not */
    p->path_rtt = p->path_rtt ? (7 * p->path_rtt + rtt) / 8 : rtt;
}

void pure_pacer_path_reset(pure_pacer *p)
{
    p->path_rtt = 0;
}

uint64_t pure_pacer_allowance(pure_pacer *p, uint64_t now, uint64_t cwnd, uint64_t srtt)
{
    if (srtt == 0) {
        /* No RTT yet, so no rate: let the window alone limit the first flight, and start pacing
         * from a full bucket once a sample exists. */
        p->unpaced = 1;
        p->tokens = (int64_t)p->burst;
        p->last = now;
        p->has_last = 1;
        return UINT64_MAX;
    }
    p->unpaced = 0;
    if (!p->has_last) {
        p->has_last = 1;
        p->last = now;
        int64_t cap = (int64_t)cap_at(p, rate_of(cwnd, srtt));
        if (p->tokens > cap) /* the bucket starts full at this rate's burst */
            p->tokens = cap;
    } else {
        struct rate r = rate_of(cwnd, srtt);
        if (now >= p->due) {
            /* the wake-up pure_pacer_next asked for: what the rate earned while it was late may go
             * now, in this one burst (calls at this same `now`) */
            p->late_cap = cap_late(p, now, r);
            p->late_at = now;
            p->due = UINT64_MAX;
        }
        uint64_t at;
        p->tokens = tokens_at(p, now, r, &at);
        p->last = at;
    }
    return p->tokens > 0 ? (uint64_t)p->tokens : 0;
}

void pure_pacer_forget_due(pure_pacer *p)
{
    p->due = UINT64_MAX;
}

void pure_pacer_on_sent(pure_pacer *p, uint64_t bytes)
{
    if (p->unpaced)
        return;
    /* Debt beyond one burst is forgiven: it can only come from a caller that ignored the
     * allowance, and unbounded debt would stall the link for the caller's mistake. */
    int64_t floor = -(int64_t)p->burst;
    if (bytes > 2 * p->burst || p->tokens - (int64_t)bytes < floor) /* 2 * burst: no cast wrap */
        p->tokens = floor;
    else
        p->tokens -= (int64_t)bytes;
}

uint64_t pure_pacer_next(pure_pacer *p, uint64_t now, uint64_t need, uint64_t cwnd, uint64_t srtt)
{
    p->due = UINT64_MAX;
    if (srtt == 0 || !p->has_last || p->unpaced)
        return now; /* not pacing, or a full bucket waiting for the first paced send */
    struct rate r = rate_of(cwnd, srtt);
    uint64_t cap = cap_at(p, r);
    if (need > cap)
        need = cap;
    if (p->tokens >= (int64_t)need)
        return now;
    /* tokens_at(T) = tokens + floor((T - last) * num / den) >= need exactly when
     * T - last >= ceil((need - tokens) * den / num). need - tokens <= 2 * burst. */
    uint64_t deficit = (uint64_t)((int64_t)need - p->tokens);
    uint64_t t = p->last + div_ceil(deficit * r.den, r.num);
    if (t <= now)
        return now;
    p->due = t; /* a wake-up later than this is owed the difference (cap_late) */
    return t;
}
