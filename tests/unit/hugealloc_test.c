/* SPDX-License-Identifier: MIT */
/* hugealloc_test.c: the huge-page allocator of the I/O layer (src/io/hugealloc.c): small blocks
 * through malloc, large ones as 2 MiB-aligned mappings advised for transparent huge pages (the
 * kernel's smaps says so when THP is enabled), contents kept across every kind of growth and
 * shrink, and a whole transfer in the simulator with a context that allocates through it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pure_loop.h"
#include "sim/sim_app.h"
#include "test.h"

#define MIB ((size_t)1 << 20)

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 13 + seed + (i >> 12));
}

static int holds(const uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(i * 13 + seed + (i >> 12)))
            return 0;
    return 1;
}

static void test_small_blocks(void)
{
    uint8_t *p = pure_huge_alloc(NULL, 1000);
    CHECK(p != NULL);
    fill(p, 1000, 1);
    p = pure_huge_realloc(NULL, p, 1000, 100000); /* still below PURE_HUGE_MIN */
    CHECK(p != NULL && holds(p, 1000, 1));
    pure_huge_free(NULL, p, 100000);
    pure_huge_free(NULL, NULL, 5);            /* harmless */
    p = pure_huge_realloc(NULL, NULL, 0, 64); /* NULL grows like alloc */
    CHECK(p != NULL);
    pure_huge_free(NULL, p, 64);
}

/* A busy link's ring of 256 KiB to 1 MiB (send_queue 256 KiB plus what is in flight) stays with
 * malloc: as a mapping of its own each took a whole zeroed 2 MiB huge page, and 1,000 links
 * draining at once into one server cost their client 2 GB and 8.5 s of system time in page
 * clearing (bench/README.md, "Fan-in"). The huge path returns 2 MiB-aligned blocks; malloc's
 * never are (its chunks start 16 bytes into a page). */
static void test_link_rings_stay_small(void)
{
    for (size_t n = 256 << 10; n < 2 * MIB; n *= 2) {
        uint8_t *p = pure_huge_alloc(NULL, n);
        CHECK(p != NULL && (uintptr_t)p % (2 * MIB) != 0);
        fill(p, n, 7);
        CHECK(holds(p, n, 7));
        pure_huge_free(NULL, p, n);
    }
}

/* 1 if smaps marks the mapping holding p THP-eligible ("THPeligible: 1"), 0 if not, -1 if it
 * cannot tell. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[256];
    int in = 0, r = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
            continue;
        }
        int v;
        if (in && sscanf(line, "THPeligible: %d", &v) == 1) {
            r = v;
            break;
        }
    }
    fclose(f);
    return r;
}

static int thp_enabled(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    char buf[128] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "[always]") != NULL || strstr(buf, "[madvise]") != NULL;
}

static void test_large_blocks(void)
{
    size_t n = PURE_HUGE_MIN; /* the smallest large block */
    uint8_t *p = pure_huge_alloc(NULL, n);
    CHECK(p != NULL);
    CHECK_EQ((uintptr_t)p % (2 * MIB), 0);
    fill(p, n, 2);
    if (thp_enabled())
        CHECK_EQ(thp_eligible(p), 1);
    else
        fprintf(stderr, "note: transparent huge pages are off here: eligibility not checked\n");
    /* small to large: copied into a mapping */
    uint8_t *s = pure_huge_alloc(NULL, 4096);
    fill(s, 4096, 3);
    s = pure_huge_realloc(NULL, s, 4096, 3 * MIB);
    CHECK(s != NULL && (uintptr_t)s % (2 * MIB) == 0 && holds(s, 4096, 3));
    fill(s, 3 * MIB, 4); /* every byte of the rounded-up request is writable */
    /* growing within the same 2 MiB-rounded mapping keeps the block where it is */
    uint8_t *q = pure_huge_realloc(NULL, p, n, 2 * MIB);
    CHECK(q == p && holds(q, n, 2));
    fill(q, 2 * MIB, 5);
    /* past it: a new mapping, contents copied */
    uint8_t *r = pure_huge_realloc(NULL, q, 2 * MIB, 8 * MIB);
    CHECK(r != NULL && (uintptr_t)r % (2 * MIB) == 0 && holds(r, 2 * MIB, 5));
    fill(r + 2 * MIB, 6 * MIB, 6);
    /* and back down below PURE_HUGE_MIN: malloc'd, the head kept */
    uint8_t *t = pure_huge_realloc(NULL, r, 8 * MIB, 1000);
    CHECK(t != NULL && holds(t, 1000, 5));
    pure_huge_free(NULL, t, 1000);
    pure_huge_free(NULL, s, 3 * MIB);
    /* an absurd size fails cleanly */
    CHECK(pure_huge_alloc(NULL, SIZE_MAX - 4096) == NULL);
}

static void huge(pure_settings *s, int server)
{
    (void)server;
    pure_settings_use_huge_pages(s);
}

/* A context allocating through it moves a stream intact (the send ring grows through the huge
 * threshold and past one 2 MiB page). */
static void test_link_uses_it(void)
{
    pure_settings s;
    pure_settings_default(&s);
    pure_settings_use_huge_pages(&s);
    CHECK(s.alloc == pure_huge_alloc && s.free == pure_huge_free && s.realloc == pure_huge_realloc);
    sim_app *a = sim_app_new(5, 6000, 1000, 1200, huge);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    CHECK(sim_app_run(a, 120ull * 1000000000));
    CHECK_EQ(a->received, 6000);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

int main(void)
{
    RUN(test_small_blocks);
    RUN(test_link_rings_stay_small);
    RUN(test_large_blocks);
    RUN(test_link_uses_it);
    return pure_test_finish();
}
