/* SPDX-License-Identifier: MIT */
/* cookie.h: stateless anti-DoS cookies: a MAC of the sender's address under a secret that
 * rotates every two minutes, so a responder under load can demand proof that the initiator
 * receives packets at the address it claims before spending a DH or any state on it (the
 * WireGuard cookie-reply and QUIC Retry idea).
 *
 * The jar is sans-I/O: time comes in as a monotonic nanosecond count, randomness from the
 * crypto backend. Not thread-safe: one jar per thread, or a lock around it. */
#ifndef PURE_COOKIE_H
#define PURE_COOKIE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define PURE_COOKIE_LEN 16
#define PURE_COOKIE_PERIOD_NS (120ull * 1000000000ull) /* secret lifetime */

typedef struct pure_cookie_jar {
    uint8_t cur[32];  /* secret of epoch `epoch` */
    uint8_t prev[32]; /* secret of epoch `epoch - 1`, valid if has_prev */
    uint64_t epoch;   /* now / PURE_COOKIE_PERIOD_NS when cur was drawn */
    uint8_t has_prev;
    uint8_t ready; /* init succeeded */
} pure_cookie_jar;

/* Draws the first secret from c->random for the epoch of now. Returns 0, PURE_EINVAL (NULL) or
 * the backend's error (no randomness; the jar is then unusable and make/verify fail). */
int pure_cookie_init(pure_cookie_jar *j, const pure_crypto *c, uint64_t now);

/* Computes the cookie for the address bytes addr (whatever identifies the claimed source,
 * e.g. family, IP and port, serialised by the caller the same way every time) at time now.
 * Rotates the secret first if now is in a later epoch. A cookie made in epoch E is accepted
 * during E and E + 1: between 120 and 240 seconds. Returns 0, PURE_EINVAL (NULL, or the jar not
 * initialised) or the backend's error if rotation could not draw a secret. */
int pure_cookie_make(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                     size_t addrlen, uint8_t cookie[PURE_COOKIE_LEN]);

/* Checks, in constant time, a cookie presented from addr at time now against the current and
 * previous secrets. Returns 0 if valid, PURE_ECRYPTO if not (wrong address, forged, or expired),
 * PURE_EINVAL (NULL or jar not initialised), or the backend's error from rotation. */
int pure_cookie_verify(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                       size_t addrlen, const uint8_t cookie[PURE_COOKIE_LEN]);

/* The cookies addr would get under the current and, if still valid, the previous secret, for a
 * caller that checks a MAC made with the cookie rather than the cookie itself. Returns how many
 * (1 or 2), or a negative code as pure_cookie_make. The caller wipes them after use. */
int pure_cookie_both(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                     size_t addrlen, uint8_t cookies[2][PURE_COOKIE_LEN]);

/* Zeroes the secrets (the jar must be initialised again before use). */
void pure_cookie_wipe(pure_cookie_jar *j);

#endif
