/* SPDX-License-Identifier: MIT */
/* rtt.c: RFC 9002 section 5 RTT estimation; see rtt.h. */
#include "rtt.h"

/* Keeps 4 * var, 7 * smoothed and friends from wrapping: no real path has an RTT anywhere near
 * this (about 36 years), so clamping samples loses nothing and makes the arithmetic total. */
#define RTT_MAX (UINT64_MAX / 16)

static uint64_t clamp_rtt(uint64_t v)
{
    return v > RTT_MAX ? RTT_MAX : v;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void pure_rtt_init(pure_rtt *r, uint64_t initial_rtt)
{
    initial_rtt = clamp_rtt(initial_rtt);
    r->latest = 0;
    r->smoothed = initial_rtt;
    r->var = initial_rtt / 2;
    r->min = 0;
    r->has_sample = 0;
}

void pure_rtt_sample(pure_rtt *r, uint64_t sample, uint64_t ack_delay, uint64_t max_ack_delay)
{
    sample = clamp_rtt(sample);
    r->latest = sample;
    if (!r->has_sample) {
        /* The first sample says nothing about variation yet: RFC 9002 seeds var with half of it. */
        r->has_sample = 1;
        r->min = sample;
        r->smoothed = sample;
        r->var = sample / 2;
        return;
    }
    if (sample < r->min)
        r->min = sample;
    if (ack_delay > max_ack_delay)
        ack_delay = max_ack_delay;
    uint64_t adjusted = sample;
    /* Written as a subtraction from sample so that min + ack_delay cannot wrap. */
    if (sample - r->min >= ack_delay)
        adjusted = sample - ack_delay;
    /* var uses the smoothed value from before this sample (RFC 9002 5.3 order). */
    uint64_t dev = r->smoothed > adjusted ? r->smoothed - adjusted : adjusted - r->smoothed;
    r->var = (3 * r->var + dev) / 4;
    r->smoothed = (7 * r->smoothed + adjusted) / 8;
}

void pure_rtt_handshake_sample(pure_rtt *r, uint64_t sample, uint64_t max_ack_delay)
{
    if (!r->has_sample && sample > 0 && sample < PURE_RTT_INITIAL)
        pure_rtt_sample(r, sample, 0, max_ack_delay);
}

uint64_t pure_rtt_pto(const pure_rtt *r, uint64_t max_ack_delay)
{
    uint64_t spread = 4 * r->var;
    if (spread < PURE_RTT_GRANULARITY)
        spread = PURE_RTT_GRANULARITY;
    return sat_add(sat_add(r->smoothed, spread), max_ack_delay);
}

uint64_t pure_rtt_loss_delay(const pure_rtt *r)
{
    uint64_t base = r->smoothed > r->latest ? r->smoothed : r->latest;
    uint64_t d = base + base / 8; /* 9/8 without forming 9 * base */
    return d < PURE_RTT_GRANULARITY ? PURE_RTT_GRANULARITY : d;
}
