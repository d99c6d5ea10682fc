/*
 * elffile.c - opening a crashed process's files safely (fl_elffile.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <linux/openat2.h>

#include "fl_elffile.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same on x86-64 and aarch64 */
#endif

/* Before Linux 5.6 (no openat2), a path in a root is looked up as it is
 * here. */
int fl_elf_open_regular(const char *path, bool have_root, int root_fd)
{
    int pfd = -1;
    if (have_root) {
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        pfd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
        if (pfd < 0 && errno != ENOSYS)
            return -1;
    }
    if (pfd < 0)
        pfd = open(path, O_PATH | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    struct stat st;
    int fd = -1;
    if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode)) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
        fd = open(proc, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && !have_root) {
            /* No /proc: opened by name, without waiting, and kept only
             * when it is still the file looked at. */
            struct stat st2;
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
            if (fd >= 0 &&
                (fstat(fd, &st2) != 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)) {
                close(fd);
                fd = -1;
            }
        }
    }
    close(pfd);
    return fd;
}

int fl_elf_obj_read(fl_elf_obj *o, char *err, size_t errcap)
{
    o->id[0] = '\0';
    o->used = false;
    errno = 0;
    int fd = fl_elf_open_regular(o->path, false, -1);
    if (fd < 0) {
        snprintf(err, errcap, "%s", errno ? strerror(errno) : "not a regular file");
        return -1;
    }
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool is_elf = e && elf_kind(e) == ELF_K_ELF;
    const void *id = NULL;
    ssize_t n = is_elf ? dwelf_elf_gnu_build_id(e, &id) : -1;
    if (n > 0 && (size_t)n <= (sizeof o->id - 1) / 2)
        for (ssize_t i = 0; i < n; i++)
            snprintf(o->id + 2 * i, 3, "%02x", ((const unsigned char *)id)[i]);
    if (e)
        elf_end(e);
    close(fd);
    if (!o->id[0]) {
        snprintf(err, errcap, "%s", is_elf ? "no GNU build id" : "not an ELF file");
        return -1;
    }
    return 0;
}

const char *fl_elf_obj_find(fl_elf_obj *objs, size_t n, const unsigned char *id, size_t len)
{
    char hex[sizeof objs->id];
    if (!len || len > (sizeof hex - 1) / 2)
        return NULL;
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(objs[i].id, hex)) {
            objs[i].used = true;
            return objs[i].path;
        }
    return NULL;
}

int fl_elf_has_build_id(int fd, const unsigned char *want, size_t len)
{
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *have = NULL;
    ssize_t hlen = e ? dwelf_elf_gnu_build_id(e, &have) : -1;
    int same = hlen > 0 && (size_t)hlen == len && !memcmp(have, want, len);
    if (e)
        elf_end(e);
    return same;
}
