/*
 * order.c — the print order of a dump (order.h).
 *
 * The key. Every field of "<hash:count:id>" is its decimal text, one nibble
 * per character ('-' 1, '0'..'9' 2..11), padded to 20 nibbles with 15: in
 * the string, a field that is a prefix of the other's is followed by ':' or
 * '>', both above every digit and '-', and the pad above them does the same,
 * so the keys' unsigned order is the strings' byte order. The nibbles come
 * from the integer two digits at a time.
 *
 * The sort. A least-significant-digit radix sort, one byte per pass, over
 * the bytes that differ between keys only: in a dump the commHash is
 * usually one value and opCount and the op id are short numbers whose pads
 * agree, so a few of the 30 bytes vary. Those bytes are gathered, up to
 * eight at a time, into one 64-bit word per key, and sorted paired with the
 * key's position; each pass is stable, so equal keys keep their position
 * order, and each group of eight bytes is sorted starting from the order
 * the less significant groups left. The work is linear in the records (a
 * comparison sort of 100 000 keys compared 240-bit keys 1.7 million times).
 */
#include "trace/order.h"

#include <string.h>

#include "trace/numfmt.h"

__extension__ typedef unsigned __int128 u128;

/* One field as 20 nibbles (80 bits): its characters, then the pad. */
static u128 field_code(uint64_t mag, int neg) {
  if (mag < 10 && !neg) /* one digit: ids, small opCounts */
    return (u128)(mag + 2) << 76 | (((u128)1 << 76) - 1);
  if (mag < 10000000) { /* at most 8 characters with the '-': 32 bits, from the digits' word */
    const unsigned nd = pt_num_digits(mag);
    /* each digit byte + 2 ('0' becomes 2), the first digit in the top byte */
    uint64_t x = __builtin_bswap64((pt_digits8((uint32_t)mag) - 0x2e2e2e2e2e2e2e2eull) >> (8 * (8 - nd)));
    x = (x | x >> 4) & 0x00ff00ff00ff00ffull; /* byte pairs into one byte each */
    x = (x | x >> 8) & 0x0000ffff0000ffffull;
    x = (x | x >> 16) & 0xffffffffull; /* the nd nibbles at the top of 32 bits */
    unsigned chars = nd;
    if (neg) {
      x = 1u << 28 | x >> 4;
      chars++;
    }
    x |= (1ull << (4 * (8 - chars))) - 1; /* the pad */
    return (u128)x << 48 | (((u128)1 << 48) - 1);
  }
  u128 f = 0;
  unsigned sh = 0;
  while (mag >= 100) {
    const unsigned r = (unsigned)(mag % 100);
    mag /= 100;
    f |= (u128)((r / 10 + 2) << 4 | (r % 10 + 2)) << sh;
    sh += 8;
  }
  if (mag >= 10) {
    f |= (u128)((unsigned)(mag / 10 + 2) << 4 | (unsigned)(mag % 10 + 2)) << sh;
    sh += 8;
  } else {
    f |= (u128)(mag + 2) << sh;
    sh += 4;
  }
  if (neg) {
    f |= (u128)1 << sh;
    sh += 4;
  }
  /* sh / 4 characters (at most 20), first one most significant */
  const unsigned pad = 80 - sh;
  return pad ? f << pad | (((u128)1 << pad) - 1) : f;
}

static u128 signed_code(int64_t v) { return v < 0 ? field_code(0 - (uint64_t)v, 1) : field_code((uint64_t)v, 0); }

void pt_order_key_make(pt_order_key* k, const pt_rec_view* v, pt_order_cache* cache) {
  if (!cache->set || cache->hash != v->comm_hash) {
    const u128 a = field_code(v->comm_hash, 0);
    cache->hash = v->comm_hash;
    cache->w0 = (uint64_t)(a >> 16);
    cache->w1 = (uint64_t)(a & 0xffff) << 48;
    cache->set = 1;
  }
  const u128 b = signed_code(v->op_count), c = signed_code(v->op_id);
  /* 3 x 80 bits, most significant first, into 4 x 64 */
  k->w[0] = cache->w0;
  k->w[1] = cache->w1 | (uint64_t)(b >> 32);
  k->w[2] = (uint64_t)(b & 0xffffffffu) << 32 | (uint64_t)(c >> 48);
  k->w[3] = (uint64_t)(c & 0xffffffffffffull) << 16;
}

/* The byte at position `pos` (0: most significant of w[0] .. 31). */
static inline unsigned key_byte(const pt_order_key* k, unsigned pos) {
  return (unsigned)(k->w[pos >> 3] >> (56 - 8 * (pos & 7))) & 0xffu;
}

size_t pt_order_scratch_bytes(size_t n) { return n * (2 * sizeof(uint64_t) + sizeof(uint32_t)); }

void pt_order_sort(const pt_order_key* k, size_t n, uint32_t* ord, void* scratch) {
  if (n < 2) return;
  /* the bytes that vary, most significant first */
  uint64_t diff[4] = {0, 0, 0, 0};
  for (size_t i = 1; i < n; i++)
    for (int w = 0; w < 4; w++) diff[w] |= k[i].w[w] ^ k[0].w[w];
  unsigned pos[32], npos = 0;
  for (unsigned p = 0; p < 32; p++)
    if ((diff[p >> 3] >> (56 - 8 * (p & 7))) & 0xffu) pos[npos++] = p;
  if (!npos) return;
  uint64_t* key = scratch;
  uint64_t* key2 = key + n;
  uint32_t* tmp = (uint32_t*)(key2 + n);
  uint32_t* idx = ord;
  uint32_t count[8][256];
  /* groups of up to 8 bytes, least significant group first */
  for (unsigned end = npos; end > 0;) {
    const unsigned start = end > 8 ? end - 8 : 0, nb = end - start;
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
      const pt_order_key* ki = &k[idx[i]];
      uint64_t g = 0;
      for (unsigned b = start; b < end; b++) g = g << 8 | key_byte(ki, pos[b]);
      key[i] = g;
      for (unsigned b = 0; b < nb; b++) count[b][(g >> (8 * b)) & 0xff]++;
    }
    for (unsigned b = 0; b < nb; b++) {
      uint32_t* c = count[b];
      uint32_t sum = 0;
      for (int v = 0; v < 256; v++) {
        const uint32_t t = c[v];
        c[v] = sum;
        sum += t;
      }
      for (size_t i = 0; i < n; i++) {
        const uint32_t o = c[(key[i] >> (8 * b)) & 0xff]++;
        key2[o] = key[i];
        tmp[o] = idx[i];
      }
      uint64_t* ks = key;
      key = key2;
      key2 = ks;
      uint32_t* is = idx;
      idx = tmp;
      tmp = is;
    }
    end = start;
  }
  if (idx != ord) memcpy(ord, idx, n * sizeof *ord);
}
