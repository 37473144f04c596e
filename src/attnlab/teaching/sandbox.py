"""The sandbox in which grading runs a student's notebook (homework grading).

Every kernel that nbgrader starts for a submission is this module's command, which
starts the kernel inside bubblewrap (``bwrap``, Debian's package ``bubblewrap``):

- it runs as an unprivileged user (65534, "nobody") in a user namespace of its own,
  with no capabilities and no way to gain any (``no_new_privs``, no nested user
  namespace), whether the grader runs as root or as an ordinary user: a read-only
  mount cannot be made writable again, even by a grader that is root;
- it starts no process and no program (:mod:`attnlab.teaching.confined`, a seccomp
  filter): threads only;
- it sees only the system (``/usr``, ``/etc``, ...) and this Python environment
  with attnlab, read-only; not the course folder, the gradebook, the worked
  solutions, other students' folders, the home folder or ``/tmp``;
- it writes only to a fresh ``/tmp`` of bounded size, which disappears with it, and
  to the folder of its own Unix sockets, made for this one submission and removed
  after it;
- it has no network (its own network namespace; nbgrader talks to it through Unix
  sockets), a fresh ``/proc`` of its own PID namespace, and a clean environment:
  bubblewrap itself, its first process, is started with nothing but ``PATH``, and
  the kernel keeps only ``PATH``, the locale, thread counts and ``ATTNLAB_*``;
- its standard input, output and error are the null device, not the grader's: what
  it prints reaches the grader only through the kernel's messages;
- CPU seconds, memory and file size are limited (:class:`Limits`); when the kernel
  ends or is killed, everything in its PID namespace ends with it.

nbgrader itself (the hidden tests it inserts, the scores it reads from the outputs,
the gradebook, the feedback) runs outside, after the kernel has ended. Run as
``python -m attnlab.teaching.sandbox [limits] [--hide PATH ...] CONNECTION_FILE``
by the kernel spec that :func:`use_sandbox` writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

KERNEL_NAME = "attnlab-sandbox"
KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ", "PYTHONHASHSEED")
KEPT_PREFIXES = ("ATTNLAB_", "OMP_", "MKL_")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
HOME = "/tmp/home"  # the kernel's home folder, inside its own /tmp
NOBODY = "65534"  # the kernel's user and group inside its user namespace


@dataclass(frozen=True)
class Limits:
    """What one kernel may use: CPU seconds per process, address space, the size
    of a file it writes, processes it may add, and the size of its ``/tmp``."""

    cpu_seconds: int = 900
    memory_bytes: int = 8 * 2**30
    file_bytes: int = 64 * 2**20
    processes: int = 256
    tmp_bytes: int = 512 * 2**20


DEFAULT_LIMITS = Limits()


# no capability, no way back to one, nobody inside, every namespace unshared (no
# nested user namespace either: bubblewrap 0.8 refuses it itself where it can, and
# the kernel's seccomp filter refuses unshare on any version)
CONFINEMENT = (
    "--unshare-all",
    "--unshare-user",
    "--uid",
    NOBODY,
    "--gid",
    NOBODY,
    "--cap-drop",
    "ALL",
    "--new-session",
    "--die-with-parent",
)


@functools.cache
def confinement() -> tuple[str, ...]:
    """:data:`CONFINEMENT`, and ``--disable-userns`` where bubblewrap has it."""
    found = subprocess.run(["bwrap", "--help"], capture_output=True, text=True)
    newer = "--disable-userns" in found.stdout + found.stderr
    return (*CONFINEMENT, "--disable-userns") if newer else CONFINEMENT


def unavailable() -> str | None:
    """Why the sandbox cannot run on this machine, or None if it can."""
    if shutil.which("bwrap") is None:
        return (
            "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        )
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", *confinement(), "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"bwrap cannot make a sandbox here: {probe.stderr.strip()[:200]}"
    return None


def _outermost(paths: set[Path]) -> list[Path]:
    """The paths that lie inside no other of ``paths``, sorted."""
    ordered = sorted(paths, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in ordered:
        if not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return sorted(kept)


def readable_paths() -> list[Path]:
    """The folders the kernel sees read-only: the system, this Python (its
    prefixes and ``sys.path``) and attnlab with the folders its links point to."""
    import attnlab

    package = Path(attnlab.__file__).resolve().parent
    paths = {Path(p) for p in SYSTEM}
    paths |= {
        Path(p).resolve()
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
    paths |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
    paths.add(package)
    paths |= {link.resolve() for link in package.iterdir() if link.is_symlink()}
    paths.discard(Path.cwd().resolve())  # the grader's folder, unless named above
    return _outermost({p for p in paths if p.exists()})


def environment(source: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: what of ``source`` (default ``os.environ``) it
    keeps, and a home, caches and temporary folder inside its own ``/tmp``."""
    source = os.environ if source is None else source
    kept = {
        name: value
        for name, value in source.items()
        if name in KEPT_ENVIRONMENT or name.startswith(KEPT_PREFIXES)
    }
    return {
        **kept,
        "HOME": HOME,
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": f"{HOME}/.matplotlib",
        "IPYTHONDIR": f"{HOME}/.ipython",
        "PYTHONDONTWRITEBYTECODE": "1",
        "JPY_PARENT_PID": "1",  # ipykernel: no parent to poll, no banner
    }


def command(
    connection_file: Path, limits: Limits, hide: Sequence[Path] = ()
) -> list[str]:
    """The ``bwrap`` command line that starts the kernel of ``connection_file``
    (a Jupyter connection file with the ``ipc`` transport) in the sandbox; the
    folders in ``hide`` are emptied where they lie inside a readable path."""
    connection_file = Path(connection_file).resolve()
    info = json.loads(connection_file.read_text())
    if info.get("transport") != "ipc":
        raise ValueError(
            f"expected a connection file with transport 'ipc', got"
            f" {info.get('transport')!r} in {connection_file}"
        )
    sockets = Path(info["ip"]).resolve().parent
    argv = ["bwrap", *confinement(), "--clearenv"]
    for name, value in environment().items():
        argv += ["--setenv", name, value]
    # the empty /tmp first, so that what is bound later may lie inside it
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", "--dir", HOME]
    readable = readable_paths()
    for path in readable:
        argv += ["--ro-bind", str(path), str(path)]
    for path in hide:
        path = Path(path).resolve()
        if any(path.is_relative_to(p) for p in readable) and path.exists():
            argv += ["--tmpfs", str(path)]
    argv += ["--ro-bind", str(connection_file), str(connection_file)]
    argv += ["--bind", str(sockets), str(sockets), "--chdir", "/tmp"]
    kernel = [sys.executable, "-m", "attnlab.teaching.confined"]
    return argv + kernel + ["-f", str(connection_file)]


def _own_processes() -> int:
    """How many processes this user runs now (what RLIMIT_NPROC counts)."""
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


def set_limits(limits: Limits) -> None:
    """Apply ``limits`` to this process and all it starts. The process limit counts
    every process of the user (and does not bind root), so it is set to what the
    user runs now plus ``limits.processes``."""
    for which, value in (
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NPROC, _own_processes() + limits.processes),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))


def kernel_spec(folder: Path, limits: Limits, hide: Sequence[Path] = ()) -> Path:
    """Write the sandbox's Jupyter kernel spec under ``folder`` (a data folder for
    ``JUPYTER_PATH``); returns the spec's file."""
    argv = [sys.executable, "-m", "attnlab.teaching.sandbox"]
    for name, value in dataclasses.asdict(limits).items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    for path in hide:
        argv += ["--hide", str(Path(path).resolve())]
    spec = {
        "argv": [*argv, "{connection_file}"],
        "display_name": "Python 3 (graded in a sandbox)",
        "language": "python",
        "interrupt_mode": "message",  # no signal crosses into its PID namespace
    }
    path = folder / "kernels" / KERNEL_NAME / "kernel.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, indent=1))
    return path


def use_sandbox(config, scratch: Path, limits: Limits, hide: Sequence[Path]) -> None:
    """Configure nbgrader (its traitlets ``config``) so that every notebook it
    executes runs in the sandbox: the kernel spec and the Unix sockets live in
    ``scratch``, a folder of this grading process."""
    data = scratch / "jupyter"
    kernel_spec(data, limits, hide)
    sockets = scratch / "sockets"
    sockets.mkdir(parents=True, exist_ok=True)
    paths = os.environ.get("JUPYTER_PATH", "")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(data), paths) if p)
    config.Execute.kernel_name = KERNEL_NAME
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = str(sockets / "kernel")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.teaching.sandbox",
        description=__doc__.splitlines()[0],
    )
    for field in dataclasses.fields(Limits):
        parser.add_argument(
            f"--{field.name.replace('_', '-')}", type=int, default=field.default
        )
    parser.add_argument("--hide", type=Path, action="append", default=[])
    parser.add_argument("connection_file", type=Path)
    args = parser.parse_args(argv)
    fields = dataclasses.fields(Limits)
    limits = Limits(**{field.name: getattr(args, field.name) for field in fields})
    argv = command(args.connection_file, limits, args.hide)
    set_limits(limits)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit(unavailable())
    # the kernel's standard streams are its own: the null device, not the grader's
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    # bubblewrap stays the sandbox's first process, whose environment a notebook
    # can read in /proc/1/environ: it gets nothing of the grader's
    os.execve(bwrap, argv, {"PATH": os.defpath})


if __name__ == "__main__":
    main()
