/*
 * symcache_format.h - the on-disk layout shared by the writer and reader.
 *
 * Little-endian, every table 8-byte aligned, every file offset 64-bit.
 * The full field table is in docs/symbols.md.  In short:
 *
 *   header (320 bytes: the 256 of version 3, then the call-site tables')
 *   baddrs[]   one u32 per FL_SC_BLOCK range entries: the block's first
 *              address minus base_addr (a dense array for the search)
 *   bstate[]   bit-packed, per block: where its data starts in rdata
 *              (bytes), where its stream 1 starts (bytes from there), and
 *              its first entry's record+1, file index+1 and line; widths
 *              in blk_w[]
 *   huff       code lengths of the six Huffman alphabets (FL_SC_HUFF_*)
 *   rdata      range entries, Huffman-coded per block (below), + 8 bytes
 *              of zero padding so the reader can load 64 bits anywhere
 *   files[]    u32 string offset per file index
 *   records[]  bit-packed: name+1, parent distance (0: none, else own
 *              index - parent, so walks only go down), call file index+1,
 *              call line, call column; widths in rec_w[]
 *   saddrs[]   u32 per symbol, sorted: address - base_addr (dense, for
 *              the binary search)
 *   symbols[]  bit-packed, per symbol: size, name+1, STT_FILE file
 *              index+1; widths in sym_w[] (sym_w[FL_SC_S_ADDR] is 0)
 *   calls[]    12 bytes per direct call, sorted by site, one per site:
 *              u32 return address - base_addr, u32 target - base_addr + 1
 *              (0: not in this module), u32 name (string or FL_SC_NONE)
 *   tails[]    16 bytes per tail call, sorted by (owner, site), unique:
 *              u32 owner's entry - base_addr, u32 site - base_addr (inside
 *              the jump), u32 target + 1 and u32 name as in calls[];
 *              target 0 with name FL_SC_NONE: an unknown tail call (an
 *              indirect one, or the owner may make one the DWARF does not
 *              describe: then its site is the owner's entry, or the lowest
 *              address above it no other entry of the owner has)
 *   xcalls[]   version 5: the direct calls to another module's functions
 *              (an external declaration no symbol of the module defines:
 *              through the PLT), bit-packed, sorted by site, one per site
 *              and none at a site of calls[]: return address - base_addr,
 *              index into xnames[]; widths in xcall_w[]
 *   xnames[]   u32 string per name the calls of xcalls[] name, each once
 *   exports[]  version 5 with FL_SC_F_EXPORTS, at ALIGN8(xnames_off + 4 *
 *              xnames_count): a bit per symbol (LSB first), set when the
 *              name it keeps is an exported function -- one a call through
 *              the PLT can reach: global or weak, default or protected
 *              visibility, STT_FUNC (not an ifunc's resolver)
 *   strings    NUL-terminated, deduplicated, a string that is the tail of
 *              another stored inside it; refs are offsets into it
 *
 * Packed tables are count * (sum of widths) bits, rounded up to bytes,
 * + 8 bytes of padding; fields are at most 32 bits wide.
 *
 * Range entries, two bit streams per block, LSB first: stream 0 holds AD
 * and COL (and their escapes), stream 1 everything else: two independent
 * dependency chains the CPU decodes in parallel.  A block's first entry
 * takes address, record, file and line from baddrs[]/bstate[] and codes
 * only COL (previous column 0).  Every further entry:
 *   AD   address delta: 1..255, 0 = escape
 *   HEAD bits 0-6 zigzag line delta 0..126 (127 = escape), bit 7 file
 *        changed, bit 8 record changed
 *   REC  if record changed: zigzag record delta 0..254 (255 = escape)
 *   FILE if file changed: zigzag file index delta 0..510 (511 = escape)
 *        then, if HEAD escaped it, the zigzag line delta
 *   COL  column 0..253, 254 = escape, 255 = unchanged (always present: a
 *        branch the CPU cannot predict costs more than the bits)
 * An escaped value v is an ESC code for n, the bit length of v (0..64),
 * then v's low n-1 bits (its top bit is implied).  AD, HEAD, REC, FILE,
 * COL and ESC are canonical Huffman codes of at most FL_SC_HUFF_BITS
 * bits; their code lengths are stored 4 bits each, symbol 2k in the low
 * nibble, one alphabet after the other (FL_SC_HUFF_ALPHA_*).
 */
#ifndef FL_SYMCACHE_FORMAT_H
#define FL_SYMCACHE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FL_SC_MAGIC "FLSYMCH\0"
#define FL_SC_VERSION 5u
/* Version 3 is the same file without the call-site tables and with the
 * 256-byte header fl_sc_header, version 4 the same without xcalls[] and
 * xnames[] (their header fields zero); the reader still opens both. */
#define FL_SC_VERSION_MIN 3u
#define FL_SC_VERSION_STR "3, 4 or 5"
#define FL_SC_HEADER_SIZE 320u  /* version 4 on: fl_sc_header4 */
#define FL_SC_HEADER3_SIZE 256u /* version 3: fl_sc_header alone */
/* The builder's revision, kept in each file (fl_sc_header.builder).  Raise
 * it when the builder answers differently for the same input without a
 * change of layout: a cache directory rebuilds a symcache of an older
 * revision, which would otherwise be used for good -- a file built before
 * split DWARF or dwz files were followed answers "??" for their functions
 * and carries no flag saying so.  1: split DWARF, dwz files, no ARM mapping
 * symbols ($x, $d), relocatable objects refused.  2: a split unit's call
 * files from the skeleton's file table (clang's .dwo with type units had
 * other files at their indices), gcc's DWARF 5 .dwo files with type units
 * read.  3: call sites (format version 4).  4: tail calls the DWARF does
 * not name kept as unknown entries of tails[] (target 0, name FL_SC_NONE),
 * and a function that does not say all its tail calls are described
 * given one such entry (at its entry address).  5: direct calls to
 * another module's functions kept in calls[] (target 0, the name of the
 * declaration called), for the frame a tail call there leaves off. */
#define FL_SC_BUILDER 5u
#define FL_SC_NONE 0xFFFFFFFFu /* "no string / no record" */

/* Limits the builder enforces and the reader relies on. */
#define FL_SC_MAX_INLINE_DEPTH 256u

#define FL_SC_BLOCK 20u /* range entries per block */

/* Huffman alphabets of the range entries. */
enum {
    FL_SC_HUFF_AD,
    FL_SC_HUFF_HEAD,
    FL_SC_HUFF_REC,
    FL_SC_HUFF_FILE,
    FL_SC_HUFF_COL,
    FL_SC_HUFF_ESC,
    FL_SC_HUFF_N
};
#define FL_SC_HUFF_BITS 11u          /* longest code */
#define FL_SC_HUFF_SYMS 512u         /* largest alphabet (HEAD, FILE) */
/* Symbols per alphabet, in enum order (even, so nibbles pair up), and
 * where each one's code lengths start in the huff table (4 bits each). */
#define FL_SC_HUFF_ALPHA_SYMS {256u, 512u, 256u, 512u, 256u, 66u}
#define FL_SC_HUFF_ALPHA_AT {0u, 128u, 384u, 512u, 768u, 896u}
#define FL_SC_HUFF_SIZE 929u /* bytes: 896 + 66 / 2 */
#define FL_SC_AD_MAX 255u            /* AD's escape is 0 */
#define FL_SC_HEAD_LESC 127u         /* HEAD's line-delta escape */
#define FL_SC_H_LINE 0x7Fu
#define FL_SC_H_FILE 0x80u
#define FL_SC_H_REC 0x100u
#define FL_SC_SMALL_ESC 255u         /* REC's escape */
#define FL_SC_FILE_ESC 511u          /* FILE's escape */
#define FL_SC_COL_ESC 254u
#define FL_SC_COL_SAME 255u

enum { FL_SC_R_NAME, FL_SC_R_PARENT, FL_SC_R_FILE, FL_SC_R_LINE, FL_SC_R_COL, FL_SC_R_N };
enum { FL_SC_B_OFF, FL_SC_B_SPLIT, FL_SC_B_REC, FL_SC_B_FILE, FL_SC_B_LINE, FL_SC_B_N };
enum { FL_SC_S_ADDR, FL_SC_S_SIZE, FL_SC_S_NAME, FL_SC_S_FILE, FL_SC_S_N };

typedef struct fl_sc_header {
    char magic[8];          /* FL_SC_MAGIC */
    uint32_t version;       /* FL_SC_VERSION */
    uint32_t header_size;   /* FL_SC_HEADER_SIZE */
    uint64_t file_size;     /* whole file, bytes */
    uint64_t checksum;      /* fl_sc_file_checksum: header (this field 0) + body */
    uint64_t fingerprint;   /* symbol-table fingerprint (fl_symcache_identify) */
    uint32_t build_id_len;  /* <= FL_SYM_BUILD_ID_MAX */
    uint32_t flags;         /* FL_SC_F_* */
    uint8_t build_id[64];
    uint64_t base_addr;     /* subtracted from block and symbol addresses */
    uint64_t ranges_count;          /* range entries in rdata */
    uint64_t baddrs_off;
    uint32_t blocks_count; /* == ceil(ranges_count / FL_SC_BLOCK) */
    uint32_t files_count;
    uint64_t bstate_off;            /* packed, blocks_count entries */
    uint64_t huff_off;              /* FL_SC_HUFF_SIZE bytes of code lengths */
    uint64_t rdata_off, rdata_size; /* rdata_size includes the 8 padding bytes */
    uint64_t files_off;
    uint64_t records_off, records_count; /* size follows from count and rec_w */
    uint64_t symbols_off, symbols_count; /* size follows from count and sym_w */
    uint64_t saddrs_off;
    uint64_t strings_off, strings_size;
    uint8_t rec_w[FL_SC_R_N]; /* bit widths, each <= 32 */
    uint8_t sym_w[FL_SC_S_N];
    uint8_t blk_w[FL_SC_B_N];
    uint16_t builder; /* FL_SC_BUILDER of the build; 0 before it was kept */
} fl_sc_header;

/* Version 4: the base header, then where the call-site tables are.  The
 * checksum covers all 320 bytes (its own field as 0). */
typedef struct fl_sc_header4 {
    fl_sc_header base;
    uint64_t calls_off, calls_count; /* 12-byte entries, see above */
    uint64_t tails_off, tails_count; /* 16-byte entries */
    /* Version 5 (zero before): another module's calls, packed. */
    uint64_t xcalls_off;
    uint32_t xcalls_count, xnames_count;
    uint64_t xnames_off;
    uint8_t xcall_w[2];  /* bits of FL_SC_X_SITE, FL_SC_X_NAME, each <= 32 */
    uint8_t reserved[6]; /* zero */
} fl_sc_header4;
enum { FL_SC_X_SITE, FL_SC_X_NAME, FL_SC_X_N };

#define FL_SC_CALL_SIZE 12u
#define FL_SC_TAIL_SIZE 16u

#define FL_SC_F_DWARF 1u       /* built from DWARF (else symbol table only) */
#define FL_SC_F_ALT_MISSING 2u /* the DWARF's dwz file was not found */
#define FL_SC_F_DWO_MISSING 4u /* a split unit's .dwo file was not found */
/* Version 4: the DWARF has call-site entries (DW_TAG_call_site or
 * DW_TAG_GNU_call_site), so calls[] and tails[] say which calls there
 * are, not merely that none were kept. */
#define FL_SC_F_CALLS 8u
/* Version 5: exports[] follows xnames[] (see above). */
#define FL_SC_F_EXPORTS 16u
/* Bits 16-31 (with FL_SC_F_DWO_MISSING): 1 + how many split units' .dwo
 * files were found nowhere (saturating; 0 in files of builders before it
 * was kept). */
#define FL_SC_F_DWO_COUNT_SHIFT 16

/* One decoded range entry (also the builder's in-memory form). */
typedef struct fl_sc_range {
    uint64_t addr;
    uint32_t record; /* innermost function record, or FL_SC_NONE */
    uint32_t file;   /* line row's file (string in the builder, index in
                        the file), or FL_SC_NONE */
    uint32_t line;
    uint32_t column;
} fl_sc_range;

/* The builder's in-memory record (packed on write). */
typedef struct fl_sc_record {
    uint32_t name;      /* string, or FL_SC_NONE */
    uint32_t parent;    /* record this was inlined into, or FL_SC_NONE */
    uint32_t call_file; /* where, in the parent: string or FL_SC_NONE */
    uint32_t call_line;
    uint32_t call_column;
} fl_sc_record;

_Static_assert(sizeof(fl_sc_header) == FL_SC_HEADER3_SIZE, "header size");
/* Where files of builders before FL_SC_BUILDER kept two zero bytes. */
_Static_assert(offsetof(fl_sc_header, builder) == FL_SC_HEADER3_SIZE - 2, "builder offset");
_Static_assert(sizeof(fl_sc_header4) == FL_SC_HEADER_SIZE, "version 4 header size");
_Static_assert(offsetof(fl_sc_header4, calls_off) == FL_SC_HEADER3_SIZE, "v4 extension offset");

/* 64-bit checksum of a byte range (an xxh64-style 4-lane hash: fast
 * enough that verifying a multi-megabyte file costs well under 1 ms). */
uint64_t fl_sc_hash64(const void *data, size_t len);

/* The header's checksum field for a whole file (size >= header size):
 * covers the header with the checksum field taken as 0, and the body.
 * The header is 320 bytes when the file says version 4 or later (and is
 * that long), else 256. */
uint64_t fl_sc_file_checksum(const uint8_t *file, size_t size);

#endif
