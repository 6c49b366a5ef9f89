#!/usr/bin/env python3
"""A sampling profiler of a program's host thread, for machines without
perf or gdb (the lent GPU machines).

Usage: scripts/sample_host.py OUTFILE HZ -- PROGRAM ARGS...

Runs PROGRAM, stops its main thread HZ times a second with ptrace and
writes one line per sample to OUTFILE:

    <module>+<offset> | <offset> <offset> ...

the instruction pointer's module and offset (e.g. `libcuda.so.1+46088e`:
the host is inside the driver), then up to 12 words found on the top
64 KiB of the stack that point into PROGRAM's code: return addresses,
nearest call first, with stale ones among them (no unwinding). Resolve
the offsets where PROGRAM was built, with its unstripped copy:

    addr2line -f -C -e PROGRAM 0x<offset>

Found with it (H200, Fork quicksort of 10^7): 88% of the samples inside
`cuStreamCreate` called from `pgpu_rt_task_begin`.
"""
import ctypes, os, signal, sys, time

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_GETREGS, PTRACE_CONT, PTRACE_SEIZE, PTRACE_INTERRUPT = 12, 7, 0x4206, 0x4207
PTRACE_DETACH = 17


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs".split())]


def maps(pid):
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5] if len(parts) > 5 else ""
            out.append((lo, hi, parts[1], int(parts[2], 16), path))
    return out


def main():
    outfile, hz = sys.argv[1], float(sys.argv[2])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    exe = os.path.realpath(cmd[0])
    child = os.fork()
    if child == 0:
        os.execv(cmd[0], cmd)
    pid = child
    time.sleep(0.05)
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        print("seize failed", ctypes.get_errno(), file=sys.stderr)
    samples = []
    mem = None
    exe_maps = []
    while True:
        time.sleep(1.0 / hz)
        if libc.ptrace(PTRACE_INTERRUPT, pid, None, None) != 0:
            break
        wpid, status = os.waitpid(pid, 0x40000000)  # __WALL
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            break
        sig = os.WSTOPSIG(status)
        event = status >> 16
        if not (sig == signal.SIGTRAP and event == 0x80):  # not PTRACE_EVENT_STOP
            libc.ptrace(PTRACE_CONT, pid, None, ctypes.c_void_p(sig if sig != signal.SIGTRAP else 0))
            continue
        regs = Regs()
        libc.ptrace(PTRACE_GETREGS, pid, None, ctypes.byref(regs))
        try:
            all_maps = maps(pid)
            if mem is None:
                mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
            exe_maps = [m for m in all_maps if m[4] == exe and "x" in m[2]]
            leaf = "?"
            for lo, hi, perm, off, path in all_maps:
                if lo <= regs.rip < hi:
                    leaf = f"{os.path.basename(path) or 'anon'}+{regs.rip - lo + off:x}"
            mem.seek(regs.rsp)
            stack = mem.read(65536)
            frames = []
            for i in range(0, len(stack) - 7, 8):
                word = int.from_bytes(stack[i:i + 8], "little")
                for lo, hi, perm, off, path in exe_maps:
                    if lo <= word < hi:
                        frames.append(f"{word - lo + off:x}")
                if len(frames) >= 12:
                    break
            samples.append(leaf + " | " + " ".join(frames))
        except OSError as e:
            samples.append(f"err {e}")
        libc.ptrace(PTRACE_CONT, pid, None, None)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    with open(outfile, "w") as f:
        f.write("\n".join(samples) + "\n")
    print(f"{len(samples)} samples", file=sys.stderr)


main()
