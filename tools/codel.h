/* SPDX-License-Identifier: MIT */
/* codel.h: the CoDel active queue manager (RFC 8289) as a per-packet verdict, and a histogram of
 * queueing delays, shared by udpfwd's real-time bottleneck and the simulator's virtual-time one so
 * both run the same algorithm. Header-only: udpfwd is one file and the simulator a test library.
 *
 * The RFC's dequeue() drops in a loop; here the queue's owner takes packets from the head one at a
 * time and asks codel_judge() about each: CODEL_DROP means drop it and judge the next one,
 * CODEL_MARK means set CE and send it, CODEL_PASS means send it. codel_empty() is called when the
 * queue is found empty at a dequeue. The state machine follows RFC 8289 section 5 (the Linux
 * variant of the count reuse that the RFC quotes), step for step:
 *  - a packet whose sojourn time is below target, or that leaves at most one MTU queued, resets
 *    first_above; otherwise the first such packet arms first_above = now + interval, and a packet
 *    dequeued after that time is ok_to_drop;
 *  - outside the dropping state, an ok_to_drop packet is dropped (or marked), the state becomes
 *    dropping and the next drop is due at now + interval / sqrt(count), count starting at 1 or at
 *    the previous episode's count if it ended less than 16 intervals ago;
 *  - the packet dequeued right after that first drop only updates first_above (the RFC returns it
 *    whatever it is);
 *  - in the dropping state a packet that is not ok_to_drop ends it; otherwise each time now
 *    reaches drop_next, count grows by one, the packet is dropped (or marked) and the next drop is
 *    due interval / sqrt(count) after the previous due time, so drops come closer together as
 *    long as the queue stays above target. */
#ifndef PURE_TOOLS_CODEL_H
#define PURE_TOOLS_CODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define CODEL_TARGET_NS 5000000ull     /* RFC 8289 section 4.4 */
#define CODEL_INTERVAL_NS 100000000ull /* RFC 8289 section 4.3 */

enum {
    CODEL_PASS = 0,
    CODEL_DROP = 1,
    CODEL_MARK = 2
};

struct codel {
    uint64_t target, interval; /* ns */
    uint32_t mtu;              /* bytes: below one MTU queued, nothing is dropped */
    bool ecn;                  /* mark ECN-capable packets instead of dropping them */
    /* state */
    uint64_t first_above; /* 0: sojourn below target (or not yet an interval above) */
    uint64_t drop_next;
    uint32_t count, lastcount;
    bool dropping;
    uint8_t next; /* what the next judged packet is: see CODEL_NEXT_* */
    /* statistics */
    uint64_t drops, marks;
};

enum {
    CODEL_NEXT_ANY = 0,     /* an ordinary dequeue */
    CODEL_NEXT_AFTER_ENTER, /* the one dequeued right after the drop that began the episode */
    CODEL_NEXT_AFTER_DROP   /* the one dequeued right after a drop in the dropping state */
};

static inline void codel_init(struct codel *c, uint64_t target, uint64_t interval, uint32_t mtu,
                              bool ecn)
{
    memset(c, 0, sizeof *c);
    c->target = target ? target : CODEL_TARGET_NS;
    c->interval = interval ? interval : CODEL_INTERVAL_NS;
    c->mtu = mtu ? mtu : 1500;
    c->ecn = ecn;
}

static inline uint64_t codel_control_law(const struct codel *c, uint64_t t)
{
    return t + (uint64_t)((double)c->interval / sqrt((double)c->count));
}

/* The RFC's dodequeue() test for one packet: true when it is ok to drop. */
static inline bool codel_ok_to_drop(struct codel *c, uint64_t now, uint64_t sojourn,
                                    uint64_t bytes_left)
{
    if (sojourn < c->target || bytes_left <= c->mtu) {
        c->first_above = 0;
        return false;
    }
    if (c->first_above == 0) {
        c->first_above = now + c->interval;
        return false;
    }
    return now >= c->first_above;
}

/* The queue was empty at a dequeue. */
static inline void codel_empty(struct codel *c)
{
    c->first_above = 0;
    c->dropping = false;
    c->next = CODEL_NEXT_ANY;
}

/* The verdict on the packet just taken from the head of the queue at time now, which waited
 * `sojourn` ns and leaves bytes_left bytes behind it; ect: it may be marked instead of dropped. */
static inline int codel_judge(struct codel *c, uint64_t now, uint64_t sojourn, uint64_t bytes_left,
                              bool ect)
{
    bool ok = codel_ok_to_drop(c, now, sojourn, bytes_left);
    uint8_t next = c->next;
    c->next = CODEL_NEXT_ANY;
    if (next == CODEL_NEXT_AFTER_ENTER)
        return CODEL_PASS;
    if (c->dropping) {
        if (!ok) {
            c->dropping = false;
            return CODEL_PASS;
        }
        if (next == CODEL_NEXT_AFTER_DROP)
            c->drop_next = codel_control_law(c, c->drop_next);
        if (now < c->drop_next)
            return CODEL_PASS;
        c->count++;
        if (c->ecn && ect) {
            c->drop_next = codel_control_law(c, c->drop_next);
            c->marks++;
            return CODEL_MARK;
        }
        c->drops++;
        c->next = CODEL_NEXT_AFTER_DROP;
        return CODEL_DROP;
    }
    if (!ok)
        return CODEL_PASS;
    int verdict = CODEL_DROP;
    if (c->ecn && ect) {
        verdict = CODEL_MARK;
        c->marks++;
    } else {
        c->drops++;
        c->next = CODEL_NEXT_AFTER_ENTER;
    }
    c->dropping = true;
    uint32_t delta = c->count - c->lastcount;
    c->count = 1;
    if (delta > 1 && (int64_t)(now - c->drop_next) < (int64_t)(16 * c->interval))
        c->count = delta;
    c->drop_next = codel_control_law(c, now);
    c->lastcount = c->count;
    return verdict;
}

/* Queueing delays, 50 us buckets up to 3.2 s (larger ones count in the last bucket). */
#define QDELAY_BUCKET_NS 50000ull
#define QDELAY_BUCKETS 65536u

struct qdelay_hist {
    uint64_t n, sum_ns, max_ns;
    uint32_t bucket[QDELAY_BUCKETS];
};

static inline void qdelay_add(struct qdelay_hist *h, uint64_t ns)
{
    uint64_t b = ns / QDELAY_BUCKET_NS;
    h->bucket[b < QDELAY_BUCKETS ? b : QDELAY_BUCKETS - 1]++;
    h->n++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

/* The q-quantile (0..1) in ns, as the middle of its bucket; 0 with no samples. */
static inline uint64_t qdelay_quantile(const struct qdelay_hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)h->n), seen = 0;
    if (rank == 0)
        rank = 1;
    for (uint32_t b = 0; b < QDELAY_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank)
            return b * QDELAY_BUCKET_NS + QDELAY_BUCKET_NS / 2;
    }
    return h->max_ns;
}

#endif
