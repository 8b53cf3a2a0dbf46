/* SPDX-License-Identifier: MIT */
/* sscache.h: the static-static DH results of a context, by peer public key. Noise IK's `ss`
 * token is DH(our static key, the peer's static key): the same for every handshake between the
 * same two keys, and one of the five X25519 operations each side pays per handshake. A client
 * opening many links to one server, and a server taking many links from the same clients,
 * compute it once per peer key instead of once per link.
 *
 * A fixed table of PURE_SSCACHE_SLOTS entries, direct-mapped by the key's bytes (public keys are
 * uniformly distributed; a peer choosing keys that collide only evicts entries, which costs it
 * the DH it saved), allocated on first use and wiped when freed: the results are as secret as
 * the static key itself, and live no longer than the context that holds it. */
#ifndef PURE_SSCACHE_H
#define PURE_SSCACHE_H

#include <stdint.h>

#include "crypto.h"

#define PURE_SSCACHE_SLOTS 256

typedef struct pure_sscache_slot {
    uint8_t pub[PURE_DH_LEN];
    uint8_t shared[PURE_DH_LEN];
    uint8_t used;
} pure_sscache_slot;

typedef struct pure_sscache {
    pure_sscache_slot slot[PURE_SSCACHE_SLOTS];
    uint64_t hits, misses;
} pure_sscache;

/* DH(priv, pub) through the cache: a hit copies the stored result; a miss computes it with
 * c->dh and stores it when it succeeds. c and priv must be the same for every call on one cache
 * (a context's backend and static key). Returns c->dh's code: 0, or PURE_ECRYPTO for a result
 * of all zeros, which is never stored. */
int pure_sscache_dh(pure_sscache *cache, const pure_crypto *c, uint8_t shared[PURE_DH_LEN],
                    const uint8_t priv[PURE_DH_LEN], const uint8_t pub[PURE_DH_LEN]);

/* Forgets every entry, wiping the results. */
void pure_sscache_wipe(pure_sscache *cache);

#endif
