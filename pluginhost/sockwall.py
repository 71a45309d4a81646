"""The socket wall: run a program under a seccomp filter that refuses every new socket.

    python -I -S sockwall.py <program> <args...>

A community plugin host is started through this launcher (docs/plugin-host.md, "Threat model").
It installs a seccomp filter, then replaces itself with the program; the filter stays on for the
program and everything it could start. The filter answers EPERM to socket(), connect(), bind(),
listen(), accept() and accept4() (so no Unix socket - PostgreSQL's, Redis's, Docker's - and no
network socket can be opened or used by a new handle), and to the io_uring calls, which could
otherwise do the same work past the filter. Calls of another architecture (32-bit, x32) are
refused outright. The host's channel is a pair of pipes, which the filter does not touch.

It is a separate script run with `-I -S` (stdlib only, nothing of the hub imported) rather than a
preexec_fn, because code run between fork and exec in a threaded web process may deadlock.
Exit status 125 with a message on stderr when the filter cannot be installed (not Linux, an
unknown architecture, a kernel without seccomp): the supervisor then refuses the host.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

# Per architecture: the audit arch value seccomp reports, and the refused system call numbers.
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "connect": 42,
            "accept": 43,
            "bind": 49,
            "listen": 50,
            "accept4": 288,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "bind": 200,
            "listen": 201,
            "accept": 202,
            "connect": 203,
            "accept4": 242,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
        },
    ),
}
X32_SYSCALL_BIT = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
EPERM = 1
# Classic BPF opcodes.
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
RET_K = 0x06


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def filter_program(machine: str) -> bytes:
    """The BPF program for this machine: refuse the socket calls, allow everything else."""
    arch, calls = ARCHES[machine]
    numbers = sorted(set(calls.values()))
    refuse = RET_ERRNO | EPERM
    insns = [
        _insn(LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(JEQ_K, 1, 0, arch),
        _insn(RET_K, 0, 0, refuse),  # another ABI: refuse everything
        _insn(LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        insns.append(_insn(JGE_K, len(numbers) + 1, 0, X32_SYSCALL_BIT))
    for index, number in enumerate(numbers):
        # Jump to the refusal at the end when it matches.
        insns.append(_insn(JEQ_K, len(numbers) - index, 0, number))
    insns.append(_insn(RET_K, 0, 0, RET_ALLOW))
    insns.append(_insn(RET_K, 0, 0, refuse))
    return b"".join(insns)


def install() -> None:
    if not sys.platform.startswith("linux"):
        raise OSError("seccomp exists only on Linux")
    machine = platform.machine()
    if machine not in ARCHES:
        raise OSError(f"no socket filter is written for the {machine} architecture")
    program = filter_program(machine)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buffer = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("sockwall: no program to run\n")
        return 125
    try:
        install()
    except OSError as exc:
        sys.stderr.write(f"sockwall: the socket filter could not be installed: {exc}\n")
        return 125
    # argv[0] "node": the program sees no server path in process.argv0.
    os.execv(argv[0], ["node", *argv[1:]])
    return 125  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
