/* SPDX-License-Identifier: MIT */
/* msgparse.h: the receiver's message framer: turns in-order stream bytes (the preamble "pure",
 * then u32 big-endian length + body, repeated) into whole messages. A message lying inside one
 * contiguous piece is delivered straight from that memory; one spread over pieces is assembled in
 * a buffer that grows with the bytes that actually arrived (doubling, capped at the message's
 * length), never with the length a prefix announces, and that is freed once its message is
 * delivered if it grew past PURE_MSGPARSE_KEEP. */
#ifndef PURE_MSGPARSE_H
#define PURE_MSGPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "varint.h"

/* The smallest assembly buffer (a message shorter than this gets one of its own length). */
#define PURE_MSGPARSE_MIN 4096u
/* An assembly buffer up to this size is kept for the next message; a larger one is freed as soon
 * as its message is delivered, so memory held goes down with the message. */
#define PURE_MSGPARSE_KEEP 65536u

/* Called for each whole message; returns 0 to go on, non-zero to stop (the link closed). */
typedef int (*pure_msg_fn)(void *arg, const uint8_t *data, size_t len);

typedef struct pure_msgparse {
    uint8_t hdr[4];
    uint8_t hdr_have; /* bytes of the current length prefix (or preamble) seen */
    uint8_t preamble_done;
    uint8_t in_body;
    uint32_t body_len, body_have;
    uint8_t *body;     /* assembly buffer for a message split across pieces */
    uint32_t body_cap; /* its size in bytes (what the owner accounts for) */
    uint32_t max_len;
    /* Set by the owner before a feed: the assembly buffer may not grow past this many bytes
     * (UINT32_MAX after init: no limit). A feed that needs more stops, as zlib's avail_in. */
    uint32_t cap_limit;
    /* After a feed returned PURE_EAGAIN, PURE_ENOMEM or 1: bytes at the end of the piece it did
     * not consume. */
    size_t unfed;
} pure_msgparse;

void pure_msgparse_init(pure_msgparse *m, uint32_t max_len);
/* Consumes n in-order bytes. Returns 0, PURE_EPROTO (bad preamble), PURE_EMSGSIZE (a length over
 * max_len), PURE_ENOMEM (the assembly buffer could not grow: as PURE_EAGAIN, the last m->unfed
 * bytes are not consumed), 1 if fn asked to stop (the last m->unfed bytes are not consumed), or
 * PURE_EAGAIN if the assembly buffer would have to grow past cap_limit: everything but the last
 * m->unfed bytes was consumed (the buffer holds as much as cap_limit allows); feed the rest again
 * once the limit allows it. Whole messages in the piece and empty messages never allocate. */
int pure_msgparse_feed(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                       pure_msg_fn fn, void *arg);

/* What pure_msgparse_feed_slow returns when it has brought the parser back to a message boundary
 * with bytes of the piece left (m->unfed of them): the caller goes on with its fast path. */
#define PURE_MSGPARSE_AT_BOUNDARY 2
/* pure_msgparse_feed's slow path: the preamble, a length prefix or a message spread over pieces,
 * a length over max_len. Returns as pure_msgparse_feed, or PURE_MSGPARSE_AT_BOUNDARY. */
int pure_msgparse_feed_slow(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                            pure_msg_fn fn, void *arg);

/* pure_msgparse_feed, inline (it is that function's body): whole messages lying in the piece are
 * delivered where they lie by a direct call of fn, which a caller naming its own callback gets
 * inlined, and everything else goes to pure_msgparse_feed_slow. A receiver of small messages
 * spends its time in this loop: out of line, with an indirect call per message, the drain's
 * server spent ~46 instructions a 61-byte message in the framer and the callback (callgrind). */
static inline __attribute__((always_inline)) int
pure_msgparse_feed_inline(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                          pure_msg_fn fn, void *arg)
{
    const uint8_t *end = p + n;
    for (;;) {
        if (m->preamble_done && !m->in_body && m->hdr_have == 0) {
            uint32_t max_len = m->max_len;
            while (end - p >= 4) {
                uint32_t len = pure_get_u32be(p);
                /* a message not whole here, or one over max_len (an error): the slow path's */
                if (len > max_len || (size_t)(end - p - 4) < len)
                    break;
                int stop = fn(arg, p + 4, len);
                p += 4 + (size_t)len;
                if (stop) {
                    m->unfed = (size_t)(end - p);
                    return 1;
                }
            }
            if (p == end) {
                m->unfed = 0;
                return 0;
            }
        }
        int rc = pure_msgparse_feed_slow(m, a, p, (size_t)(end - p), fn, arg);
        if (rc != PURE_MSGPARSE_AT_BOUNDARY)
            return rc;
        p = end - m->unfed;
    }
}
/* Drops the message in progress (its sender cancelled it): the parser is at a boundary again
 * and its assembly buffer is kept for the next. */
void pure_msgparse_abandon(pure_msgparse *m);
/* 1 if the parser sits exactly on a message boundary (nothing partial held). */
int pure_msgparse_at_boundary(const pure_msgparse *m);
/* 1 if the message being assembled still needs a larger buffer (more bytes of it will come than
 * the buffer holds room for). */
int pure_msgparse_wants_memory(const pure_msgparse *m);
/* Frees the assembly buffer (it is rebuilt on demand): for idle links. */
void pure_msgparse_shrink(pure_msgparse *m, const pure_alloc *a);
void pure_msgparse_free(pure_msgparse *m, const pure_alloc *a);

#endif
