/* SPDX-License-Identifier: MIT */
/* keytext.c: key generation (pure_keygen, pure_public_key, through the default crypto backend)
 * and a key as base64 text (pure_key_to_base64, pure_key_from_base64); all declared and
 * documented in pure.h. */
#include <string.h>

#include "crypto.h"
#include "pure.h"

int pure_keygen(uint8_t priv[PURE_KEY_LEN])
{
    if (!priv)
        return PURE_EINVAL;
    if (pure_crypto_default.random(priv, PURE_KEY_LEN))
        return PURE_ECRYPTO;
    /* X25519 clamping happens inside the DH; clamp here too so stored keys are canonical */
    priv[0] &= 248;
    priv[31] &= 127;
    priv[31] |= 64;
    return 0;
}

int pure_public_key(uint8_t pub[PURE_KEY_LEN], const uint8_t priv[PURE_KEY_LEN])
{
    if (!pub || !priv)
        return PURE_EINVAL;
    return pure_crypto_default.dh_public(pub, priv) ? PURE_ECRYPTO : 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void pure_key_to_base64(char out[45], const uint8_t key[PURE_KEY_LEN])
{
    char *o = out;
    for (int i = 0; i < 30; i += 3) {
        uint32_t v = (uint32_t)key[i] << 16 | (uint32_t)key[i + 1] << 8 | key[i + 2];
        *o++ = b64[v >> 18];
        *o++ = b64[(v >> 12) & 63];
        *o++ = b64[(v >> 6) & 63];
        *o++ = b64[v & 63];
    }
    uint32_t v = (uint32_t)key[30] << 16 | (uint32_t)key[31] << 8;
    *o++ = b64[v >> 18];
    *o++ = b64[(v >> 12) & 63];
    *o++ = b64[(v >> 6) & 63];
    *o++ = '=';
    *o = 0;
}

int pure_key_from_base64(uint8_t key[PURE_KEY_LEN], const char *text)
{
    if (!key || !text)
        return PURE_EINVAL;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
        text++;
    uint8_t out[33];
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0, i = 0;
    for (; i < 44; i++) {
        char c = text[i];
        const char *p = c ? strchr(b64, c) : NULL;
        if (i == 43 && c == '=')
            break;
        if (!p)
            return PURE_EINVAL;
        acc = acc << 6 | (uint32_t)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (i != 43 || n != 32 || (acc & ((1u << bits) - 1)) != 0)
        return PURE_EINVAL;
    for (const char *t = text + 44; *t; t++)
        if (*t != ' ' && *t != '\t' && *t != '\n' && *t != '\r')
            return PURE_EINVAL;
    memcpy(key, out, 32);
    return 0;
}
