/* SPDX-License-Identifier: MIT */
/* wire.h: every on-the-wire constant, packet layout and limit of Pure's protocol, in one place
 * (docs/protocol.md explains them). */
#ifndef PURE_WIRE_H
#define PURE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "varint.h"

/* Packet types: the first byte of every datagram. */
enum pure_pkt_type {
    PURE_PKT_INIT = 0x01,   /* Noise IK message 1: type | sender u32 | msg1 | mac1[16] | mac2[16] */
    PURE_PKT_RESP = 0x02,   /* Noise IK message 2: type | sender u32 | receiver u32 | msg2 */
    PURE_PKT_COOKIE = 0x03, /* cookie reply under load: type | receiver u32 | nonce[12] |
                               sealed cookie[16] | tag[16] (sealed to the INIT's mac1) */
    PURE_PKT_REJECT = 0x04, /* hint: INIT did not authenticate: type | receiver u32 | mac1[16] */
    PURE_PKT_VERSION = 0x05, /* hint: INIT of a version not spoken: type | receiver u32 |
                                echo[16] | versions u32 BE * k */
    PURE_PKT_INIT_V = 0x06,  /* INIT of a version other than 1: type | version u32 BE | sender
                                u32 | ... (never sent by version 1 but to test) */
    PURE_PKT_DATA0 = 0x08,   /* transport packet, key phase 0: type | receiver u32 | pn u56 */
    PURE_PKT_DATA1 = 0x09,   /* transport packet, key phase 1 */
};

/* The header codec: every datagram starts with its type and a u32 link index (little-endian):
 * the sender's index for INIT and RESP, the receiver's for COOKIE, REJECT and DATA. A RESP's
 * second index (the initiator's, whom it answers) follows; a DATA packet's number follows as
 * 56 bits, big-endian. Nothing else reads or writes these bytes. */
#define PURE_WIRE_INDEX_AT 1
#define PURE_WIRE_SECOND_AT 5 /* RESP's receiver index; DATA's packet number */

/* Writes type and index; returns where the header's next field goes. */
static inline uint8_t *pure_wire_put_header(uint8_t *p, uint8_t type, uint32_t index)
{
    p[0] = type;
    pure_put_u32le(p + PURE_WIRE_INDEX_AT, index);
    return p + PURE_WIRE_SECOND_AT;
}

/* The first index of a datagram of at least 5 bytes. */
static inline uint32_t pure_wire_index(const uint8_t *d)
{
    return pure_get_u32le(d + PURE_WIRE_INDEX_AT);
}

/* A RESP's receiver index (the initiator's own). */
static inline uint32_t pure_wire_resp_receiver(const uint8_t *d)
{
    return pure_get_u32le(d + PURE_WIRE_SECOND_AT);
}

/* A whole DATA header: phase is the key phase bit, pn below 2^56. */
static inline void pure_wire_put_data_header(uint8_t *p, uint8_t phase, uint32_t receiver,
                                             uint64_t pn)
{
    uint8_t *q = pure_wire_put_header(p, (uint8_t)(PURE_PKT_DATA0 | (phase & 1)), receiver);
    for (int i = 0; i < 7; i++)
        q[i] = (uint8_t)(pn >> (8 * (6 - i)));
}

/* A DATA packet's number (the packet holds at least PURE_DATA_HEADER bytes). */
static inline uint64_t pure_wire_data_pn(const uint8_t *d)
{
    uint64_t pn = 0;
    for (int i = 0; i < 7; i++)
        pn = pn << 8 | d[PURE_WIRE_SECOND_AT + i];
    return pn;
}

/* A DATA packet's key phase bit. */
static inline uint8_t pure_wire_data_phase(const uint8_t *d)
{
    return d[0] & 1;
}

#define PURE_PROLOGUE "pure/1"
#define PURE_DATA_HEADER 12 /* type (1) + receiver index (4) + packet number (7) */
#define PURE_PN_MAX ((1ull << 56) - 1)
#define PURE_COOKIE_LEN 16
#define PURE_INIT_FIXED (1 + 4) /* before the Noise message */
#define PURE_RESP_FIXED (1 + 4 + 4)
#define PURE_MAC_LEN 16    /* mac1, mac2 */
#define PURE_INIT_TS_LEN 8 /* the INIT payload's timestamp, ns since 1970, big-endian */
#define PURE_COOKIE_PKT (1 + 4 + 12 + PURE_COOKIE_LEN + 16)
#define PURE_REJECT_PKT (1 + 4 + PURE_MAC_LEN)
#define PURE_SERVICE_MAX 63
/* INIT payload: timestamp u64 | service length u8 | service bytes | transport parameters. RESP
 * payload: status u8 | responder's index u32 (the header's sender index, authenticated; 0 with a
 * refusal) | the responder's transport parameters, only if the INIT carried some and the status
 * is 0. PURE_RESP_PAYLOAD is the fixed part. */
#define PURE_RESP_PAYLOAD 5
#define PURE_RESP_MIN (PURE_RESP_FIXED + 32 + 16 + PURE_RESP_PAYLOAD) /* Noise's e and tag */
#define PURE_RESP_MAX (PURE_RESP_MIN + PURE_TPARAMS_ROOM)
#define PURE_RESP_CAP (PURE_RESP_MIN + PURE_TPARAMS_MAX) /* the most we send */
enum pure_resp_status {
    PURE_RESP_OK = 0,
    PURE_RESP_NO_SERVICE = 1,
    PURE_RESP_NOT_ALLOWED = 2,
    PURE_RESP_MOVED = 3, /* the responder is draining (pure_ctx_drain): try the fleet's others */
    PURE_RESP_BAD_PARAMS = 4, /* the INIT's transport parameters were malformed: PURE_EPROTO */
};

/* Transport parameters: the INIT's payload ends with the initiator's, a RESP's with the
 * responder's (only when the INIT had some). Each is `id varint · length varint · value`;
 * unknown ids are skipped (tparams.c is the codec; docs/protocol.md, "Transport parameters"). */
/* Parameter ids (varints; ids not listed here are skipped by a receiver). */
enum pure_tp_id {
    PURE_TP_MAX_CHANNELS = 0x01,      /* varint: channels the peer may use (0 = none) */
    PURE_TP_MAX_DATAGRAM_SIZE = 0x02, /* varint: largest unreliable datagram accepted (0 = none) */
    PURE_TP_FEATURES = 0x03,          /* varint bitset of PURE_TP_F_*; unknown bits ignored */
    PURE_TP_RECV_WINDOW = 0x04,       /* varint: the credit the sender grants at the start, on
                                         channel 0 and on each channel (its recv_window) */
};
/* Feature bits of PURE_TP_FEATURES: what the sender reads or does, with no value of its own. */
/* bit 0: reads ECN counts frames; bit 1: reads CHAN_CANCEL and CHAN_CANCELLED frames; bit 2:
 * answers a CLOSE that reaches an open link with one of its own (a closer then stays until
 * answered); bit 3: reads DELIVERED_COUNT frames */
#define PURE_TP_F_ECN 0x01
#define PURE_TP_F_CANCEL 0x02
#define PURE_TP_F_CLOSE_ANSWER 0x04
#define PURE_TP_F_DELIVERED_COUNT 0x08

/* What one side announces. Absent parameters are 0 (nothing offered). */
typedef struct pure_tparams {
    uint64_t max_channels;
    uint64_t max_datagram_size;
    uint64_t features;
    uint64_t recv_window;
} pure_tparams;

/* The most bytes pure_tparams_encode writes: four entries of id, length and an 8-byte value. */
#define PURE_TPARAMS_MAX (4 * (1 + 1 + 8))
/* The most parameter bytes a peer may put in an INIT or RESP (ours and what later versions add):
 * an INIT longer than this allows is dropped before any work is spent on it. */
#define PURE_TPARAMS_ROOM 96

/* The protocol version: type 0x01 INITs and everything after them are version 1. An INIT of any
 * other version is a versioned INIT: PURE_PKT_INIT_V · version u32 BE · sender index u32 LE · at
 * least 16 unpredictable bytes · what that version defines. A responder that does not speak it
 * answers with VERSION: type · receiver index u32 LE (the INIT's sender index) · echo[16] (the 16
 * bytes after the INIT's sender index) · the versions it speaks, u32 BE each (at least one). These
 * layouts never change (docs/protocol.md, "How the wire may evolve"). */
#define PURE_PROTOCOL_VERSION 1
#define PURE_INIT_V_FIXED (1 + 4 + 4) /* type, version, sender index */
#define PURE_INIT_V_MIN 64            /* a shorter versioned INIT gets no VERSION reply */
#define PURE_VERSION_ECHO_LEN 16
#define PURE_VERSION_FIXED (1 + 4 + PURE_VERSION_ECHO_LEN)
#define PURE_VERSION_MAX_LIST 8 /* versions a VERSION reply may list */

/* Frame types inside the sealed payload. */
enum pure_frame_type {
    PURE_FRAME_PADDING = 0x00, /* one byte; runs of them fill a packet to the burst's size */
    PURE_FRAME_PING = 0x01,    /* ack-eliciting; asks for an immediate ACK */
    PURE_FRAME_ACK = 0x02,     /* largest, delay (µs), count, first range, (gap, len)* */
    PURE_FRAME_CREDIT = 0x03,  /* max stream offset the peer may send up to */
    PURE_FRAME_CLOSE = 0x04,   /* code, reason length, reason */
    PURE_FRAME_REKEY = 0x05,   /* request (0) or reply (1), generation u32, X25519 public key */
    /* DELIVERED follows a CLOSE in its packet: the stream offset up to which the closing side
     * delivered the peer's messages to its application. Peers that stop reading at the CLOSE
     * (0.2) never see it, so it changes nothing for them. */
    PURE_FRAME_DELIVERED = 0x06, /* stream offset */
    /* Path validation (RFC 9000 8.2): 8 random bytes to the peer's new address, echoed back. */
    PURE_FRAME_PATH_CHALLENGE = 0x07, /* data[8] */
    PURE_FRAME_PATH_RESPONSE = 0x0a,  /* data[8], the challenge's */
    PURE_FRAME_DATA = 0x08,           /* 0x08 | FIN(0x01): offset, length, bytes */
    /* Channels 1..max (docs/protocol.md, "Channels"): each its own byte stream of length-framed
     * messages (no preamble), with its own flow credit. Channel 0 is the DATA stream above. Sent
     * only to a peer that takes channels (pure_link_peer_channels). */
    PURE_FRAME_CHAN_CREDIT = 0x0b, /* channel, max stream offset of that channel */
    PURE_FRAME_CHAN_DATA = 0x0c,   /* channel, offset, length, bytes */
    /* After CLOSE and DELIVERED: how far the closing side's application read one channel. */
    PURE_FRAME_CHAN_DELIVERED = 0x0d, /* channel, stream offset */
    /* An unreliable datagram: delivered whole or not at all, never sent again. Sent only to a
     * peer that takes them (pure_link_peer_datagram_max). */
    PURE_FRAME_DATAGRAM = 0x0e, /* length, bytes */
    /* ECN (RFC 3168, RFC 9000 13.4): how many of the peer's packets arrived marked CE in this
     * busy period, a running count modulo 2^16 that rides beside ACKs; the peer answers an
     * increase as it answers congestion. Not ack-eliciting. */
    PURE_FRAME_ECN = 0x10, /* CE count */
    /* Cancels (docs/protocol.md, "Cancel"): the sender abandons message `id` of a channel, the
     * stream bytes [offset, offset + length) (its length prefix and body): the receiver skips
     * them as if they held nothing and answers CHAN_CANCELLED with what became of the message.
     * Both are ack-eliciting and sent again until answered (CHAN_CANCEL) or acknowledged
     * (CHAN_CANCELLED). Sent only to a peer that announces PURE_TP_F_CANCEL. */
    PURE_FRAME_CHAN_CANCEL = 0x11,    /* channel, id, offset, length */
    PURE_FRAME_CHAN_CANCELLED = 0x12, /* channel, id, outcome (0 cancelled, 1 delivered first) */
    /* After CLOSE and DELIVERED: how many of the peer's messages on a channel (0 included) the
     * closing side's application had (delivered, or dropped for a cancel): exact where an offset
     * cannot be (delivered.c). Sent only to a peer that announces PURE_TP_F_DELIVERED_COUNT. */
    PURE_FRAME_DELIVERED_COUNT = 0x13, /* channel, message count */
};
#define PURE_FRAME_DATA_FIN 0x01
/* The ECN codepoints of an IP header's two low TOS / traffic-class bits. */
#define PURE_ECN_ECT0 0x02
#define PURE_ECN_CE 0x03

#define PURE_STREAM_PREAMBLE "pure"
#define PURE_MIN_UDP_PAYLOAD 1200
#define PURE_MAX_UDP_PAYLOAD 65507
#define PURE_ACK_MAX_RANGES 32 /* ranges an ACK frame carries (older ones are dropped) */
#define PURE_AMPLIFICATION 3   /* bytes sent per byte received before a path is validated */
#define PURE_PATH_DATA_LEN 8   /* a PATH_CHALLENGE's unpredictable bytes */
#define PURE_CHANNEL_MAX 255   /* the largest channel number (a sent packet records it in a byte) */
#define PURE_DATAGRAM_FRAME_OVERHEAD 3 /* a DATAGRAM frame's type and length (up to 16383) */

/* Close codes a peer sends in CLOSE (the application's own codes start at 0x100). */
enum pure_close_code {
    PURE_CLOSE_OK = 0,
    PURE_CLOSE_PROTOCOL = 1,
    PURE_CLOSE_FLOW = 2,
    PURE_CLOSE_REFUSED = 3,
    PURE_CLOSE_MSGSIZE = 4,
    PURE_CLOSE_MOVED = 5, /* the server is draining: reconnect through the fleet's address */
};

#endif
