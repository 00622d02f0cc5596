"""The seccomp filter every sandboxed call runs under, compiled to classic BPF here, in pure Python.

It closes what namespaces and an unprivileged uid leave open to a call:

- the kernel keyring (``keyctl``, ``add_key``, ``request_key``): the user
  keyring outlives processes, so a key added in one call could be read in the
  next; denied with ``EPERM``;
- new namespaces (``unshare``/``clone`` with any ``CLONE_NEW*`` flag, ``setns``):
  a user namespace would hand the call capabilities over its own mounts and
  widen the kernel surface it reaches; denied with ``EPERM``. ``clone3`` passes
  its flags in memory a filter cannot read, so it fails with ``ENOSYS`` and libc
  falls back to ``clone`` (threads, ``fork`` and ``posix_spawn`` keep working);
- other system call ABIs (i386 through ``int 0x80``, x32), which would reach
  the same calls under other numbers: ``ENOSYS``.

Everything else is allowed: the filter narrows, it does not replace, the
namespaces and limits. Supported architectures: x86_64 and aarch64.

    >>> len(call_filter("x86_64")) % 8
    0
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["call_filter"]

# Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JEQ_K = 0x05 | 0x10
_JGE_K = 0x05 | 0x30
_JSET_K = 0x05 | 0x40
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# Offsets in struct seccomp_data: nr, arch, then the u64 args (little-endian: low word first).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

# CLONE_NEWTIME | NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE_NEW_ANY = 0x80 | 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_X32_BIT = 0x40000000

_ARCHES = {
    # machine: (AUDIT_ARCH_*, syscall numbers, has the x32 ABI)
    "x86_64": (0xC000003E, {"clone": 56, "unshare": 272, "setns": 308, "add_key": 248, "request_key": 249,
                            "keyctl": 250, "clone3": 435}, True),
    "aarch64": (0xC00000B7, {"clone": 220, "unshare": 97, "setns": 268, "add_key": 217, "request_key": 218,
                             "keyctl": 219, "clone3": 435}, False),
}
_ARCHES["amd64"] = _ARCHES["x86_64"]
_ARCHES["arm64"] = _ARCHES["aarch64"]


def _assemble(program: list[tuple[int, int, str | None]]) -> bytes:
    """``struct sock_filter`` bytes of ``(opcode, k, label)`` steps; a jump goes to ``label`` when true.

    A step whose opcode is a string is a label for the step that follows it.
    """
    labels: dict[str, int] = {}
    steps: list[tuple[int, int, str | None]] = []
    for opcode, k, label in program:
        if opcode == -1:
            labels[str(label)] = len(steps)
        else:
            steps.append((opcode, k, label))
    out = bytearray()
    for at, (opcode, k, label) in enumerate(steps):
        jt = labels[label] - at - 1 if label is not None else 0
        out += struct.pack("=HBBI", opcode, jt, 0, k)
    return bytes(out)


def call_filter(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter`` bytes; ``b""`` if unsupported."""
    spec = _ARCHES.get((machine or platform.machine()).lower())
    if spec is None:
        return b""
    audit_arch, nr, has_x32 = spec
    program: list[tuple[int, int, str | None]] = [
        (_LD_W_ABS, _ARCH, None),
        (_JEQ_K, audit_arch, "native"),
        (_RET_K, _ERRNO | errno.ENOSYS, None),
        (-1, 0, "native"),
        (_LD_W_ABS, _NR, None),
    ]
    if has_x32:
        program.append((_JGE_K, _X32_BIT, "nosys"))
    program.append((_JEQ_K, nr["clone3"], "nosys"))
    program += [(_JEQ_K, nr[name], "deny") for name in ("keyctl", "add_key", "request_key", "setns")]
    program += [(_JEQ_K, nr[name], "flags") for name in ("unshare", "clone")]
    program += [
        (_RET_K, _ALLOW, None),
        (-1, 0, "flags"),
        (_LD_W_ABS, _ARG0_LOW, None),
        (_JSET_K, _CLONE_NEW_ANY, "deny"),
        (_RET_K, _ALLOW, None),
        (-1, 0, "deny"),
        (_RET_K, _ERRNO | errno.EPERM, None),
        (-1, 0, "nosys"),
        (_RET_K, _ERRNO | errno.ENOSYS, None),
    ]
    return _assemble(program)
