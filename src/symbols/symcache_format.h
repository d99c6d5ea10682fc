/*
 * symcache_format.h - the on-disk layout shared by the writer and reader.
 *
 * Little-endian, every table 8-byte aligned, every file offset 64-bit.
 * The full field table is in docs/symbols.md.  In short:
 *
 *   header (256 bytes)
 *   baddrs[]   one u64 per FL_SC_BLOCK range entries: the block's first
 *              address (a dense array: the binary search touches few lines)
 *   boffs[]    one u64 per block: where its entries start in rdata
 *   rdata      range entries, delta-encoded: from an entry's address up to
 *              the next one's, the innermost function record and the
 *              line-table row (file index, line, column)
 *   files[]    u32 string offset per file index
 *   records[]  a function or inlined call; parent points to the frame it
 *              was inlined into (parent index < own index, so walks end)
 *   symbols[]  ELF symbols sorted by addr, one per address
 *   symfiles[] per symbol, the STT_FILE name before it (local symbols)
 *   strings    NUL-terminated, deduplicated; refs are offsets into it
 *
 * A lookup is a binary search in baddrs[], a decode of at most
 * FL_SC_BLOCK entries, a walk up records[] and a binary search in
 * symbols[] for the outermost name.
 *
 * Range entry encoding (state reset at each block to addr = block.addr,
 * record = file = NONE, line = column = 0):
 *   flags byte: bits 0-3 address delta 1..15 (0: a ULEB128 delta follows),
 *               bit 4 record changed, bit 5 file index changed, bit 6 line
 *               changed, bit 7 column changed
 *   then, in this order and only when flagged: address delta (ULEB128),
 *   record delta, file delta, line delta (SLEB128 each; record and file
 *   are coded as value+1 so NONE is 0), column (ULEB128).
 */
#ifndef FL_SYMCACHE_FORMAT_H
#define FL_SYMCACHE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FL_SC_MAGIC "FLSYMCH\0"
#define FL_SC_VERSION 1u
#define FL_SC_HEADER_SIZE 256u
#define FL_SC_NONE 0xFFFFFFFFu /* "no string / no record" */

/* Limits the builder enforces and the reader relies on. */
#define FL_SC_MAX_INLINE_DEPTH 256u

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
    uint64_t ranges_count;          /* range entries in rdata */
    uint64_t baddrs_off, blocks_count; /* blocks_count == ceil(ranges_count / FL_SC_BLOCK) */
    uint64_t rdata_off, rdata_size;
    uint64_t records_off, records_count;
    uint64_t symbols_off, symbols_count;
    uint64_t strings_off, strings_size;
    uint64_t symfiles_off; /* u32 per symbol: string or FL_SC_NONE */
    uint64_t boffs_off;    /* u64 per block */
    uint64_t files_off, files_count;
    uint8_t reserved[FL_SC_HEADER_SIZE - 232];
} fl_sc_header;

#define FL_SC_F_DWARF 1u /* built from DWARF (else symbol table only) */

#define FL_SC_BLOCK 16u /* range entries per block */

/* One decoded range entry (also the builder's in-memory form). */
typedef struct fl_sc_range {
    uint64_t addr;
    uint32_t record; /* innermost function record, or FL_SC_NONE */
    uint32_t file;   /* line row's file (string in the builder, index in
                        the file), or FL_SC_NONE */
    uint32_t line;
    uint32_t column;
} fl_sc_range;

typedef struct fl_sc_record {
    uint32_t name;      /* string, or FL_SC_NONE */
    uint32_t parent;    /* record this was inlined into, or FL_SC_NONE */
    uint32_t call_file; /* where, in the parent: string or FL_SC_NONE */
    uint32_t call_line;
    uint32_t call_column;
} fl_sc_record; /* 20 bytes */

typedef struct fl_sc_symbol {
    uint64_t addr;
    uint32_t size; /* 0: extends to the next symbol; sizes >= 4 GiB saturate */
    uint32_t name; /* string */
} fl_sc_symbol; /* 16 bytes */

_Static_assert(sizeof(fl_sc_header) == FL_SC_HEADER_SIZE, "header size");
_Static_assert(sizeof(fl_sc_record) == 20, "record size");
_Static_assert(sizeof(fl_sc_symbol) == 16, "symbol size");

/* 64-bit checksum of a byte range (an xxh64-style 4-lane hash: fast
 * enough that verifying a multi-megabyte file costs well under 1 ms). */
uint64_t fl_sc_hash64(const void *data, size_t len);

/* The header's checksum field for a whole file (size >= header size):
 * covers the header with the checksum field taken as 0, and the body. */
uint64_t fl_sc_file_checksum(const uint8_t *file, size_t size);

#endif
