/* SPDX-License-Identifier: MIT */
/* replay.c: the receive-side replay window (replay.h).
 *
 * This is RFC 6479's bitmap, as WireGuard uses it: a ring of 16 words of 64 bits where bit
 * (pn + 1) mod 1024 stands for packet number pn. The ring never shifts bits. When a higher
 * number arrives, the words between the old top and the new one are zeroed (they now stand for
 * numbers never seen) and top moves; bits of older numbers stay where they are. Because whole
 * words are recycled, the word holding top may be partly "future", so only 1024 - 64 numbers
 * below top are guaranteed to be represented: anything older is rejected as too old.
 *
 * Numbers are stored shifted by one (pn + 1) so that top == 0 can mean "nothing yet" while
 * packet number 0 stays valid. UINT64_MAX would wrap and is refused; the transport rekeys
 * long before any counter gets near it. */
#include "replay.h"

#include <string.h>

#define WORD_MASK (PURE_REPLAY_WORDS - 1u)

void pure_replay_init(pure_replay *r)
{
    memset(r, 0, sizeof(*r));
}

void pure_replay_init_seen(pure_replay *r, uint64_t top)
{
    /* Every number up to top counts as seen; the numbers above top that share its word must
     * stay free, or a reordered packet just above top would be taken for a replay. */
    memset(r->bitmap, 0xff, sizeof r->bitmap);
    r->top = top;
    uint64_t bit = top & 63;
    if (bit < 63)
        r->bitmap[(top >> 6) & WORD_MASK] &= (2ull << bit) - 1;
}

int pure_replay_check(const pure_replay *r, uint64_t pn)
{
    uint64_t x;
    if (pn == UINT64_MAX)
        return -2;
    x = pn + 1;
    if (x > r->top)
        return 0; /* beyond everything seen: fresh */
    if (r->top - x >= PURE_REPLAY_WINDOW)
        return -2; /* its bit may already stand for a newer number */
    if (r->bitmap[(x >> 6) & WORD_MASK] & (1ull << (x & 63)))
        return -1;
    return 0;
}

void pure_replay_commit(pure_replay *r, uint64_t pn)
{
    uint64_t x, word;
    if (pure_replay_check(r, pn) != 0)
        return;
    x = pn + 1;
    word = x >> 6;
    if (x > r->top) {
        /* Slide: clear the words after top's word up to and including x's word. A jump of a
         * whole ring or more clears everything (at most 16 words, whatever the jump). */
        uint64_t cur = r->top >> 6, steps = word - cur;
        if (steps > PURE_REPLAY_WORDS)
            steps = PURE_REPLAY_WORDS;
        for (uint64_t i = 1; i <= steps; i++)
            r->bitmap[(cur + i) & WORD_MASK] = 0;
        r->top = x;
    }
    r->bitmap[word & WORD_MASK] |= 1ull << (x & 63);
}
