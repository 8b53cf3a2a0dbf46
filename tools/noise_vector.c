/* SPDX-License-Identifier: MIT */
/* noise_vector: plays one side of Pure's Noise IK handshake from hex inputs, for test vectors
 * and for interoperability checks against other Noise implementations (tests/interop).
 *
 *   noise_vector initiator S_PRIV RS_PUB E_PRIV PROLOGUE PAYLOAD1
 *   noise_vector responder S_PRIV E_PRIV PROLOGUE PAYLOAD2
 *
 * Every argument is hex; "-" means empty (or, for E_PRIV, a random ephemeral key). The dialogue
 * runs over stdin/stdout, one "word hex" line at a time, so a peer program can drive it:
 *   initiator prints "msg1 H", reads "msg2 H", prints "payload2 H";
 *   responder reads "msg1 H", prints "payload1 H" and "rs H" (the initiator's static key),
 *             then "msg2 H";
 * then both print "send H", "recv H" (transport keys), "ck H" and "h H", and serve transport
 * requests until end of input, with Noise's AESGCM cipher (AES-256-GCM, nonce 0^32 || n big
 * endian, empty ad):
 *   "seal N H" -> "ct H" (with the send key);  "open N H" -> "pt H" or "error ...".
 * Exit status: 0 on success, 1 if any handshake step failed, 2 on usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "noise.h"
#include "pure.h"

#define MAXMSG 65535

static const pure_crypto *C = &pure_crypto_openssl;

/* Parses hex (or "-" for empty) into out; returns the length, or -1 if malformed. */
static long parse_hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0, len = strlen(s);
    if (strcmp(s, "-") == 0)
        return 0;
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    if (len % 2 != 0 || len / 2 > cap)
        return -1;
    for (size_t i = 0; i < len; i += 2) {
        unsigned v;
        if (sscanf(s + i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", s[i]) ||
            !strchr("0123456789abcdefABCDEF", s[i + 1]))
            return -1;
        out[n++] = (uint8_t)v;
    }
    return (long)n;
}

static void print_hex(const char *word, const uint8_t *p, size_t n)
{
    printf("%s ", word);
    if (n == 0)
        printf("-");
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
    fflush(stdout);
}

static int key_arg(const char *s, uint8_t out[32], const char *what)
{
    if (parse_hex(s, out, 32) != 32) {
        fprintf(stderr, "noise_vector: %s must be 64 hex digits\n", what);
        return -1;
    }
    return 0;
}

/* Reads a line "word hex" from stdin into buf; returns the byte count or -1. */
static long read_msg(const char *word, uint8_t *buf, size_t cap)
{
    static char line[2 * MAXMSG + 64];
    size_t wl = strlen(word);
    if (fgets(line, sizeof(line), stdin) == NULL || strncmp(line, word, wl) != 0 ||
        line[wl] != ' ') {
        fprintf(stderr, "noise_vector: expected a \"%s HEX\" line\n", word);
        return -1;
    }
    return parse_hex(line + wl + 1, buf, cap);
}

static void noise_nonce(uint8_t nonce[12], unsigned long long n)
{
    memset(nonce, 0, 4);
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (uint8_t)(n >> (56 - 8 * i));
}

/* Serves "seal N H" / "open N H" lines until end of input. */
static int transport(const uint8_t k_send[32], const uint8_t k_recv[32])
{
    static char line[2 * MAXMSG + 64];
    static uint8_t buf[MAXMSG + 16];
    pure_aead s, r;
    int rc = 0;
    if (C->aead_init(&s, PURE_AEAD_AES256_GCM, k_send) != 0 ||
        C->aead_init(&r, PURE_AEAD_AES256_GCM, k_recv) != 0)
        return 1;
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char op[8], hex[sizeof(line)];
        unsigned long long n;
        uint8_t nonce[12];
        long len;
        if (sscanf(line, "%7s %llu %s", op, &n, hex) != 3 ||
            (len = parse_hex(hex, buf, MAXMSG)) < 0) {
            printf("error malformed request\n");
            fflush(stdout);
            rc = 1;
            continue;
        }
        noise_nonce(nonce, n);
        if (strcmp(op, "seal") == 0) {
            C->aead_seal(&s, nonce, NULL, 0, buf, (size_t)len, buf + len);
            print_hex("ct", buf, (size_t)len + 16);
        } else if (strcmp(op, "open") == 0 && len >= 16 &&
                   C->aead_open(&r, nonce, NULL, 0, buf, (size_t)len - 16, buf + len - 16) == 0) {
            print_hex("pt", buf, (size_t)len - 16);
        } else {
            printf("error open failed\n");
            fflush(stdout);
            rc = 1;
        }
    }
    C->aead_free(&s);
    C->aead_free(&r);
    return rc;
}

static int finish(pure_noise *hs)
{
    uint8_t ks[32], kr[32], ck[32], h[32];
    if (pure_noise_split(hs, ks, kr, ck, h) != 0)
        return 1;
    print_hex("send", ks, 32);
    print_hex("recv", kr, 32);
    print_hex("ck", ck, 32);
    print_hex("h", h, 32);
    return transport(ks, kr);
}

static int fail(const char *step, int rc)
{
    fprintf(stderr, "noise_vector: %s failed (%d)\n", step, rc);
    printf("error %s %d\n", step, rc);
    fflush(stdout);
    return 1;
}

int main(int argc, char **argv)
{
    static uint8_t prologue[4096], payload[MAXMSG], msg[MAXMSG + 128], got[MAXMSG];
    uint8_t s[32], rs[32], e[32];
    long plen, prlen, mlen;
    size_t outlen, gotlen;
    pure_noise hs;
    int rc, initiator = argc == 7 && strcmp(argv[1], "initiator") == 0;
    int responder = argc == 6 && strcmp(argv[1], "responder") == 0;
    if (!initiator && !responder) {
        fprintf(stderr, "usage: noise_vector initiator S_PRIV RS_PUB E_PRIV PROLOGUE PAYLOAD1\n"
                        "       noise_vector responder S_PRIV E_PRIV PROLOGUE PAYLOAD2\n"
                        "(hex arguments; \"-\" = empty, or a random ephemeral for E_PRIV)\n");
        return 2;
    }
    const char *e_arg = argv[initiator ? 4 : 3];
    if (key_arg(argv[2], s, "S_PRIV") != 0 || (initiator && key_arg(argv[3], rs, "RS_PUB") != 0) ||
        (strcmp(e_arg, "-") != 0 && key_arg(e_arg, e, "E_PRIV") != 0))
        return 2;
    prlen = parse_hex(argv[initiator ? 5 : 4], prologue, sizeof(prologue));
    plen = parse_hex(argv[initiator ? 6 : 5], payload, sizeof(payload));
    if (prlen < 0 || plen < 0) {
        fprintf(stderr, "noise_vector: PROLOGUE and PAYLOAD must be hex (or -)\n");
        return 2;
    }
    if ((rc = pure_noise_init(&hs, C, initiator, prologue, (size_t)prlen, s,
                              initiator ? rs : NULL)) != 0)
        return fail("init", rc);
    if (strcmp(e_arg, "-") != 0)
        pure_noise_set_ephemeral(&hs, e);
    if (initiator) {
        if ((rc = pure_noise_write_msg1(&hs, payload, (size_t)plen, msg, sizeof(msg), &outlen)) !=
            0)
            return fail("write_msg1", rc);
        print_hex("msg1", msg, outlen);
        if ((mlen = read_msg("msg2", msg, sizeof(msg))) < 0)
            return fail("read_line", -1);
        if ((rc = pure_noise_read_msg2(&hs, msg, (size_t)mlen, got, sizeof(got), &gotlen)) != 0)
            return fail("read_msg2", rc);
        print_hex("payload2", got, gotlen);
    } else {
        if ((mlen = read_msg("msg1", msg, sizeof(msg))) < 0)
            return fail("read_line", -1);
        if ((rc = pure_noise_read_msg1(&hs, msg, (size_t)mlen, got, sizeof(got), &gotlen)) != 0)
            return fail("read_msg1", rc);
        print_hex("payload1", got, gotlen);
        print_hex("rs", hs.rs, 32);
        if ((rc = pure_noise_write_msg2(&hs, payload, (size_t)plen, msg, sizeof(msg), &outlen)) !=
            0)
            return fail("write_msg2", rc);
        print_hex("msg2", msg, outlen);
    }
    return finish(&hs);
}
