/* SPDX-License-Identifier: MIT */
#include "talloc.h"

#include <stdlib.h>

long t_live;
int t_size_mismatch;
int t_fail;

void *t_alloc(void *user, size_t n)
{
    (void)user;
    if (t_fail)
        return NULL;
    size_t *p = malloc(n + sizeof(size_t));
    if (!p)
        return NULL;
    *p = n;
    t_live++;
    return p + 1;
}

void t_free(void *user, void *q, size_t n)
{
    (void)user;
    size_t *p = (size_t *)q - 1;
    if (*p != n)
        t_size_mismatch++;
    t_live--;
    free(p);
}
