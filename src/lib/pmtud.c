/* SPDX-License-Identifier: MIT */
/* pmtud.c: the path MTU search of one link (RFC 8899 DPLPMTUD): a ladder of probe sizes sent in
 * rounds, black-hole detection, Packet Too Big hints. See pmtud.h for the policy. */
#include "pmtud.h"

/* UDP payloads of common path MTUs, largest first (step i + 1 of the ladder; step 0 is the
 * maximum): 1500 over IPv4 and IPv6, PPPoE's 1492, WireGuard's 1420, 1400, and IPv6's minimum
 * 1280, each less 28 (IPv4 + UDP) or 48 (IPv6 + UDP) bytes of headers. */
static const uint16_t common_sizes[] = {1472, 1464, 1452, 1444, 1392, 1372, 1352, 1252, 1232};
#define N_STEPS (1 + sizeof common_sizes / sizeof common_sizes[0])

uint16_t pure_pmtud_step(const pure_pmtud *p, unsigned i)
{
    if (i == 0)
        return p->max > p->base ? p->max : 0;
    if (i >= N_STEPS)
        return 0;
    uint16_t s = common_sizes[i - 1];
    return s > p->base && s < p->max ? s : 0;
}

/* The ladder steps above the size in use: all of them, or only the smallest. */
static uint16_t steps_above(const pure_pmtud *p, int smallest_only)
{
    uint16_t bits = 0, best = 0;
    unsigned best_i = 0;
    for (unsigned i = 0; i < N_STEPS; i++) {
        uint16_t s = pure_pmtud_step(p, i);
        if (s <= p->size)
            continue;
        bits |= (uint16_t)(1u << i);
        if (!best || s < best) {
            best = s;
            best_i = i;
        }
    }
    return smallest_only && best ? (uint16_t)(1u << best_i) : bits;
}

/* The ladder step of a probe size (-1: none; the ladder moved since it was sent). */
static int step_of(const pure_pmtud *p, uint16_t size)
{
    for (unsigned i = 0; i < N_STEPS; i++)
        if (pure_pmtud_step(p, i) == size && size)
            return (int)i;
    return -1;
}

static void set_state(pure_pmtud *p, enum pure_pmtud_state to)
{
    /* DISABLED is final; every other state may follow any other. */
    if (p->state == PURE_PMTUD_DISABLED)
        return;
    p->state = (uint8_t)to;
}

static void complete(pure_pmtud *p, uint64_t now)
{
    p->queued = p->flying = 0;
    p->raise_at = now + PURE_PMTUD_RAISE_NS;
    set_state(p, PURE_PMTUD_COMPLETE);
}

/* A new search: the first round probes the maximum alone (most paths carry it: one probe per
 * search, which matters with thousands of links). */
static void search(pure_pmtud *p, uint64_t now)
{
    p->ladder_done = 0;
    p->idle_rounds = 0;
    p->round_lost = 0;
    p->resume = 0;
    p->flying = 0;
    p->queued = p->max > p->size ? 1 : 0; /* step 0: the maximum */
    if (!p->queued) {
        complete(p, now);
        return;
    }
    set_state(p, PURE_PMTUD_SEARCHING);
}

void pure_pmtud_init(pure_pmtud *p, uint16_t base, uint16_t limit, uint16_t size, uint32_t parked,
                     uint64_t epoch)
{
    *p = (pure_pmtud){.base = base, .limit = limit < base ? base : limit};
    p->max = p->limit;
    p->size = size < base ? base : size > p->limit ? p->limit : size;
    if (p->limit <= base)
        return; /* DISABLED */
    if (parked) {
        p->state = PURE_PMTUD_COMPLETE;
        p->raise_at = epoch + (uint64_t)(parked - 1) * 1000000000ull;
    } else {
        p->state = PURE_PMTUD_BASE;
    }
}

uint32_t pure_pmtud_park(const pure_pmtud *p, uint64_t epoch)
{
    if (p->state == PURE_PMTUD_DISABLED || (p->state == PURE_PMTUD_BASE && !p->resume))
        return 0;
    if (p->state != PURE_PMTUD_COMPLETE || p->raise_at <= epoch)
        return 1;
    uint64_t s = (p->raise_at - epoch) / 1000000000ull;
    return s >= UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)s + 1;
}

int pure_pmtud_on_burst(pure_pmtud *p, uint64_t now)
{
    if (p->state != PURE_PMTUD_BASE || p->resume)
        return 0;
    search(p, now);
    return p->state == PURE_PMTUD_SEARCHING;
}

uint16_t pure_pmtud_probe_size(pure_pmtud *p, uint64_t now)
{
    if (p->state == PURE_PMTUD_COMPLETE && now >= p->raise_at) {
        p->max = p->limit; /* a Packet Too Big's limit is forgotten too */
        search(p, now);
    }
    if (p->state != PURE_PMTUD_SEARCHING || !p->queued)
        return 0;
    for (unsigned i = 0; i < N_STEPS; i++) /* the largest first */
        if (p->queued & (1u << i)) {
            uint16_t s = pure_pmtud_step(p, i);
            if (s > p->size)
                return s;
            p->queued &= (uint16_t) ~(1u << i); /* overtaken meanwhile */
        }
    return 0;
}

void pure_pmtud_on_probe_sent(pure_pmtud *p, uint16_t size)
{
    int i = step_of(p, size);
    if (i < 0 || !(p->queued & (1u << i)))
        return;
    p->queued &= (uint16_t) ~(1u << i);
    p->flying |= (uint16_t)(1u << i);
}

/* Every probe of the round is answered: the next round, or the end of the search. */
static void round_end(pure_pmtud *p, uint64_t now)
{
    if (p->state != PURE_PMTUD_SEARCHING || p->queued || p->flying)
        return;
    if (p->size >= p->max) {
        complete(p, now);
        return;
    }
    if (p->round_lost && ++p->idle_rounds >= PURE_PMTUD_MAX_PROBES) {
        complete(p, now);
        return;
    }
    /* After the first round's maximum was lost: every step between (one round trip finds any
     * common size). After that: the next step up only, as a lost probe may have been random
     * loss, not its size. */
    int first = p->round_lost && p->idle_rounds == 1 && !p->ladder_done;
    p->round_lost = 0;
    p->queued = steps_above(p, !first);
    if (first)
        p->ladder_done = 1;
    if (!p->queued)
        complete(p, now);
}

/* Takes a probe out of flight; returns 0 if it was not one of this search's. */
static int land(pure_pmtud *p, uint16_t size)
{
    int i = step_of(p, size);
    if (i < 0 || !(p->flying & (1u << i)))
        return 0;
    p->flying &= (uint16_t) ~(1u << i);
    return 1;
}

int pure_pmtud_on_probe_acked(pure_pmtud *p, uint16_t size, uint64_t now)
{
    if (p->state == PURE_PMTUD_DISABLED)
        return 0;
    int ours = land(p, size);
    int changed = 0;
    /* An acknowledged probe proves its size, whichever search sent it. */
    if (size > p->size && size <= p->max) {
        p->size = size;
        p->full_seen = 0; /* packets of the old size say nothing of the new */
        p->bh_lost = 0;
        changed = 1;
        if (p->state != PURE_PMTUD_SEARCHING) /* a late one, after a black hole or a hint */
            set_state(p, PURE_PMTUD_SEARCHING);
    }
    /* Smaller steps still queued are overtaken. */
    for (unsigned i = 0; i < N_STEPS; i++)
        if ((p->queued & (1u << i)) && pure_pmtud_step(p, i) <= p->size)
            p->queued &= (uint16_t) ~(1u << i);
    if (ours || changed)
        round_end(p, now);
    return changed;
}

int pure_pmtud_on_probe_lost(pure_pmtud *p, uint16_t size, uint64_t now)
{
    if (!land(p, size))
        return 0;
    if (size > p->size)
        p->round_lost = 1;
    round_end(p, now);
    return 0;
}

/* Full-size packets vanish while the path still carries something: back to the base size at
 * once; search again once a packet is acknowledged (the path works at that size). */
static void black_hole(pure_pmtud *p)
{
    p->size = p->base;
    p->full_seen = 0; /* packets of the old size say nothing of the new */
    p->queued = p->flying = 0;
    p->bh_lost = 0;
    p->resume = 1;
    set_state(p, PURE_PMTUD_BASE);
}

void pure_pmtud_ack_begin(pure_pmtud *p)
{
    p->acked_full = p->acked_small = 0;
}

void pure_pmtud_on_acked(pure_pmtud *p, uint16_t size, uint64_t sent, uint64_t now)
{
    if (p->state == PURE_PMTUD_DISABLED)
        return;
    if (size >= p->size) {
        p->acked_full = 1;
        if (!p->full_seen || sent > p->full_sent)
            p->full_sent = sent;
        p->full_seen = 1;
    } else {
        p->acked_small = 1;
    }
    if (p->state == PURE_PMTUD_ERROR || (p->state == PURE_PMTUD_BASE && p->resume))
        search(p, now); /* the path carries packets again */
}

void pure_pmtud_on_lost(pure_pmtud *p, uint16_t size, uint64_t sent)
{
    if (p->state == PURE_PMTUD_DISABLED || size < p->size || p->size <= p->base)
        return;
    /* A full-size packet sent later than this one was acknowledged: the size gets through, and
     * this one fell to something else (a queue that overflowed: slow start's tail is found by
     * the time threshold, when the queue has drained and what is acknowledged beside it may be
     * small retransmitted pieces). */
    if (p->full_seen && sent <= p->full_sent)
        return;
    if (p->bh_lost < UINT8_MAX)
        p->bh_lost++;
}

int pure_pmtud_ack_end(pure_pmtud *p)
{
    if (p->acked_full) {
        p->bh_lost = 0;
    } else if (p->acked_small && p->bh_lost >= PURE_PMTUD_BH_LOSSES && p->size > p->base) {
        black_hole(p);
        return 1;
    }
    return 0;
}

int pure_pmtud_on_pto(pure_pmtud *p, uint32_t pto_count)
{
    if (p->state == PURE_PMTUD_DISABLED || pto_count < PURE_PMTUD_BH_PTOS)
        return 0;
    if (p->size > p->base) {
        black_hole(p);
        return 1;
    }
    /* Nothing gets through even at the base: wait (the link's timeouts decide). */
    p->queued = p->flying = 0;
    p->resume = 1;
    set_state(p, PURE_PMTUD_ERROR);
    return 0;
}

void pure_pmtud_on_refused(pure_pmtud *p, uint16_t size, uint64_t now)
{
    if (size < p->base)
        size = p->base;
    if (p->size > size) {
        p->size = size;
        p->full_seen = 0; /* packets of the old size say nothing of the new */
    }
    if (p->max > size)
        p->max = size;
    p->bh_lost = 0;
    if (p->state == PURE_PMTUD_SEARCHING)
        search(p, now); /* the ladder moved under the probes in flight: start it again */
}

int pure_pmtud_on_ptb(pure_pmtud *p, uint16_t size, uint64_t now)
{
    if (p->state == PURE_PMTUD_DISABLED || size < p->base || size >= p->max)
        return 0;
    p->max = size;
    if (p->size > size) {
        p->size = p->base; /* the hinted size is confirmed by a probe before data uses it */
        p->full_seen = 0;  /* packets of the old size say nothing of the new */
    }
    p->bh_lost = 0;
    search(p, now);
    return 1;
}
