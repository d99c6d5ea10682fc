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
