/* SPDX-License-Identifier: MIT */
/* sim_raw.h: a hostile peer for the simulator: raw bytes appended to a link's stream past Pure's
 * own framing, so a test can announce one message length and send other bytes (or none). The
 * link's transport (credit, loss recovery, keys) stays Pure's own: only the stream lies. */
#ifndef PURE_SIM_RAW_H
#define PURE_SIM_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "pure.h"

/* Appends n raw bytes to the link's outgoing stream (after its preamble and any messages sent
 * before). Returns 0 or the sendbuf's PURE_EAGAIN / PURE_ENOMEM. */
int sim_raw_write(pure_link *link, const void *bytes, size_t n);

/* Appends a length prefix announcing `len` bytes, then the first `part` of them (byte i is
 * i & 255). */
int sim_raw_announce(pure_link *link, uint32_t len, size_t part);

#endif
