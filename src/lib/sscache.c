/* SPDX-License-Identifier: MIT */
/* sscache.c: the static-static DH results of a context, by peer public key (sscache.h). */
#include <string.h>

#include "sscache.h"

/* The slot a key maps to: two of its bytes (a public key's bytes are uniform). */
static pure_sscache_slot *slot_of(pure_sscache *cache, const uint8_t pub[PURE_DH_LEN])
{
    return &cache->slot[(pub[0] ^ pub[17]) % PURE_SSCACHE_SLOTS];
}

int pure_sscache_dh(pure_sscache *cache, const pure_crypto *c, uint8_t shared[PURE_DH_LEN],
                    const uint8_t priv[PURE_DH_LEN], const uint8_t pub[PURE_DH_LEN])
{
    pure_sscache_slot *s = slot_of(cache, pub);
    if (s->used && memcmp(s->pub, pub, PURE_DH_LEN) == 0) {
        memcpy(shared, s->shared, PURE_DH_LEN);
        cache->hits++;
        return 0;
    }
    cache->misses++;
    int rc = c->dh(shared, priv, pub);
    if (rc == 0) {
        memcpy(s->pub, pub, PURE_DH_LEN);
        memcpy(s->shared, shared, PURE_DH_LEN);
        s->used = 1;
    }
    return rc;
}

void pure_sscache_wipe(pure_sscache *cache)
{
    pure_wipe(cache, sizeof *cache);
}
