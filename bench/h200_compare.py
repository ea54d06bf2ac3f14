"""The figures of bench/h200_lifecycle.sh's evidence folder: restarts against the original, nsys against the loop's log.

    python3 bench/h200_compare.py EVIDENCE_DIR

Reads what the lifecycle script left there: ORIGINAL/after-*.proc.json (the server process after each
step), steps.jsonl (the serving loop's own step log: one line per step, its pid, batch, CUDA-event GPU
time and the profiler that recorded it), profile-torch.json (`infbench profile`, torch), and
nsys-<name>.json (`infbench analyze` of each `infbench profile --profiler nsys` report: graphs, eager,
no-nvtx). Prints each figure with what it is compared against, and exits 1 when a check fails:
- every restart's process: argv, cwd, environ, fd 1 and fd 2 identical to the original's;
- each nsys profile: its decode steps against the steps the loop logged as recorded by the CUDA profiler;
- attribution: from the kernels the reader (agent/infbench_agent/profile/nsys_report.py) names, per layer and
  block (`model.layers.2.self_attn`, `model.lm_head`, ...), over the steps the loop logged at one batch
  size (the largest, seen in both captures): kernels per step equal between the graphs and the eager
  capture, time per block within 5%; nsys-<name>.sqlite beside each analysis;
- kernel categories of the nsys graphs capture against the torch profile of the same server, as shares
  of kernel time, within 3 points.
"""
import collections
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agent"))

ASPECTS = ("argv", "cwd", "environ", "fd1", "fd2")


def load(path):
    with open(path) as f:
        return json.load(f)


def identity(ev, out):
    original = load(os.path.join(ev, "original.proc.json"))
    out.append(f"original: pid {original['pid']}, {len(original['environ'])} variables, cwd {original['cwd']}, fd1 {original['fd1']}")
    ok = True
    for path in sorted(glob.glob(os.path.join(ev, "after-*.proc.json")), key=os.path.getmtime):
        now = load(path)
        same = {k: now[k] == original[k] for k in ASPECTS}
        ok &= all(same.values())
        step = os.path.basename(path)[len("after-") : -len(".proc.json")]
        out.append(
            f"  after {step:<16} pid {now['pid']:>6}: " + ", ".join(f"{k} {'identical' if v else 'DIFFERENT'}" for k, v in same.items())
        )
    return ok


def loop_steps(ev):
    by_pid = collections.defaultdict(list)
    with open(os.path.join(ev, "steps.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            by_pid[row["pid"]].append(row)
    return by_pid


# A step that admits new requests runs their prefill: not a decode step, for the reader as for the torch profile.
PREFILL_LABEL = re.compile(r"^(?:execute_new_[1-9]\d*_cached_|execute_context_[1-9]\d*\()")


def decode_steps(rows, profiler):
    return [s for s in rows if s["profiled"] == profiler and not PREFILL_LABEL.match(s.get("label") or "")]


def nsys_vs_log(ev, by_pid, reports, out):
    ok = True
    for name, rep in reports.items():
        for r in rep["ranks"]:
            logged = decode_steps(by_pid.get(r["pid"], []), "cuda")
            match = r["steps"] == len(logged)
            ok &= match
            med = statistics.median(s["gpuMs"] for s in logged) if logged else float("nan")
            out.append(
                f"  {name:<8} pid {r['pid']}: nsys {r['steps']} decode steps,"
                f" the loop's log {len(logged)} decode steps under the CUDA profiler"
                f" ({'equal' if match else 'DIFFERENT'}); batches {sorted(collections.Counter(s['running'] for s in logged).items())};"
                f" step median {r['stepMs']['median']:.3f} ms first kernel to last (nsys), {med:.3f} ms between the loop's CUDA events"
            )
    return ok


def per_layer(rep):
    """(layer, module type) -> kernels and ms per step; what no layer holds (LM head, sampler...) under `outside`."""
    rank = rep["ranks"][0]
    cells = {}
    in_layers = collections.defaultdict(lambda: [0.0, 0.0])
    for layer in rank["layers"]:
        for m in layer["modules"]:
            cells[(str(layer["layer"]), m["module"])] = (m["kernelsPerStep"], m["msPerStep"])
            in_layers[m["module"]][0] += m["kernelsPerStep"]
            in_layers[m["module"]][1] += m["msPerStep"]
    for m in rank["modules"]:
        k, ms = m["kernelsPerStep"] - in_layers[m["module"]][0], m["msPerStep"] - in_layers[m["module"]][1]
        if m["module"] != "(idle)" and k > 1e-6:
            cells[("outside", m["module"])] = (k, ms)
    return cells


def attribution(graphs, eager, out, tolerance_pct=5.0):
    g, e = per_layer(graphs), per_layer(eager)
    ok = True
    worst = 0.0
    out.append(f"  {'layer':<8} {'module':<24} {'kernels/step graphs':>19} {'eager':>7} {'ms/step graphs':>15} {'eager':>8} {'diff %':>7}")
    for key in sorted(set(g) | set(e)):
        kg, mg = g.get(key, (0.0, 0.0))
        ke, me = e.get(key, (0.0, 0.0))
        diff = 100.0 * (mg - me) / me if me else float("inf")
        same = abs(kg - ke) < 1e-6
        ok &= same
        # Blocks under 5 us per step are listed, not held to the tolerance: there a few hundred ns is one kernel's jitter.
        if me >= 0.005:
            worst = max(worst, abs(diff))
        out.append(
            f"  {key[0]:<8} {key[1]:<24} {kg:>19.2f} {ke:>7.2f} {mg:>15.4f} {me:>8.4f} {diff:>+7.1f}{'' if same else '  KERNELS DIFFER'}"
        )
    out.append(f"  kernels per layer and module: {'equal' if ok else 'NOT equal'}; time per block (>= 5 us per step) within {worst:.1f}%")
    return ok and worst <= tolerance_pct


LAYER_BLOCK = re.compile(r"^(?:model\.)?layers\.(\d+)(?:\.([^.]+))?")


def block_of(module):
    """`model.layers.2.self_attn.o_proj` -> `layer 2 self_attn`; `model.lm_head` -> `lm_head`; None -> `(no NVTX range)`."""
    if module is None:
        return "(no NVTX range)"
    m = LAYER_BLOCK.match(module)
    return f"layer {m.group(1)} {m.group(2) or '(between blocks)'}" if m else module.replace("model.", "", 1).split(".")[0]


def blocks_per_step(sqlite_path, logged):
    """{batch: {block: [kernels, ms] per step}} over the report's steps, each step's batch taken from the loop's log."""
    from infbench_agent.profile import nsys_report

    per_step = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    for rec in nsys_report.NsysReport(sqlite_path).records():
        if rec["type"] == "kernel" and rec["step"] is not None:
            cell = per_step[rec["step"]][block_of(rec["module"])]
            cell[0] += 1
            cell[1] += (rec["end"] - rec["start"]) / 1e6
    steps = sorted(per_step)
    if len(steps) != len(logged):
        return None
    by_batch = collections.defaultdict(list)
    for step, row in zip(steps, logged):
        by_batch[row["running"]].append(per_step[step])
    out = {}
    for batch, rows in by_batch.items():
        keys = set().union(*rows)
        out[batch] = {k: [sum(r[k][0] for r in rows) / len(rows), sum(r[k][1] for r in rows) / len(rows), len(rows)] for k in keys}
    return out


def attribution_by_block(ev, by_pid, reports, out, tolerance_pct=5.0):
    found = {}
    for name in ("graphs", "eager"):
        path = os.path.join(ev, f"nsys-{name}.sqlite")
        pid = reports[name]["ranks"][0]["pid"]
        logged = decode_steps(by_pid.get(pid, []), "cuda")
        found[name] = blocks_per_step(path, logged) if os.path.exists(path) else None
        if not found[name]:
            out.append(f"  {name}: no per-step comparison ({path} missing, or its steps do not pair with the loop's log)")
            return False
    batch = max(set(found["graphs"]) & set(found["eager"]))
    g, e = found["graphs"][batch], found["eager"][batch]
    n_g, n_e = next(iter(g.values()))[2], next(iter(e.values()))[2]
    out.append(f"  batch {batch}: {n_g} steps (graphs), {n_e} steps (eager)")
    out.append(f"  {'block':<28} {'kernels/step graphs':>19} {'eager':>7} {'ms/step graphs':>15} {'eager':>8} {'diff %':>7}")
    ok, worst = True, 0.0

    def order(k):
        m = re.match(r"layer (\d+) (.*)", k)
        return (0, int(m.group(1)), m.group(2)) if m else (1, 0, k)

    for key in sorted(set(g) | set(e), key=order):
        kg, mg = g.get(key, [0, 0.0])[:2]
        ke, me = e.get(key, [0, 0.0])[:2]
        same = abs(kg - ke) < 1e-6
        ok &= same
        diff = 100.0 * (mg - me) / me if me else float("inf")
        if me >= 0.005:
            worst = max(worst, abs(diff))
        out.append(f"  {key:<28} {kg:>19.2f} {ke:>7.2f} {mg:>15.4f} {me:>8.4f} {diff:>+7.1f}{'' if same else '  KERNELS DIFFER'}")
    out.append(
        f"  kernels per layer and block: {'equal' if ok else 'NOT equal'};"
        f" time per block (those of 5 us per step or more) within {worst:.1f}%"
    )
    return ok and worst <= tolerance_pct


def shares(categories):
    busy = {c["category"]: c["msPerStep"] for c in categories if c["category"] != "idle"}
    total = sum(busy.values())
    return {k: 100.0 * v / total for k, v in busy.items()}, total


def categories(nsys, torch_profile, out, tolerance_pts=3.0):
    n, n_total = shares(nsys["ranks"][0]["categories"])
    t, t_total = shares(torch_profile["overall"]["categories"])
    out.append(f"  kernel time per step: nsys {n_total:.3f} ms, torch {t_total:.3f} ms")
    worst = 0.0
    for cat in sorted(set(n) | set(t), key=lambda c: -max(n.get(c, 0), t.get(c, 0))):
        d = n.get(cat, 0.0) - t.get(cat, 0.0)
        worst = max(worst, abs(d))
        out.append(f"  {cat:<14} nsys {n.get(cat, 0):6.2f}%  torch {t.get(cat, 0):6.2f}%  {d:+.2f} points")
    out.append(f"  categories within {worst:.2f} points of the torch profile")
    return worst <= tolerance_pts


def main(ev):
    out = []
    checks = {}
    out.append("== Restarts against the original (the process listening on the port)")
    checks["identity"] = identity(ev, out)
    reports = {
        name: load(p) for name in ("graphs", "eager", "no-nvtx") for p in [os.path.join(ev, f"nsys-{name}.json")] if os.path.exists(p)
    }
    by_pid = loop_steps(ev)
    out.append("== Nsight Systems decode steps against the serving loop's own log")
    checks["steps"] = nsys_vs_log(ev, by_pid, reports, out)
    if "graphs" in reports and "eager" in reports:
        out.append("== Attribution: CUDA-graph replays (through their capture-time NVTX ranges) against the same loop run eagerly")
        out.append("  by module type, every step of each capture, as `infbench analyze` gives it:")
        attribution(reports["graphs"], reports["eager"], out)
        out.append("  by layer and block, steps of one batch size:")
        checks["attribution"] = attribution_by_block(ev, by_pid, reports, out)
    if "no-nvtx" in reports:
        r = reports["no-nvtx"]["ranks"][0]
        unattributed = next((m for m in r["modules"] if m["module"] == "(no NVTX range)"), {"kernelsPerStep": 0})
        out.append(
            f"== Without layer ranges: {unattributed['kernelsPerStep']:.1f} of {r['kernelsPerStep']:.1f} kernels per step unattributed "
            "(counted as (no NVTX range), never guessed)"
        )
    torch_path = os.path.join(ev, "profile-torch.json")
    if os.path.exists(torch_path):
        logged = [row for rows in by_pid.values() for row in decode_steps(rows, "torch")]
        found = load(torch_path)["overall"]["count"]
        checks["torch steps"] = found == len(logged)
        out.append(
            f"== The torch profile: {found} decode steps, the loop's log {len(logged)} decode steps under torch.profiler "
            f"({'equal' if found == len(logged) else 'DIFFERENT'})"
        )
    if "graphs" in reports and os.path.exists(torch_path):
        out.append("== Kernel categories: nsys (graphs) against the torch profile of the same server, shares of kernel time")
        checks["categories"] = categories(reports["graphs"], load(torch_path), out)
    out.append("== Checks: " + ", ".join(f"{k} {'pass' if v else 'FAIL'}" for k, v in checks.items()))
    print("\n".join(out))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
