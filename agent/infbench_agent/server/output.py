"""Where the server's stdout and stderr went, read when its recipe is adopted, and the same place for its next start.

/proc/<pid>/fd/1 and fd/2 name what the process writes to: the path of a file the user redirected it to
(`> its-own.log 2>&1`), /dev/null, a terminal (/dev/pts/N), `pipe:[inode]` (a `| tee`, a container's
log shim, a supervisor), `socket:[inode]` (journald's stdout stream for a systemd service or
`systemd-cat`, or another listener). A start puts the output back where it went: the same file opened
for appending (the user's earlier lines kept), /dev/null, the journal through `systemd-cat`. What cannot
be reconnected (a pipe whose reader is another process, a terminal that may since belong to another
session) goes to the tool's own log on the host, and the start says so.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from typing import IO, Any, Dict, List, Optional, Tuple, Union

# journald's socket for the stdout of services and `systemd-cat` (systemd's src/journal/journald-stream.c).
JOURNAL_STDOUT = "/run/systemd/journal/stdout"
_DELETED = " (deleted)"


def describe(pid: int, fd: int, manager_kind: str = "process") -> Optional[Dict[str, Any]]:
    """What fd (1 or 2) of the process writes to: {kind, target, path?, peer?}; None where /proc does not say."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    out: Dict[str, Any] = {"kind": "other", "target": target}
    if target.startswith("/"):
        path = target[: -len(_DELETED)] if target.endswith(_DELETED) else target
        try:
            mode = os.stat(f"/proc/{pid}/fd/{fd}").st_mode
        except OSError:
            mode = 0
        if path == "/dev/null":
            out.update(kind="null", path=path)
        elif stat.S_ISREG(mode) or target.endswith(_DELETED):
            out.update(kind="file", path=path)
            if target.endswith(_DELETED):
                out["deleted"] = True
        elif stat.S_ISCHR(mode) and (path.startswith("/dev/pts/") or path.startswith("/dev/tty") or path == "/dev/console"):
            out.update(kind="tty", path=path)
        else:
            out["path"] = path
    elif target.startswith("pipe:["):
        out["kind"] = "pipe"
        peer = _pipe_reader(pid, target)
        if peer:
            out["peer"] = peer
    elif target.startswith("socket:["):
        peer_path = _unix_peer_path(target[len("socket:[") : -1])
        out["kind"] = "journal" if peer_path == JOURNAL_STDOUT else "socket"
        if peer_path:
            out["peer"] = peer_path
    # Seen from the host, a container's output is a pipe to its runtime's shim: the container's log.
    if manager_kind in ("docker", "podman") and out["kind"] in ("pipe", "socket", "other"):
        out["kind"] = "container"
    return out


def _command_of(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return ""
    return " ".join(argv[:4])


def _pipe_reader(pid: int, target: str) -> Optional[str]:
    """The process at the pipe's other end (`pid N (tee out.log)`): another holder of the same pipe, outside the server's own tree."""
    tree = {str(pid)}
    holders: List[str] = []
    try:
        names = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    parents: Dict[str, str] = {}
    for name in names:
        try:
            with open(f"/proc/{name}/stat") as f:
                parents[name] = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{name}/fd/{fd}") == target:
                    holders.append(name)
                    break
            except OSError:
                continue
    # The server's children inherit its stdout: they hold the same pipe but are not its reader.
    changed = True
    while changed:
        changed = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                changed = True
    for holder in holders:
        if holder not in tree:
            return f"pid {holder} ({_command_of(holder)})"
    return None


def _unix_peer_path(inode: str) -> Optional[str]:
    """The path the other end of a Unix socket is bound to, from `ss -x` (its peer inode column); None where unknown."""
    if not shutil.which("ss"):
        return None
    try:
        text = subprocess.run(["ss", "-xanH"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # Netid State Recv-Q Send-Q Local-Address Local-Inode Peer-Address Peer-Inode
    local: Dict[str, str] = {}
    peer_of: Dict[str, str] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 8:
            continue
        local[cols[5]] = cols[4]
        peer_of[cols[5]] = cols[7]
    path = local.get(peer_of.get(inode, ""), "")
    return path if path and path != "*" else None


def describe_in_words(out: Optional[Dict[str, Any]]) -> str:
    if not out:
        return "not recorded"
    kind = out["kind"]
    if kind == "file":
        return f"the file {out['path']}" + (" (deleted since)" if out.get("deleted") else "")
    if kind == "null":
        return "/dev/null"
    if kind == "tty":
        return f"the terminal {out['path']}"
    if kind == "pipe":
        return f"a pipe to {out['peer']}" if out.get("peer") else "a pipe"
    if kind == "journal":
        return "the systemd journal"
    if kind == "container":
        return "the container's log"
    if kind == "socket":
        return f"a socket to {out['peer']}" if out.get("peer") else "a socket"
    return out.get("target") or "something /proc does not name"


Stream = Union[int, IO[bytes]]


class StartOutput:
    """The stdout and stderr a start hands the server, what to put before its argv, and what to follow as its log."""

    def __init__(self) -> None:
        self.stdout: Stream = subprocess.DEVNULL
        self.stderr: Stream = subprocess.DEVNULL
        self.prefix: List[str] = []
        # (path, offset): the files its start-up log is read from, each from where this start began writing.
        self.follow: List[Tuple[str, int]] = []
        self.notes: List[str] = []
        self._opened: List[IO[bytes]] = []
        # Where the whole log can be read, for a message.
        self.where = ""

    def open_append(self, path: str) -> IO[bytes]:
        try:
            f = open(path, "ab")
        except OSError as e:
            for g in self._opened:
                g.close()
            raise OSError(f"cannot append to {path}, where the server's output went: {e.strerror}") from e
        self._opened.append(f)
        offset = f.seek(0, os.SEEK_END)
        if path not in [p for p, _ in self.follow]:
            self.follow.append((path, offset))
        return f

    def close(self) -> None:
        # The child holds its own copies; ours are closed once it runs.
        for f in self._opened:
            f.close()


def plan(stdout: Optional[Dict[str, Any]], stderr: Optional[Dict[str, Any]], tool_log: str) -> StartOutput:
    """Opens stdout and stderr as the recipe's targets say; what cannot be reconnected goes to `tool_log`."""
    out = StartOutput()
    if stdout and stderr and stdout["kind"] == "journal" and stderr["kind"] == "journal" and shutil.which("systemd-cat"):
        # systemd-cat connects both to the journal and then execs the command: the same process, its own argv.
        out.prefix = ["systemd-cat"]
        out.stdout = out.stderr = subprocess.DEVNULL
        out.where = "the systemd journal (journalctl -f)"
        out.notes.append("its output goes to the systemd journal through systemd-cat, as before: journalctl -f shows it")
        return out
    tool: List[IO[bytes]] = []

    def to_tool(which: str, what: Optional[Dict[str, Any]]) -> IO[bytes]:
        if not tool:
            tool.append(out.open_append(tool_log))
        why = {
            "tty": "a restarted server has no terminal",
            "pipe": "the pipe's reader is another process, which a new start cannot be connected to",
            "journal": "systemd-cat is not installed here",
        }.get((what or {}).get("kind", ""), "the tool cannot reconnect it")
        if what is None:
            out.notes.append(f"where its {which} went was not recorded (a recipe adopted by an older version): it goes to {tool_log}")
        else:
            out.notes.append(f"its {which} went to {describe_in_words(what)} ({why}): it goes to {tool_log}")
        return tool[0]

    def open_one(which: str, what: Optional[Dict[str, Any]]) -> Stream:
        kind = (what or {}).get("kind")
        if kind == "file":
            return out.open_append(what["path"])  # type: ignore[index]
        if kind == "null":
            return subprocess.DEVNULL
        return to_tool(which, what)

    out.stdout = open_one("stdout", stdout)
    same = stdout is not None and stderr is not None and stdout.get("target") == stderr.get("target")
    # `> log 2>&1`: one open file for both, so their lines interleave as they did.
    out.stderr = subprocess.STDOUT if same or stderr is None and stdout is None else open_one("stderr", stderr)
    if out.stderr is subprocess.STDOUT and out.stdout is subprocess.DEVNULL:
        out.stderr = subprocess.DEVNULL
    out.where = " and ".join(p for p, _ in out.follow) or "/dev/null"
    if not out.follow:
        out.notes.append("its output goes to /dev/null, as before: there is no start-up log to show")
    return out
