/*
 * fuzz_unwind.h - the input format of fuzz_unwind (shared with mkseeds).
 *
 *   offset  size  field
 *   0       2     pc offset: frame 0's pc = TEXT_BASE + value
 *   2       1     flags: bit 0 = no .eh_frame_hdr (linear .eh_frame scan)
 *   3       1     reserved
 *   4       2     stack length L (clamped to STK_CAP and to the input)
 *   6       2     rsp offset into the stack
 *   8       2     rbp offset into the stack
 *   10      6     reserved
 *   16      L     stack bytes, mapped at STK_BASE
 *   16+L    rest  image (.eh_frame_hdr at IMG_BASE, .eh_frame at
 *                 IMG_BASE + EHF_OFF), clamped to IMG_CAP
 */
#ifndef FUZZ_UNWIND_H
#define FUZZ_UNWIND_H
#define FUZZ_UNWIND_HDR 16
#define FUZZ_UNWIND_NOHDR 1
#endif
