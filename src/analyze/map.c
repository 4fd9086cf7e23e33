/*
 * map.c — a hash index from 64-bit keys to chains of items.
 *
 * Items are numbered 0, 1, 2, … by the caller (indices into its own
 * array); the index keeps, per distinct key, the first item, and per item
 * the next one with the same key. Open addressing with linear probing;
 * the table doubles at half load. Keys are mixes of tuples (an_mix), so
 * the caller compares the tuple when it walks a chain.
 */
#include <string.h>

#include "analyze/internal.h"

#define EMPTY_HEAD (-1)

uint64_t an_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

static size_t slot_of(uint64_t key, size_t cap) { return (size_t)(an_mix(key, 0x51ed) & (cap - 1)); }

static int rehash(an_mem* m, an_map* map, size_t cap) {
  uint64_t* keys = an_alloc(m, cap * sizeof *keys);
  int32_t* heads = an_alloc(m, cap * sizeof *heads);
  if (!keys || !heads) {
    an_free(m, keys);
    an_free(m, heads);
    return -1;
  }
  for (size_t i = 0; i < cap; i++) heads[i] = EMPTY_HEAD;
  for (size_t i = 0; i < map->cap; i++) {
    if (map->heads[i] == EMPTY_HEAD) continue;
    size_t s = slot_of(map->keys[i], cap);
    while (heads[s] != EMPTY_HEAD) s = (s + 1) & (cap - 1);
    keys[s] = map->keys[i];
    heads[s] = map->heads[i];
  }
  an_free(m, map->keys);
  an_free(m, map->heads);
  map->keys = keys;
  map->heads = heads;
  map->cap = cap;
  return 0;
}

int an_map_init(an_mem* m, an_map* map, size_t expect) {
  memset(map, 0, sizeof *map);
  size_t cap = 16;
  while (cap < expect * 2) cap *= 2;
  return rehash(m, map, cap);
}

void an_map_free(an_mem* m, an_map* map) {
  an_free(m, map->keys);
  an_free(m, map->heads);
  an_free(m, map->next);
  memset(map, 0, sizeof *map);
}

int an_map_add(an_mem* m, an_map* map, uint64_t key, int32_t item) {
  if ((map->used + 1) * 2 > map->cap && rehash(m, map, map->cap * 2) != 0) return -1;
  if ((size_t)item >= map->items_cap) {
    size_t nc = map->items_cap ? map->items_cap * 2 : 64;
    while (nc <= (size_t)item) nc *= 2;
    int32_t* nn = an_realloc(m, map->next, nc * sizeof *nn);
    if (!nn) return -1;
    map->next = nn;
    map->items_cap = nc;
  }
  if ((size_t)item >= map->n_items) map->n_items = (size_t)item + 1;
  size_t s = slot_of(key, map->cap);
  while (map->heads[s] != EMPTY_HEAD && map->keys[s] != key) s = (s + 1) & (map->cap - 1);
  if (map->heads[s] == EMPTY_HEAD) {
    map->keys[s] = key;
    map->heads[s] = item;
    map->next[item] = -1;
    map->used++;
    return 0;
  }
  /* Append at the chain's end, so chains keep the order items came in. */
  int32_t i = map->heads[s];
  while (map->next[i] >= 0) i = map->next[i];
  map->next[i] = item;
  map->next[item] = -1;
  return 0;
}

int32_t an_map_first(const an_map* map, uint64_t key) {
  if (!map->cap) return -1;
  size_t s = slot_of(key, map->cap);
  while (map->heads[s] != EMPTY_HEAD) {
    if (map->keys[s] == key) return map->heads[s];
    s = (s + 1) & (map->cap - 1);
  }
  return -1;
}

uint64_t an_mix_str(const char* s) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (; *s; s++) h = an_mix(h, (unsigned char)*s);
  return h;
}
