/* SPDX-License-Identifier: MIT */
/* link.h: the internal state of a link and of the context that owns it, shared by the core's
 * modules (ctx.c the context, with its link tables in table.c and timer heap in timerheap.c,
 * handshake.c, link.c lifecycle, link_send.c packet building, link_recv.c packet processing,
 * recovery.c loss recovery over rtb.c's retransmission buffer, keys.c transport keys, rxmem.c
 * the receive memory budget). */
#ifndef PURE_LINK_H
#define PURE_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "pure.h"

#include "admit.h"
#include "alloc.h"
#include "cc.h"
#include "cookie.h"
#include "frame.h"
#include "crypto.h"
#include "msgparse.h"
#include "noise.h"
#include "pacer.h"
#include "ranges.h"
#include "replay.h"
#include "rtb.h"
#include "rxmem.h"
#include "rtt.h"
#include "sendbuf.h"
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
typedef struct pure_link_counters {
    uint64_t packets_sent, packets_received, bytes_sent, bytes_received;
    uint64_t packets_lost, bytes_retransmitted, ptos, random_losses;
    uint64_t messages_received;
    uint64_t rekeys, keepalives, path_changes;
    uint64_t dropped_auth, dropped_replay;
    uint64_t paced_bursts;
} pure_link_counters;

/* What a link needs only while it carries traffic: allocated on demand (pure_link_busy) and
 * released a moment after the link falls idle, so an idle link keeps keys, counters and offsets
 * only. The congestion controller restarts from its initial window after idleness, as RFC 9002
 * section 7.8 recommends. */
typedef struct pure_busy {
    pure_cc cc;
    pure_pacer pacer;
    pure_replay replay;
    pure_ranges acked;     /* acknowledged stream bytes above sb.base */
    pure_ranges lost;      /* stream bytes to send again */
    uint8_t *ring;         /* out-of-order stream bytes, offsets [recv_next, recv_next + ring_cap) */
    uint64_t ring_cap;
    pure_ranges oo;        /* out-of-order byte ranges held in ring */
    pure_msgparse parse;
    char close_reason[48];
    uint64_t rx_retire_at; /* when the previous receive key is wiped (link->rx_retire) */
    /* rxmem.c: the context's list of links held back by max_receive_memory, oldest first */
    pure_link *held_prev, *held_next;
    uint8_t held;
    uint32_t orphaned;     /* a former owner: what it held then, counted in ctx->rx_orphaned */
} pure_busy;

/* What only the initiator's handshake needs: freed once the link is open. */
typedef struct pure_hs {
    pure_noise noise;
    uint8_t init[512]; /* the INIT datagram as sent, resent on timeout */
    uint16_t init_len;
    uint8_t retries;
    uint8_t rejected;  /* a REJECT hint arrived: report PURE_EKEY if nothing better comes */
    uint8_t send_pending;
    uint64_t started;
    uint64_t retry_at;
    char service[PURE_SERVICE_MAX + 1];
    uint8_t in_flight;            /* counted in ctx->hs_in_flight */
    uint8_t queued;               /* waiting in the context's handshake queue */
    struct pure_link *queue_prev, *queue_next;
} pure_hs;

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

/* Transport keys of one direction and phase. The AEAD context (about 1 KB inside OpenSSL) is
 * scheduled from `key` on first use and released while the link is idle. */
typedef struct pure_dir_keys {
    pure_aead aead;
    uint8_t key[16];
    uint8_t iv[PURE_NONCE_LEN];
    uint8_t ready; /* key and iv hold keys */
    uint8_t live;  /* aead is scheduled */
} pure_dir_keys;

struct pure_link {
    pure_ctx *ctx;
    void *user;
    uint32_t local_index, remote_index;
    uint32_t heap_pos;     /* position in the context's timer heap, PURE_TIMERHEAP_NONE if none */
    uint8_t state;
    uint8_t initiator;
    uint8_t key_phase;     /* phase of tx keys (the DATA packet type's low bit) */
    uint8_t in_pending;    /* on the context's send list */
    uint16_t service;      /* responder: index of the service in ctx->services */

    /* flags */
    uint8_t finish_requested, fin_sent_pending, peer_finished, peer_fin_known;
    uint8_t want_writable, ack_now, credit_pending, close_pending;
    uint8_t probe_pending, ping_pending, closed_notified, app_limited;
    /* small fields together, so the struct has no padding holes (an idle link is ~950 B) */
    uint8_t resp_pending;  /* RESP to be (re)sent */
    uint8_t in_hs_table;   /* findable by init_tag (an unvalidated responder link) */
    uint8_t path_unvalidated;
    uint8_t msg_len_known;
    uint8_t peer_closed;
    uint8_t accepted;      /* responder: the application accepted the link (on_accept) */
    uint8_t preamble_seen; /* the peer's stream preamble was checked (kept while b is released) */
    uint8_t close_requested; /* pure_link_close: CLOSE goes once everything accepted is acked */
    uint8_t recv_paused;   /* pure_link_pause_recv: no new receive credit is granted */
    uint8_t half_open;     /* responder: counted in ctx->half_open and its source's bucket */
    uint8_t resp_elsewhere; /* responder: RESP copies sent to an address the INIT moved to */
    uint8_t rx_retire;     /* enum pure_rx_retire: the previous receive key after a switch */
    uint32_t ck_gen;           /* rekeys mixed into ck so far */
    uint32_t msg_len;      /* length of the message at msg_boundary, once read */
    uint32_t pto_count;
    uint32_t loss_rate;    /* EWMA of lost packets, 1/65536ths */
    uint32_t rx_unacked;   /* ack-eliciting packets since our last ACK */
    uint16_t mss;          /* largest datagram this link sends (shrinks if the path says so) */
    uint16_t resp_len;     /* of resp, below */

    pure_addr peer;
    uint8_t peer_key[PURE_KEY_LEN];
    uint32_t rx_failed[2]; /* packets that failed to open under each receive key (by phase) since
                              it was installed: the integrity limit (max_failed_opens, clamped to
                              32 bits) */
    pure_hs *hs;
    uint8_t *resp;         /* responder: the RESP datagram, kept until the link is validated */
    uint64_t init_tag;     /* the INIT's sender index and ephemeral key, to spot its resends */

    /* keys */
    pure_dir_keys tx;
    pure_dir_keys rx[2];   /* by the phase bit of incoming packets */
    struct pure_rekey *rk; /* only while a rekey is under way */
    uint8_t ck[PURE_HASH_LEN]; /* chaining key, for rekeying */

    /* amplification limit on a new, not yet validated peer address */
    uint64_t amp_received, amp_sent;
    uint64_t path_probe_pn;  /* the first packet sent to the new address */

    /* ---- send side ---- */
    pure_sendbuf sb;
    uint64_t send_next;    /* next new stream offset to send */
    uint64_t peer_credit;  /* peer allows stream offsets below this */
    uint64_t fin_offset;   /* stream length once finish was requested */
    uint64_t msg_boundary; /* offset of the next message whose acknowledgement is not counted */
    uint64_t msgs_acked, next_msg_id;

    /* recovery */
    pure_rtb rtb;          /* packets sent and in flight, packet numbers, loss detection */
    pure_rtt rtt;
    uint64_t latest_adjusted; /* the latest RTT sample less the peer's reported ACK delay */

    /* ---- receive side ---- */
    pure_ranges rx_pns;    /* packet numbers received (bounded) */
    uint64_t rx_largest_time;
    uint64_t ack_deadline; /* UINT64_MAX if no ACK is owed */
    uint64_t recv_next;    /* in-order stream bytes consumed */
    uint64_t credit_sent;  /* the CREDIT limit we granted */
    uint64_t recv_window;
    uint64_t credit_time;  /* when the last credit update was sent (window auto-tuning) */
    uint64_t peer_fin;     /* peer's stream length once known */

    /* liveness */
    uint64_t created;
    uint64_t last_recv;    /* last authenticated packet */
    uint64_t last_sent;
    uint64_t wait_start;   /* when ack-eliciting packets last started to fly from none */
    uint64_t pace_at;      /* the pacer releases the next packet at this time (UINT64_MAX: none) */
    uint64_t release_at;   /* idle since a moment: give buffers back then (UINT64_MAX: no) */
    uint64_t close_resend_at; /* CLOSING: when the CLOSE goes again (UINT64_MAX: no more) */
    uint64_t close_deadline; /* CLOSING: when to stop; OPEN with close_requested: give up then */
    uint64_t last_msg_sent;  /* when the application last accepted a message (liveness watch) */
    uint64_t deadline;     /* the earliest of all timers, as stored in the heap */

    /* close */
    uint64_t close_code;
    int close_error;

    /* rekey */
    uint64_t keys_time, keys_packets;

    pure_link_counters st;
    pure_busy *b;          /* state a link needs only while it carries traffic (NULL when idle) */
    uint64_t replay_top;   /* the replay window's top while b is released: all below were seen */
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
    uint32_t half_open;       /* responder links not yet validated */
    pure_admit admit;         /* handshake admission (admit.h) */
    uint64_t last_init_ts;    /* the timestamp of the last INIT this context made */
    uint32_t hs_in_flight;    /* initiator handshakes under way (PURE_HS_IN_FLIGHT at most) */
    pure_link *hs_queue_head, *hs_queue_tail; /* initiator handshakes waiting their turn */

    /* timers: a min-heap of links by deadline (each link's deadline and heap_pos) */
    pure_timerheap timers;

    /* links with something to send */
    pure_link *pending_head, *pending_tail;
    /* links closed during this call, freed at its end */
    pure_link *dead;
    int depth; /* nesting of public calls (callbacks may re-enter) */
    int freeing; /* pure_ctx_free runs: no new links (on_closed may try) */
    int walking; /* pure_ctx_links runs: the link table must not change shape */

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
    pure_link *rx_owner;      /* the one link max_receive_memory does not hold back (or NULL) */
    uint64_t rx_owner_moved;  /* when it last consumed stream bytes */
    uint64_t rx_orphaned;     /* bytes displaced owners hold for messages not yet delivered */
    pure_link *rx_held_head, *rx_held_tail; /* links held back, oldest first */
    uint32_t rx_held_n;
    uint8_t rx_wake;          /* memory was freed (or ownership passed) with links held back */
    uint64_t now;
};

/* registry.c */
/* Sets up the link tables and the timer heap of a new context; pure_registry_free gives back
 * what they and the link slabs hold (the links must be released first). */
void pure_registry_init(pure_ctx *ctx);
void pure_registry_free(pure_ctx *ctx);
/* Makes room for element n of a growing array (capacity doubles from 8). 0 or PURE_ENOMEM. */
int pure_ctx_grow_array(pure_ctx *ctx, void **arr, uint32_t *cap, uint32_t n, size_t elem);
/* The next link on the send list (taken off it), or NULL. */
pure_link *pure_ctx_pending_pop(pure_ctx *ctx);
/* The oldest queued control reply (taken off the queue; valid until the next push), or NULL. */
const pure_ctl *pure_ctx_ctl_pop(pure_ctx *ctx);
int pure_ctx_random(pure_ctx *ctx, uint8_t *buf, size_t len);
int pure_ctx_table_add(pure_ctx *ctx, pure_link *link);    /* assigns link->local_index */
void pure_ctx_table_remove(pure_ctx *ctx, pure_link *link);
pure_link *pure_ctx_table_find(pure_ctx *ctx, uint32_t index);
#define PURE_LINK_SLAB 64
pure_link *pure_ctx_link_new(pure_ctx *ctx);   /* zeroed, or NULL */
void pure_ctx_link_free(pure_ctx *ctx, pure_link *link);
int pure_ctx_hs_add(pure_ctx *ctx, pure_link *link);
/* The unvalidated link an INIT with this tag and sender index made, if any (from any address). */
pure_link *pure_ctx_hs_find(pure_ctx *ctx, uint64_t tag, uint32_t sender);
void pure_ctx_hs_remove(pure_ctx *ctx, pure_link *link);
void pure_ctx_timer_set(pure_ctx *ctx, pure_link *link, uint64_t deadline);
void pure_ctx_mark_pending(pure_ctx *ctx, pure_link *link);
pure_ctl *pure_ctx_ctl_push(pure_ctx *ctx, const pure_addr *to);
int pure_ctx_service_index(const pure_ctx *ctx, const char *name, size_t len); /* -1 if none */
int pure_ctx_allowed(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN]);
/* The key's index in the allow list; -1 if it is not there but allow_any is set; -2 if refused. */
int64_t pure_ctx_allow_index(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN]);
/* The wall clock (settings.realtime, or CLOCK_REALTIME), ns since 1970. */
uint64_t pure_ctx_realtime(const pure_ctx *ctx);
int pure_addr_equal(const pure_addr *a, const pure_addr *b);

/* handshake.c */
int pure_hs_start(pure_link *link, const uint8_t peer_key[PURE_KEY_LEN], const char *service,
                  uint64_t now);
void pure_hs_on_init(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                     uint64_t now);
int pure_hs_on_resp(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                    uint64_t now);
int pure_hs_on_cookie(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now);
int pure_hs_on_reject(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now);
void pure_hs_timeout(pure_link *link, uint64_t now);
/* A responder's link received its first authenticated packet: the initiator holds the keys, so
 * the handshake is complete and its address proven. Opens the link and offers it to the
 * application (on_accept). Returns 0 if it stays open, PURE_EREFUSED if the application refused
 * it (a CLOSE goes), PURE_ECLOSED if it closed it from on_accept. */
int pure_hs_confirmed(pure_link *link, uint64_t now);
void pure_hs_free(pure_link *link);

/* keys.c */
int pure_keys_install(pure_link *link, const uint8_t k_send[32], const uint8_t k_recv[32]);
int pure_keys_derive(pure_ctx *ctx, pure_dir_keys *k, const uint8_t split[32]);
/* Derives the receive key of `phase`: its failed-open count starts from zero, and a previous key
 * it replaces needs no retiring any more. */
int pure_keys_derive_rx(pure_link *link, uint8_t phase, const uint8_t split[32]);
/* Opens the DATA packet d (n bytes, packet number pn) in place under the receive key its phase
 * bit names. Returns 0, or PURE_ECRYPTO: the link holds no such key (never installed, or
 * retired), or the packet does not authenticate; it is counted then (dropped_auth; a failed
 * open also in the key's rx_failed and guard.failed_opens) and its payload zeroed. */
int pure_keys_open(pure_link *link, uint8_t *d, size_t n, uint64_t pn);
/* Have packets failed to open under the receive key of `phase` max_failed_opens times? Then the
 * key's integrity is in doubt and the caller closes the link (PURE_ECRYPTO). */
int pure_keys_forged_too_often(const pure_link *link, uint8_t phase);
/* A switch made rx[key_phase ^ 1] the previous receive key: keep it for late packets. */
void pure_keys_retire_wait(pure_link *link);
/* The peer sent under the new receive key: wipe the previous one three probe timeouts from now. */
void pure_keys_retire_later(pure_link *link, uint64_t now);
/* Wipes the previous receive key now (its deadline passed, or the link fell idle). */
void pure_keys_retire(pure_link *link);
/* The direction's AEAD, scheduled on demand; NULL if it has no keys or scheduling failed. */
pure_aead *pure_keys_aead(pure_ctx *ctx, pure_dir_keys *k);
/* Releases the scheduled AEAD contexts of an idle link (keys are kept). */
void pure_keys_park(pure_link *link);
void pure_keys_wipe_dir(pure_ctx *ctx, pure_dir_keys *k);

/* rekey.c */
int pure_rekey_due(const pure_link *link, uint64_t now);
int pure_rekey_start(pure_link *link, uint64_t now);
void pure_rekey_on_frame(pure_link *link, const uint8_t *frame, uint64_t now);
void pure_rekey_on_phase(pure_link *link, uint8_t phase, uint64_t now);
void pure_rekey_on_lost(pure_link *link);
/* Writes a pending REKEY frame into the packet if it fits; returns 1 if it did, else 0. */
int pure_rekey_put_frame(pure_link *link, pure_pkt *k);
void pure_rekey_free(pure_link *link);
int pure_rekey_send_pending(const pure_link *link);
void pure_keys_wipe(pure_link *link);
void pure_keys_nonce(uint8_t nonce[PURE_NONCE_LEN], const uint8_t iv[PURE_NONCE_LEN], uint64_t pn);

/* link.c */
/* Ends a public call (ctx->depth, taken by every entry point that can end a link): the
 * outermost frees the links it ended. */
void pure_link_end_call(pure_ctx *ctx);
/* lifecycle.c */
/* Frees what every link holds (send buffer, busy state, sent packets) and the struct itself;
 * the link is off every list and table already. */
void pure_link_free_parts(pure_link *link);
/* Keeps the reason a CLOSE frame will carry (cut to fit; may already be the kept one). */
void pure_link_keep_reason(pure_link *link, const char *reason, uint64_t now);
/* A graceful close ends once everything accepted has been acknowledged: sends the CLOSE. */
void pure_link_close_if_done(pure_link *link, uint64_t now);
pure_link *pure_link_alloc(pure_ctx *ctx, const pure_addr *peer, int initiator, uint64_t now);
void pure_link_set_state(pure_link *link, enum pure_link_state st);
void pure_link_on_timer(pure_link *link, uint64_t now);
/* Ends the link at once: error 0 for a graceful end. Sends CLOSE first when send_close. */
void pure_link_terminate(pure_link *link, int error, uint64_t code, const char *reason,
                         int send_close, uint64_t now);
void pure_link_release(pure_link *link); /* free memory (from the dead list) */
/* Reports the link closed to the application (on_closed), once: no callback of the link runs
 * after it. A responder's link the application never accepted closes silently. */
void pure_link_notify_closed(pure_link *link, int error, const char *reason);
/* Stream bytes were acknowledged: finishes a graceful close whose data is all acknowledged. */
void pure_link_on_acked(pure_link *link, uint64_t now);
void pure_link_open(pure_link *link, uint64_t now); /* keys ready: start data phase */
/* Gives an idle link's buffers back. Returns 1 if the link still has data queued or in flight
 * (nothing was released: look again later), else 0. */
int pure_link_release_buffers(pure_link *link);
/* Makes sure link->b exists. Returns 0 or PURE_ENOMEM. */
int pure_link_busy(pure_link *link, uint64_t now);
/* If the application waits for on_writable and the queues are half empty, tell it. */
void pure_link_check_writable(pure_link *link);
/* pure_link_resume_recv: grants the credit a paused link held back, if it is due. */
void pure_link_recv_resumed(pure_link *link, uint64_t now);

/* link_recv.c */
int pure_link_recv(pure_link *link, const pure_addr *from, uint8_t *d, size_t n, uint64_t now);
/* The link was held back by max_receive_memory and memory came free: consume what its ring
 * holds, grant the credit held back, and queue what it owes the peer. */
void pure_link_recv_unheld(pure_link *link, uint64_t now);

/* link_send.c */
/* Writes the link's next burst into buf (cap bytes). With pad, writes at most one packet, padded
 * to exactly cap bytes, and only for an open link (to join another link's burst). */
int64_t pure_link_write(pure_link *link, uint8_t *buf, size_t cap, size_t *segment, uint64_t now,
                        int pad);
/* Bursts of segments at most this large take other links' packets, padded to the same size. */
#define PURE_COALESCE_MAX 512
int pure_link_wants_send(const pure_link *link, uint64_t now);

/* recovery.c */
/* Records the packet just sealed as the link's next packet number (congestion control counts a
 * live one). Returns 0, or PURE_ENOMEM: it is not recorded and must not be sent. */
int pure_recovery_on_sent(pure_link *link, const pure_sent *s);
/* What pure_recovery_on_ack did, for the caller to act on (in this order: see link_recv.c). */
enum {
    PURE_RECOVERY_ACKED = 0x01,        /* packets were newly acknowledged: more may be sent, the
                                          backlog may be writable, the link may fall idle */
    PURE_RECOVERY_STREAM_ACKED = 0x02, /* stream bytes were acknowledged (pure_link_on_acked) */
    PURE_RECOVERY_MSGS_ACKED = 0x04,   /* whole messages were acknowledged (on_acked callback) */
};
/* Processes an ACK frame: acknowledged packets leave flight (RTT sample, congestion control,
 * acknowledged stream bytes released), then losses are detected. Returns PURE_RECOVERY_* flags
 * (0 when the frame acknowledged nothing new, or a packet never sent and was ignored). */
int pure_recovery_on_ack(pure_link *link, const pure_ack_frame *ack, uint64_t now);
/* The recovery deadline passed: losses by time, or a probe timeout (probe_pending set, the
 * oldest data queued again). Marks the link pending when it has something to send. */
void pure_recovery_on_timeout(pure_link *link, uint64_t now);
/* The peer says it has room again (a CREDIT frame) while this side backs off its probe timeouts:
 * resend the oldest outstanding data now instead of after the backed-off timeout. */
void pure_recovery_probe_now(pure_link *link);
/* When pure_recovery_on_timeout is due: the loss time, else the probe timeout (backed off)
 * after the latest ack-eliciting packet; UINT64_MAX with nothing in flight. */
/* Packets from first_pn on never left (the I/O layer refused them): send their contents again
 * now, without a congestion signal. */
void pure_recovery_discard_from(pure_link *link, uint64_t first_pn);
/* Releases the retransmission buffer's ring: whatever was in flight is forgotten. */

#endif
