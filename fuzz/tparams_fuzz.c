/* SPDX-License-Identifier: MIT */
/* tparams_fuzz.c: libFuzzer target for the transport parameter parser (tparams.c), which reads
 * what an unauthenticated-until-decrypted peer put at the end of its INIT or RESP payload.
 *
 * The whole input is a parameter set. A set that decodes must re-encode (pure_tparams_encode)
 * into at most PURE_TPARAMS_MAX bytes that decode to the same values; a set that does not must
 * leave the result zeroed and return PURE_EPROTO, never anything else. Removing the set's unknown
 * entries (rebuilt here from the known ones alone) never changes what it says. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "tparams.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "tparams_fuzz: %s (line %d)\n", what, __LINE__);                           \
        abort();                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const pure_tparams *a, const pure_tparams *b)
{
    return a->max_channels == b->max_channels && a->max_datagram_size == b->max_datagram_size &&
           a->features == b->features;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pure_tparams tp, again;
    memset(&tp, 0xa5, sizeof tp);
    int rc = pure_tparams_decode(data, size, &tp);
    if (rc != 0) {
        pure_tparams z;
        memset(&z, 0, sizeof z);
        if (rc != PURE_EPROTO)
            FAIL("a code the contract does not list");
        if (!same(&tp, &z))
            FAIL("a refused set left values behind");
        return 0;
    }
    uint8_t b[PURE_TPARAMS_MAX];
    size_t n = pure_tparams_encode(&tp, b);
    if (n > PURE_TPARAMS_MAX)
        FAIL("encoded past PURE_TPARAMS_MAX");
    if (pure_tparams_decode(b, n, &again) != 0 || !same(&tp, &again))
        FAIL("re-encoded set reads differently");
    return 0;
}
