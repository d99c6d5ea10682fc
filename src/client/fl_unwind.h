/*
 * fl_unwind.h - a signal-safe stack unwinder (DWARF CFI from .eh_frame).
 *
 * SIGNAL-SAFE ZONE.  fl_unwind(), fl_unwind_ex(), fl_regs_from_ucontext()
 * and fl_regs_from_current() run inside a signal handler of a possibly
 * corrupt process: no heap, no locks, no stdio, no dl_iterate_phdr, no
 * backtrace(), no libgcc/libunwind, no TLS-touching libc calls, only
 * async-signal-safe system calls, every loop bounded, fixed-size buffers on
 * the (alternate) signal stack.  Every read of process memory goes through
 * a checked reader (fl_safe_read by default), so a corrupt stack or a stale
 * module table ends the walk instead of faulting.
 *
 * On x86-64 and aarch64 the walk follows the DWARF call-frame information
 * of each object's .eh_frame (located through PT_GNU_EH_FRAME /
 * .eh_frame_hdr and its binary-search table), falls back to the
 * frame-pointer chain where there is no CFI, and stops on an undefined or
 * zero return address, a CFA that does not grow, an unreadable slot, or
 * max_frames.  On other architectures only frame 0 is reported.
 * docs/unwinder.md describes the details and limits.
 *
 * Stack use: about 6 KiB for fl_unwind_ex on x86-64, about 10 KiB on
 * aarch64 (twice the registers per CFI row); run it on a 64 KiB+ alternate
 * signal stack.  No static state: concurrent unwinds on several threads
 * are fine.
 */
#ifndef FL_UNWIND_H
#define FL_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Register file in DWARF numbering of the architecture. */
#if defined(__x86_64__)
#define FL_UNWIND_HAVE_CFI 1
#define FL_REGS_N 17 /* rax rdx rcx rbx rsi rdi rbp rsp r8..r15, 16 = return address/rip */
#define FL_REG_SP 7
#define FL_REG_FP 6
#define FL_REG_PC 16
#elif defined(__aarch64__)
#define FL_UNWIND_HAVE_CFI 1
#define FL_REGS_N 33 /* x0..x30 (30 = lr, the CFI return-address column), 31 = sp, 32 = pc */
#define FL_REG_SP 31
#define FL_REG_FP 29
#define FL_REG_PC 32
#define FL_REG_LR 30
#else
#define FL_UNWIND_HAVE_CFI 0
#define FL_REGS_N 3 /* unknown architecture: pc only, nothing is walked */
#define FL_REG_SP 0
#define FL_REG_FP 1
#define FL_REG_PC 2
#endif

typedef struct fl_regs {
    uint64_t r[FL_REGS_N];
    uint64_t valid; /* bit i set: r[i] is known */
} fl_regs;

/* One executable range of a loaded object, filled by the caller at install
 * time (from dl_iterate_phdr: a PT_LOAD with PF_X gives start/end, the
 * PT_GNU_EH_FRAME gives eh_frame_hdr; all runtime addresses).  An object
 * with several executable segments gets one entry per segment.  Order does
 * not matter. */
typedef struct fl_unwind_module {
    uint64_t start, end;   /* [start, end) executable addresses */
    uint64_t eh_frame_hdr; /* runtime address of .eh_frame_hdr, 0 if none */
    uint64_t eh_frame;     /* runtime address of .eh_frame if known (used
                            * for a linear scan when there is no usable
                            * .eh_frame_hdr table), else 0 */
} fl_unwind_module;

/* The memory reader the unwinder uses for every access: copies n bytes at
 * addr into dst, returns 0, or -1 if any byte is unreadable.  Must never
 * fault.  fl_unwind() uses fl_safe_read(); tests and the fuzz target pass
 * their own. */
typedef struct fl_unwind_mem {
    int (*read)(void *ctx, void *dst, uint64_t addr, size_t n);
    void *ctx;
} fl_unwind_mem;

/* How a frame's pc was obtained (optional output of fl_unwind_ex). */
typedef enum fl_frame_how {
    FL_FRAME_CONTEXT = 0, /* frame 0: from the register set */
    FL_FRAME_CFI = 1,     /* DWARF CFI of the callee */
    FL_FRAME_FP = 2,      /* frame-pointer chain */
    FL_FRAME_GUESS = 3,   /* frame 0 outside every module: return address at sp */
} fl_frame_how;

/* Fills out from a ucontext_t* as given to an SA_SIGINFO handler
 * (borrowed, read only).  Signal-safe. */
void fl_regs_from_ucontext(fl_regs *out, const void *ucontext);

/* Captures the calling function's own registers at this point (the pc is
 * exact, frame 0 is the caller).  It is inlined into the caller on purpose:
 * the captured frame must still be live when fl_unwind() runs, so call
 * fl_unwind() from the same function.  Signal-safe. */
#if defined(__x86_64__)
static inline __attribute__((always_inline)) void fl_regs_from_current(fl_regs *out)
{
    __asm__ volatile("leaq 1f(%%rip), %%rax\n\t"
                     "movq %%rax, 128(%0)\n\t"
                     "movq %%rbx, 24(%0)\n\t"
                     "movq %%rbp, 48(%0)\n\t"
                     "movq %%rsp, 56(%0)\n\t"
                     "movq %%r12, 96(%0)\n\t"
                     "movq %%r13, 104(%0)\n\t"
                     "movq %%r14, 112(%0)\n\t"
                     "movq %%r15, 120(%0)\n\t"
                     "1:\n\t"
                     :
                     : "r"(out->r)
                     : "rax", "memory");
    out->valid = (1u << 3) | (1u << 6) | (1u << 7) | (1u << 12) | (1u << 13) | (1u << 14) |
                 (1u << 15) | (1u << 16);
}
#elif defined(__aarch64__)
static inline __attribute__((always_inline)) void fl_regs_from_current(fl_regs *out)
{
    __asm__ volatile("adr x9, 1f\n\t"
                     "str x9, [%0, #256]\n\t"
                     "stp x29, x30, [%0, #232]\n\t"
                     "mov x9, sp\n\t"
                     "str x9, [%0, #248]\n\t"
                     "1:\n\t"
                     :
                     : "r"(out->r)
                     : "x9", "memory");
    out->valid = (1ull << 29) | (1ull << 30) | (1ull << 31) | (1ull << 32);
}
#else
static inline void fl_regs_from_current(fl_regs *out)
{
    out->valid = 0;
}
#endif

/* Walks the stack described by start (borrowed) over the modules mods[0..
 * nmods) (borrowed), reading memory with fl_safe_read().  Writes the pcs
 * into pcs[0..max_frames): pcs[0] is start's pc (exact), later entries are
 * return addresses (the call instruction is just before them), except after
 * a signal frame where the interrupted pc is exact.  Returns the number of
 * pcs written (0 only if start has no pc or max_frames is 0).  Signal-safe,
 * never faults, bounded in time. */
size_t fl_unwind(const fl_regs *start, const fl_unwind_module *mods, size_t nmods, uint64_t *pcs,
                 size_t max_frames);

/* Same with an explicit memory reader (NULL: fl_safe_read) and an optional
 * how[] array (NULL, or max_frames entries of fl_frame_how). */
size_t fl_unwind_ex(const fl_regs *start, const fl_unwind_module *mods, size_t nmods,
                    const fl_unwind_mem *mem, uint64_t *pcs, uint8_t *how, size_t max_frames);

#endif /* FL_UNWIND_H */
