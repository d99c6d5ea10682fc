/*
 * fl_safemem.h - reading memory that may not be there, from a crash handler.
 *
 * SIGNAL-SAFE ZONE.  fl_safe_read() and fl_safemem_forget_pages() run inside
 * a signal handler of a possibly corrupt process.  Rules for this file and
 * fl_safemem.c: no heap, no locks, no stdio, no dl_iterate_phdr, no
 * backtrace(), no libgcc/libunwind, no libc call that touches TLS beyond
 * errno, only async-signal-safe system calls; every loop is bounded; buffers
 * are fixed-size and static or on the (alternate) signal stack.  Everything
 * the crash path needs is prepared by fl_safemem_init() in normal context.
 *
 * How a read is served, fastest first:
 *   1. the range table: address ranges the caller registered as readable at
 *      install time (typically the PT_LOAD segments of the loaded objects,
 *      so reading .eh_frame_hdr, .eh_frame and code costs a plain copy);
 *   2. the page cache: 4 KiB pages proven readable earlier (by a system
 *      call) since the last fl_safemem_forget_pages();
 *   3. system calls: by default one per page that lets the kernel try an
 *      8-byte copy from it (rt_sigprocmask with an invalid `how`: EFAULT if
 *      the page is unreadable, else EINVAL and nothing changes), after
 *      which the page is copied directly and joins the page cache.  Where
 *      that does not behave as expected, process_vm_readv() on our own pid,
 *      which copies and checks in one call but pins the pages (after a
 *      fork() that copies every shared page: 2-4 us a call); where that is
 *      refused (old kernel, seccomp), write() of the bytes into a private
 *      pipe followed by a read() back out of it.
 *
 * Trust: paths 1, 2 and the probe dereference memory directly.  A
 * registered range that is unmapped later (dlclose) without
 * fl_safemem_remove_range() would make a read fault; so would a page another
 * thread unmaps between being proven readable and being read.  Both are
 * documented limits.
 */
#ifndef FL_SAFEMEM_H
#define FL_SAFEMEM_H

#include <stddef.h>
#include <stdint.h>

/* Capacity of the range table (fixed: the reader must never allocate). */
#define FL_SAFEMEM_MAX_RANGES 1024
/* Number of slots of the proven-readable page cache (direct-mapped). */
#define FL_SAFEMEM_PAGE_SLOTS 64

/* How fl_safe_read() reaches memory outside the fast paths. */
typedef enum fl_safemem_method {
    FL_SAFEMEM_NONE = 0,     /* no safe method: only registered ranges are read */
    FL_SAFEMEM_VM_READV = 1, /* process_vm_readv(getpid(), ...) */
    FL_SAFEMEM_PIPE = 2,     /* write() to a private pipe, EFAULT-checked */
    FL_SAFEMEM_PROBE = 3,    /* each page proven readable by the kernel, then copied */
} fl_safemem_method;

/* Normal context only.  Chooses the method (the page probe if it reports a
 * readable and an unreadable address correctly, else process_vm_readv on our
 * own memory, else creates the pipe, O_CLOEXEC|O_NONBLOCK).  Idempotent and
 * cheap after the first call.  Returns 0 when a safe method works, -1 when
 * only the registered ranges can be read.  fl_safe_read() before init uses
 * process_vm_readv blindly. */
int fl_safemem_init(void);

/* The method fl_safemem_init() chose.  Signal-safe. */
fl_safemem_method fl_safemem_get_method(void);

/* Test hook: force a method (normal context).  FL_SAFEMEM_PIPE creates the
 * pipe if needed.  Returns 0, or -1 if that method cannot be set up. */
int fl_safemem_force_method(fl_safemem_method m);

/* Registers [start, end) as readable for the lifetime of the registration.
 * Normal context; callers serialize add/remove among themselves (one thread
 * or the caller's lock); a concurrent fl_safe_read() in a signal handler is
 * fine (the reader takes no lock).  Returns 0, or -1 if the table is full or
 * the range is empty or starts at 0. */
int fl_safemem_add_range(uint64_t start, uint64_t end);

/* Unregisters a range added with exactly these bounds (call it before the
 * memory is unmapped).  Returns 0, or -1 if it was not registered. */
int fl_safemem_remove_range(uint64_t start, uint64_t end);

/* Unregisters every range.  Normal context. */
void fl_safemem_clear_ranges(void);

/* Forgets the pages proven readable so far.  Signal-safe.  The crash
 * handler calls it once at the start of a crash; tests call it after
 * unmapping memory they read before. */
void fl_safemem_forget_pages(void);

/* Copies n bytes at address addr of our own process to dst (dst must be
 * valid: it is ours).  Returns 0 when every byte was readable, -1 otherwise
 * (dst then holds unspecified bytes).  Never faults on an unreadable addr.
 * Signal-safe, no lock; errno is preserved. */
int fl_safe_read(void *dst, uint64_t addr, size_t n);

/* fl_safe_read without the range table and the page cache: memory that
 * may have been unmapped since (a dlclose()d library's strings) is checked
 * by a system call every time, the one that copies it (process_vm_readv),
 * so that another thread's munmap() cannot make it fault either.  Where
 * that call is refused, the chosen method's, with its limits.  Returns
 * 0 / -1. */
int fl_safe_read_fresh(void *dst, uint64_t addr, size_t n);

/* fl_safe_read of one 64-bit word; returns 0 / -1. */
int fl_safe_read_u64(uint64_t addr, uint64_t *out);

#endif /* FL_SAFEMEM_H */
