"""The first code of a graded notebook's kernel, inside the sandbox: from here on the
process can start no other process and no other program (homework grading).

A seccomp filter (a classic BPF program, loaded with ``prctl``) refuses, for this
process and every thread it starts:

- ``execve`` and ``execveat``: no program can be started, not even Python again;
- ``fork``, ``vfork``, and ``clone`` without ``CLONE_THREAD``: no new process, so a
  notebook cannot hand an answer to a child process that calls the library, nor
  flood the machine with processes (the process limit would not bind a kernel whose
  user is root outside its namespace);
- ``unshare`` and ``setns``: no new namespace (a user namespace of its own would
  give it capabilities there), no joining another;
- ``clone3`` answers "not implemented", on which the C library starts its threads
  with ``clone``: threads still work (PyTorch's, the kernel's own);
- a system call of another architecture's numbering (x32, 32-bit x86) is refused.

The notebooks need none of it. Then the IPython kernel starts in this same process:
``python -m attnlab.teaching.confined -f CONNECTION_FILE``. Linux on x86_64 and
aarch64 only; elsewhere the kernel does not start.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
NR, ARCH, ARG0 = 0, 4, 16
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# the system calls refused, by number, per architecture
SYSCALLS = {
    "x86_64": {
        "clone": 56,
        "fork": 57,
        "vfork": 58,
        "execve": 59,
        "execveat": 322,
        "clone3": 435,
        "unshare": 272,
        "setns": 308,
    },
    "aarch64": {
        "clone": 220,
        "execve": 221,
        "execveat": 281,
        "clone3": 435,
        "unshare": 97,
        "setns": 268,
    },
}
X32_BIT = 0x40000000  # x86_64's x32 system calls have this bit set
CLONE_THREAD = 0x00010000
ALLOW = 0x7FFF0000
ERRNO = 0x00050000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
# classic BPF opcodes
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one's): packed ``sock_filter``s."""
    machine = machine or platform.machine()
    if machine not in SYSCALLS:
        raise OSError(f"the sandbox runs on x86_64 or aarch64, not on {machine}")
    calls = SYSCALLS[machine]
    deny, enosys = ERRNO | errno.EPERM, ERRNO | errno.ENOSYS
    names = ("execve", "execveat", "fork", "vfork", "unshare", "setns")
    refused = [calls[n] for n in names if n in calls]
    # (jump, number, where to): each test of the system call's number
    tests = [(JGE_K, X32_BIT, "deny")] if machine == "x86_64" else []
    tests += [(JEQ_K, nr, "deny") for nr in refused]
    tests += [(JEQ_K, calls["clone3"], "enosys"), (JEQ_K, calls["clone"], "clone")]
    first = 4  # the instructions before the tests: the architecture's, then LD nr
    allow = first + len(tests)
    where = {"enosys": allow + 1, "clone": allow + 2, "deny": allow + 5}
    ops = [
        _op(LD_W_ABS, ARCH),
        _op(JEQ_K, AUDIT_ARCH[machine], 1, 0),
        _op(RET_K, deny),  # another architecture's numbering
        _op(LD_W_ABS, NR),
    ]
    for index, (jump, number, target) in enumerate(tests, start=first):
        ops.append(_op(jump, number, where[target] - index - 1, 0))
    ops += [
        _op(RET_K, ALLOW),  # allow: no test matched
        _op(RET_K, enosys),  # clone3: "not implemented", so threads use clone
        _op(LD_W_ABS, ARG0),  # clone: its flags
        _op(JSET_K, CLONE_THREAD, 0, 1),
        _op(RET_K, ALLOW),  # a thread
        _op(RET_K, deny),  # a process
    ]
    return b"".join(ops)


def no_new_processes() -> None:
    """Load the filter into this process (and every thread it starts from now)."""
    code = program()
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    for args in (
        (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0),
    ):
        if libc.prctl(*[ctypes.c_ulong(a) for a in args]) != 0:
            raise OSError(ctypes.get_errno(), "prctl refused the sandbox's filter")


def main() -> None:
    no_new_processes()
    from ipykernel.kernelapp import launch_new_instance

    sys.argv[0] = "ipykernel_launcher"
    launch_new_instance()


if __name__ == "__main__":
    main()
