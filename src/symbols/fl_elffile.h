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

/* The files a user gives `faultline core` and `faultline minidump` with
 * --obj (a dump from another machine: the developer's build), used for
 * the module with their build id before the path the dump names. */
#define FL_ELF_MAX_OBJS 64
typedef struct fl_elf_obj {
    const char *path; /* borrowed */
    char id[129];     /* its GNU build id, lowercase hex */
    bool used;        /* fl_elf_obj_find gave it */
} fl_elf_obj;

/* Reads o->path's build id into o->id: 0, else -1 with the reason ("not
 * an ELF file", "no GNU build id", strerror) in err. */
int fl_elf_obj_read(fl_elf_obj *o, char *err, size_t errcap);

/* The path of the one of objs[0..n) with build id id[0..len) (raw bytes),
 * marked used; NULL when none has it. */
const char *fl_elf_obj_find(fl_elf_obj *objs, size_t n, const unsigned char *id, size_t len);

#endif /* FL_ELFFILE_H */
