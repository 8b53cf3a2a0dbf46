/* SPDX-License-Identifier: MIT */
/* cookie.c: stateless anti-DoS cookies (cookie.h).
 *
 * cookie = first 16 bytes of HMAC-SHA256(secret, addr). The responder keeps only two secrets,
 * never per-sender state, so answering a flood with cookies costs one HMAC each and no memory.
 * Time is cut into epochs of 120 s; the secret of each epoch is random and is forgotten two
 * epochs later, so a stolen or replayed cookie stops working after at most 240 s. */
#include "cookie.h"

#include <string.h>

#include "pure.h"

int pure_cookie_init(pure_cookie_jar *j, const pure_crypto *c, uint64_t now)
{
    int rc;
    if (j == NULL || c == NULL)
        return PURE_EINVAL;
    memset(j, 0, sizeof(*j));
    if ((rc = c->random(j->cur, sizeof(j->cur))) != 0) {
        pure_cookie_wipe(j);
        return rc;
    }
    j->epoch = now / PURE_COOKIE_PERIOD_NS;
    j->ready = 1;
    return 0;
}

/* Brings the secrets up to the epoch of now. The clock is monotonic, but a caller passing an
 * earlier time (a bug, or timestamps from threads racing) simply uses the current secret. */
static int rotate(pure_cookie_jar *j, const pure_crypto *c, uint64_t now)
{
    uint64_t e = now / PURE_COOKIE_PERIOD_NS;
    uint8_t fresh[32];
    int rc;
    if (e <= j->epoch)
        return 0;
    if ((rc = c->random(fresh, sizeof(fresh))) != 0)
        return rc;
    if (e == j->epoch + 1) {
        memcpy(j->prev, j->cur, sizeof(j->prev));
        j->has_prev = 1;
    } else {
        /* Two or more epochs passed: the old secret's cookies have all expired. */
        pure_wipe(j->prev, sizeof(j->prev));
        j->has_prev = 0;
    }
    memcpy(j->cur, fresh, sizeof(j->cur));
    pure_wipe(fresh, sizeof(fresh));
    j->epoch = e;
    return 0;
}

static void mac(const pure_crypto *c, const uint8_t secret[32], const uint8_t *addr, size_t addrlen,
                uint8_t out[PURE_COOKIE_LEN])
{
    uint8_t full[PURE_HASH_LEN];
    c->hmac(full, secret, 32, addr, addrlen, NULL, 0);
    memcpy(out, full, PURE_COOKIE_LEN);
}

int pure_cookie_make(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                     size_t addrlen, uint8_t cookie[PURE_COOKIE_LEN])
{
    int rc;
    if (j == NULL || c == NULL || cookie == NULL || (addr == NULL && addrlen > 0) || !j->ready)
        return PURE_EINVAL;
    if ((rc = rotate(j, c, now)) != 0)
        return rc;
    mac(c, j->cur, addr, addrlen, cookie);
    return 0;
}

/* Constant-time equality: a timing difference would let an attacker forge a cookie byte by byte. */
static int same(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

int pure_cookie_verify(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                       size_t addrlen, const uint8_t cookie[PURE_COOKIE_LEN])
{
    uint8_t want[PURE_COOKIE_LEN];
    int rc, ok;
    if (j == NULL || c == NULL || cookie == NULL || (addr == NULL && addrlen > 0) || !j->ready)
        return PURE_EINVAL;
    if ((rc = rotate(j, c, now)) != 0)
        return rc;
    mac(c, j->cur, addr, addrlen, want);
    ok = same(want, cookie, PURE_COOKIE_LEN);
    if (j->has_prev) {
        /* Both are always computed so the answer takes the same time whichever secret matched. */
        mac(c, j->prev, addr, addrlen, want);
        ok |= same(want, cookie, PURE_COOKIE_LEN);
    }
    pure_wipe(want, sizeof(want));
    return ok ? 0 : PURE_ECRYPTO;
}

int pure_cookie_both(pure_cookie_jar *j, const pure_crypto *c, uint64_t now, const uint8_t *addr,
                     size_t addrlen, uint8_t cookies[2][PURE_COOKIE_LEN])
{
    int rc;
    if (j == NULL || c == NULL || cookies == NULL || (addr == NULL && addrlen > 0) || !j->ready)
        return PURE_EINVAL;
    if ((rc = rotate(j, c, now)) != 0)
        return rc;
    mac(c, j->cur, addr, addrlen, cookies[0]);
    if (!j->has_prev)
        return 1;
    mac(c, j->prev, addr, addrlen, cookies[1]);
    return 2;
}

void pure_cookie_wipe(pure_cookie_jar *j)
{
    if (j != NULL)
        pure_wipe(j, sizeof(*j));
}
