/* SPDX-License-Identifier: MIT */
/* admit.h: handshake admission, the responder's defences before it spends a DH or any state on
 * an INIT (docs/protocol.md, "Handshake admission" and "Threat model"):
 *   - the INIT's two MACs: mac1 keyed by the responder's public key (proves the sender knows
 *     whom it talks to; checked before anything else) and mac2 keyed by a cookie (proves, under
 *     load, that the sender receives at its address);
 *   - the COOKIE reply's encryption, bound to the INIT it answers through that INIT's mac1;
 *   - a cache of the ephemeral keys of INITs that authenticated, so a replay is dropped with no
 *     DH at all;
 *   - per-source buckets (IPv4 address, IPv6 /64): a token bucket of INITs per second and a
 *     count of half-open links, both charged only by INITs that proved their source address
 *     with a cookie, in a fixed table indexed by SipHash-2-4 under a secret drawn per context
 *     and sized for max_half_open (pure_admit_src_buckets; no allocation per source; colliding
 *     sources share a bucket by chance, never by an attacker's choice);
 *   - the greatest INIT timestamp seen per initiator key (allow_any: in a fixed set-associative
 *     table; with an allow list, per allowed key).
 * Sans-I/O: time comes in as arguments; tables are allocated on first use (a context that never
 * answers an INIT never pays for them). */
#ifndef PURE_ADMIT_H
#define PURE_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "crypto.h"
#include "pure.h"
#include "wire.h"

#define PURE_INIT_TS_WINDOW (10ull * 1000000000ull) /* ns: see pure_admit_fresh */
#define PURE_ADMIT_SEEN_SETS 256      /* x 4 ephemeral keys remembered (1,024 INITs) */
#define PURE_ADMIT_SRC_MIN 512        /* per-source buckets: at least */
#define PURE_ADMIT_SRC_MAX (1u << 20) /* and at most (16 MiB) */
#define PURE_ADMIT_TS_SETS 128        /* x 4 initiator keys' timestamps (allow_any) */

typedef struct pure_src_bucket {
    uint64_t refilled;  /* time tokens were last added */
    uint32_t tokens;    /* INITs this source may still start now (scaled by 1000) */
    uint32_t half_open; /* half-open links whose INIT proved this source (PURE_HALF_OPEN_PROVEN) */
} pure_src_bucket;

/* link->half_open of a responder's link not yet validated: counted in ctx->half_open, and, if
 * its INIT proved its source address with a cookie, in its source's bucket too. A link made from
 * an INIT without that proof (admitted while not under load) is charged to no address: its
 * source address may be anyone's (docs/protocol.md, "Threat model"). */
#define PURE_HALF_OPEN_UNPROVEN 1
#define PURE_HALF_OPEN_PROVEN 2

typedef struct pure_ts_seen {
    uint64_t ts; /* greatest INIT timestamp seen from a key */
    uint64_t at; /* our time when it was seen */
} pure_ts_seen;

typedef struct pure_ts_entry {
    uint64_t key_hash; /* 0: empty */
    pure_ts_seen seen;
} pure_ts_entry;

typedef struct pure_admit {
    uint8_t mac1_key[PURE_HASH_LEN];   /* HASH("mac1" || our public key) */
    uint8_t cookie_key[PURE_HASH_LEN]; /* HASH("cookie" || our public key) */
    uint8_t hash_key[16];              /* SipHash key of the tables' indices, secret */
    uint64_t *seen;                    /* SEEN_SETS x 4 hashes of ephemeral keys */
    uint8_t *seen_next;                /* per set: the way to overwrite next */
    pure_src_bucket *src;              /* src_n buckets (a power of two) */
    uint32_t src_n;
    pure_ts_entry *ts;
    uint8_t *ts_next;
    pure_ts_seen *allow_ts; /* greatest timestamp per allow-list entry (cap_allow of them) */
    uint32_t allow_ts_cap;
    uint64_t window;            /* start of the current second */
    uint32_t inits_in_window;   /* INITs with a good mac1 in it */
    uint32_t rejects_in_window; /* REJECT replies sent in it */
    uint32_t wasted_in_window;  /* INITs in it that cost a DH and made no link */
} pure_admit;

/* Derives the MAC and cookie keys from our public key and draws the hash seed. Returns 0 or the
 * random source's error. */
int pure_admit_init(pure_admit *a, const pure_crypto *c, const uint8_t public_key[PURE_KEY_LEN],
                    int (*random)(void *user, uint8_t *buf, size_t len), void *random_user);
void pure_admit_free(pure_admit *a, const pure_alloc *al);

/* The key of mac1 for INITs sent to the responder whose public key is peer_key. */
void pure_admit_mac1_key(const pure_crypto *c, const uint8_t peer_key[PURE_KEY_LEN],
                         uint8_t key[PURE_HASH_LEN]);
/* The key that seals COOKIE replies of the responder whose public key is peer_key. */
void pure_admit_cookie_key(const pure_crypto *c, const uint8_t peer_key[PURE_KEY_LEN],
                           uint8_t key[PURE_HASH_LEN]);
/* mac = first 16 bytes of HMAC-SHA256(key, msg). */
void pure_admit_mac(const pure_crypto *c, const uint8_t *key, size_t keylen, const uint8_t *msg,
                    size_t len, uint8_t mac[PURE_MAC_LEN]);
/* Constant-time comparison of two MACs: 1 if equal. */
int pure_admit_mac_equal(const uint8_t a[PURE_MAC_LEN], const uint8_t b[PURE_MAC_LEN]);

/* COOKIE reply body: nonce[12] | AEAD(cookie_key, nonce, cookie[16], ad = mac1) (16 + 16).
 * seal returns 0 or the backend's error; open returns 0 or PURE_ECRYPTO (forged, or not the
 * answer to the INIT whose mac1 is given), leaving no cookie bytes in `cookie` on failure. */
#define PURE_COOKIE_BODY (PURE_NONCE_LEN + 16 + PURE_TAG_LEN)
int pure_admit_cookie_seal(const pure_crypto *c, const uint8_t key[PURE_HASH_LEN],
                           const uint8_t nonce[PURE_NONCE_LEN], const uint8_t mac1[PURE_MAC_LEN],
                           const uint8_t cookie[16], uint8_t out[PURE_COOKIE_BODY]);
int pure_admit_cookie_open(const pure_crypto *c, const uint8_t key[PURE_HASH_LEN],
                           const uint8_t mac1[PURE_MAC_LEN], const uint8_t in[PURE_COOKIE_BODY],
                           uint8_t cookie[16]);

/* 1 if an INIT with this ephemeral key authenticated before (as far as the cache remembers),
 * 0 if not. remember adds it (returns PURE_ENOMEM if the cache cannot be allocated). */
int pure_admit_seen(const pure_admit *a, const uint8_t e[PURE_DH_LEN]);
int pure_admit_remember(pure_admit *a, const pure_alloc *al, const uint8_t e[PURE_DH_LEN]);

/* How many per-source buckets a context whose max_half_open is `cap` has: the smallest power
 * of two at least cap, within PURE_ADMIT_SRC_MIN and PURE_ADMIT_SRC_MAX. One bucket per half-open
 * link the context may hold: at most cap / half_open_per_addr sources can fill their share of
 * the half-open cap at once, so a given source shares a bucket with one of them with a chance of
 * at most 1 / half_open_per_addr, whatever addresses they hold (the index is a PRF of a secret). */
uint32_t pure_admit_src_buckets(uint32_t cap);
/* The bucket of the source address `from` (NULL only if the table cannot be allocated). The
 * table is allocated on first use, pure_admit_src_buckets(cap) buckets (cap: max_half_open;
 * later calls' cap is not looked at). The I/O layer stores a struct sockaddr_in or sockaddr_in6
 * in a pure_addr: the bucket is keyed by the IPv4 address or the IPv6 /64; any other encoding
 * by all but its last two bytes (a port). */
pure_src_bucket *pure_admit_bucket(pure_admit *a, const pure_alloc *al, const pure_addr *from,
                                   uint32_t cap);
/* Takes one INIT's token from b, refilled at `rate` per second up to a burst of `rate`. Returns
 * 1 if there was one, 0 if the source is over its rate. */
int pure_admit_take_token(pure_src_bucket *b, uint32_t rate, uint64_t now);

/* Replay check of an authenticated INIT's timestamp for the initiator key `key` at our time
 * `now`: returns 1 (and raises the greatest seen to ts) if ts is above the greatest seen from
 * that key, or below it by less than PURE_INIT_TS_WINDOW while that greatest arrived less than
 * PURE_INIT_TS_WINDOW ago; 0 if not (a replay). The window lets processes sharing one key
 * connect at once (their clocks race); an exact copy of an INIT inside it is caught by the
 * cache of ephemeral keys (pure_admit_seen) before any DH. allow_index is
 * the key's index in the allow list, or -1 (allow_any: the set-associative table, which forgets
 * the least recently written key of a full set). Returns PURE_ENOMEM if a table cannot be
 * allocated. */
int pure_admit_fresh(pure_admit *a, const pure_alloc *al, const uint8_t key[PURE_KEY_LEN],
                     int64_t allow_index, uint32_t allow_cap, uint64_t ts, uint64_t now);

#endif
