/* SPDX-License-Identifier: MIT */
/* table.h: a hash table of pointers keyed by a 64-bit key the item itself holds (read through a
 * callback, so an item costs one slot and no stored key): open addressing, linear probing,
 * backward-shift deletion, and doubling growth that keeps it at most half full. The context
 * keeps its links by local index and its unvalidated responder links by INIT tag in two. */
#ifndef PURE_TABLE_H
#define PURE_TABLE_H

#include <stdint.h>

#include "alloc.h"

typedef struct pure_table {
    void **slot;                          /* cap entries, NULL when empty */
    uint32_t cap;                         /* a power of two, 0 before the first add */
    uint32_t used;                        /* items held */
    uint64_t (*key_of)(const void *item); /* the item's key; must not change while it is held */
    uint32_t (*hash)(uint64_t key);       /* mixes the key; the table keeps its low bits */
} pure_table;

/* Makes t an empty table (no memory) reading keys through key_of and mixing them with hash. */
void pure_table_init(pure_table *t, uint64_t (*key_of)(const void *item),
                     uint32_t (*hash)(uint64_t key));
/* Frees the slots (not the items) and leaves t empty, ready for reuse. */
void pure_table_free(pure_table *t, const pure_alloc *a);
/* Makes room for one more item: doubles the slots (64 at first) if adding one would make the
 * table more than half full. Returns 0, or PURE_ENOMEM (the table is unchanged). */
int pure_table_reserve(pure_table *t, const pure_alloc *a);
/* Adds item (not NULL, not already held; duplicate keys are allowed) after pure_table_reserve.
 * Returns 0, or PURE_ENOMEM if room could not be made (the table is unchanged). */
int pure_table_add(pure_table *t, const pure_alloc *a, void *item);
/* The first item, in probe order, whose key is key and for which match(item, arg) is non-zero
 * (match NULL: any item with that key); NULL if none. */
void *pure_table_find(const pure_table *t, uint64_t key, int (*match)(const void *item, void *arg),
                      void *arg);
/* Removes item (compared by address) and re-places the rest of its probe run so every other item
 * stays findable. Returns 1 if it was held, 0 if not. */
int pure_table_remove(pure_table *t, const void *item);
/* The item in slot i (i < t->cap), NULL if the slot is empty: for walks over every item. Adding
 * may grow and reorder the slots; removing may move later items of a run to earlier slots. */
static inline void *pure_table_at(const pure_table *t, uint32_t i)
{
    return t->slot[i];
}

#endif
