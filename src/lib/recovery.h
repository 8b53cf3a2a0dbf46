/* SPDX-License-Identifier: MIT */
/* recovery.h: loss recovery's policy (recovery.c) over the retransmission buffer (rtb.h): the
 * RTT sample, congestion control, what an acknowledged or lost packet means for the stream, the
 * probe timeout. It returns what happened; the caller decides what follows. */
#ifndef PURE_RECOVERY_H
#define PURE_RECOVERY_H

#include "state.h"
#include "tparams.h"

/* Records the packet just sealed as the link's next packet number (congestion control counts a
 * live one). Returns 0, or PURE_ENOMEM: it is not recorded and must not be sent. */
int pure_recovery_on_sent(pure_link *link, const pure_sent *s);
/* What pure_recovery_on_ack did, for the caller to act on (in this order: see link_recv.c). */
enum {
    PURE_RECOVERY_ACKED = 0x01,        /* packets were newly acknowledged: more may be sent, the
                                          backlog may be writable, the link may fall idle */
    PURE_RECOVERY_STREAM_ACKED = 0x02, /* stream bytes were acknowledged (pure_link_on_acked) */
    PURE_RECOVERY_MSGS_ACKED = 0x04,   /* whole messages were acknowledged (on_acked callback) */
    PURE_RECOVERY_FORGED = 0x08,       /* the ACK covers a packet number this side skipped: the
                                          peer acknowledges what it never received (optimistic
                                          ACKs, RFC 9000 21.4); nothing else was done: close */
    PURE_RECOVERY_CHAN_MSGS_ACKED =
        0x10, /* whole messages of a channel 1..max were (link_chan.h) */
};
/* Packet numbers skipped now and then: one every PURE_PN_SKIP_MIN to PURE_PN_SKIP_MIN +
 * PURE_PN_SKIP_SPREAD - 1 packets. */
#define PURE_PN_SKIP_MIN 128u
#define PURE_PN_SKIP_SPREAD 1024u
/* Before a packet is sealed: perhaps skip a packet number first (it is recorded as sent and not
 * live, so an honest peer's ACKs leave a hole there and loss detection ignores it). */
void pure_recovery_before_seal(pure_link *link);
/* Processes an ACK frame: acknowledged packets leave flight (RTT sample, congestion control,
 * acknowledged stream bytes released), then losses are detected. Returns PURE_RECOVERY_* flags
 * (0 when the frame acknowledged nothing new, or a packet never sent and was ignored). */
int pure_recovery_on_ack(pure_link *link, const pure_ack_frame *ack, uint64_t now);
/* ECN. The peer reports `ce` (an ECN frame, beside its ACK): the running count of our packets
 * that reached it marked CE. An increase over its last report is a congestion signal: one
 * reduction per recovery period, as for a loss taken as congestion, and no loss. The first
 * report of a busy period only sets the baseline. */
void pure_recovery_on_ecn(pure_link *link, uint64_t ce, uint64_t now);
/* An authenticated packet arrived marked CE: counted for the next ECN frame. */
void pure_recovery_on_ce_received(pure_link *link);
/* Whether the peer reads ECN frames: it said so in the handshake's transport parameters
 * (PURE_TP_F_ECN; a peer built before them, or before ECN, did not). The one place to ask. */
static inline int pure_link_peer_ecn(const pure_link *link)
{
    return pure_tp_peer_ecn(link);
}

/* The closing peer says it delivered this link's stream up to `offset` (a DELIVERED frame): those
 * bytes count as acknowledged, so on_closed's report lists exactly the messages that did not
 * arrive, whatever ACKs were lost or packets declared lost that arrived after all; bytes past it
 * that ACKs covered (held out of order, never delivered) no longer count. Call it only as the
 * link ends. An offset past what was sent is a lie and changes nothing. Returns the PURE_RECOVERY_*
 * flags of what moved. */
int pure_recovery_on_delivered(pure_link *link, uint64_t offset);
/* The recovery deadline passed (timers.c): losses by time, or a probe timeout (probe_pending
 * set, the oldest data queued again). Marks the link pending when it has something to send. */
void pure_recovery_on_timeout(pure_link *link, uint64_t now);
/* The peer says it has room again (a CREDIT frame) while this side backs off its probe timeouts:
 * resend the oldest outstanding data now instead of after the backed-off timeout. */
void pure_recovery_probe_now(pure_link *link);
/* Packets from first_pn on never left (the I/O layer refused them): send their contents again
 * now, without a congestion signal; a path MTU probe among them counts as lost (its size is
 * refused). Returns how many packets other than probes were discarded. */
int pure_recovery_discard_from(pure_link *link, uint64_t first_pn, uint64_t now);
/* The link's datagram size (mss) follows its path MTU search (pmtud.c, in the busy state): call
 * after anything that may change the search's size. */
void pure_recovery_mss_sync(pure_link *link);

#endif
