/* SPDX-License-Identifier: MIT */
/* talloc.h: a counting test allocator for the core's injected-allocator interface: it counts
 * live blocks, checks every free is given the size that was allocated, and fails on demand. */
#ifndef PURE_TALLOC_H
#define PURE_TALLOC_H

#include <stddef.h>

extern long t_live;           /* blocks allocated and not yet freed */
extern int t_size_mismatch;   /* frees whose size differed from the allocation's */
extern int t_fail;            /* non-zero: every allocation fails */
extern unsigned t_fail_every; /* non-zero: every t_fail_every-th call fails (counted in t_calls) */
extern unsigned long t_calls;

void *t_alloc(void *user, size_t n);
void t_free(void *user, void *p, size_t n);

#endif
