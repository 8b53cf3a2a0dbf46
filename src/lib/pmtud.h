/* SPDX-License-Identifier: MIT */
/* pmtud.h: pmtud finds the largest datagram a link's path carries (RFC 8899 DPLPMTUD, as QUIC does
 * in RFC 9000 section 14): it starts from a size every path carries (the base, 1200 bytes of UDP
 * payload), probes larger sizes with padded packets whose loss is not congestion, raises the size
 * when a probe is acknowledged, falls back to the base when full-size packets vanish while the
 * path still works (a black hole: a router drops them and its Packet Too Big is filtered), takes
 * a Packet Too Big as a hint to confirm by probing, and searches again later. It knows nothing of
 * links: the caller reports what happened to its packets, by size, and sends the probes it asks
 * for. It never needs a timer: the time to search again is looked at when the link sends.
 *
 * The search works in rounds of probes sent together, each round ending when all its probes are
 * acknowledged or lost. The first probes the maximum alone (max_udp_payload: one probe finds the
 * size on most paths). If it is lost, the next probes a ladder of the payload sizes common paths
 * carry, all at once (one round trip finds any common size): 1472/1452 (a 1500-byte MTU over
 * IPv4/IPv6), 1464/1444 (PPPoE), 1392/1372 (1420: WireGuard), 1372/1352 (1400), 1252/1232
 * (1280), those between the base and the maximum. Then rounds probe the next size up only (the
 * loss may have been random), until PURE_PMTUD_MAX_PROBES rounds with a loss; the size in use is
 * the largest acknowledged. Probes wait for the congestion window like data, but their loss is
 * not congestion. */
#ifndef PURE_PMTUD_H
#define PURE_PMTUD_H

#include <stdint.h>

/* States (RFC 8899 section 5.2), checked at every transition. */
enum pure_pmtud_state {
    PURE_PMTUD_DISABLED = 0, /* the maximum is the base: nothing to search */
    PURE_PMTUD_BASE,         /* at the base size, no search under way: one starts when the link
                                sends full bursts (pure_pmtud_on_burst), or after a black hole
                                once a packet is acknowledged again (the path is back) */
    PURE_PMTUD_SEARCHING,    /* probes queued or in flight */
    PURE_PMTUD_COMPLETE,     /* the size is found; search again at raise_at */
    PURE_PMTUD_ERROR,        /* even base-size packets vanish: stay at the base until one is
                                acknowledged (the link's own timeouts decide its fate) */
};

/* RFC 8899 MAX_PROBES: rounds in a row without a gain that end a search. */
#define PURE_PMTUD_MAX_PROBES 3
/* RFC 8899 PMTU_RAISE_TIMER: a complete search is done again after this long (ns), on the first
 * packet sent from then on. */
#define PURE_PMTUD_RAISE_NS (600ull * 1000000000ull)
/* Full-size packets lost (with no full-size packet acknowledged since) that, with an ACK that
 * acknowledges smaller packets only, show a black hole. */
#define PURE_PMTUD_BH_LOSSES 3
/* Probe timeouts in a row that show a black hole when full-size packets are in use (nothing
 * smaller was sent to be acknowledged: every packet of a bulk transfer is full-size). */
#define PURE_PMTUD_BH_PTOS 2
/* Packet Too Big hints taken per context per second at most (each may need a look through the
 * links): a flood of forged ones costs little. */
#define PURE_PMTUD_PTB_PER_S 100

/* One link's search (part of its busy state only: 40 bytes). All zero is DISABLED at size 0:
 * start it with pure_pmtud_init. */
typedef struct pure_pmtud {
    uint64_t raise_at;   /* COMPLETE: search again from this time */
    uint64_t full_sent;  /* send time of the latest-sent full-size packet acknowledged */
    uint16_t size;       /* the datagram size in use: the confirmed PLPMTU */
    uint16_t base;       /* BASE_PLPMTU: every path carries it */
    uint16_t limit;      /* the configured maximum (max_udp_payload) */
    uint16_t max;        /* the largest size worth probing now (a Packet Too Big lowers it) */
    uint16_t queued;     /* ladder steps (bits, pure_pmtud_step) to probe, not yet sent */
    uint16_t flying;     /* ladder steps probed, fate unknown */
    uint8_t state;       /* enum pure_pmtud_state */
    uint8_t idle_rounds; /* rounds in a row that raised nothing */
    uint8_t bh_lost;     /* full-size packets lost since one was last acknowledged */
    uint8_t round_lost;  /* a probe of this round was lost */
    uint8_t acked_full, acked_small; /* the ACK being read acknowledged full-size / smaller ones */
    uint8_t resume;      /* BASE after a black hole: search once a packet is acknowledged */
    uint8_t ladder_done; /* this search probed the whole ladder already */
    uint8_t full_seen;   /* full_sent is valid (for the size in use) */
} pure_pmtud;

/* Starts a search state: base and limit are datagram sizes (limit >= base), size the size the
 * link uses now (clamped to [base, limit]), parked what pure_pmtud_park returned when the link
 * last released its busy state (0: the link is new), epoch the time park was given. With parked
 * 0: BASE; otherwise COMPLETE, to search again when the parked search would have. */
void pure_pmtud_init(pure_pmtud *p, uint16_t base, uint16_t limit, uint16_t size, uint32_t parked,
                     uint64_t epoch);

/* What an idle link keeps of its search (4 bytes, with the size it uses): 0 if no search ran,
 * else 1 + the seconds from epoch (the link's creation) to its next search (1: at once, for a
 * search cut short). */
uint32_t pure_pmtud_park(const pure_pmtud *p, uint64_t epoch);

/* The link sent a burst of at least two full-size packets (it has more than a small packet's
 * worth to say): starts the first search from BASE. Returns 1 if a search started. */
int pure_pmtud_on_burst(pure_pmtud *p, uint64_t now);

/* The size of the next probe to send (0: none now). From COMPLETE at or after raise_at this
 * starts a new search. */
uint16_t pure_pmtud_probe_size(pure_pmtud *p, uint64_t now);

/* A probe of `size` bytes was sent (the size pure_pmtud_probe_size returned). */
void pure_pmtud_on_probe_sent(pure_pmtud *p, uint16_t size);

/* A probe of `size` bytes was acknowledged or lost (or refused by this host: lost). Returns 1 if
 * the size in use changed (the caller then uses pure_pmtud_size). */
int pure_pmtud_on_probe_acked(pure_pmtud *p, uint16_t size, uint64_t now);
int pure_pmtud_on_probe_lost(pure_pmtud *p, uint16_t size, uint64_t now);

/* An ACK is read: pure_pmtud_ack_begin, then pure_pmtud_on_acked for each packet it acknowledges
 * that was not a probe and pure_pmtud_on_lost for each packet (not a probe) declared lost (also
 * outside an ACK, by time), each with the time it was sent, then pure_pmtud_ack_end. A black
 * hole: full-size packets lost since the last one acknowledged, none sent after them
 * acknowledged, and an ACK that acknowledges only smaller ones. ack_end returns 1 if the size in
 * use changed (it fell to the base). */
void pure_pmtud_ack_begin(pure_pmtud *p);
void pure_pmtud_on_acked(pure_pmtud *p, uint16_t size, uint64_t sent, uint64_t now);
void pure_pmtud_on_lost(pure_pmtud *p, uint16_t size, uint64_t sent);
int pure_pmtud_ack_end(pure_pmtud *p);

/* A probe timeout fired, the pto_count-th in a row. Returns 1 if the size in use changed (a black
 * hole: it fell to the base). */
int pure_pmtud_on_pto(pure_pmtud *p, uint32_t pto_count);

/* This host refused to send datagrams larger than `size` (sendmsg: EMSGSIZE): the size in use and
 * the largest probed fall to it at once (no hint: the host knows its own MTU). */
void pure_pmtud_on_refused(pure_pmtud *p, uint16_t size, uint64_t now);

/* A Packet Too Big (ICMP) says the path carries at most `size` bytes of UDP payload. A hint only
 * (RFC 8899 section 4.6): sizes below the base or not below the size the search reached or
 * probes are ignored (returns 0); otherwise probes above it stop, and if the size in use is
 * larger it falls to the base and a search up to `size` starts at once, so that the hinted size
 * is confirmed by an acknowledged probe before data uses it. Returns 1 if the hint was taken. */
int pure_pmtud_on_ptb(pure_pmtud *p, uint16_t size, uint64_t now);

/* The datagram size to use. */
static inline uint16_t pure_pmtud_size(const pure_pmtud *p)
{
    return p->size;
}

/* Is a probe waiting to be sent (without starting a search)? */
static inline int pure_pmtud_due(const pure_pmtud *p)
{
    return p->queued != 0;
}

/* The probe size of ladder step i (bit i of queued/flying; 0 if the step is not in the ladder for
 * this base and maximum). Exposed for its tests. */
uint16_t pure_pmtud_step(const pure_pmtud *p, unsigned i);

#endif
