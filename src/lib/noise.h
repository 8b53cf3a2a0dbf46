/* SPDX-License-Identifier: MIT */
/* noise.h: the Noise IK handshake (Noise_IK_25519_AESGCM_SHA256) over the crypto seam.
 *
 *   <- s
 *   ...
 *   -> e, es, s, ss      (msg1: initiator's ephemeral, its static key encrypted, payload)
 *   <- e, ee, se         (msg2: responder's ephemeral, payload)
 *
 * The connecting side (initiator) knows the listener's static public key in advance; the
 * listener learns the initiator's static key from msg1 and decides whether it is allowed. One
 * round trip gives both sides forward-secret transport keys (pure_noise_split).
 *
 * A pure_noise holds no heap memory: it can be copied, abandoned or wiped at any time. It is not
 * thread-safe; one handshake belongs to one thread at a time. */
#ifndef PURE_NOISE_H
#define PURE_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define PURE_NOISE_PROTOCOL "Noise_IK_25519_AESGCM_SHA256"
#define PURE_NOISE_MSG1_OVERHEAD (32 + 32 + 16 + 16) /* e, encrypted s + tag, payload tag */
#define PURE_NOISE_MSG2_OVERHEAD (32 + 16)           /* e, payload tag */

/* Where a handshake stands. Every function checks it and refuses (PURE_EINVAL) a call out of
 * order, so a message can never be processed twice or with a half-built key. */
enum pure_noise_state {
    PURE_NOISE_EMPTY = 0,      /* not initialised, wiped, or already split */
    PURE_NOISE_INIT_START,     /* initiator: may write msg1 */
    PURE_NOISE_INIT_WAIT_MSG2, /* initiator: msg1 written, waiting for msg2 */
    PURE_NOISE_RESP_WAIT_MSG1, /* responder: waiting for msg1 */
    PURE_NOISE_RESP_GOT_MSG1,  /* responder: msg1 read (rs known), may write msg2 */
    PURE_NOISE_DONE,           /* both messages processed: may split */
    PURE_NOISE_FAILED,         /* a DH or randomness failure left the state unusable */
};

struct pure_sscache;

typedef struct pure_noise {
    const pure_crypto *c;
    struct pure_sscache *ssc; /* the context's ss results (sscache.h), or NULL: compute each */
    /* symmetric state (Noise section 5.2) */
    uint8_t ck[PURE_HASH_LEN]; /* chaining key */
    uint8_t h[PURE_HASH_LEN];  /* handshake hash */
    uint8_t k[32];             /* cipher key (AES-256-GCM), valid when has_k */
    uint64_t n;                /* cipher nonce counter */
    /* keys (section 5.3) */
    uint8_t s_priv[PURE_DH_LEN], s_pub[PURE_DH_LEN];
    uint8_t e_priv[PURE_DH_LEN], e_pub[PURE_DH_LEN];
    uint8_t rs[PURE_DH_LEN]; /* remote static: known (initiator) or learnt from msg1 */
    uint8_t re[PURE_DH_LEN]; /* remote ephemeral */
    uint8_t state;           /* enum pure_noise_state */
    uint8_t initiator;
    uint8_t has_k;
    uint8_t has_e; /* e was fixed with pure_noise_set_ephemeral */
} pure_noise;

/* Starts a handshake. initiator is 1 for the connecting side, 0 for the listener. prologue (may
 * be NULL when prologue_len is 0) is bound into the handshake hash: both sides must pass the
 * same bytes or msg1 fails to decrypt. s_priv is our static X25519 private key. rs_pub is the
 * responder's static public key for the initiator and must be NULL for the responder.
 * Returns 0, or PURE_EINVAL (NULL arguments, rs_pub missing or unexpected), or PURE_ECRYPTO (the
 * backend could not compute our public key); on error the state is PURE_NOISE_EMPTY. */
int pure_noise_init(pure_noise *hs, const pure_crypto *c, int initiator, const uint8_t *prologue,
                    size_t prologue_len, const uint8_t s_priv[32], const uint8_t *rs_pub);
/* As pure_noise_init, with our static public key given (s_pub, the public key of s_priv, or NULL
 * to compute it): a responder answering many INITs saves one X25519 operation on each. */
int pure_noise_init_keys(pure_noise *hs, const pure_crypto *c, int initiator,
                         const uint8_t *prologue, size_t prologue_len, const uint8_t s_priv[32],
                         const uint8_t *s_pub, const uint8_t *rs_pub);

/* Fixes the ephemeral private key instead of drawing it from c->random when the next message is
 * written. Only for test vectors and interoperability checks: reusing an ephemeral key destroys
 * forward secrecy. Ignored unless the handshake is about to write its message. */
void pure_noise_set_ephemeral(pure_noise *hs, const uint8_t e_priv[32]);

/* Takes the `ss` token's DH result from a cache of the static key's results by peer key
 * (sscache.h), computing and storing it on a miss; call after init (which forgets it). The
 * handshake's bytes are the same with or without it. */
void pure_noise_set_ss_cache(pure_noise *hs, struct pure_sscache *cache);

/* Initiator: writes msg1 (-> e, es, s, ss, payload) of plen + PURE_NOISE_MSG1_OVERHEAD bytes
 * into out (cap bytes) and sets *outlen. Returns 0; PURE_EINVAL (wrong state or NULL);
 * PURE_ENOBUFS (cap too small; the state is unchanged and the call may be repeated);
 * PURE_ECRYPTO (randomness or DH failed, e.g. rs is a low-order point: the handshake is dead).
 * The payload may already sit where it goes, at out + 80 (encrypted in place); otherwise it must
 * not overlap out. */
int pure_noise_write_msg1(pure_noise *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                          size_t cap, size_t *outlen);

/* Responder: reads msg1 (len bytes; never reads beyond) and writes its payload of
 * len - PURE_NOISE_MSG1_OVERHEAD bytes into payload (cap bytes), setting *plen. On success the
 * initiator's static public key is in hs->rs: the caller checks it against its allow list
 * before answering. Returns 0; PURE_EINVAL (wrong state or NULL); PURE_EPROTO (shorter than
 * the overhead); PURE_ENOBUFS (cap too small); PURE_ECRYPTO (decryption or DH failed: a forged,
 * corrupted or misaddressed message). On any error the state is unchanged, so the same
 * pure_noise can read another msg1 (a forgery cannot wedge a handshake). */
int pure_noise_read_msg1(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload,
                         size_t cap, size_t *plen);

/* Responder: writes msg2 (<- e, ee, se, payload) of plen + PURE_NOISE_MSG2_OVERHEAD bytes.
 * Returns as pure_noise_write_msg1; the payload may sit at out + 32. Afterwards the handshake is
 * PURE_NOISE_DONE. */
int pure_noise_write_msg2(pure_noise *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                          size_t cap, size_t *outlen);

/* Initiator: reads msg2; returns as pure_noise_read_msg1 (state unchanged on error, so a forged
 * msg2 does not stop the genuine one from completing the handshake). Afterwards the handshake is
 * PURE_NOISE_DONE. */
int pure_noise_read_msg2(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload,
                         size_t cap, size_t *plen);

/* After both messages: Noise Split(). k_send and k_recv are the two transport keys oriented by
 * role (the initiator sends with Noise's k1, the responder with k2). ck is the final chaining
 * key (kept by the link to derive later rekeys) and h the handshake hash (channel binding); ck
 * and h may be NULL. Then wipes the handshake (state PURE_NOISE_EMPTY). Returns 0 or
 * PURE_EINVAL (not PURE_NOISE_DONE). */
int pure_noise_split(pure_noise *hs, uint8_t k_send[32], uint8_t k_recv[32], uint8_t ck[32],
                     uint8_t h[32]);

/* Zeroes every secret and the state (PURE_NOISE_EMPTY). Safe on any pure_noise, even wiped. */
void pure_noise_wipe(pure_noise *hs);

#endif
