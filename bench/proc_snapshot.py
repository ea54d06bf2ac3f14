"""What a server process is, as /proc shows it, and whether two snapshots are the same server start.

    python3 bench/proc_snapshot.py take PORT OUT.json     # the process listening on PORT
    python3 bench/proc_snapshot.py diff BEFORE.json AFTER.json

`take` records the listening process's pid, command line, working folder, whole environment and where
its stdout (fd 1) and stderr (fd 2) go. `diff` prints, for each of them, `identical` or what differs
(variables added, removed and changed by name; values of changed variables are not printed), and exits
1 when anything but the pid differs.
"""
import json
import os
import sys


def listening_inodes(port: int) -> set:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(inode)
    return inodes


def listener(port: int) -> int:
    inodes = listening_inodes(port)
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    raise SystemExit(f"no process listens on port {port}")


def take(port: int) -> dict:
    pid = listener(port)
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(v.decode().split("=", 1) for v in f.read().split(b"\0") if b"=" in v)
    return {
        "pid": pid,
        "argv": argv,
        "cwd": os.readlink(f"/proc/{pid}/cwd"),
        "environ": dict(sorted(env.items())),
        "fd1": os.readlink(f"/proc/{pid}/fd/1"),
        "fd2": os.readlink(f"/proc/{pid}/fd/2"),
    }


def diff(a: dict, b: dict) -> dict:
    out = {"pid": f"{a['pid']} -> {b['pid']}"}
    for key in ("argv", "cwd", "fd1", "fd2"):
        out[key] = "identical" if a[key] == b[key] else f"{a[key]!r} -> {b[key]!r}"
    ea, eb = a["environ"], b["environ"]
    added = sorted(set(eb) - set(ea))
    removed = sorted(set(ea) - set(eb))
    changed = sorted(k for k in set(ea) & set(eb) if ea[k] != eb[k])
    out["environ"] = (
        f"identical ({len(ea)} variables)"
        if not (added or removed or changed)
        else f"{len(ea)} -> {len(eb)} variables; added {added}, removed {removed}, changed {changed}"
    )
    return out


def main(argv: list) -> int:
    if argv[:1] == ["take"] and len(argv) == 3:
        with open(argv[2], "w") as f:
            json.dump(take(int(argv[1])), f, indent=1)
        return 0
    if argv[:1] == ["diff"] and len(argv) == 3:
        with open(argv[1]) as f1, open(argv[2]) as f2:
            d = diff(json.load(f1), json.load(f2))
        print(json.dumps(d, indent=1))
        return 0 if all(v.startswith("identical") for k, v in d.items() if k != "pid") else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
