/* SPDX-License-Identifier: MIT */
/* handshake.h: the Noise IK handshake: the initiator's side (handshake.c: INIT, its resends, the
 * queue of handshakes waiting their turn, RESP, COOKIE and REJECT) and the responder's
 * (handshake_resp.c: admission of an INIT, the RESP, and the end when the initiator's first
 * packet arrives). */
#ifndef PURE_HANDSHAKE_H
#define PURE_HANDSHAKE_H

#include "state.h"

/* Starts the initiator's handshake with the peer key and service (the INIT goes now, or when
 * one of the PURE_HS_IN_FLIGHT slots frees). 0 or an error (the link is not usable then). */
int pure_hs_start(pure_link *link, const uint8_t peer_key[PURE_KEY_LEN], const char *service,
                  uint64_t now);
/* The initiator's retry timer: resends the INIT (backing off), or ends the link with
 * PURE_ETIMEDOUT once handshake_timeout is spent, or with a hint's error (PURE_EKEY after a
 * REJECT, ...) once the hint's grace is. */
void pure_hs_timeout(pure_link *link, uint64_t now);
/* A RESP arrived: finishes the initiator's handshake (keys installed, link open). Returns 0, or
 * a negative code: dropped (counted), or the link ended (refused, bad key). */
int pure_hs_on_resp(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n, uint64_t now);
/* A COOKIE reply arrived: the INIT goes again with the cookie. 0 or a negative code (dropped,
 * counted). */
int pure_hs_on_cookie(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now);
/* A REJECT hint arrived: the INIT goes again at once, and the handshake ends with PURE_EKEY
 * after the hint's grace unless a RESP comes. 0 or a negative code (dropped, counted). */
int pure_hs_on_reject(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now);
/* A VERSION reply arrived: the responder speaks other protocol versions. A hint as REJECT is:
 * believed from the dialled address only, echoing our INIT, and not listing our own version; the
 * handshake then ends with PURE_EVERSION after the hint's grace unless a RESP comes. 0 or a
 * negative code (dropped, counted). */
int pure_hs_on_version(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                       uint64_t now);
/* The I/O layer says addr is unreachable (pure_ctx_unreachable, pure.h): ends, or warns, the
 * handshakes under way to it. Returns how many it concerned. */
int pure_hs_unreachable(pure_ctx *ctx, const pure_addr *addr, int kind, const uint8_t *quoted,
                        size_t quoted_len, uint64_t now);
/* A datagram from `from` that cannot be Pure (unknown type, wrong length for its type): a hint
 * that the handshakes under way to that address reach something else (PURE_ENOTPURE). */
void pure_hs_on_junk(pure_ctx *ctx, const pure_addr *from, uint64_t now);
/* Frees what the handshake held (the initiator's state, the responder's RESP); a freed
 * in-flight slot starts the next queued handshake. */
void pure_hs_free(pure_link *link);

/* An INIT arrived: admission, then the Noise message; a new link and its RESP, a COOKIE or
 * REJECT reply, or nothing (every drop counted). */
void pure_hs_on_init(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                     uint64_t now);
/* An INIT of another protocol version (type PURE_PKT_INIT_V) arrived: a VERSION reply listing
 * ours (rate-limited, not in silent mode), or nothing; counted in inits_other_version. */
void pure_hs_on_init_v(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                       uint64_t now);
/* A responder's link received its first authenticated packet: the initiator holds the keys, so
 * the handshake is complete and its address proven. Opens the link and offers it to the
 * application (on_accept). Returns 0 if it stays open, PURE_EREFUSED if the application refused
 * it (a CLOSE goes), PURE_ECLOSED if it closed it from on_accept. */
int pure_hs_confirmed(pure_link *link, uint64_t now);

#endif
