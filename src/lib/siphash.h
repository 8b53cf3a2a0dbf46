/* SPDX-License-Identifier: MIT */
/* siphash.h: SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012), the
 * keyed hash that indexes the responder's admission tables (admit.c) by values an attacker
 * chooses: source addresses, ephemeral and initiator keys. Under a secret key of 128 bits its
 * output is a PRF, so without the key nobody can pick inputs that land in one slot (a plain or
 * weakly mixed hash would let an attacker aim at a victim's slot).
 *
 * Not a MAC for anything that is sent, and not constant-time in the input's length (the length
 * of an address or a key is no secret). */
#ifndef PURE_SIPHASH_H
#define PURE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define PURE_SIPHASH_KEY_LEN 16

/* SipHash-2-4 of the n bytes at p under key (k0 = key[0..8), k1 = key[8..16), little-endian,
 * as the reference implementation reads them). p may be NULL if n is 0. */
uint64_t pure_siphash24(const uint8_t key[PURE_SIPHASH_KEY_LEN], const void *p, size_t n);

#endif
