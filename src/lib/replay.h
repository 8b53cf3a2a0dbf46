/* SPDX-License-Identifier: MIT */
/* replay.h: the sliding replay window that rejects duplicate and too-old packet numbers on
 * receive, an RFC 6479-style bitmap of 1024 bits over 64-bit packet numbers. */
#ifndef PURE_REPLAY_H
#define PURE_REPLAY_H

#include <stdint.h>

#define PURE_REPLAY_BITS 1024u                     /* bitmap size: 128 bytes */
#define PURE_REPLAY_WORDS (PURE_REPLAY_BITS / 64u) /* 16 words of 64 bits */
/* Packet numbers this far below the highest accepted one are always accepted if unseen. The
 * bitmap is 1024 bits but one word is kept spare so that sliding forward only ever clears whole
 * words (see replay.c), so the guaranteed window is 1024 - 64 = 960 packets. */
#define PURE_REPLAY_WINDOW (PURE_REPLAY_BITS - 64u)

typedef struct pure_replay {
    uint64_t top;                       /* 1 + the highest packet number committed; 0 = none */
    uint64_t bitmap[PURE_REPLAY_WORDS]; /* bit (pn + 1) mod 1024 set = pn seen */
} pure_replay;

/* Empties the window: every packet number is fresh. */
void pure_replay_init(pure_replay *r);

/* Tells whether pn may be accepted, before the packet is decrypted (cheap rejection of replays).
 * Returns 0 if pn is fresh, -1 if it was already committed, -2 if it is too old to tell (more
 * than the window below the highest committed number; also UINT64_MAX, which is never valid).
 * Does not change the window: only a packet that then authenticates is committed. */
int pure_replay_check(const pure_replay *r, uint64_t pn);

/* Starts a window whose top is `top` (a value of pure_replay.top saved earlier) with every number
 * at or below it counted as seen: how an idle link that dropped its bitmap restores it. */
void pure_replay_init_seen(pure_replay *r, uint64_t top);

/* Records pn as received, after its packet authenticated. pn must have passed
 * pure_replay_check (a number that did not is ignored). */
void pure_replay_commit(pure_replay *r, uint64_t pn);

#endif
