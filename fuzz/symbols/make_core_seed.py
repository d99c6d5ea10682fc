#!/usr/bin/env python3
"""Writes fuzz/corpus/core/x86_64-minimal: the smallest x86-64 core file
that `faultline core` converts -- an ELF core header, a PT_NOTE with
NT_PRSTATUS (one thread: rip, rsp, SIGSEGV), NT_PRPSINFO, NT_SIGINFO and
NT_AUXV, and one PT_LOAD of stack.  No module: the thread's stack is its
faulting pc alone (libFuzzer's first find: qsort of no objects).  And
x86_64-badsig, the same with a signal number no kernel sends (its second:
a CRASH_SIGNAL the reader refused).
Run from the checkout: python3 fuzz/symbols/make_core_seed.py
"""
import struct

RIP, RSP, PID = 0x401000, 0x7FFFFFFDE800, 1234


def core_file(sig):


    def note(ntype, desc, name=b"CORE\0"):
        pad = lambda b: b + b"\0" * (-len(b) % 4)
        return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


    regs = [0] * 27                      # struct user_regs_struct
    regs[4] = RSP + 0x40                 # rbp
    regs[16], regs[19] = RIP, RSP        # rip, rsp
    regs[17], regs[20] = 0x33, 0x2B      # cs, ss
    prstatus = (struct.pack("<iiih2xQQiiii", sig, 1, 0, sig if sig < 32768 else 11, 0, 0, PID, PID - 1, PID, PID)
                + b"\0" * 64 + struct.pack("<27Q", *regs) + struct.pack("<i4x", 0))
    assert len(prstatus) == 336
    prpsinfo = struct.pack("<bbbb4xQIIiiii", 0, ord("R"), 0, 0, 0, 0, 0, PID, PID - 1, PID, PID)
    prpsinfo += b"fuzzme".ljust(16, b"\0") + b"./fuzzme".ljust(80, b"\0")
    assert len(prpsinfo) == 136
    siginfo = struct.pack("<iii4xQ", sig, 0, 1, 0).ljust(128, b"\0")
    auxv = struct.pack("<4Q", 9, RIP, 0, 0)  # AT_ENTRY, AT_NULL
    notes = (note(1, prstatus) + note(3, prpsinfo) + note(0x53494749, siginfo)
             + note(6, auxv))

    phoff, phnum = 64, 2
    notes_off = phoff + 56 * phnum
    stack_off = (notes_off + len(notes) + 0xFFF) & ~0xFFF
    stack = b"".join(struct.pack("<Q", 0x1000 + 8 * i) for i in range(512))
    ehdr = (b"\x7fELF\x02\x01\x01" + b"\0" * 9
            + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, phoff, 0, 0, 64, 56, phnum, 64, 0, 0))
    ph_note = struct.pack("<IIQQQQQQ", 4, 4, notes_off, 0, 0, len(notes), 0, 4)
    ph_load = struct.pack("<IIQQQQQQ", 1, 6, stack_off, RSP & ~0xFFF, 0, len(stack), len(stack), 0x1000)
    core = ehdr + ph_note + ph_load + notes
    core += b"\0" * (stack_off - len(core)) + stack
    return core


for name, sig in (("x86_64-minimal", 11), ("x86_64-badsig", 1476395019)):
    with open("fuzz/corpus/core/" + name, "wb") as f:
        f.write(core_file(sig))
