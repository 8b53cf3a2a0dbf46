/* SPDX-License-Identifier: MIT */
/* msgparse.h: the receiver's message framer: turns in-order stream bytes (the preamble "pure",
 * then u32 big-endian length + body, repeated) into whole messages. A message lying inside one
 * contiguous piece is delivered straight from that memory; one spread over pieces is assembled in
 * a buffer that grows (through the allocator) up to the maximum message size. */
#ifndef PURE_MSGPARSE_H
#define PURE_MSGPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* Called for each whole message; returns 0 to go on, non-zero to stop (the link closed). */
typedef int (*pure_msg_fn)(void *arg, const uint8_t *data, size_t len);

typedef struct pure_msgparse {
    uint8_t hdr[4];
    uint8_t hdr_have;      /* bytes of the current length prefix (or preamble) seen */
    uint8_t preamble_done;
    uint8_t in_body;
    uint32_t body_len, body_have;
    uint8_t *body;         /* assembly buffer for a message split across pieces */
    uint32_t body_cap;
    uint32_t max_len;
} pure_msgparse;

void pure_msgparse_init(pure_msgparse *m, uint32_t max_len);
/* Consumes n in-order bytes. Returns 0, PURE_EPROTO (bad preamble), PURE_EMSGSIZE (a length over
 * max_len), PURE_ENOMEM, or 1 if fn asked to stop (the remaining bytes are not consumed). */
int pure_msgparse_feed(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                       pure_msg_fn fn, void *arg);
/* 1 if the parser sits exactly on a message boundary (nothing partial held). */
int pure_msgparse_at_boundary(const pure_msgparse *m);
/* Frees the assembly buffer (it is rebuilt on demand): for idle links. */
void pure_msgparse_shrink(pure_msgparse *m, const pure_alloc *a);
void pure_msgparse_free(pure_msgparse *m, const pure_alloc *a);

#endif
