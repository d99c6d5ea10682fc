/* fl_hex.h - the value of one hex digit, for the parsers that read hex by
 * hand (crash logs, trace ids, URLs, symbolizer input).  Inline and libc
 * free: the client's signal-safe writer uses it too. */
#ifndef FL_HEX_H
#define FL_HEX_H

/* 0-15 for '0'-'9', 'a'-'f' or 'A'-'F'; -1 for anything else, a negative
 * (signed) char included.  Cast to unsigned, "none" is above 15, so a hot
 * loop can test `d > 15` alone. */
static inline int fl_hex_digit(int c)
{
    unsigned d = (unsigned)c - '0';
    if (d < 10)
        return (int)d;
    d = ((unsigned)c | 0x20) - 'a'; /* 'A'-'F' -> 'a'-'f'; nothing else lands there */
    return d < 6 ? (int)d + 10 : -1;
}

#endif /* FL_HEX_H */
