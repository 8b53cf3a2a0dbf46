/* SPDX-License-Identifier: MIT */
/* keys.h: a link's transport keys (keys.c): installed from the handshake's split, derived at a
 * rekey, the AEAD scheduled on demand and parked while idle, opening a DATA packet under the key
 * its phase bit names with the integrity limit counted, the previous receive key's retirement,
 * and wiping. */
#ifndef PURE_KEYS_H
#define PURE_KEYS_H

#include "state.h"

/* Installs both directions' first keys (phase 0) from the handshake. 0 or an error. */
int pure_keys_install(pure_link *link, const uint8_t k_send[32], const uint8_t k_recv[32]);
/* Derives one direction's key and IV from a split secret into k. 0 or an error. */
int pure_keys_derive(pure_ctx *ctx, pure_dir_keys *k, const uint8_t split[32]);
/* Derives the receive key of `phase`: its failed-open count starts from zero, and a previous key
 * it replaces needs no retiring any more. */
int pure_keys_derive_rx(pure_link *link, uint8_t phase, const uint8_t split[32]);
/* The nonce of packet number pn under iv. */
void pure_keys_nonce(uint8_t nonce[PURE_NONCE_LEN], const uint8_t iv[PURE_NONCE_LEN], uint64_t pn);
/* Opens the DATA packet d (n bytes, packet number pn) in place under the receive key its phase
 * bit names. Returns 0, or PURE_ECRYPTO: the link holds no such key (never installed, or
 * retired), or the packet does not authenticate; it is counted then (dropped_auth; a failed
 * open also in the key's rx_failed and guard.failed_opens) and its payload zeroed. */
int pure_keys_open(pure_link *link, uint8_t *d, size_t n, uint64_t pn);
/* Have packets failed to open under the receive key of `phase` max_failed_opens times? Then the
 * key's integrity is in doubt and the caller closes the link (PURE_ECRYPTO). */
int pure_keys_forged_too_often(const pure_link *link, uint8_t phase);
/* A switch made rx[key_phase ^ 1] the previous receive key: keep it for late packets. */
void pure_keys_retire_wait(pure_link *link);
/* The peer sent under the new receive key: wipe the previous one three probe timeouts from now
 * (the deadline lives in link->b: the caller made the link busy, else the next packet tries). */
void pure_keys_retire_later(pure_link *link, uint64_t now);
/* Wipes the previous receive key now (its deadline passed, or the link fell idle). */
void pure_keys_retire(pure_link *link);
/* The direction's AEAD, scheduled on demand; NULL if it has no keys or scheduling failed. */
pure_aead *pure_keys_aead(pure_ctx *ctx, pure_dir_keys *k);
/* Releases the scheduled AEAD contexts of an idle link (keys are kept). */
void pure_keys_park(pure_link *link);
/* Wipes one direction's keys and frees its AEAD. */
void pure_keys_wipe_dir(pure_ctx *ctx, pure_dir_keys *k);
/* Wipes every key of the link (both directions, both receive phases, the chaining key). */
void pure_keys_wipe(pure_link *link);

#endif
