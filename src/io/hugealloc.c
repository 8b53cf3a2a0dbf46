/* SPDX-License-Identifier: MIT */
/* hugealloc.c: an allocator for pure_settings that backs large blocks (a busy link's send ring)
 * with transparent huge pages; see pure_settings_use_huge_pages in pure_loop.h.
 *
 * Why: a link that streams fast holds megabytes unacknowledged in its send ring, and the first
 * touch of each 4 KiB page of it is a page fault. On the VM this project is measured on a fault
 * costs ~14 us (mmap and touch 64 MiB: 13-14 us per page), so a ring that reaches 4 MiB costs
 * ~15 ms of CPU before it is warm: 0.015 us on every message of a 1,000,000-message drain. A
 * 2 MiB huge page costs ~155 us to fault (~0.3 us per 4 KiB of it) when the kernel has one free,
 * and the kernel falls back to small pages by itself when it has none.
 *
 * Blocks below PURE_HUGE_MIN (2 MiB) go to malloc: a block mapped on its own occupies whole huge
 * pages, and with many busy links each holding a ring of 256 KiB to 1 MiB that was a zeroed 2 MiB
 * page per link (1,000 links fanning in: 2 GB and 8.5 s of system time on the client). Larger ones
 * are anonymous mappings rounded up to and aligned on 2 MiB (huge pages need both), advised
 * MADV_HUGEPAGE. Growing a large block maps a new one and copies: the new pages would be touched
 * anyway, and a moved mapping (mremap) would lose the alignment. Sizes come from the core on every
 * call (free and realloc get them), so no header is kept. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pure_loop.h"

#define HUGE_PAGE ((size_t)2 << 20)

static size_t huge_len(size_t n)
{
    return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

static void *huge_map(size_t n)
{
    size_t len = huge_len(n);
    if (len < n) /* overflow */
        return NULL;
    /* map one huge page more than needed, then trim to an aligned start */
    uint8_t *raw =
        mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + len + HUGE_PAGE - (p + len));
    if (tail)
        munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice: without THP the block simply has small pages */
#endif
    return p;
}

void *pure_huge_alloc(void *user, size_t n)
{
    (void)user;
    return n >= PURE_HUGE_MIN ? huge_map(n) : malloc(n ? n : 1);
}

void pure_huge_free(void *user, void *p, size_t n)
{
    (void)user;
    if (p == NULL)
        return;
    if (n >= PURE_HUGE_MIN)
        munmap(p, huge_len(n));
    else
        free(p);
}

void *pure_huge_realloc(void *user, void *p, size_t old, size_t n)
{
    if (p == NULL)
        return pure_huge_alloc(user, n);
    if (old < PURE_HUGE_MIN && n < PURE_HUGE_MIN)
        return realloc(p, n ? n : 1);
    if (old >= PURE_HUGE_MIN && n >= PURE_HUGE_MIN && huge_len(n) == huge_len(old))
        return p; /* the mapping already covers it */
    void *q = pure_huge_alloc(user, n);
    if (q == NULL)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    pure_huge_free(user, p, old);
    return q;
}

void pure_settings_use_huge_pages(pure_settings *s)
{
    if (s == NULL)
        return;
    s->alloc = pure_huge_alloc;
    s->free = pure_huge_free;
    s->realloc = pure_huge_realloc;
    s->alloc_user = NULL;
}
