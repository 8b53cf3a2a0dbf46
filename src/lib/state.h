/* SPDX-License-Identifier: MIT */
/* state.h: the state of a link and of the context that owns it: types only. The modules of the
 * link layer (registry, keys, timers, lifecycle, rekey, recovery, link_send, link_recv,
 * handshake, link, ctx: docs/architecture.md shows their layers) each own a part of it and
 * declare their functions in a header of their own; the modules below them (sendbuf, rtb, rob,
 * acktr, credit, cc, pacer, ranges, msgparse, noise, ...) know nothing of links. */
#ifndef PURE_STATE_H
#define PURE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "pure.h"

#include "acktr.h"
#include "admit.h"
#include "alloc.h"
#include "cc.h"
#include "chan.h"
#include "cookie.h"
#include "credit.h"
#include "frame.h"
#include "crypto.h"
#include "msgparse.h"
#include "noise.h"
#include "pacer.h"
#include "pmtud.h"
#include "ranges.h"
#include "replay.h"
#include "rob.h"
#include "rtb.h"
#include "rtt.h"
#include "sendbuf.h"
#include "sscache.h"
#include "table.h"
#include "timerheap.h"
#include "wire.h"

/* Link states; every transition goes through pure_link_set_state, which checks it. */
enum pure_link_state {
    PURE_LS_HANDSHAKE = 1, /* initiator: INIT sent, waiting for RESP */
    PURE_LS_UNVALIDATED,   /* responder: RESP sent, waiting for the first authenticated packet */
    PURE_LS_OPEN,          /* keys in place, data flows */
    PURE_LS_CLOSING,       /* CLOSE queued or sent; waiting to send it, then draining */
    PURE_LS_CLOSED,        /* on_closed delivered; freed at the end of the current ctx call */
};

/* Counters kept per link (pure_link_stats adds the fields derived when it is read). */
/* pure_link.send_gate bits */
#define PURE_GATE_FINISH 1u /* pure_link_finish or a graceful close: no new messages */
#define PURE_GATE_CHANS 2u  /* the channel table exists: queue limits and ages (link_shared.c) */

typedef struct pure_link_counters {
    uint64_t packets_sent, packets_received, bytes_sent, bytes_received;
    uint64_t packets_lost, bytes_retransmitted, ptos, random_losses;
    uint64_t messages_received;
    uint64_t dropped_auth, dropped_replay;
    uint64_t paced_bursts;
    /* Rare events in 32 bits (an idle link is counted in bytes): a rekey per 2^20 packets or
     * two minutes, a keepalive per 25 s, an address change per rebinding; a CE mark per
     * packet at most, wrapping only after 4 billion (pure_link_stats reads them widened). */
    uint32_t rekeys, keepalives, path_changes;
    uint32_t ecn_ce_received; /* packets that arrived marked CE */
    uint32_t ecn_ce_reported; /* CE marks the peer reported (each increase a congestion signal) */
} pure_link_counters;

/* Path validation (path.c): what a link keeps while its peer's address is being validated, and
 * the last address that was. */
typedef struct pure_path {
    pure_addr prev;                        /* the last validated address, if has_prev */
    uint8_t challenge[PURE_PATH_DATA_LEN]; /* sent to the new address, to be echoed */
    uint8_t response[PURE_PATH_DATA_LEN];  /* the peer's challenge, to echo */
    uint8_t has_prev, challenge_set, challenge_pending, response_pending;
} pure_path;

/* What a link needs only while it carries traffic: allocated on demand (pure_link_busy) and
 * released a moment after the link falls idle, so an idle link keeps keys, counters and offsets
 * only. The congestion controller restarts from its initial window after idleness, as RFC 9002
 * section 7.8 recommends. */
typedef struct pure_busy {
    pure_cc cc;
    pure_pacer pacer;
    pure_replay replay;
    pure_ranges acked; /* acknowledged stream bytes above sb.base */
    pure_ranges lost;  /* stream bytes to send again */
    pure_rob rob;      /* out-of-order stream bytes above recv_next */
    pure_msgparse parse;
    char close_reason[48];
    uint64_t rx_retire_at; /* when the previous receive key is wiped (link->rx_retire) */
    /* rxmem.c: the context's list of links held back by max_receive_memory, oldest first */
    pure_link *held_prev, *held_next;
    uint8_t held;
    /* link_recv.c: in-order bytes wait in a ring for want of memory (the assembly buffer could
     * not grow): the retry timer (pace_at) feeds them again */
    uint8_t rx_nomem;
    /* link_recv.c: the peer's CLOSE came while such bytes waited (they were acknowledged, so the
     * peer counts them delivered): it takes effect once they are, with this reason (cut to 47) */
    uint8_t peer_close_waits;
    char peer_reason[48];
    /* flight.c: the context's list of links waiting for max_in_flight, oldest first */
    pure_link *flight_prev, *flight_next;
    uint8_t flight_waiting;
    uint8_t flight_woken;    /* woken from that list: packets it may send ahead of those waiting */
    uint8_t flight_held;     /* above its share: asks again when its ACKs bring it within */
    uint8_t flight_counted;  /* counted in ctx->flight_links (has a charge, waits or is held) */
    uint64_t flight_charge;  /* this link's share of ctx->flight */
    uint64_t pto_not_before; /* a probe timeout held back by a read backlog goes no sooner */
    uint32_t orphaned;       /* a former owner: what it held then, counted in ctx->rx_orphaned */
    uint32_t closing_heard;  /* CLOSING: the peer's packets since (CLOSE resent on powers of 2) */
    pure_path path;          /* path.c */
    uint64_t qdelay_max;     /* recovery.c: queueing delay seen lately (a decaying maximum) */
    uint32_t loss_rate;      /* recovery.c: EWMA of lost packets, 1/65536ths */
    /* recovery.c: a packet number skipped now and then, which an honest peer never acknowledges
     * (RFC 9000 section 21.4: optimistic ACKs) */
    uint64_t skip_at; /* skip this packet number (0: not drawn yet) */
    uint64_t skipped; /* the last one skipped (0: none; packet 0 is never skipped) */
    pure_pmtud pmtud; /* the path MTU search: link->mss follows its size */
    /* ECN (recovery.c): CE-marked packets received this busy period, reported in ECN frames
     * beside ACKs; the peer's latest report (both modulo 2^16); whether a report came yet (the
     * first of a busy period only sets the baseline: the peer's count may have outlived ours);
     * the send time of the newest packet the last ACK acknowledged. */
    uint16_t ce_received, ce_peer;
    uint8_t ce_peer_synced;
    uint64_t acked_sent_time;
    /* link.c: channel 0's stream offset up to which pure_link_send may append a message with no
     * test but its size and the gate: the least of the ring's contiguous room, send_backlog and
     * send_queue when send_slow last wrote, bounds that only loosen as packets go and ACKs come.
     * 0 (every send through send_slow) from the start, and again whenever the ring is given back
     * (pure_link_release_buffers) or the link leaves the send list (pure_ctx_pending_pop: the
     * fast path does not put it back). */
    uint64_t send_fast_end;
} pure_busy;

/* What only the initiator's handshake needs: freed once the link is open. */
typedef struct pure_hs {
    pure_noise noise;
    uint8_t init[512]; /* the INIT datagram as sent, resent on timeout */
    uint16_t init_len;
    uint8_t retries;
    uint8_t send_pending;
    uint8_t hint_kind;   /* PURE_UNREACH_* of an unreachable hint (on_closed's peer_code) */
    uint32_t inits_sent; /* INIT datagrams written (link_send.c): a hint needs one out */
    /* A hint that the handshake failed (a REJECT, a datagram from the peer's address that cannot
     * be Pure, an unproven ICMP error): its error ends the handshake at hint_deadline unless a
     * RESP comes; the INIT goes every hint_step until then (PURE_HS_HINT_GRACE_MIN, pure.h). */
    int hint_err;
    uint32_t hint_version; /* a VERSION hint's newest version (on_closed's peer_code) */
    uint64_t hint_deadline, hint_step;
    uint64_t started;
    uint64_t retry_at;
    char service[PURE_SERVICE_MAX + 1];
    uint8_t in_flight; /* counted in ctx->hs_in_flight, on the ctx->hs_flight_head list */
    uint8_t queued;    /* waiting in the context's handshake queue */
    struct pure_link *queue_prev, *queue_next;
    struct pure_link *flight_prev, *flight_next; /* the handshakes in flight (hs_flight_head) */
} pure_hs;

/* What a test made a context speak (tparams.h, pure_test_set_wire); NULL in real use. */
typedef struct pure_wire_test {
    uint32_t version; /* 0: PURE_PROTOCOL_VERSION */
    uint8_t no_params, set_announce, use_raw, raw_len;
    pure_tparams announce;
    uint8_t raw[PURE_TPARAMS_ROOM];
} pure_wire_test;

/* Handshakes a context runs at once as initiator; more wait in a queue, so a program that opens
 * thousands of links at once stays within a responder's half-open limit per address
 * (pure_settings.half_open_per_addr, default 64). */
#define PURE_HS_IN_FLIGHT 64

/* Where the receive key of the phase not in use stands after a switch (link->rx_retire): a
 * previous key is kept for late packets until three probe timeouts after the peer's first packet
 * under its successor, then wiped (keys.c). */
enum pure_rx_retire {
    PURE_RX_RETIRE_NONE = 0, /* rx[key_phase ^ 1] is empty or the next key */
    PURE_RX_RETIRE_WAIT,     /* it is the previous key; the peer has not yet sent under the new */
    PURE_RX_RETIRE_TIMED,    /* it is the previous key, wiped at b->rx_retire_at */
};

/* Transport keys of one direction and phase. The AEAD context (~1 KB in OpenSSL, 2.3 KB in the
 * VAES code) is scheduled from `key` on first use and released while the link is idle. */
typedef struct pure_dir_keys {
    pure_aead aead;
    uint8_t key[16];
    uint8_t iv[PURE_NONCE_LEN];
    uint8_t ready; /* key and iv hold keys */
    uint8_t live;  /* aead is scheduled */
} pure_dir_keys;

#define PURE_CLOSE_ANSWERING 2 /* link->close_pending: the CLOSE answers the peer's */

struct pure_link {
    pure_ctx *ctx;
    void *user;
    uint32_t local_index, remote_index;
    uint32_t heap_pos; /* position in the context's timer heap, PURE_TIMERHEAP_NONE if none */
    uint8_t state;
    uint8_t initiator;
    uint8_t key_phase;  /* phase of tx keys (the DATA packet type's low bit) */
    uint8_t in_pending; /* on the context's send list */
    uint16_t service;   /* responder: index of the service in ctx->services */

    /* flags */
    /* PURE_GATE_*: why pure_link_send cannot take its fast path (one test for all of them) */
    uint8_t send_gate;
    uint8_t fin_sent_pending, peer_finished, peer_fin_known;
    uint8_t want_writable, credit_pending;
    uint8_t close_pending; /* CLOSING: our CLOSE is to be written (1), or the answer to the
                              peer's, after which the link ends (PURE_CLOSE_ANSWERING) */
    uint8_t probe_pending, ping_pending, closed_notified, app_limited;
    /* small fields together, so the struct has no padding holes (an idle link is ~950 B) */
    uint8_t resp_pending; /* RESP to be (re)sent */
    uint8_t in_hs_table;  /* findable by init_tag (an unvalidated responder link) */
    uint8_t path_unvalidated;
    uint8_t msg_len_known;
    uint8_t peer_closed;
    uint8_t accepted;        /* responder: the application accepted the link (on_accept) */
    uint8_t preamble_seen;   /* the peer's stream preamble was checked (kept while b is released) */
    uint8_t close_requested; /* pure_link_close: CLOSE goes once everything accepted is acked */
    uint8_t fin_acked;       /* the peer acknowledged our stream's end (pure_link_finish) */
    uint8_t recv_paused;     /* pure_link_pause_recv: no new receive credit is granted */
    uint8_t half_open;       /* responder: counted in ctx->half_open and its source's bucket */
    uint8_t resp_elsewhere;  /* responder: RESP copies sent to an address the INIT moved to */
    uint8_t rx_retire;       /* enum pure_rx_retire: the previous receive key after a switch */
    uint8_t peer_tp_known;   /* the peer announced transport parameters (tparams.h) */
    uint8_t peer_tp_features; /* its PURE_TP_F_* bits */
    uint32_t ck_gen;          /* rekeys mixed into ck so far */
    uint32_t msg_len;         /* length of the message at msg_boundary, once read */
    uint32_t pto_count;
    uint16_t mss;         /* largest datagram this link sends (the path MTU search's size) */
    uint16_t resp_len;    /* of resp, below */
    uint32_t pmtu_parked; /* the path MTU search while b is released (pure_pmtud_park): mss holds
                             its size; 0 if none ran yet */

    pure_addr peer;
    uint8_t peer_key[PURE_KEY_LEN];
    uint32_t rx_failed[2]; /* packets that failed to open under each receive key (by phase) since
                              it was installed: the integrity limit (max_failed_opens, clamped to
                              32 bits) */
    int close_error;       /* the error reported when CLOSING ends (here: fills a padding hole) */
    uint8_t peer_tp_channels;  /* the peer's announced max_channels, clamped (tparams.h) */
    uint8_t peer_tp_window;    /* the peer's announced recv_window, coded (tparams.c) */
    uint16_t peer_tp_datagram; /* the peer's announced max_datagram_size, clamped */
    pure_hs *hs;
    uint8_t *resp;     /* responder: the RESP datagram, kept until the link is validated */
    uint64_t init_tag; /* the INIT's sender index and ephemeral key, to spot its resends */

    /* keys */
    pure_dir_keys tx;
    pure_dir_keys rx[2];       /* by the phase bit of incoming packets */
    struct pure_rekey *rk;     /* only while a rekey is under way */
    uint8_t ck[PURE_HASH_LEN]; /* chaining key, for rekeying */

    /* amplification limit on a new, not yet validated peer address (path.c) */
    uint64_t amp_received, amp_sent;

    /* ---- send side ---- */
    pure_sendbuf sb;
    uint64_t send_next;    /* next new stream offset to send */
    uint64_t fin_offset;   /* stream length once finish was requested */
    uint64_t msg_boundary; /* offset of the next message whose acknowledgement is not counted */
    uint64_t msgs_acked, next_msg_id;

    /* recovery */
    pure_rtb rtb; /* packets sent and in flight, packet numbers, loss detection */
    pure_rtt rtt;
    uint64_t latest_adjusted; /* the latest RTT sample less the peer's reported ACK delay */

    /* ---- receive side ---- */
    pure_acktr acktr;   /* packet numbers received, and when an ACK is owed */
    uint64_t recv_next; /* in-order stream bytes consumed */
    pure_credit credit; /* flow credit: the receive window and grants, the peer's send limit */
    uint64_t peer_fin;  /* peer's stream length once known */

    /* liveness */
    uint64_t created;
    uint64_t last_recv; /* last authenticated packet */
    uint64_t last_sent;
    uint64_t wait_start; /* when ack-eliciting packets last started to fly from none */
    uint64_t pace_at;    /* the pacer releases the next packet at this time (UINT64_MAX: none) */
    uint64_t release_at; /* idle since a moment: give buffers back then (UINT64_MAX: no) */
    uint64_t close_resend_at; /* CLOSING: when the CLOSE goes again (UINT64_MAX: no more) */
    uint64_t close_deadline;  /* CLOSING: when to stop; OPEN with close_requested: give up then */
    uint64_t last_msg_sent;   /* when the application last accepted a message, or one went out
                                 (the liveness watch counts from it) */
    uint64_t deadline;        /* the earliest of all timers, as stored in the heap */

    /* close */
    uint64_t close_code;

    /* rekey */
    uint64_t keys_time, keys_packets;

    pure_link_counters st;
    pure_busy *b;            /* state a link needs only while it carries traffic (NULL when idle) */
    pure_chans *chans;       /* channels 1..max (link_chan.c), NULL until one is used */
    uint64_t replay_top;     /* the replay window's top while b is released: all below were seen */
    pure_link *pending_next; /* the context's send list */
    pure_link *dead_next;
    pure_link *timer_next; /* the list of links whose timers are being run */
};

/* A datagram the context sends that belongs to no open link (RESP, COOKIE, REJECT replies). */
typedef struct pure_ctl {
    pure_addr to;
    uint16_t len;
    uint8_t data[160];
} pure_ctl;

#define PURE_CTL_QUEUE 64
/* Links whose timer waits to be refiled (pure_timers_defer); more flush the oldest first. */
#define PURE_TIMER_DIRTY_MAX 16

struct pure_ctx {
    pure_settings s;
    pure_callbacks cb;
    pure_alloc alloc;
    const pure_crypto *crypto;
    uint8_t public_key[PURE_KEY_LEN];

    /* link structs come from slabs of PURE_LINK_SLAB: long-lived links packed densely, apart
     * from the short-lived handshake and traffic allocations, so freed memory forms whole pages
     * the allocator can return (interleaved, idle links cost ~1.7 KB resident instead of 1 KB) */
    void **slabs;
    uint32_t n_slabs, cap_slabs;
    pure_link *free_links;

    /* unvalidated responder links by init_tag, so a resent INIT finds its link */
    pure_table hs_table;

    /* links by local index */
    pure_table table;
    uint32_t half_open;    /* responder links not yet validated */
    pure_admit admit;      /* handshake admission (admit.h) */
    pure_sscache *ssc;     /* the static key's ss results by peer key (sscache.h); NULL until
                              the first handshake (or if it could not be allocated) */
    uint64_t last_init_ts; /* the timestamp of the last INIT this context made */
    uint32_t hs_in_flight; /* initiator handshakes under way (PURE_HS_IN_FLIGHT at most) */
    pure_link *hs_queue_head, *hs_queue_tail; /* initiator handshakes waiting their turn */
    struct pure_wire_test *test_wire;         /* NULL unless a test set one (pure_test_set_wire) */
    pure_link *hs_flight_head; /* initiator handshakes under way: where a hint by address (ICMP
                                  error, junk from the peer) looks, never through every link */

    /* timers: a min-heap of links by deadline (each link's deadline and heap_pos) */
    pure_timerheap timers;
    /* links whose deadline a datagram may have moved and that is not yet refiled (timers.c,
     * pure_timers_defer): a batch of datagrams for one link recomputes it once */
    pure_link *timer_dirty[PURE_TIMER_DIRTY_MAX];
    uint32_t timer_dirty_n;

    /* links with something to send */
    pure_link *pending_head, *pending_tail;
    /* flight.c: what every link has in flight (bytes and a cost per packet), the limit (0:
     * none), and the links waiting for it to fall */
    uint64_t flight, max_in_flight;
    uint64_t (*clock)(void *clock_user); /* pure_ctx_set_clock, or NULL */
    void *clock_user;
    uint64_t flight_links; /* links with a share of flight, or waiting for one */
    pure_link *flight_head, *flight_tail;
    /* links closed during this call, freed at its end */
    pure_link *dead;
    int depth;               /* nesting of public calls (callbacks may re-enter) */
    uint8_t rx_ecn;          /* the ECN bits of the datagram being read (pure_ctx_read_at) */
    uint64_t newest_arrival; /* the latest arrival of a datagram read (pure_ctx_read_at) */
    uint64_t read_horizon;   /* pure_ctx_read_backlog: the socket holds datagrams that arrived
                                after this (UINT64_MAX: drained, or never said) */
    uint64_t arrived;        /* when the datagram being read reached the host (pure_ctx_read_at;
                                UINT64_MAX outside a read): see pure_rx_time */
    int freeing;             /* pure_ctx_free runs: no new links (on_closed may try) */
    int walking;             /* pure_ctx_links runs: the link table must not change shape */
    int drain;               /* pure_ctx_drain ran: INITs are refused with RESP status "moved" */

    /* the burst pure_ctx_write returned last, in case the I/O layer cannot send it */
    uint32_t last_burst_link;
    uint64_t last_burst_pn;

    pure_ctl ctl[PURE_CTL_QUEUE];
    uint32_t ctl_head, ctl_len;

    char (*services)[PURE_SERVICE_MAX + 1];
    uint32_t n_services, cap_services;
    uint8_t (*allow)[PURE_KEY_LEN];
    uint32_t n_allow, cap_allow;

    pure_cookie_jar cookies;
    pure_ctx_stats st;
    pure_guard_stats guard; /* rx_memory* kept by rxmem.c */

    /* receive memory (rxmem.c) */
    pure_link *rx_owner;       /* the one link max_receive_memory does not hold back (or NULL) */
    pure_link *rx_chan_owner;  /* link_chan.c: the link of the one channel 1..max that may finish
                                  its message past max_receive_memory (or NULL) */
    uint32_t rx_chan_owner_ch; /* ... and that channel */
    uint64_t rx_owner_moved;   /* when it last consumed stream bytes */
    uint64_t rx_orphaned;      /* bytes displaced owners hold for messages not yet delivered */
    pure_link *rx_held_head, *rx_held_tail; /* links held back, oldest first */
    uint32_t rx_held_n;
    uint8_t rx_wake; /* memory was freed (or ownership passed) with links held back */
    uint64_t now;
    uint64_t pn_rng;     /* recovery.c: draws which packet numbers links skip (not a secret) */
    uint64_t ptb_window; /* pure_ctx_packet_too_big: the second being counted, and the hints */
    uint32_t ptb_count;  /* taken in it */
};

/* When the datagram being read reached the host: RTT samples and the ACK delays we report are
 * measured from it, so that time a datagram spent in this host's socket queue (a loop busy with a
 * thousand links) counts as this side's delay, not the path's. `now` outside a read. */
static inline uint64_t pure_rx_time(const pure_ctx *ctx, uint64_t now)
{
    return ctx->arrived < now ? ctx->arrived : now;
}

#endif
