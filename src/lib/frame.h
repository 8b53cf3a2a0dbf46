/* SPDX-License-Identifier: MIT */
/* frame.h: encoding and parsing of the frames inside a sealed packet (DATA, ACK, CREDIT, PING,
 * CLOSE, DELIVERED, ECN, REKEY, PATH_CHALLENGE, PATH_RESPONSE, PADDING). Parsing never reads past
 * the end and rejects every malformed frame. */
#ifndef PURE_FRAME_H
#define PURE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "ranges.h"
#include "wire.h"

/* A parsed ACK frame: up to PURE_ACK_MAX_RANGES ranges, largest first, each inclusive [lo, hi]. */
typedef struct pure_ack_frame {
    uint64_t largest;
    uint64_t delay_us;
    uint32_t n;
    struct {
        uint64_t lo, hi;
    } r[PURE_ACK_MAX_RANGES];
} pure_ack_frame;

typedef struct pure_frame {
    uint8_t type; /* enum pure_frame_type; DATA with or without FIN is PURE_FRAME_DATA */
    union {
        struct {
            uint64_t offset;
            uint64_t len;
            const uint8_t *bytes;
            uint8_t fin;
        } data;
        uint64_t credit;
        uint64_t delivered; /* stream offset */
        uint64_t ce;        /* ECN: CE-marked packets received, modulo 2^16 */
        struct {
            uint64_t channel, offset, len; /* CHAN_DATA; CHAN_CREDIT and CHAN_DELIVERED: offset;
                                              DELIVERED_COUNT: the count in offset */
            const uint8_t *bytes;
        } chan;
        struct {
            uint64_t channel, id, offset, len; /* CHAN_CANCEL; CHAN_CANCELLED: channel, id */
            uint8_t delivered;                 /* CHAN_CANCELLED: 1 the message was delivered */
        } cancel;
        const uint8_t *path; /* PATH_CHALLENGE / PATH_RESPONSE: PURE_PATH_DATA_LEN bytes */
        struct {
            uint64_t code;
            const uint8_t *reason;
            size_t reason_len;
        } close;
        const uint8_t *rekey; /* 37 bytes: 0 request / 1 reply, generation (u32 big-endian),
                                 an X25519 public key */
    } u;
} pure_frame;

/* Parses the next frame at *p (before end) into f, skipping runs of PADDING (which then come back
 * as one PURE_FRAME_PADDING). The ACK frame is decoded into *ack (f only says its type).
 * Returns 0 and advances *p, or PURE_EPROTO for anything malformed: unknown type, truncation,
 * a DATA or CHAN_DATA offset + length past 2^62, a channel 0 or above PURE_CHANNEL_MAX, a
 * DATAGRAM longer than the packet (it comes back in u.chan: len and bytes, channel 0), an ACK
 * range underflowing 0 or with more ranges than fit, a CHAN_CANCEL shorter than a length prefix
 * (4 bytes) or longer than the largest message (2^32 + 3) or ending past 2^62, a CHAN_CANCELLED
 * outcome other than 0 or 1, a DELIVERED_COUNT channel above PURE_CHANNEL_MAX. */
int pure_frame_parse(const uint8_t **p, const uint8_t *end, pure_frame *f, pure_ack_frame *ack);

/* A packet being built: the plaintext from p up to end (the tag's bytes lie beyond end). The core
 * writes every frame through the pure_pkt_* writers below, each of which checks the room left and
 * writes nothing when its frame does not fit, so no frame can run past the packet and no length
 * computed from the room can wrap (p never passes end). */
typedef struct pure_pkt {
    uint8_t *p;
    uint8_t *end;
} pure_pkt;

/* Bytes left in the packet (0 when full). */
static inline size_t pure_pkt_room(const pure_pkt *k)
{
    return k->p < k->end ? (size_t)(k->end - k->p) : 0;
}

/* Each returns 0, or -1 if the frame does not fit (nothing written). */
int pure_pkt_ping(pure_pkt *k);
int pure_pkt_credit(pure_pkt *k, uint64_t max_offset);
int pure_pkt_close(pure_pkt *k, uint64_t code, const char *reason, size_t reason_len);
int pure_pkt_delivered(pure_pkt *k, uint64_t offset);
/* DELIVERED_COUNT: how many of the peer's messages on `channel` (0: the link's stream) this
 * side's application had. */
int pure_pkt_delivered_count(pure_pkt *k, uint64_t channel, uint64_t count);
/* ECN: the running count of CE-marked packets received (modulo 2^16). */
int pure_pkt_ecn(pure_pkt *k, uint16_t ce);
/* type PURE_FRAME_PATH_CHALLENGE or PURE_FRAME_PATH_RESPONSE, with its PURE_PATH_DATA_LEN bytes */
int pure_pkt_path(pure_pkt *k, uint8_t type, const uint8_t data[PURE_PATH_DATA_LEN]);
int pure_pkt_ack(pure_pkt *k, const pure_range *ranges, uint32_t n, uint64_t delay_us);
/* Copies n raw bytes (a REKEY frame's body, say). */
int pure_pkt_bytes(pure_pkt *k, const void *src, size_t n);
/* How many of `len` stream bytes at `offset` fit in one DATA frame here (0 when not even the
 * header and one byte fit; a zero-length frame fits when its header does: see *fits). */
uint64_t pure_pkt_data_fit(const pure_pkt *k, uint64_t offset, uint64_t len, int *fits);
/* Writes a DATA frame's header for len bytes and reserves them; returns where the caller copies
 * the bytes, or NULL (nothing written) if header and bytes do not fit. */
uint8_t *pure_pkt_data(pure_pkt *k, uint64_t offset, uint64_t len, int fin);
/* Channel frames: CHAN_CREDIT and CHAN_DELIVERED (type), and CHAN_DATA's header as
 * pure_pkt_data's (the caller copies len bytes to the pointer returned). */
int pure_pkt_chan_offset(pure_pkt *k, uint8_t type, uint64_t channel, uint64_t offset);
uint64_t pure_pkt_chan_data_fit(const pure_pkt *k, uint64_t channel, uint64_t offset, uint64_t len);
uint8_t *pure_pkt_chan_data(pure_pkt *k, uint64_t channel, uint64_t offset, uint64_t len);
/* CHAN_CANCEL (channel, message id, its stream range) and CHAN_CANCELLED (channel, id, outcome:
 * delivered 1 if the message had been delivered before the cancel came). */
int pure_pkt_chan_cancel(pure_pkt *k, uint64_t channel, uint64_t id, uint64_t offset, uint64_t len);
int pure_pkt_chan_cancelled(pure_pkt *k, uint64_t channel, uint64_t id, int delivered);
/* A DATAGRAM frame of len bytes (len < 16384); -1 if it does not fit (nothing written). */
int pure_pkt_datagram(pure_pkt *k, const uint8_t *data, size_t len);
/* Fills the rest of the packet with PADDING. */
void pure_pkt_pad(pure_pkt *k);

/* Raw encoders, used by the pure_pkt_* writers and by tests: each writes at p (room checked by
 * the caller with the matching _len or a bound) and returns the new end. */
uint8_t *pure_frame_put_data_header(uint8_t *p, uint64_t offset, uint64_t len, int fin);
size_t pure_frame_data_header_len(uint64_t offset, uint64_t len);
uint8_t *pure_frame_put_credit(uint8_t *p, uint64_t max_offset);
uint8_t *pure_frame_put_close(uint8_t *p, uint64_t code, const char *reason, size_t reason_len);
/* Encodes an ACK from received ranges given ascending (start inclusive, end exclusive) as stored
 * in a pure_ranges, newest last; writes at most `room` bytes, dropping the oldest ranges that do
 * not fit. Returns the end, or NULL if not even the newest range fits. */
uint8_t *pure_frame_put_ack(uint8_t *p, size_t room, const pure_range *ranges, uint32_t n,
                            uint64_t delay_us);

#endif
