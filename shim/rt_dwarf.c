/* rt_dwarf.c - file:line for a code address, from an ELF object's DWARF
 * line tables (.debug_line, versions 2 to 5), without addr2line.
 *
 * Pure: works on section bytes handed in by the caller (rt_stack.c maps the
 * object's file); the unit test tests/unit/test_log_dwarf.c compiles this
 * file and looks up addresses of its own executable.
 *
 * Robustness contract: the input is untrusted file content. Every read is
 * bounds-checked against its section; anything unexpected (an unknown form,
 * a length past the end, a compressed section) ends the lookup with "not
 * found". It never allocates.
 *
 * Method: run every line-number program's state machine and keep the row
 * (file, line) whose address range [row, next row) of one sequence contains
 * the address; then re-read that unit's header for the file's name.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rt_internal.h"

typedef struct cur {
  const uint8_t *p, *end;
  bool bad;
} cur;

static uint64_t rd(cur *c, int n) {
  if (c->bad || c->end - c->p < n) {
    c->bad = true;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)c->p[i] << (8 * i);   /* little endian */
  c->p += n;
  return v;
}

static uint64_t uleb(cur *c) {
  uint64_t v = 0;
  for (int shift = 0; !c->bad; shift += 7) {
    uint64_t b = rd(c, 1);
    if (shift < 64) v |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

static int64_t sleb(cur *c) {
  int64_t v = 0;
  int shift = 0;
  uint64_t b;
  do {
    b = rd(c, 1);
    if (shift < 64) v |= (int64_t)((b & 0x7f) << shift);
    shift += 7;
  } while ((b & 0x80) && !c->bad);
  if (shift < 64 && (b & 0x40)) v = (int64_t)((uint64_t)v | (~(uint64_t)0 << shift));
  return v;
}

static const char *cstr(cur *c) {
  const uint8_t *z = c->bad ? NULL : memchr(c->p, 0, (size_t)(c->end - c->p));
  if (!z) {
    c->bad = true;
    return "";
  }
  const char *s = (const char *)c->p;
  c->p = z + 1;
  return s;
}

/* A string at offset off of a string section, or "" (and bad). */
static const char *str_at(const uint8_t *sec, size_t size, uint64_t off, cur *c) {
  if (!sec || off >= size || !memchr(sec + off, 0, size - off)) {
    c->bad = true;
    return "";
  }
  return (const char *)sec + off;
}

/* DWARF forms used in v5 directory/file entry formats. */
enum {
  F_block = 0x09, F_data1 = 0x0b, F_data2 = 0x05, F_data4 = 0x06, F_data8 = 0x07,
  F_data16 = 0x1e, F_string = 0x08, F_strp = 0x0e, F_line_strp = 0x1f, F_udata = 0x0f,
  F_strx = 0x1a, F_strx1 = 0x25, F_strx2 = 0x26, F_strx4 = 0x28,
};

/* Read one attribute value; strings come back in *s, numbers in the result. */
static uint64_t form_value(cur *c, uint64_t form, int offsz, const a2a_rt_dwarf *d,
                           const char **s) {
  *s = NULL;
  switch (form) {
  case F_string: *s = cstr(c); return 0;
  case F_line_strp: *s = str_at(d->line_str, d->line_str_size, rd(c, offsz), c); return 0;
  case F_strp: *s = str_at(d->str, d->str_size, rd(c, offsz), c); return 0;
  case F_udata: return uleb(c);
  case F_data1: return rd(c, 1);
  case F_data2: return rd(c, 2);
  case F_data4: return rd(c, 4);
  case F_data8: return rd(c, 8);
  case F_data16: rd(c, 8); rd(c, 8); return 0;
  case F_block: {
    uint64_t n = uleb(c);
    if ((uint64_t)(c->end - c->p) < n) c->bad = true;
    else c->p += n;
    return 0;
  }
  default: c->bad = true; return 0;   /* strx needs .debug_str_offsets: give up */
  }
}

typedef struct hdr {
  int version, offsz;
  unsigned min_inst, line_range, opcode_base;
  int line_base;
  const uint8_t *std_lens;      /* opcode_base - 1 lengths */
  cur tables;                   /* directory and file tables */
  cur prog;                     /* the line-number program */
} hdr;

/* Parse the header of the unit at c->p; advances c past the unit. */
static bool read_header(cur *c, hdr *h) {
  uint64_t len = rd(c, 4);
  h->offsz = 4;
  if (len == 0xffffffffu) {
    len = rd(c, 8);
    h->offsz = 8;
  }
  if (c->bad || len > (uint64_t)(c->end - c->p)) return false;
  cur u = {c->p, c->p + len, false};
  c->p += len;
  h->version = (int)rd(&u, 2);
  if (h->version < 2 || h->version > 5) return false;
  if (h->version >= 5) {
    if (rd(&u, 1) != 8) return false;   /* address size: 64-bit objects only */
    rd(&u, 1);                          /* segment selector size */
  }
  uint64_t hlen = rd(&u, h->offsz);
  if (u.bad || hlen > (uint64_t)(u.end - u.p)) return false;
  h->prog = (cur){u.p + hlen, u.end, false};
  u.end = u.p + hlen;
  h->min_inst = (unsigned)rd(&u, 1);
  if (h->version >= 4) rd(&u, 1);       /* max ops per instruction (VLIW) */
  rd(&u, 1);                            /* default_is_stmt */
  h->line_base = (int8_t)rd(&u, 1);
  h->line_range = (unsigned)rd(&u, 1);
  h->opcode_base = (unsigned)rd(&u, 1);
  if (u.bad || h->line_range == 0 || h->opcode_base == 0 ||
      (uint64_t)(u.end - u.p) < h->opcode_base - 1)
    return false;
  h->std_lens = u.p;
  u.p += h->opcode_base - 1;
  h->tables = u;
  return true;
}

/* The name of file number idx in the unit's tables. */
static const char *file_name(const hdr *h, uint64_t idx, const a2a_rt_dwarf *d) {
  cur t = h->tables;
  if (h->version < 5) {
    while (!t.bad && *cstr(&t)) {}      /* include_directories */
    for (uint64_t i = 1; !t.bad; i++) {
      const char *name = cstr(&t);
      if (!*name) break;
      uleb(&t), uleb(&t), uleb(&t);     /* dir, mtime, length */
      if (i == idx && !t.bad) return name;
    }
    return NULL;
  }
  /* v5: entry formats, then entries; directories first. */
  for (int table = 0; table < 2; table++) {
    uint64_t fmt[16][2];
    unsigned nfmt = (unsigned)rd(&t, 1);
    if (nfmt > 16) return NULL;
    for (unsigned i = 0; i < nfmt; i++) fmt[i][0] = uleb(&t), fmt[i][1] = uleb(&t);
    uint64_t n = uleb(&t);
    for (uint64_t e = 0; e < n && !t.bad; e++) {
      const char *path = NULL;
      for (unsigned i = 0; i < nfmt; i++) {
        const char *s;
        form_value(&t, fmt[i][1], h->offsz, d, &s);
        if (fmt[i][0] == 1 /* DW_LNCT_path */) path = s;
      }
      if (table == 1 && e == idx && !t.bad) return path;
    }
    if (t.bad) return NULL;
  }
  return NULL;
}

bool a2a_rt_dwarf_lookup(const a2a_rt_dwarf *d, uint64_t addr, const char **file,
                         unsigned *line) {
  cur c = {d->line, d->line + d->line_size, false};
  while (d->line && c.p < c.end && !c.bad) {
    hdr h;
    if (!read_header(&c, &h)) return false;
    cur p = h.prog;
    uint64_t a = 0, fileno = 1, ln = 1;
    uint64_t pa = 0, pfile = 0, pln = 0;
    bool prev = false;
    while (p.p < p.end && !p.bad) {
      unsigned op = (unsigned)rd(&p, 1);
      bool emit = false, end_seq = false;
      if (op >= h.opcode_base) {
        unsigned adj = op - h.opcode_base;
        a += (uint64_t)(adj / h.line_range) * h.min_inst;
        ln += (uint64_t)(int64_t)(h.line_base + (int)(adj % h.line_range));
        emit = true;
      } else if (op == 0) {
        uint64_t n = uleb(&p);
        if (n == 0 || n > (uint64_t)(p.end - p.p)) return false;
        cur x = {p.p, p.p + n, false};
        p.p += n;
        unsigned sub = (unsigned)rd(&x, 1);
        if (sub == 1) emit = end_seq = true;                 /* end_sequence */
        else if (sub == 2) a = rd(&x, n - 1 == 8 ? 8 : 4);   /* set_address */
      } else {
        switch (op) {
        case 1: emit = true; break;                                      /* copy */
        case 2: a += uleb(&p) * h.min_inst; break;                       /* advance_pc */
        case 3: ln += (uint64_t)sleb(&p); break;                         /* advance_line */
        case 4: fileno = uleb(&p); break;                                /* set_file */
        case 8: a += (uint64_t)((255 - h.opcode_base) / h.line_range) * h.min_inst; break;
        case 9: a += rd(&p, 2); break;                                   /* fixed_advance_pc */
        default:
          for (unsigned i = 0; i < h.std_lens[op - 1]; i++) uleb(&p);
        }
      }
      if (!emit) continue;
      if (prev && pa <= addr && addr < a) {
        *file = file_name(&h, pfile, d);
        *line = (unsigned)pln;
        return *file != NULL;
      }
      prev = !end_seq;
      pa = a, pfile = fileno, pln = ln;
      if (end_seq) a = 0, fileno = 1, ln = 1;
    }
  }
  return false;
}

#include <elf.h>

bool a2a_rt_dwarf_from_elf(const void *map, size_t size, a2a_rt_dwarf *d) {
  memset(d, 0, sizeof *d);
  const unsigned char *m = map;
  if (size < sizeof(Elf64_Ehdr)) return false;
  const Elf64_Ehdr *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      eh->e_shoff == 0 || eh->e_shoff > size ||
      (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
    return false;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
  const Elf64_Shdr *names = &sh[eh->e_shstrndx];
  if (names->sh_offset > size || names->sh_size > size - names->sh_offset) return false;
  const char *strtab = (const char *)m + names->sh_offset;
  for (int i = 0; i < eh->e_shnum; i++) {
    const Elf64_Shdr *s = &sh[i];
    if (s->sh_name >= names->sh_size || s->sh_type == SHT_NOBITS ||
        (s->sh_flags & SHF_COMPRESSED) || s->sh_offset > size || s->sh_size > size - s->sh_offset)
      continue;
    const char *n = strtab + s->sh_name;
    if (!memchr(n, 0, names->sh_size - s->sh_name)) continue;
    const uint8_t *p = m + s->sh_offset;
    if (strcmp(n, ".debug_line") == 0) d->line = p, d->line_size = s->sh_size;
    else if (strcmp(n, ".debug_line_str") == 0) d->line_str = p, d->line_str_size = s->sh_size;
    else if (strcmp(n, ".debug_str") == 0) d->str = p, d->str_size = s->sh_size;
  }
  return d->line != NULL;
}
