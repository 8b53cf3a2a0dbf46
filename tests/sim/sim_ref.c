/* SPDX-License-Identifier: MIT */
/* sim_ref.c: the reference flow (see sim_ref.h). Wire: a data datagram is 0x80, the packet
 * number (8 bytes, big-endian), padding to the flow's size; an ACK is 0x81, the largest number
 * received (8 bytes) and a bitmap (8 bytes) whose bit i says largest-1-i was received. Packet
 * numbers are never reused, so an acknowledgement is never ambiguous. */
#include "sim_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define RING 65536u /* packets tracked in flight; the window is kept below it */
#define PKT_THRESH 3
#define INIT_CWND 10.0
#define MIN_CWND 2.0
#define MAX_CWND (RING / 2.0)
#define MIN_RTO (200 * SIM_MS)
#define CUBIC_C 0.4
#define CUBIC_BETA 0.7

struct sim_ref {
    sim *s;
    int cc, snd, rcv;
    uint32_t size;
    uint64_t start;
    bool stopped;
    /* sender */
    uint64_t next_pn, oldest, largest_acked;
    bool any_acked;
    uint64_t *sent_at;
    uint8_t *in_flight; /* per packet number mod RING */
    uint64_t inflight;
    double cwnd, ssthresh;
    uint64_t recovery_end; /* losses of packets numbered below this do not reduce again */
    uint64_t srtt, rttvar, min_rtt;
    bool have_rtt;
    uint64_t rto_at; /* 0: not armed */
    uint32_t backoff;
    /* CUBIC (RFC 9438 section 4): times in seconds, windows in packets */
    double w_max, k, w_est;
    uint64_t epoch;
    bool epoch_valid;
    /* receiver */
    uint64_t r_largest;
    bool r_any;
    uint8_t *r_seen; /* one bit per packet number mod RING */
    sim_ref_stats st;
};

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static uint64_t rto(const sim_ref *r)
{
    uint64_t t = r->have_rtt ? r->srtt + 4 * r->rttvar : SIM_S;
    if (t < MIN_RTO)
        t = MIN_RTO;
    return t << (r->backoff < 6 ? r->backoff : 6);
}

static void send_more(sim_ref *r, uint64_t now)
{
    uint8_t d[1472];
    memset(d, 0, sizeof d);
    d[0] = 0x80;
    while (!r->stopped && now >= r->start && (double)r->inflight + 1 <= r->cwnd &&
           r->next_pn - r->oldest < RING) {
        uint64_t pn = r->next_pn++;
        put64(d + 1, pn);
        r->sent_at[pn % RING] = now;
        r->in_flight[pn % RING] = 1;
        r->inflight++;
        r->st.sent++;
        if (r->rto_at == 0)
            r->rto_at = now + rto(r);
        sim_send(r->s, r->snd, r->rcv, d, r->size);
    }
}

static double cubic_w(const sim_ref *r, double t)
{
    double x = t - r->k;
    return CUBIC_C * x * x * x + r->w_max;
}

static void on_acked(sim_ref *r, uint64_t pn, uint64_t now)
{
    if (pn < r->recovery_end)
        return; /* sent before the last reduction: no growth in recovery */
    if (r->cwnd < r->ssthresh) {
        r->cwnd += 1;
    } else if (r->cc == SIM_REF_NEWRENO) {
        r->cwnd += 1 / r->cwnd;
    } else {
        if (!r->epoch_valid) { /* congestion avoidance without a loss before (after an RTO) */
            r->epoch = now;
            r->epoch_valid = true;
            if (r->w_max < r->cwnd)
                r->w_max = r->cwnd;
            r->k = cbrt((r->w_max - r->cwnd) / CUBIC_C);
            r->w_est = r->cwnd;
        }
        double t = (double)(now - r->epoch) / 1e9, rtt = (double)r->srtt / 1e9;
        double alpha = r->w_est < r->w_max ? 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA) : 1;
        r->w_est += alpha / r->cwnd; /* the Reno-friendly estimate (section 4.3) */
        if (cubic_w(r, t) < r->w_est) {
            r->cwnd = r->w_est;
        } else {
            double target =
                r->cc == SIM_REF_CUBIC_NGTCP2_012 ? cubic_w(r, t) * (t + rtt) : cubic_w(r, t + rtt);
            if (target < r->cwnd)
                target = r->cwnd;
            if (target > 1.5 * r->cwnd)
                target = 1.5 * r->cwnd;
            r->cwnd += (target - r->cwnd) / r->cwnd;
        }
    }
    if (r->cwnd > MAX_CWND)
        r->cwnd = MAX_CWND;
}

static void reduce(sim_ref *r, uint64_t now)
{
    r->recovery_end = r->next_pn;
    if (r->cc == SIM_REF_NEWRENO) {
        r->cwnd /= 2;
    } else {
        /* fast convergence (section 4.7): a flow whose window fell short of its last W_max
         * releases bandwidth to newer flows */
        r->w_max = r->cwnd < r->w_max ? r->cwnd * (1 + CUBIC_BETA) / 2 : r->cwnd;
        r->cwnd = (r->cc == SIM_REF_CUBIC_QUINN_09 ? r->w_max : r->cwnd) * CUBIC_BETA;
        if (r->cwnd < MIN_CWND)
            r->cwnd = MIN_CWND;
        r->k = r->w_max > r->cwnd ? cbrt((r->w_max - r->cwnd) / CUBIC_C) : 0;
        r->epoch = now;
        r->epoch_valid = true;
        r->w_est = r->cwnd;
    }
    if (r->cwnd < MIN_CWND)
        r->cwnd = MIN_CWND;
    r->ssthresh = r->cwnd;
}

static void on_lost(sim_ref *r, uint64_t pn, uint64_t now)
{
    r->st.lost++;
    if (pn >= r->recovery_end)
        reduce(r, now);
}

static void rtt_sample(sim_ref *r, uint64_t rtt)
{
    if (!r->have_rtt) {
        r->srtt = rtt;
        r->rttvar = rtt / 2;
        r->min_rtt = rtt;
        r->have_rtt = true;
        return;
    }
    uint64_t dev = rtt > r->srtt ? rtt - r->srtt : r->srtt - rtt;
    r->rttvar = (3 * r->rttvar + dev) / 4;
    r->srtt = (7 * r->srtt + rtt) / 8;
    if (rtt < r->min_rtt)
        r->min_rtt = rtt;
}

static void snd_read(void *arg, int from, const uint8_t *d, size_t n, uint64_t now)
{
    sim_ref *r = arg;
    (void)from;
    if (n < 17 || d[0] != 0x81)
        return;
    uint64_t largest = get64(d + 1), mask = get64(d + 9);
    if (largest >= r->next_pn)
        return; /* never sent: corrupted */
    bool newly = false;
    for (int i = -1; i < 64; i++) {
        if (i >= 0 && (!(mask >> i & 1) || largest < (uint64_t)i + 1))
            continue;
        uint64_t pn = i < 0 ? largest : largest - 1 - (uint64_t)i;
        if (pn < r->oldest || !r->in_flight[pn % RING])
            continue;
        r->in_flight[pn % RING] = 0;
        r->inflight--;
        r->st.acked++;
        newly = true;
        if (i < 0)
            rtt_sample(r, now - r->sent_at[pn % RING]);
        on_acked(r, pn, now);
    }
    if (!r->any_acked || largest > r->largest_acked) {
        r->largest_acked = largest;
        r->any_acked = true;
    }
    /* packet threshold: everything PKT_THRESH below the largest acknowledged is settled */
    while (r->oldest + PKT_THRESH <= r->largest_acked) {
        uint64_t pn = r->oldest++;
        if (r->in_flight[pn % RING]) {
            r->in_flight[pn % RING] = 0;
            r->inflight--;
            on_lost(r, pn, now);
        }
    }
    while (r->oldest < r->next_pn && !r->in_flight[r->oldest % RING])
        r->oldest++;
    if (newly) {
        r->backoff = 0;
        r->rto_at = now + rto(r);
    }
    if (r->inflight == 0)
        r->rto_at = 0;
    send_more(r, now);
}

static uint64_t snd_deadline(void *arg)
{
    sim_ref *r = arg;
    if (r->stopped)
        return r->inflight && r->rto_at ? r->rto_at : UINT64_MAX;
    if (r->next_pn == 0)
        return r->start;
    return r->rto_at ? r->rto_at : UINT64_MAX;
}

static void snd_timeout(void *arg, uint64_t now)
{
    sim_ref *r = arg;
    if (r->rto_at != 0 && now >= r->rto_at) {
        /* everything in flight is lost: a window of one, slow start back to half */
        for (uint64_t pn = r->oldest; pn < r->next_pn; pn++)
            if (r->in_flight[pn % RING]) {
                r->in_flight[pn % RING] = 0;
                r->st.lost++;
            }
        r->inflight = 0;
        r->oldest = r->next_pn;
        r->st.rtos++;
        double half = r->cwnd / 2 < MIN_CWND ? MIN_CWND : r->cwnd / 2;
        if (r->cc != SIM_REF_NEWRENO) {
            r->w_max = r->cwnd;
            half = r->cwnd * CUBIC_BETA < MIN_CWND ? MIN_CWND : r->cwnd * CUBIC_BETA;
        }
        r->ssthresh = half;
        r->cwnd = 1;
        r->recovery_end = r->next_pn;
        r->epoch_valid = false;
        r->backoff++;
        r->rto_at = 0;
    }
    send_more(r, now);
}

static bool seen(const sim_ref *r, uint64_t pn)
{
    return r->r_seen[(pn % RING) / 8] >> (pn % 8) & 1;
}

static void rcv_read(void *arg, int from, const uint8_t *d, size_t n, uint64_t now)
{
    sim_ref *r = arg;
    (void)from;
    (void)now;
    if (n < 9 || d[0] != 0x80)
        return;
    uint64_t pn = get64(d + 1);
    if (pn > (uint64_t)1 << 48)
        return; /* corrupted */
    if (!r->r_any || pn > r->r_largest) {
        uint64_t from_pn = r->r_any ? r->r_largest + 1 : 0;
        if (pn - from_pn >= RING)
            memset(r->r_seen, 0, RING / 8);
        else
            for (uint64_t p = from_pn; p < pn; p++)
                r->r_seen[(p % RING) / 8] &= (uint8_t) ~(1u << (p % 8));
        r->r_seen[(pn % RING) / 8] &= (uint8_t) ~(1u << (pn % 8));
        r->r_largest = pn;
        r->r_any = true;
    }
    if (pn + RING > r->r_largest && !seen(r, pn)) {
        r->r_seen[(pn % RING) / 8] |= (uint8_t)(1u << (pn % 8));
        r->st.received++;
        r->st.bytes_received += n;
    }
    uint8_t ack[17];
    uint64_t mask = 0;
    for (uint64_t i = 0; i < 64 && i + 1 <= r->r_largest; i++)
        if (seen(r, r->r_largest - 1 - i))
            mask |= (uint64_t)1 << i;
    ack[0] = 0x81;
    put64(ack + 1, r->r_largest);
    put64(ack + 9, mask);
    sim_send(r->s, r->rcv, r->snd, ack, sizeof ack);
}

static uint64_t rcv_deadline(void *arg)
{
    (void)arg;
    return UINT64_MAX;
}

static void rcv_timeout(void *arg, uint64_t now)
{
    (void)arg;
    (void)now;
}

static const sim_agent_ops snd_ops = {snd_read, snd_deadline, snd_timeout};
static const sim_agent_ops rcv_ops = {rcv_read, rcv_deadline, rcv_timeout};

sim_ref *sim_ref_new(sim *s, int cc, uint32_t size, uint64_t start)
{
    if ((cc != SIM_REF_NEWRENO && cc != SIM_REF_CUBIC && cc != SIM_REF_CUBIC_NGTCP2_012 &&
         cc != SIM_REF_CUBIC_QUINN_09) ||
        size < 17 || size > 1472)
        return NULL;
    sim_ref *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->sent_at = calloc(RING, sizeof *r->sent_at);
    r->in_flight = calloc(RING, 1);
    r->r_seen = calloc(RING / 8, 1);
    if (!r->sent_at || !r->in_flight || !r->r_seen) {
        sim_ref_free(r);
        return NULL;
    }
    r->s = s;
    r->cc = cc;
    r->size = size;
    r->start = start;
    r->cwnd = INIT_CWND;
    r->ssthresh = MAX_CWND;
    r->snd = sim_add_agent(s, &snd_ops, r);
    r->rcv = sim_add_agent(s, &rcv_ops, r);
    if (r->snd < 0 || r->rcv < 0) {
        sim_ref_free(r);
        return NULL;
    }
    return r;
}

int sim_ref_sender(const sim_ref *r)
{
    return r->snd;
}

int sim_ref_receiver(const sim_ref *r)
{
    return r->rcv;
}

void sim_ref_stop(sim_ref *r)
{
    r->stopped = true;
}

void sim_ref_stats_get(const sim_ref *r, sim_ref_stats *out)
{
    *out = r->st;
    out->cwnd = r->cwnd;
    out->srtt = r->srtt;
    out->min_rtt = r->min_rtt;
}

void sim_ref_free(sim_ref *r)
{
    if (!r)
        return;
    free(r->sent_at);
    free(r->in_flight);
    free(r->r_seen);
    free(r);
}
