/*
 * fl_elffile.h - opening the files a crashed process names, safely, for
 * the converters (core.c, minidump.c).
 *
 * The names in a core or a minidump are the crashed process's to choose:
 * a FIFO would make an open() wait forever, a device would be opened.  So
 * a file is opened only when it is a regular one, and kept only when its
 * build id is the one the dump recorded.
 */
#ifndef FL_ELFFILE_H
#define FL_ELFFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Opens path for reading only when it names a regular file: looked up
 * first without opening (O_PATH), then that very file reopened through
 * /proc.  With have_root, path is looked up inside root_fd (a container's
 * root; openat2's RESOLVE_IN_ROOT).  A descriptor the caller closes, or
 * -1. */
int fl_elf_open_regular(const char *path, bool have_root, int root_fd);

/* 1 when the ELF file on fd has the GNU build id want[0..len), else 0
 * (also when it is no ELF file or has none). */
int fl_elf_has_build_id(int fd, const unsigned char *want, size_t len);

#endif /* FL_ELFFILE_H */
