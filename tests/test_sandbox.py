"""The sandbox in which grading runs a student's notebook (attnlab.teaching.sandbox): what its
command line binds, hides and keeps, and, where bubblewrap runs, a notebook executed
in it that tries to reach the course, the package, the network and to outlive its
kernel."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

import attnlab
from attnlab.teaching import sandbox
from attnlab.teaching.sandbox import (
    KERNEL_NAME,
    Limits,
    command,
    environment,
    kernel_spec,
)

CAN_RUN = sandbox.unavailable() is None
needs_bwrap = pytest.mark.skipif(not CAN_RUN, reason="bubblewrap cannot run here")


def connection_file(folder: Path, transport: str = "ipc") -> Path:
    path = folder / "kernel-1.json"
    sockets = folder / "sockets"
    sockets.mkdir(exist_ok=True)
    info = {"transport": transport, "ip": str(sockets / "kernel"), "key": "k"}
    path.write_text(json.dumps(info))
    return path


def test_the_environment_keeps_only_what_the_kernel_needs():
    env = environment({"PATH": "/usr/bin", "AWS_SECRET": "x", "ATTNLAB_QUICK": "1"})
    assert env["PATH"] == "/usr/bin" and env["ATTNLAB_QUICK"] == "1"
    assert "AWS_SECRET" not in env
    assert env["HOME"].startswith("/tmp/")


def test_the_command_binds_read_only_hides_the_course_and_unshares(tmp_path):
    course = Path(attnlab.__file__).resolve().parent / "exercises"  # a readable path
    argv = command(connection_file(tmp_path), Limits(), hide=[course])
    assert argv[0] == "bwrap" and "--unshare-all" in argv and "--clearenv" in argv
    assert "--die-with-parent" in argv
    pairs = list(zip(argv, argv[1:], strict=False))
    assert ("--tmpfs", str(course)) in pairs
    assert ("--tmpfs", "/tmp") in pairs
    first_bind = min(i for i, a in enumerate(argv) if a in ("--bind", "--ro-bind"))
    assert argv.index("/tmp") < first_bind  # what is bound may lie inside /tmp
    writable = [b for a, b in pairs if a == "--bind"]
    assert writable == [str(tmp_path / "sockets")]  # nothing else is writable
    package = Path(attnlab.__file__).resolve().parent
    readable = [Path(b) for a, b in pairs if a == "--ro-bind"]
    assert any(package.is_relative_to(path) for path in readable)
    kernel = ["-m", "attnlab.teaching.confined", "-f", str(tmp_path / "kernel-1.json")]
    assert argv[-4:] == kernel
    for confinement in ("--unshare-user", "--disable-userns", "--new-session"):
        assert confinement in argv
    assert ("--cap-drop", "ALL") in pairs and ("--uid", "65534") in pairs


def test_a_tcp_connection_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="transport 'ipc'"):
        command(connection_file(tmp_path, transport="tcp"), Limits())


def test_the_kernel_spec_passes_the_limits_and_interrupts_by_message(tmp_path):
    limits = Limits(cpu_seconds=7, processes=3)
    spec = json.loads(kernel_spec(tmp_path, limits, hide=[tmp_path]).read_text())
    assert spec["interrupt_mode"] == "message"
    argv = spec["argv"]
    assert argv[1:3] == ["-m", "attnlab.teaching.sandbox"]
    assert argv[argv.index("--cpu-seconds") + 1] == "7"
    assert argv[argv.index("--processes") + 1] == "3"
    assert argv[argv.index("--hide") + 1] == str(tmp_path.resolve())
    assert argv[-1] == "{connection_file}"


def test_unavailable_names_the_missing_tool(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    assert "apt-get install bubblewrap" in sandbox.unavailable()


ATTACK = """\
import ctypes, os, socket, subprocess, sys
import attnlab.exercises._checking as checking

def attempt(name, action):
    try:
        action()
        print(name, "succeeded")
    except Exception as error:
        print(name, "failed", type(error).__name__)

def remount():
    libc = ctypes.CDLL(None, use_errno=True)
    folder = os.path.dirname(checking.__file__).encode()
    # MS_REMOUNT | MS_BIND: make the read-only package writable again
    if libc.mount(None, folder, None, 0x20 | 0x1000, None) != 0:
        raise OSError(ctypes.get_errno(), "mount")

def own_process():
    if os.fork() == 0:
        os._exit(0)

attempt("read course", lambda: open({secret!r}).read())
attempt("patch package", lambda: open(checking.__file__, "a").write("#"))
attempt("remount package", remount)
attempt("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("write home", lambda: open(os.path.expanduser("~/x"), "w").write("x"))
attempt("start a program", lambda: subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(3141)"], start_new_session=True))
attempt("fork", own_process)
attempt("become root", lambda: os.setuid(0))
os.write(1, b"ROW ON THE GRADER'S OUTPUT\\n")
os.write(2, b"ROW ON THE GRADER'S ERRORS\\n")
print("uid", os.getuid(), "caps", [line.split()[1] for line in open("/proc/self/status")
                                   if line.startswith("CapEff")])
print("environ of 1", b"secret" in open("/proc/1/environ", "rb").read())
print("secret" in os.environ, os.getcwd())
"""


def survivors() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            text = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "time.sleep(3141)" in text:
            found.append(entry.name)
    return found


@needs_bwrap
def test_a_notebook_in_the_sandbox_reaches_nothing_and_leaves_nothing(
    tmp_path, monkeypatch, capfd
):
    from nbclient import NotebookClient

    course = tmp_path / "course"
    course.mkdir()
    secret = course / "source.ipynb"
    secret.write_text("the worked solutions")
    package_file = Path(attnlab.__file__).resolve().parent / "exercises/_checking.py"
    before = package_file.read_bytes()
    monkeypatch.setenv("secret", "1")
    monkeypatch.setenv("JUPYTER_PATH", "")
    config = Config()
    sandbox.use_sandbox(config, tmp_path / "scratch", Limits(), hide=[course])
    assert config.Execute.kernel_name == KERNEL_NAME
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(ATTACK.format(secret=str(secret)))]
    )
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        config=config,
        timeout=120,
        resources={"metadata": {"path": str(course)}},
    )
    client.execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    attacks = ("read course", "patch package", "remount package", "network",
               "start a program", "fork", "become root")
    for attack in attacks:
        assert f"{attack} failed" in text, text
    assert "write home succeeded" in text  # its own /tmp
    assert "uid 65534 caps ['0000000000000000']" in text  # nobody, no capability
    assert "environ of 1 False" in text  # bubblewrap, pid 1, has no grader's variable
    assert "False /tmp" in text  # the grader's environment is not passed on
    grader_saw = capfd.readouterr()
    assert "ROW ON THE GRADER" not in grader_saw.out + grader_saw.err
    assert package_file.read_bytes() == before
    deadline = time.monotonic() + 10
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert survivors() == []


@needs_bwrap
def test_the_limits_apply_inside(tmp_path):
    """A child that writes past the file-size limit is stopped (SIGXFSZ)."""
    script = (
        "from attnlab.teaching.sandbox import Limits, set_limits; import os;"
        " set_limits(Limits(file_bytes=1000));"
        " os.execvp('sh', ['sh', '-c', 'head -c 5000 /dev/zero > /tmp/f'])"
    )
    run = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--unshare-all"]
        + ["--", sys.executable, "-c", script],
        capture_output=True,
        env={**os.environ},
    )
    assert run.returncode != 0


def test_the_kernel_s_filter_refuses_processes_programs_and_namespaces_not_threads():
    """attnlab.teaching.confined, loaded in a child Python: threads run; fork, exec, spawn, unshare are refused."""
    code = (
        "import ctypes, os, subprocess, threading\n"
        "from attnlab.teaching.confined import no_new_processes\n"
        "no_new_processes()\n"
        "ran = []\n"
        "t = threading.Thread(target=lambda: ran.append(1)); t.start(); t.join()\n"
        "import torch; torch.set_num_threads(2); (torch.ones(300, 300) @ torch.ones(300, 300)).sum()\n"
        "print('thread', ran == [1])\n"
        "for name, act in [('fork', os.fork), ('program', lambda: subprocess.run(['true'])),\n"
        "                  ('spawn', lambda: os.posix_spawn('/bin/true', ['true'], {})),\n"
        "                  ('exec', lambda: os.execv('/bin/true', ['true'])),\n"
        "                  ('unshare', lambda: ctypes.CDLL(None).unshare(0x10000000) == 0 or 1 / 0)]:\n"
        "    try:\n"
        "        act(); print(name, 'allowed')\n"
        "    except Exception:\n"
        "        print(name, 'refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == ["thread True", "fork refused", "program refused", "spawn refused",
                                            "exec refused", "unshare refused"], done.stdout


def test_the_filter_is_written_for_both_architectures_and_refuses_others():
    from attnlab.teaching import confined

    for machine in ("x86_64", "aarch64"):
        code = confined.program(machine)
        assert len(code) % 8 == 0 and 10 < len(code) // 8 < 64
    with pytest.raises(OSError, match="x86_64 or aarch64"):
        confined.program("riscv64")
