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
 * Method: find the compile unit whose ranges contain the address
 * (.debug_info), run its line-number program's state machine and keep the
 * row (file, line) whose address range [row, next row) of one sequence
 * contains the address; then re-read that unit's header for the file's
 * name. Without unit ranges, every program is run (up to 16 MiB of
 * .debug_line). Inlined calls: see below.
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

/* Run one unit's line-number program: 1 found, 0 not in it, -1 malformed. */
static int run_program(const hdr *h, uint64_t addr, const a2a_rt_dwarf *d, const char **file,
                       unsigned *line) {
  cur p = h->prog;
  uint64_t a = 0, fileno = 1, ln = 1;
  uint64_t pa = 0, pfile = 0, pln = 0;
  bool prev = false;
  while (p.p < p.end && !p.bad) {
    unsigned op = (unsigned)rd(&p, 1);
    bool emit = false, end_seq = false;
    if (op >= h->opcode_base) {
      unsigned adj = op - h->opcode_base;
      a += (uint64_t)(adj / h->line_range) * h->min_inst;
      ln += (uint64_t)(int64_t)(h->line_base + (int)(adj % h->line_range));
      emit = true;
    } else if (op == 0) {
      uint64_t n = uleb(&p);
      if (n == 0 || n > (uint64_t)(p.end - p.p)) return -1;
      cur x = {p.p, p.p + n, false};
      p.p += n;
      unsigned sub = (unsigned)rd(&x, 1);
      if (sub == 1) emit = end_seq = true;                 /* end_sequence */
      else if (sub == 2) a = rd(&x, n - 1 == 8 ? 8 : 4);   /* set_address */
    } else {
      switch (op) {
      case 1: emit = true; break;                                      /* copy */
      case 2: a += uleb(&p) * h->min_inst; break;                      /* advance_pc */
      case 3: ln += (uint64_t)sleb(&p); break;                         /* advance_line */
      case 4: fileno = uleb(&p); break;                                /* set_file */
      case 8: a += (uint64_t)((255 - h->opcode_base) / h->line_range) * h->min_inst; break;
      case 9: a += rd(&p, 2); break;                                   /* fixed_advance_pc */
      default:
        for (unsigned i = 0; i < h->std_lens[op - 1]; i++) uleb(&p);
      }
    }
    if (!emit) continue;
    if (prev && pa <= addr && addr < a) {
      *file = file_name(h, pfile, d);
      *line = (unsigned)pln;
      return *file != NULL ? 1 : -1;
    }
    prev = !end_seq;
    pa = a, pfile = fileno, pln = ln;
    if (end_seq) a = 0, fileno = 1, ln = 1;
  }
  return p.bad ? -1 : 0;
}

/* ==================================================================== */
/* Inlined functions: .debug_info walk.                                  */
/*                                                                       */
/* For an address, find the compile unit's subprogram DIE whose ranges   */
/* contain it and the chain of DW_TAG_inlined_subroutine DIEs below it   */
/* that contain it too; report their names (through abstract_origin /    */
/* specification) and call sites (DW_AT_call_file/line, file names from  */
/* the unit's line table). Forms that need sections we do not read       */
/* (.debug_addr, .debug_str_offsets, rnglistx) end the lookup.           */
/* ==================================================================== */

enum {
  F_addr = 0x01, F_flag = 0x0c, F_sdata = 0x0d, F_ref_addr = 0x10, F_ref1 = 0x11,
  F_ref2 = 0x12, F_ref4 = 0x13, F_ref8 = 0x14, F_ref_udata = 0x15, F_indirect = 0x16,
  F_sec_offset = 0x17, F_exprloc = 0x18, F_flag_present = 0x19, F_ref_sig8 = 0x20,
  F_block1 = 0x0a, F_block2 = 0x03, F_block4 = 0x04, F_implicit_const = 0x21,
  F_strp_sup = 0x1d, F_ref_sup4 = 0x1c, F_ref_sup8 = 0x24, F_addrx = 0x1b,
  F_addrx1 = 0x29, F_addrx2 = 0x2a, F_addrx3 = 0x2b, F_addrx4 = 0x2c, F_strx3 = 0x27,
  F_loclistx = 0x22, F_rnglistx = 0x23, F_GNU_ref_alt = 0x1f20, F_GNU_strp_alt = 0x1f21,
};

enum {
  AT_name = 0x03, AT_low_pc = 0x11, AT_high_pc = 0x12, AT_stmt_list = 0x10,
  AT_ranges = 0x55, AT_abstract_origin = 0x31, AT_specification = 0x47,
  AT_linkage_name = 0x6e, AT_MIPS_linkage_name = 0x2007, AT_call_file = 0x58,
  AT_call_line = 0x59, AT_sibling = 0x01,
};
enum { TAG_subprogram = 0x2e, TAG_inlined = 0x1d, TAG_structure = 0x13, TAG_class = 0x02,
       TAG_union = 0x17, TAG_enumeration = 0x04 };

/* Abbreviation codes 1..ABBREV_INDEX-1 of the unit walked for inlined
 * calls are indexed (a pass over its table, on the stack): a DIE's
 * abbreviation is then found at once instead of by a scan of the table from
 * its start, which made one symbolization of a frame in a large C++/CUDA
 * compile unit cost ~800 M instructions (every DIE scanned hundreds of
 * abbreviations). */
#define ABBREV_INDEX 384 /* 6 KiB of stack */
typedef struct abbrev_ent {
  const uint8_t *spec;          /* after the tag and children flag; NULL unknown */
  uint16_t tag;
  bool children;
} abbrev_ent;

typedef struct unit {
  const uint8_t *start, *end;   /* the unit, header included */
  const uint8_t *dies;          /* first DIE */
  const uint8_t *abbrev;        /* its abbreviation table */
  int version, offsz;
  const abbrev_ent *index;      /* [ABBREV_INDEX] or NULL */
} unit;

typedef struct die {
  unsigned tag;
  bool children;
  uint64_t low, high;           /* high: end address (exclusive) */
  bool has_low, high_is_len, has_high;
  int64_t ranges;               /* section offset, -1 none */
  int64_t origin;               /* unit-relative DIE offset, -1 none */
  int64_t sibling;              /* unit-relative offset of the next sibling, -1 none */
  const char *name;
  uint64_t call_file, call_line;
  uint64_t stmt_list;
  bool has_stmt_list;
} die;

/* Position of abbreviation `code` in the table (attribute specs follow). */
static const uint8_t *find_abbrev(const a2a_rt_dwarf *d, const uint8_t *table, uint64_t code,
                                  unsigned *tag, bool *children) {
  cur c = {table, d->abbrev + d->abbrev_size, false};
  for (int guard = 0; guard < 100000 && !c.bad; guard++) {
    uint64_t k = uleb(&c);
    if (k == 0) return NULL;
    unsigned t = (unsigned)uleb(&c);
    bool ch = rd(&c, 1) != 0;
    if (k == code) {
      *tag = t, *children = ch;
      return c.bad ? NULL : c.p;
    }
    for (;;) {   /* skip the attribute specs */
      uint64_t at = uleb(&c), form = uleb(&c);
      if (form == F_implicit_const) sleb(&c);
      if (c.bad || (at == 0 && form == 0)) break;
    }
  }
  return NULL;
}

/* Index the abbreviation table of u into idx (codes below ABBREV_INDEX;
 * others are looked up by scanning, as before). */
static void index_abbrevs(const a2a_rt_dwarf *d, unit *u, abbrev_ent *idx) {
  memset(idx, 0, ABBREV_INDEX * sizeof *idx);
  cur c = {u->abbrev, d->abbrev + d->abbrev_size, false};
  for (int guard = 0; guard < 100000 && !c.bad; guard++) {
    uint64_t k = uleb(&c);
    if (k == 0 || c.bad) break;
    unsigned t = (unsigned)uleb(&c);
    bool ch = rd(&c, 1) != 0;
    if (c.bad) break;
    if (k < ABBREV_INDEX && t <= UINT16_MAX && !idx[k].spec) idx[k] = (abbrev_ent){c.p, (uint16_t)t, ch};
    for (;;) {
      uint64_t at = uleb(&c), form = uleb(&c);
      if (form == F_implicit_const) sleb(&c);
      if (c.bad || (at == 0 && form == 0)) break;
    }
  }
  u->index = idx;
}

/* Read one attribute value of `form`; numbers in *v, strings in *s. Returns
 * false on a form it cannot read. */
static bool attr_value(cur *c, uint64_t form, int64_t implicit, const unit *u,
                       const a2a_rt_dwarf *d, uint64_t *v, const char **s) {
  *v = 0, *s = NULL;
  for (int depth = 0; depth < 4; depth++) {
    switch (form) {
    case F_addr: *v = rd(c, 8); return !c->bad;
    case F_data1: case F_ref1: case F_flag: *v = rd(c, 1); return !c->bad;
    case F_data2: case F_ref2: *v = rd(c, 2); return !c->bad;
    case F_data4: case F_ref4: case F_ref_sup4: *v = rd(c, 4); return !c->bad;
    case F_data8: case F_ref8: case F_ref_sig8: case F_ref_sup8: *v = rd(c, 8); return !c->bad;
    case F_data16: rd(c, 8); rd(c, 8); return !c->bad;
    case F_sdata: *v = (uint64_t)sleb(c); return !c->bad;
    case F_udata: case F_ref_udata: *v = uleb(c); return !c->bad;
    case F_string: *s = cstr(c); return !c->bad;
    case F_strp: *s = str_at(d->str, d->str_size, rd(c, u->offsz), c); return !c->bad;
    case F_line_strp: *s = str_at(d->line_str, d->line_str_size, rd(c, u->offsz), c); return !c->bad;
    case F_ref_addr: *v = rd(c, u->version <= 2 ? 8 : u->offsz); return !c->bad;
    case F_sec_offset: case F_strp_sup: case F_GNU_ref_alt: case F_GNU_strp_alt:
      *v = rd(c, u->offsz); return !c->bad;
    case F_flag_present: *v = 1; return true;
    case F_implicit_const: *v = (uint64_t)implicit; return true;
    case F_exprloc: case F_block: {
      uint64_t n = uleb(c);
      if (c->bad || n > (uint64_t)(c->end - c->p)) return false;
      c->p += n;
      return true;
    }
    case F_block1: case F_block2: case F_block4: {
      uint64_t n = rd(c, form == F_block1 ? 1 : form == F_block2 ? 2 : 4);
      if (c->bad || n > (uint64_t)(c->end - c->p)) return false;
      c->p += n;
      return true;
    }
    case F_strx: case F_addrx: case F_loclistx: case F_rnglistx: uleb(c); *v = UINT64_MAX; return !c->bad;
    case F_strx1: case F_addrx1: rd(c, 1); *v = UINT64_MAX; return !c->bad;
    case F_strx2: case F_addrx2: rd(c, 2); *v = UINT64_MAX; return !c->bad;
    case F_strx3: case F_addrx3: rd(c, 3); *v = UINT64_MAX; return !c->bad;
    case F_strx4: case F_addrx4: rd(c, 4); *v = UINT64_MAX; return !c->bad;
    case F_indirect: form = uleb(c); continue;
    default: return false;
    }
  }
  return false;
}

/* Parse the DIE at c->p (abbrev code first). Returns false at the end of a
 * sibling list (code 0, *null set) or on error (*null clear). */
static bool read_die(cur *c, const unit *u, const a2a_rt_dwarf *d, die *out, bool *null) {
  *null = false;
  memset(out, 0, sizeof *out);
  out->ranges = out->origin = out->sibling = -1;
  uint64_t code = uleb(c);
  if (c->bad) return false;
  if (code == 0) {
    *null = true;
    return false;
  }
  const uint8_t *spec;
  if (u->index && code < ABBREV_INDEX && u->index[code].spec) {
    spec = u->index[code].spec;
    out->tag = u->index[code].tag;
    out->children = u->index[code].children;
  } else {
    spec = find_abbrev(d, u->abbrev, code, &out->tag, &out->children);
  }
  if (!spec) return false;
  cur a = {spec, d->abbrev + d->abbrev_size, false};
  for (int guard = 0; guard < 256; guard++) {
    uint64_t at = uleb(&a), form = uleb(&a);
    int64_t implicit = form == F_implicit_const ? sleb(&a) : 0;
    if (a.bad) return false;
    if (at == 0 && form == 0) return true;
    uint64_t v;
    const char *s;
    if (!attr_value(c, form, implicit, u, d, &v, &s)) return false;
    bool ref = form == F_ref1 || form == F_ref2 || form == F_ref4 || form == F_ref8 ||
               form == F_ref_udata;
    switch (at) {
    case AT_name: if (s) out->name = s; break;
    case AT_linkage_name: case AT_MIPS_linkage_name:
      if (s && !out->name) out->name = s;
      break;
    case AT_low_pc: out->low = v, out->has_low = form == F_addr; break;
    case AT_high_pc:
      out->high = v, out->has_high = v != UINT64_MAX, out->high_is_len = form != F_addr;
      break;
    case AT_ranges: out->ranges = form == F_sec_offset ? (int64_t)v : -2; break;
    case AT_abstract_origin: case AT_specification:
      if (ref && v < (uint64_t)(u->end - u->start)) out->origin = (int64_t)v;
      break;
    case AT_sibling:
      if (ref && v < (uint64_t)(u->end - u->start)) out->sibling = (int64_t)v;
      break;
    case AT_call_file: out->call_file = v; break;
    case AT_call_line: out->call_line = v; break;
    case AT_stmt_list: out->stmt_list = v, out->has_stmt_list = true; break;
    default: break;
    }
  }
  return false;
}

/* Whether addr lies in the DIE's ranges; base is the unit's base address. */
static bool die_contains(const die *e, uint64_t addr, uint64_t base, const unit *u,
                         const a2a_rt_dwarf *d) {
  if (e->has_low && e->has_high) {
    uint64_t hi = e->high_is_len ? e->low + e->high : e->high;
    return e->low <= addr && addr < hi;
  }
  if (e->ranges < 0) return false;
  if (u->version >= 5) {
    if (!d->rnglists || (uint64_t)e->ranges >= d->rnglists_size) return false;
    cur c = {d->rnglists + e->ranges, d->rnglists + d->rnglists_size, false};
    for (int guard = 0; guard < 100000 && !c.bad; guard++) {
      unsigned k = (unsigned)rd(&c, 1);
      uint64_t a, b;
      switch (k) {
      case 0: return false;                                      /* end_of_list */
      case 4: a = uleb(&c), b = uleb(&c); a += base, b += base; break;   /* offset_pair */
      case 5: base = rd(&c, 8); continue;                        /* base_address */
      case 6: a = rd(&c, 8), b = rd(&c, 8); break;               /* start_end */
      case 7: a = rd(&c, 8), b = a + uleb(&c); break;            /* start_length */
      default: return false;   /* the x forms need .debug_addr */
      }
      if (!c.bad && a <= addr && addr < b) return true;
    }
    return false;
  }
  if (!d->ranges || (uint64_t)e->ranges >= d->ranges_size) return false;
  cur c = {d->ranges + e->ranges, d->ranges + d->ranges_size, false};
  for (int guard = 0; guard < 100000 && !c.bad; guard++) {
    uint64_t a = rd(&c, 8), b = rd(&c, 8);
    if (c.bad || (a == 0 && b == 0)) return false;
    if (a == UINT64_MAX) {
      base = b;
      continue;
    }
    if (a + base <= addr && addr < b + base) return true;
  }
  return false;
}

/* The name of the DIE at unit offset off, following abstract_origin and
 * specification references (bounded). */
static const char *die_name(const unit *u, const a2a_rt_dwarf *d, int64_t off) {
  for (int hop = 0; hop < 4 && off >= 0; hop++) {
    cur c = {u->start + off, u->end, false};
    die e;
    bool null;
    if (!read_die(&c, u, d, &e, &null)) return NULL;
    if (e.name) return e.name;
    off = e.origin;
  }
  return NULL;
}

static bool read_unit(cur *c, const a2a_rt_dwarf *d, unit *u) {
  u->index = NULL;
  u->start = c->p;
  uint64_t len = rd(c, 4);
  u->offsz = 4;
  if (len == 0xffffffffu) len = rd(c, 8), u->offsz = 8;
  if (c->bad || len > (uint64_t)(c->end - c->p)) return false;
  u->end = c->p + len;
  cur h = {c->p, u->end, false};
  c->p = u->end;
  u->version = (int)rd(&h, 2);
  uint64_t abbrev_off;
  if (u->version >= 5) {
    unsigned type = (unsigned)rd(&h, 1);
    if (rd(&h, 1) != 8) return false;
    abbrev_off = rd(&h, u->offsz);
    if (type != 1 && type != 3) return false;   /* compile / partial units only */
  } else if (u->version >= 2) {
    abbrev_off = rd(&h, u->offsz);
    if (rd(&h, 1) != 8) return false;
  } else {
    return false;
  }
  if (h.bad || abbrev_off >= d->abbrev_size) return false;
  u->abbrev = d->abbrev + abbrev_off;
  u->dies = h.p;
  return true;
}

int a2a_rt_dwarf_inlines(const a2a_rt_dwarf *d, uint64_t addr, a2a_rt_inline *out, int max) {
  if (!d->info || !d->abbrev) return 0;
  cur uc = {d->info, d->info + d->info_size, false};
  while (uc.p < uc.end && !uc.bad) {
    unit u;
    if (!read_unit(&uc, d, &u)) return 0;
    cur c = {u.dies, u.end, false};
    die cu;
    bool null;
    if (!read_die(&c, &u, d, &cu, &null) || cu.tag == 0) continue;
    uint64_t base = cu.has_low ? cu.low : 0;
    /* Does this unit cover addr? Units without ranges are walked anyway. */
    if ((cu.has_low && cu.has_high) || cu.ranges >= 0) {
      if (!die_contains(&cu, addr, base, &u, d)) continue;
    }
    if (!cu.children) continue;
    abbrev_ent idx[ABBREV_INDEX];
    index_abbrevs(d, &u, idx);
    /* Walk the unit's DIEs; chain[] holds the DIEs containing addr, by
     * depth (the subprogram, then the inlined calls nested in it). */
    struct { int depth; die e; } chain[16];
    int n = 0, depth = 1, sub_depth = -1;
    for (int guard = 0; guard < 1000000 && c.p < c.end && !c.bad; guard++) {
      die e;
      if (!read_die(&c, &u, d, &e, &null)) {
        if (!null) return 0;
        if (--depth <= 0) break;
        if (sub_depth >= 0 && depth <= sub_depth) break;   /* left the subprogram */
        continue;
      }
      if (sub_depth >= 0 && depth <= sub_depth) break;      /* the next sibling */
      bool hit = (e.tag == TAG_subprogram || e.tag == TAG_inlined) &&
                 die_contains(&e, addr, base, &u, d);
      if (hit) {
        if (e.tag == TAG_subprogram && sub_depth < 0) sub_depth = depth;
        /* Ranges of siblings are disjoint: a match replaces any earlier
         * match at its depth or deeper. */
        while (n > 0 && chain[n - 1].depth >= depth) n--;
        if (n < 16) chain[n].depth = depth, chain[n].e = e, n++;
      }
      /* A function that does not contain addr contains no call of it
       * either, and a type's members hold no code (GCC and Clang put a
       * member function's code in a DIE outside its class, pointing back
       * with DW_AT_specification): their children are skipped when the
       * compiler said where the next sibling is (only forward: a bad
       * offset cannot loop). */
      bool opaque = e.tag == TAG_subprogram || e.tag == TAG_structure || e.tag == TAG_class ||
                    e.tag == TAG_union || e.tag == TAG_enumeration;
      if (!hit && e.children && opaque && e.sibling >= 0 &&
          u.start + e.sibling > c.p && u.start + e.sibling <= c.end) {
        c.p = u.start + e.sibling;
        continue;
      }
      if (e.children) depth++;
    }
    if (sub_depth < 0) continue;
    /* chain[0] is the subprogram; chain[1..] the inlined calls, outermost
     * first. Report innermost first. */
    int k = 0;
    hdr lh;
    bool have_lines = false;
    if (cu.has_stmt_list && d->line && cu.stmt_list < d->line_size) {
      cur lc = {d->line + cu.stmt_list, d->line + d->line_size, false};
      have_lines = read_header(&lc, &lh);
    }
    for (int i = n - 1; i >= 1 && k < max; i--) {
      if (chain[i].e.tag != TAG_inlined) continue;
      const char *name = chain[i].e.name;
      if (!name) name = die_name(&u, d, chain[i].e.origin);
      out[k].name = name ? name : "??";
      out[k].call_file = have_lines ? file_name(&lh, chain[i].e.call_file, d) : NULL;
      out[k].call_line = (unsigned)chain[i].e.call_line;
      k++;
    }
    return k;
  }
  return 0;
}

/* The compile unit whose ranges contain addr: its unit and top DIE, and a
 * cursor at its first child. False if none says so. */
static bool find_cu(const a2a_rt_dwarf *d, uint64_t addr, unit *u, die *cu, cur *children) {
  if (!d->info || !d->abbrev) return false;
  cur uc = {d->info, d->info + d->info_size, false};
  for (int guard = 0; guard < 1000000 && uc.p < uc.end && !uc.bad; guard++) {
    if (!read_unit(&uc, d, u)) return false;
    cur c = {u->dies, u->end, false};
    bool null;
    if (!read_die(&c, u, d, cu, &null)) continue;
    bool ranged = (cu->has_low && cu->has_high) || cu->ranges >= 0;
    if (ranged && die_contains(cu, addr, cu->has_low ? cu->low : 0, u, d)) {
      *children = c;
      return true;
    }
  }
  return false;
}

bool a2a_rt_dwarf_lookup(const a2a_rt_dwarf *d, uint64_t addr, const char **file,
                         unsigned *line) {
  /* Fast path: only the line program of the unit that covers addr. */
  unit u;
  die cu;
  cur ch;
  if (find_cu(d, addr, &u, &cu, &ch) && cu.has_stmt_list && d->line &&
      cu.stmt_list < d->line_size) {
    cur c = {d->line + cu.stmt_list, d->line + d->line_size, false};
    hdr h;
    if (read_header(&c, &h) && run_program(&h, addr, d, file, line) == 1) return true;
  }
  /* Otherwise every program (objects without .debug_info ranges), unless
   * that is too much work for one frame. */
  if (d->line_size > ((size_t)16 << 20)) return false;
  cur c = {d->line, d->line + d->line_size, false};
  while (d->line && c.p < c.end && !c.bad) {
    hdr h;
    if (!read_header(&c, &h)) return false;
    int r = run_program(&h, addr, d, file, line);
    if (r != 0) return r == 1;
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
    else if (strcmp(n, ".debug_info") == 0) d->info = p, d->info_size = s->sh_size;
    else if (strcmp(n, ".debug_abbrev") == 0) d->abbrev = p, d->abbrev_size = s->sh_size;
    else if (strcmp(n, ".debug_rnglists") == 0) d->rnglists = p, d->rnglists_size = s->sh_size;
    else if (strcmp(n, ".debug_ranges") == 0) d->ranges = p, d->ranges_size = s->sh_size;
  }
  return d->line != NULL;
}
