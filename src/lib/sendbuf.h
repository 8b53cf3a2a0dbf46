/* SPDX-License-Identifier: MIT */
/* sendbuf.h: the send buffer, a ring of stream bytes from the lowest unacknowledged offset to the
 * last byte the application wrote. Packets are built from it by stream offset (sealed straight
 * from the ring where the AEAD can, else copied), so a retransmission is the same offsets again. */
#ifndef PURE_SENDBUF_H
#define PURE_SENDBUF_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "varint.h"

typedef struct pure_sendbuf {
    uint8_t *buf;
    uint64_t cap;  /* power of two, 0 before the first write */
    uint64_t base; /* stream offset of the oldest byte held (everything below is acknowledged) */
    uint64_t end;  /* stream offset just past the newest byte */
} pure_sendbuf;

/* Appends the concatenation a||b, growing the ring (doubling) up to `limit` bytes of backlog.
 * Returns 0, PURE_EAGAIN if the backlog would exceed limit, or PURE_ENOMEM. */
int pure_sendbuf_write(pure_sendbuf *s, const pure_alloc *a, const void *x, size_t xlen,
                       const void *y, size_t ylen, uint64_t limit);
/* Copies len bytes starting at stream offset off (base <= off, off + len <= end) to dst. */
void pure_sendbuf_copy(const pure_sendbuf *s, uint64_t off, uint8_t *dst, size_t len);
/* Where len bytes from stream offset off (base <= off, off + len <= end) lie in the ring: one
 * piece, or two where they wrap around its end. Fills p[] and n[]; returns how many (0 for len
 * 0). */
int pure_sendbuf_pieces(const pure_sendbuf *s, uint64_t off, size_t len, const uint8_t *p[2],
                        size_t n[2]);
/* Where a stream that must go again from `off` sends its next new byte: send_next moved back to
 * off (no lower than base), never forward. Used when the set that would record a loss or an
 * acknowledgement cannot grow (no memory): everything sent from there goes again as if new. */
static inline uint64_t pure_sendbuf_resend_from(const pure_sendbuf *s, uint64_t send_next,
                                                uint64_t off)
{
    if (off < s->base)
        off = s->base;
    return off < send_next ? off : send_next;
}
/* Forgets everything below new_base (acknowledged). */
void pure_sendbuf_release(pure_sendbuf *s, uint64_t new_base);
/* Frees the ring if it is empty (an idle link keeps no buffer); keeps offsets. */
void pure_sendbuf_shrink(pure_sendbuf *s, const pure_alloc *a);
void pure_sendbuf_free(pure_sendbuf *s, const pure_alloc *a);
/* pure_sendbuf_get_u32 where the four bytes wrap around the ring's end. */
uint32_t pure_sendbuf_get_u32_wrapped(const pure_sendbuf *s, uint64_t off);

/* Starts loading the byte at stream offset off (held) into the cache: a hint, no effect on
 * the contents. */
static inline void pure_sendbuf_prefetch(const pure_sendbuf *s, uint64_t off)
{
    if (s->buf)
        __builtin_prefetch(s->buf + (off & (s->cap - 1)));
}

/* Reads a big-endian u32 at stream offset off (off + 4 <= end). Inline: the sender reads every
 * acknowledged message's length prefix to count them (recovery.c), ~11 instructions a message
 * through a call (callgrind, pure drain of 61-byte messages). */
static inline uint32_t pure_sendbuf_get_u32(const pure_sendbuf *s, uint64_t off)
{
    uint64_t i = off & (s->cap - 1);
    if (i + 4 > s->cap)
        return pure_sendbuf_get_u32_wrapped(s, off);
    return pure_get_u32be(s->buf + i);
}

#endif
