/* SPDX-License-Identifier: MIT */
/* alloc.h: the injected allocator every core module allocates through (no malloc in the core). */
#ifndef PURE_ALLOC_H
#define PURE_ALLOC_H

#include <stddef.h>

typedef struct pure_alloc {
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *p, size_t size);
    void *user;
    void *(*realloc)(void *user, void *p, size_t old_size, size_t new_size); /* may be NULL */
} pure_alloc;

static inline void *pure_mem_alloc(const pure_alloc *a, size_t n)
{
    return a->alloc(a->user, n);
}
static inline void pure_mem_free(const pure_alloc *a, void *p, size_t n)
{
    if (p)
        a->free(a->user, p, n);
}

/* Grows p (old bytes, may be NULL) to n bytes keeping its contents: in place through the
 * allocator's realloc when it has one, else alloc, copy, free. NULL on failure (p stays valid). */
void *pure_mem_realloc(const pure_alloc *a, void *p, size_t old, size_t n);

#endif
