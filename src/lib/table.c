/* SPDX-License-Identifier: MIT */
/* table.c: the open-addressing hash table of pointers (table.h). */
#include <string.h>

#include "pure.h"
#include "table.h"

void pure_table_init(pure_table *t, uint64_t (*key_of)(const void *item),
                     uint32_t (*hash)(uint64_t key))
{
    memset(t, 0, sizeof *t);
    t->key_of = key_of;
    t->hash = hash;
}

void pure_table_free(pure_table *t, const pure_alloc *a)
{
    pure_mem_free(a, t->slot, t->cap * sizeof *t->slot);
    t->slot = NULL;
    t->cap = t->used = 0;
}

static uint32_t home(const pure_table *t, const void *item, uint32_t cap)
{
    return t->hash(t->key_of(item)) & (cap - 1);
}

/* Puts item in the first empty slot of its probe run (there is one: the table is half empty). */
static void place(const pure_table *t, void **slot, uint32_t cap, void *item)
{
    uint32_t j = home(t, item, cap);
    while (slot[j])
        j = (j + 1) & (cap - 1);
    slot[j] = item;
}

int pure_table_reserve(pure_table *t, const pure_alloc *a)
{
    if ((uint64_t)(t->used + 1) * 2 <= t->cap)
        return 0;
    if (t->cap > UINT32_MAX / 2)
        return PURE_ENOMEM;
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    void **s = pure_mem_alloc(a, (size_t)cap * sizeof *s);
    if (!s)
        return PURE_ENOMEM;
    memset(s, 0, (size_t)cap * sizeof *s);
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slot[i])
            place(t, s, cap, t->slot[i]);
    pure_mem_free(a, t->slot, t->cap * sizeof *t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

int pure_table_add(pure_table *t, const pure_alloc *a, void *item)
{
    if (pure_table_reserve(t, a))
        return PURE_ENOMEM;
    place(t, t->slot, t->cap, item);
    t->used++;
    return 0;
}

void *pure_table_find(const pure_table *t, uint64_t key, int (*match)(const void *item, void *arg),
                      void *arg)
{
    if (!t->cap)
        return NULL;
    uint32_t mask = t->cap - 1;
    for (uint32_t j = t->hash(key) & mask; t->slot[j]; j = (j + 1) & mask) {
        void *it = t->slot[j];
        if (t->key_of(it) == key && (!match || match(it, arg)))
            return it;
    }
    return NULL;
}

int pure_table_remove(pure_table *t, const void *item)
{
    if (!t->cap)
        return 0;
    uint32_t mask = t->cap - 1, j = home(t, item, t->cap);
    while (t->slot[j] && t->slot[j] != item)
        j = (j + 1) & mask;
    if (!t->slot[j])
        return 0;
    t->slot[j] = NULL;
    t->used--;
    /* backward-shift deletion: re-place the rest of the run so no probe meets a false gap */
    for (uint32_t k = (j + 1) & mask; t->slot[k]; k = (k + 1) & mask) {
        void *it = t->slot[k];
        t->slot[k] = NULL;
        place(t, t->slot, t->cap, it);
    }
    return 1;
}
