/*
 * elf.c — read what the dynamic linker reads, without loading anything.
 *
 * The probe must predict dlopen and dlsym from the file alone, so this
 * reader works from the same structures ld.so uses: the program headers,
 * the PT_DYNAMIC segment (DT_SYMTAB, DT_STRTAB, DT_HASH/DT_GNU_HASH for the
 * symbol count, DT_SONAME, DT_FLAGS_1) and the dynamic relocations
 * (DT_RELA, DT_REL, DT_RELR). Section headers are not used: a stripped
 * library may lack them and ld.so never reads them.
 *
 * A profiler table is position-independent data: each non-NULL pointer in
 * it is written by a dynamic relocation at load time. So a slot of the
 * table is non-NULL exactly when a relocation targets it (or, for a
 * library that was linked without relocations there, its file bytes are
 * non-zero) — which lets the probe check the table as the loader does.
 *
 * The file is untrusted: every offset is bounds-checked before use.
 * Only the machine's own ELF class is read (ElfW from <link.h>); a file of
 * another class or architecture is refused as ld.so refuses it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__)
#define PT_EM EM_X86_64
#elif defined(__aarch64__)
#define PT_EM EM_AARCH64
#elif defined(__powerpc64__)
#define PT_EM EM_PPC64
#elif defined(__i386__)
#define PT_EM EM_386
#else
#define PT_EM 0 /* not checked */
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PT_ELFDATA ELFDATA2LSB
#else
#define PT_ELFDATA ELFDATA2MSB
#endif

#ifndef DT_RELR
#define DT_RELRSZ 35
#define DT_RELR 36
#endif
#ifndef DF_1_PIE
#define DF_1_PIE 0x08000000
#endif

struct pt_elf {
  const unsigned char* map;
  size_t size;
  const ElfW(Ehdr) * eh;
  const ElfW(Phdr) * ph;
  size_t phnum;
  const ElfW(Sym) * syms;
  size_t nsyms;
  const char* strtab;
  size_t strsz;
  const char* soname;
  /* Dynamic relocations, as file ranges. */
  const unsigned char* rela;
  size_t relasz;
  const unsigned char* rel;
  size_t relsz;
  const ElfW(Addr) * relr;
  size_t relrsz;
};

/* Pointer to len bytes at file offset off, or NULL when out of bounds. */
static const void* at(const pt_elf* e, uint64_t off, uint64_t len) {
  if (off > e->size || len > e->size - off) return NULL;
  return e->map + off;
}

/* File offset of a virtual address through the PT_LOAD segments; sets
 * *zero when the address is in a segment's zero-filled tail (.bss). */
static int vaddr_off(const pt_elf* e, uint64_t va, uint64_t* off, int* zero) {
  for (size_t i = 0; i < e->phnum; i++) {
    const ElfW(Phdr)* p = &e->ph[i];
    if (p->p_type != PT_LOAD || va < p->p_vaddr || va - p->p_vaddr >= p->p_memsz) continue;
    uint64_t d = va - p->p_vaddr;
    if (zero) *zero = d >= p->p_filesz;
    *off = p->p_offset + d;
    return 1;
  }
  return 0;
}

/* Structures are read in place: refuse misaligned ones (a corrupt file). */
static const void* aligned(const void* p, size_t al) {
  return p && ((uintptr_t)p % al) == 0 ? p : NULL;
}

static const void* at_vaddr(const pt_elf* e, uint64_t va, uint64_t len) {
  uint64_t off;
  int zero = 0;
  if (!vaddr_off(e, va, &off, &zero) || zero) return NULL;
  return at(e, off, len);
}

/* Number of dynamic symbols from a GNU hash table (ld.so has no count). */
static size_t gnu_hash_count(const pt_elf* e, uint64_t va) {
  const uint32_t* h = aligned(at_vaddr(e, va, 16), 4);
  if (!h) return 0;
  uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2];
  uint64_t buckets_off = 16 + (uint64_t)bloom * sizeof(ElfW(Addr));
  const uint32_t* buckets = aligned(at_vaddr(e, va + buckets_off, (uint64_t)nbuckets * 4), 4);
  if (!buckets) return 0;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (buckets[i] > last) last = buckets[i];
  if (last < symoffset) return symoffset;
  uint64_t chain_va = va + buckets_off + (uint64_t)nbuckets * 4;
  for (uint32_t i = last;; i++) {
    const uint32_t* c = aligned(at_vaddr(e, chain_va + (uint64_t)(i - symoffset) * 4, 4), 4);
    if (!c) return 0;
    if (*c & 1) return (size_t)i + 1;
    if (i - symoffset > (1u << 24)) return 0; /* corrupt */
  }
}

static void read_dynamic(pt_elf* e) {
  const ElfW(Dyn)* dyn = NULL;
  size_t ndyn = 0;
  for (size_t i = 0; i < e->phnum; i++) {
    if (e->ph[i].p_type != PT_DYNAMIC) continue;
    dyn = aligned(at(e, e->ph[i].p_offset, e->ph[i].p_filesz), sizeof(ElfW(Addr)));
    ndyn = dyn ? e->ph[i].p_filesz / sizeof *dyn : 0;
  }
  uint64_t symtab = 0, strtab = 0, strsz = 0, hash = 0, gnuhash = 0, soname = 0;
  uint64_t rela = 0, relasz = 0, rel = 0, relsz = 0, relr = 0, relrsz = 0;
  int have_soname = 0;
  for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
    uint64_t v = dyn[i].d_un.d_val;
    switch (dyn[i].d_tag) {
      case DT_SYMTAB: symtab = v; break;
      case DT_STRTAB: strtab = v; break;
      case DT_STRSZ: strsz = v; break;
      case DT_HASH: hash = v; break;
      case DT_GNU_HASH: gnuhash = v; break;
      case DT_SONAME: soname = v; have_soname = 1; break;
      case DT_RELA: rela = v; break;
      case DT_RELASZ: relasz = v; break;
      case DT_REL: rel = v; break;
      case DT_RELSZ: relsz = v; break;
      case DT_RELR: relr = v; break;
      case DT_RELRSZ: relrsz = v; break;
      default: break;
    }
  }
  e->strtab = strtab ? at_vaddr(e, strtab, strsz) : NULL;
  e->strsz = e->strtab ? strsz : 0;
  if (e->strtab && have_soname && soname < e->strsz &&
      memchr(e->strtab + soname, '\0', e->strsz - soname))
    e->soname = e->strtab + soname;
  size_t n = 0;
  if (hash) {
    const uint32_t* h = aligned(at_vaddr(e, hash, 8), 4);
    if (h) n = h[1]; /* nchain == number of symbols */
  } else if (gnuhash) {
    n = gnu_hash_count(e, gnuhash);
  }
  e->syms = (symtab && n) ? aligned(at_vaddr(e, symtab, (uint64_t)n * sizeof(ElfW(Sym))),
                                    sizeof(ElfW(Addr)))
                          : NULL;
  e->nsyms = e->syms ? n : 0;
  if (rela && relasz) {
    e->rela = at_vaddr(e, rela, relasz);
    e->relasz = e->rela ? relasz : 0;
  }
  if (rel && relsz) {
    e->rel = at_vaddr(e, rel, relsz);
    e->relsz = e->rel ? relsz : 0;
  }
  if (relr && relrsz) {
    e->relr = aligned(at_vaddr(e, relr, relrsz), sizeof(ElfW(Addr)));
    e->relrsz = e->relr ? relrsz : 0;
  }
}

static int is_pie(const pt_elf* e) {
  for (size_t i = 0; i < e->phnum; i++) {
    if (e->ph[i].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn)* dyn =
        aligned(at(e, e->ph[i].p_offset, e->ph[i].p_filesz), sizeof(ElfW(Addr)));
    size_t n = dyn ? e->ph[i].p_filesz / sizeof *dyn : 0;
    for (size_t k = 0; k < n && dyn[k].d_tag != DT_NULL; k++)
      if (dyn[k].d_tag == DT_FLAGS_1 && (dyn[k].d_un.d_val & DF_1_PIE)) return 1;
  }
  return 0;
}

/* A segment the dynamic linker maps that reaches a page wholly past the end
 * of the file: ld.so maps it anyway, and the first access to that page (the
 * relocations, the dynamic section) kills the process with SIGBUS. The rest
 * of the page that holds the end of the file reads as zeros, so a file cut
 * within its last page still loads, as with dlopen. */
static int truncated(const pt_elf* e, char* reason, size_t n) {
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t mapped = (e->size + page - 1) / page * page; /* readable bytes once mapped */
  for (size_t i = 0; i < e->phnum; i++) {
    const ElfW(Phdr)* p = &e->ph[i];
    if (p->p_type != PT_LOAD || p->p_filesz == 0) continue;
    const uint64_t end = (uint64_t)p->p_offset + p->p_filesz;
    if (end >= p->p_offset && end <= mapped) continue;
    snprintf(reason, n,
             "file is truncated: a segment ends at byte %llu, the file has %zu bytes (loading "
             "it would crash the process with SIGBUS); copy or build the plugin again",
             (unsigned long long)end, e->size);
    return 1;
  }
  return 0;
}

pt_outcome pt_elf_open(const char* path, pt_elf** out, char* reason, size_t n, int* wrong_arch) {
  *out = NULL;
  if (wrong_arch) *wrong_arch = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    snprintf(reason, n, "%s", strerror(err));
    return pt_classify_errno(err);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(reason, n, "%s", strerror(errno));
    close(fd);
    return PT_CAND_LOAD_ERROR;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(reason, n, "cannot read file data: Is a directory");
    close(fd);
    return PT_CAND_LOAD_ERROR;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(reason, n, "not a regular file");
    close(fd);
    return PT_CAND_LOAD_ERROR;
  }
  if ((size_t)st.st_size < sizeof(ElfW(Ehdr))) {
    snprintf(reason, n, "file too short (%lld bytes)", (long long)st.st_size);
    close(fd);
    return PT_CAND_NOT_ELF;
  }
  void* map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    snprintf(reason, n, "%s", strerror(err));
    return pt_classify_errno(err);
  }
  pt_elf* e = calloc(1, sizeof *e);
  if (!e) {
    munmap(map, (size_t)st.st_size);
    snprintf(reason, n, "out of memory");
    return PT_CAND_LOAD_ERROR;
  }
  e->map = map;
  e->size = (size_t)st.st_size;
  e->eh = (const ElfW(Ehdr)*)e->map;
  const unsigned char* id = e->eh->e_ident;
  pt_outcome o = PT_CAND_OK;
  if (memcmp(id, ELFMAG, SELFMAG) != 0) {
    snprintf(reason, n, "invalid ELF header (not an ELF file)");
    o = PT_CAND_NOT_ELF;
  } else if (id[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32)) {
    snprintf(reason, n, "wrong ELF class: ELFCLASS%d", id[EI_CLASS] == ELFCLASS32 ? 32 : 64);
    if (wrong_arch) *wrong_arch = 1;
    o = PT_CAND_LOAD_ERROR;
  } else if ((PT_EM && e->eh->e_machine != PT_EM) || id[EI_DATA] != PT_ELFDATA) {
    snprintf(reason, n, "ELF file for another machine (e_machine %u)", e->eh->e_machine);
    if (wrong_arch) *wrong_arch = 1;
    o = PT_CAND_LOAD_ERROR;
  } else if (e->eh->e_type == ET_EXEC) {
    snprintf(reason, n, "cannot dynamically load executable");
    o = PT_CAND_LOAD_ERROR;
  } else if (e->eh->e_type != ET_DYN) {
    snprintf(reason, n, "only ET_DYN and ET_EXEC can be loaded");
    o = PT_CAND_LOAD_ERROR;
  } else if (e->eh->e_phentsize != sizeof(ElfW(Phdr)) ||
             !(e->ph = aligned(at(e, e->eh->e_phoff,
                                  (uint64_t)e->eh->e_phnum * sizeof(ElfW(Phdr))),
                               sizeof(ElfW(Addr))))) {
    snprintf(reason, n, "ELF file's program headers are invalid");
    o = PT_CAND_LOAD_ERROR;
  } else {
    e->phnum = e->eh->e_phnum;
    if (is_pie(e)) {
      snprintf(reason, n, "cannot dynamically load position-independent executable");
      o = PT_CAND_LOAD_ERROR;
    } else if (truncated(e, reason, n)) {
      o = PT_CAND_LOAD_ERROR;
    }
  }
  if (o != PT_CAND_OK) {
    pt_elf_close(e);
    return o;
  }
  read_dynamic(e);
  *out = e;
  return PT_CAND_OK;
}

const char* pt_elf_soname(const pt_elf* e) { return e ? e->soname : NULL; }

/* Slot bits of [va, va + len) written by a relocation at `off`. */
static void mark(uint64_t off, uint64_t va, uint64_t len, unsigned* bits) {
  if (off >= va && off - va < len && (off - va) % sizeof(void*) == 0)
    *bits |= 1u << ((off - va) / sizeof(void*));
}

static int sym_undef_weak(const pt_elf* e, uint64_t idx) {
  if (!idx || idx >= e->nsyms) return 0;
  const ElfW(Sym)* s = &e->syms[idx];
  return s->st_shndx == SHN_UNDEF && ELF64_ST_BIND(s->st_info) == STB_WEAK;
}

static unsigned relocated_slots(const pt_elf* e, uint64_t va, uint64_t len) {
  unsigned bits = 0;
#if __SIZEOF_POINTER__ == 8
#define PT_R_SYM ELF64_R_SYM
#define PT_R_TYPE ELF64_R_TYPE
#else
#define PT_R_SYM ELF32_R_SYM
#define PT_R_TYPE ELF32_R_TYPE
#endif
  for (size_t i = 0; e->rela && i + sizeof(ElfW(Rela)) <= e->relasz; i += sizeof(ElfW(Rela))) {
    ElfW(Rela) r;
    memcpy(&r, e->rela + i, sizeof r);
    if (PT_R_TYPE(r.r_info) == 0 || sym_undef_weak(e, PT_R_SYM(r.r_info))) continue;
    mark(r.r_offset, va, len, &bits);
  }
  for (size_t i = 0; e->rel && i + sizeof(ElfW(Rel)) <= e->relsz; i += sizeof(ElfW(Rel))) {
    ElfW(Rel) r;
    memcpy(&r, e->rel + i, sizeof r);
    if (PT_R_TYPE(r.r_info) == 0 || sym_undef_weak(e, PT_R_SYM(r.r_info))) continue;
    mark(r.r_offset, va, len, &bits);
  }
  /* RELR: an even entry is an address; an odd one a bitmap of the next
   * 8*sizeof(Addr)-1 words after the last address. */
  uint64_t where = 0;
  for (size_t i = 0; e->relr && i < e->relrsz / sizeof(ElfW(Addr)); i++) {
    ElfW(Addr) x = e->relr[i];
    if ((x & 1) == 0) {
      mark(x, va, len, &bits);
      where = x + sizeof(ElfW(Addr));
    } else {
      for (unsigned b = 1; b < 8 * sizeof(ElfW(Addr)); b++)
        if ((x >> b) & 1) mark(where + (b - 1) * sizeof(ElfW(Addr)), va, len, &bits);
      where += (8 * sizeof(ElfW(Addr)) - 1) * sizeof(ElfW(Addr));
    }
  }
  return bits;
}

int pt_elf_symbol(const pt_elf* e, const char* name, pt_sym* out) {
  memset(out, 0, sizeof *out);
  if (!e || !e->syms || !e->strtab) return 0;
  for (size_t i = 1; i < e->nsyms; i++) {
    const ElfW(Sym)* s = &e->syms[i];
    if (s->st_name >= e->strsz || strcmp(e->strtab + s->st_name, name) != 0) continue;
    if (s->st_shndx == SHN_UNDEF) continue;
    int bind = ELF64_ST_BIND(s->st_info);
    int vis = ELF64_ST_VISIBILITY(s->st_other);
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
    if (vis == STV_HIDDEN || vis == STV_INTERNAL) continue;
    out->found = 1;
    out->is_object = ELF64_ST_TYPE(s->st_info) == STT_OBJECT;
    out->size = s->st_size;
    if (out->is_object) {
      uint64_t len = s->st_size < PT_TABLE_SLOTS * sizeof(void*) ? s->st_size
                                                                 : PT_TABLE_SLOTS * sizeof(void*);
      out->nonnull = relocated_slots(e, s->st_value, len);
      /* Slots with no relocation hold their file bytes (zero if in .bss). */
      for (unsigned k = 0; k < len / sizeof(void*); k++) {
        if (out->nonnull & (1u << k)) continue;
        const unsigned char* b = at_vaddr(e, s->st_value + k * sizeof(void*), sizeof(void*));
        static const unsigned char zeros[sizeof(void*)];
        if (b && memcmp(b, zeros, sizeof(void*)) != 0) out->nonnull |= 1u << k;
      }
    }
    return 1;
  }
  return 0;
}

void pt_elf_close(pt_elf* e) {
  if (!e) return;
  munmap((void*)e->map, e->size);
  free(e);
}
