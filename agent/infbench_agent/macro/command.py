"""Macro phase: an end-to-end serving benchmark of a running OpenAI-compatible server (vLLM, SGLang, ...).

Runs next to the server, streams requests at a concurrency sweep or at request rates (gamma arrivals),
and reports vLLM's `bench serve` metrics per load level. High concurrency is spread over several
worker processes (this same agent re-invoked with `macro --worker`, macro/workers.py) so the client never
limits the numbers; each level reports the client's CPU and its scheduling lag, and cross-checks token
counts against the server's /metrics. SIGTERM ends a run promptly and still emits the results so far.
Prompts live in macro/prompts.py, a process's share of a level in macro/drive.py (multi-turn conversations in
macro/conversations.py), levels in macro/levels.py, the server's side in macro/server_side.py.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent import auth, events, options
from infbench_agent.macro.gpu_telemetry import GpuSampler, detect as detect_gpus, level_telemetry
from infbench_agent.http import Endpoint
from infbench_agent.macro.metrics import parse_slos
from infbench_agent.macro.drive import Cancel, raise_open_file_limit, request_bodies
from infbench_agent.macro.levels import LevelRun, build_plans, clean, run_level_in_process
from infbench_agent.macro.prompts import PromptMaker, calibrate
from infbench_agent.macro import workloads
from infbench_agent.macro.workloads.base import Context
from infbench_agent.macro.server_side import discover, metrics_cross_check, read_server_metrics
from infbench_agent.macro.search import level_schedule
from infbench_agent.macro.trials import parse_slo, percentiles_needed
from infbench_agent.macro.server_state import ServerStateSampler
from infbench_agent.macro.wake_lag import WakeLagSampler
from infbench_agent.macro.workers import run_level_workers, worker_main
from infbench_agent.simulator_mark import SIMULATOR_MARK

# Where a field of ours means something else than in `vllm bench serve` (checked against vllm-project/vllm:
# vllm/benchmarks/serve.py at 009e6d4a and vllm/benchmarks/lib/endpoint_request_func.py at 02cfb534).
VLLM_FIELD_NOTES = {
    "checked_against": "vllm/benchmarks/serve.py (009e6d4a), vllm/benchmarks/lib/endpoint_request_func.py (02cfb534)",
    "max_concurrent_requests": "as the newest serve.py: the exact peak of successful requests, each from its send to "
    "its last token; vLLM up to 0.28 took the maximum over 1-second buckets instead, given "
    "here as max_concurrent_requests_1s_buckets",
    "peak_in_flight": "ours, not vLLM's: the exact peak of requests in flight, failed ones included, each until its " "response ended",
    "total_input_tokens": "usage.prompt_tokens where the server sends it, as vLLM; otherwise the prompt's length as "
    "calibrated with /tokenize (vLLM: its dataset's length)",
    "total_output_tokens": "usage.completion_tokens, as vLLM; otherwise the client's count of token messages (vLLM "
    "re-tokenizes the text with the model's tokenizer)",
    "itl_ms": "a message with choices and empty text (a special token) is a token message, as vLLM; the chat "
    "role-only first message is not: vLLM takes TTFT from it and counts its gap as an ITL sample, which reads "
    "TTFT ~0 ms on servers that send it before prefill",
    "scheduling_lag_ms": "ours: send time minus planned time (the arrival; in a closed loop the moment a slot freed); "
    "vLLM's client_queue_time is the wait for its --max-concurrency semaphore",
    "duration": "from the level's start (the origin of its arrivals) to the last response, as vLLM's benchmark_duration",
}


def own_options() -> List[options.Option]:
    """The flags the workloads define (macro/workloads/), beside the option table's."""
    return workloads.option_rows()


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, "macro", own_options())


def parse_levels(text: Optional[str], kind: type, what: str) -> List:
    if not text:
        return []
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float("inf") if (kind is float and part.lower() == "inf") else kind(part)
        except ValueError:
            raise events.AgentError(
                "bad_arguments",
                f"--{what} must be a comma-separated list of numbers, got {text!r}",
                "for example {0}",
                [events.flag(f"--{what}", "1,8,32")],
            )
        if value <= 0:
            raise events.AgentError("bad_arguments", f"--{what} values must be positive, got {part}", "")
        out.append(value)
    return out


def request_extras(args: argparse.Namespace) -> Tuple[dict, dict, Dict[str, str]]:
    """The sampling parameters, the --extra-body object and the --header pairs every request carries, checked
    as vllm/benchmarks/serve.py reads them (--extra-body a JSON object, --header KEY=VALUE)."""
    sampling = {k: getattr(args, k) for k in ("temperature", "top_p", "top_k", "min_p") if getattr(args, k) is not None}
    extra: dict = {}
    if args.extra_body:
        try:
            extra = json.loads(args.extra_body)
        except ValueError as exc:
            raise events.AgentError("bad_arguments", f"--extra-body is not JSON: {exc}", "for example '{\"top_k\": 20}'")
        if not isinstance(extra, dict):
            raise events.AgentError("bad_arguments", "--extra-body must be a JSON object", "for example '{\"top_k\": 20}'")
    headers: Dict[str, str] = {}
    for pair in args.header or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or any(c in pair for c in "\r\n"):
            raise events.AgentError(
                "bad_arguments",
                f"--header takes KEY=VALUE, got {pair!r}",
                "for example {0}",
                [events.flag("--header", "x-request-source=bench")],
            )
        headers[key.strip()] = value.strip()
    return sampling, extra, headers


def level_total(args: argparse.Namespace, concurrency: Optional[int], rate: Optional[float]) -> Optional[int]:
    """Requests a level plans, or None for a closed loop that runs --duration seconds."""
    if args.duration:
        return None if rate is None else max(1, int((rate if not math.isinf(rate) else 1000) * args.duration))
    if args.requests:
        return args.requests
    return max(8, 4 * (concurrency or 1)) if rate is None else max(8, int(10 * rate) if not math.isinf(rate) else 100)


def run(args: argparse.Namespace) -> int:
    if args.worker:
        return worker_main()
    return MacroRun(args).run()


class MacroRun:
    """One macro run, the coordinator: it owns the run's cancel state (SIGTERM or SIGINT end the level
    early, and the results so far still go out) and the clock its per-request times start from."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cancel = Cancel()
        # Monotonic time of the run's first level start: per-request events carry times from it (run_s).
        self.run_start: Optional[float] = None

    def run(self) -> int:
        self.cancel.install()
        raise_open_file_limit()
        auth.resolve_api_key(self.args)
        self.check_arguments()
        self.prepare()
        if self.args.warmup > 0 and not self.cancel.requested:
            self.warm_up()
        self.describe_levels()
        for index, meta in enumerate(self.schedule):
            if self.cancel.requested:
                break
            level, summary, plans, total = self.measure_level(index, meta)
            self.warn_about_level(level, summary, plans, total, meta.get("request_rate"))
            if not self.record_level(index, level, summary):
                break
        return self.finish()

    def check_arguments(self) -> None:
        """The run's flags read and checked together, and its workload chosen, before the server is asked anything."""
        args = self.args
        try:
            sampling, extra_body, headers = request_extras(args)
            args.request_headers = headers
            endpoint = Endpoint(args.url, args.api_key, headers)
            slos = parse_slos(args.goodput)
            percentiles = [float(p) for p in str(args.percentiles).split(",") if p.strip()]
            objectives = parse_slo(args.slo)
            # A percentile an objective names is reported even when --percentiles leaves it out.
            percentiles += [p for p in percentiles_needed(objectives) if p not in percentiles]
        except ValueError as exc:
            raise events.AgentError("bad_arguments", str(exc), "")
        rates = parse_levels(args.request_rate, float, "request-rate")
        concurrencies = parse_levels(args.concurrency, int, "concurrency") if not rates else []
        if not rates and not concurrencies:
            raise events.AgentError(
                "bad_arguments",
                "no load level given",
                "pass {0} or {1}",
                [events.flag("--concurrency", "1,8,32"), events.flag("--request-rate", "2,4")],
            )
        if not args.burstiness > 0:
            raise events.AgentError(
                "bad_arguments",
                f"--burstiness must be above 0, got {args.burstiness:g}",
                "1 is Poisson arrivals; below 1 burstier, above 1 more even",
            )
        if args.input_len < 1 or args.output_len < 1:
            raise events.AgentError("bad_arguments", "--input-len and --output-len must be at least 1", "")
        if not args.stall_timeout >= 0:
            raise events.AgentError("bad_arguments", f"--stall-timeout must be 0 (off) or more, got {args.stall_timeout:g}", "")
        args.stall_timeout = args.stall_timeout or None
        workload, dataset_path = workloads.choose(args)
        dataset = workload.name
        concurrencies, rates = workload.loads(args, dataset_path, concurrencies, rates)
        (
            self.sampling,
            self.extra_body,
            self.headers,
            self.endpoint,
            self.slos,
            self.percentiles,
            self.objectives,
            self.concurrencies,
            self.rates,
            self.workload,
            self.dataset,
            self.dataset_path,
        ) = (sampling, extra_body, headers, endpoint, slos, percentiles, objectives, concurrencies, rates, workload, dataset, dataset_path)

    def prepare(self) -> None:
        """The server found, the loads planned, the workload's prompts made and calibrated, the result begun."""
        args = self.args
        endpoint, workload, dataset, dataset_path, concurrencies, rates, objectives, sampling, extra_body = (
            self.endpoint,
            self.workload,
            self.dataset,
            self.dataset_path,
            self.concurrencies,
            self.rates,
            self.objectives,
            self.sampling,
            self.extra_body,
        )
        server = discover(endpoint, args.url, args.model)
        model = server.pop("request_model", server["model"])
        path = "/v1/chat/completions" if args.api == "chat" else "/v1/completions"
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
        # The sweep's loads, or a search's, each --trials times (macro/search.py).
        schedule = level_schedule(args, concurrencies, rates, objectives)
        levels = schedule.planned()
        prepared = workload.prepare(Context(args, endpoint, model, dataset_path, levels, self.level_requests))
        file_prompts = prepared.file_prompts
        maker = PromptMaker(
            args.api,
            model,
            args.input_len,
            args.output_len,
            not args.no_ignore_eos,
            seed,
            file_prompts=file_prompts,
            sampling=sampling,
            extra_body=extra_body,
            **prepared.maker_options,
        )
        calibration = (
            {"calibrated": False, "note": "prompts from a file"}
            if file_prompts
            else (
                {"calibrated": False, "tokens_per_word": 1.0, "overhead": 0.0, "note": "--no-tokenize"}
                if args.no_tokenize
                else calibrate(endpoint, maker)
            )
        )
        maker.tokens_per_word = float(calibration.get("tokens_per_word", 1.0))
        maker.overhead = float(calibration.get("overhead", 0.0))
        events.emit(events.SERVER, server=server)
        events.log(
            f"server {args.url}: model {server['model']}"
            f"{' (SIMULATOR: ' + SIMULATOR_MARK + ')' if server['simulated'] else ''}; "
            f"prompts {'calibrated with /tokenize' if calibration.get('calibrated') else 'not calibrated'}"
        )

        result: dict = {
            "levels": [],
            "server": server,
            "cancelled": False,
            # Header values may carry a gateway's tokens: the result names the headers only (request_extras).
            "config": {k: v for k, v in vars(args).items() if k not in ("worker", "api_key", "header", "request_headers")},
            "prompts": {
                "seed": seed,
                "calibration": calibration,
                "source": dataset_path or "random",
                "dropped_fields": maker.dropped_fields,
                "dataset": dataset,
                **prepared.info,
            },
            "client": {
                "python": sys.version.split()[0],
                "cpu_count": os.cpu_count(),
                "host": os.uname().nodename,
                "timestamps": "time.monotonic() when each read returns, as vLLM's client stamps",
            },
            "vllm_bench_serve": VLLM_FIELD_NOTES,
        }
        # The GPUs' power and clocks beside each level (nvidia-smi), or why there are none.
        gpus_found = detect_gpus() if args.gpu_sample_ms > 0 else {"vendor": None, "note": "--gpu-sample-ms 0"}
        result["gpu_telemetry"] = {k: v for k, v in gpus_found.items() if k != "tool"}
        if gpus_found.get("vendor") != "nvidia":
            events.log(f"GPU telemetry: {gpus_found.get('note')}")
        self.server, self.model, self.path, self.seed, self.schedule, self.prepared, self.maker, self.result, self.gpus_found = (
            server,
            model,
            path,
            seed,
            schedule,
            prepared,
            maker,
            result,
            gpus_found,
        )
        self.id_base = 0

    def warm_up(self) -> None:
        """A few requests before the first level; a server that refuses vLLM's extra fields gets them no more."""
        args = self.args
        concurrencies, percentiles, slos, endpoint, path, maker, result, server = (
            self.concurrencies,
            self.percentiles,
            self.slos,
            self.endpoint,
            self.path,
            self.maker,
            self.result,
            self.server,
        )
        warm_c = min(args.warmup, concurrencies[0] if concurrencies else (args.max_concurrency or args.warmup))
        # No per-request events, yet its progress goes out as a level's does: a warm-up that waits on a slow
        # or silent server says how long it has waited.
        warm_args = argparse.Namespace(**{**vars(args), "no_request_events": True})
        warm = LevelRun(-1, {}, args.warmup, warm_args, percentiles, slos, lambda: self.run_start)
        plan = {
            "concurrency": warm_c,
            "ids": [10_000_000 + i for i in range(args.warmup)],
            "duration": None,
            "start_at": time.monotonic(),
            "stall_timeout": args.stall_timeout,
        }
        events.log(
            f"warm-up: {args.warmup} request(s), {warm_c} at a time"
            + (f"; a stream silent for {args.stall_timeout:g} s fails as stalled" if args.stall_timeout else "")
        )
        run_level_in_process(plan, endpoint, path, maker, warm, args.request_timeout, self.cancel)
        refused = [r for r in warm.records if r.get("reason") in ("http_400", "http_422")]
        if warm.records and len(refused) == len(warm.records):
            # Some OpenAI-compatible servers refuse vLLM's extra fields: try once without them.
            maker.dropped_fields = ["stream_options", "ignore_eos"]
            warm.records = []
            plan["start_at"] = time.monotonic()
            run_level_in_process(plan, endpoint, path, maker, warm, args.request_timeout, self.cancel)
            if any(r.get("ok") for r in warm.records):
                events.log(
                    f"the server refused stream_options and ignore_eos ({refused[0].get('error')}); requests go "
                    "without them: output lengths follow the model's EOS and token counts are the client's own",
                    "warn",
                )
            else:
                maker.dropped_fields = []
        result["prompts"]["dropped_fields"] = maker.dropped_fields
        bad = [r for r in warm.records if not r.get("ok")]
        events.log(f"warm-up: {len(warm.records) - len(bad)} of {args.warmup} requests completed")
        if bad and len(bad) == len(warm.records):
            first = bad[0]
            raise events.AgentError(
                "warmup_failed",
                f"every warm-up request failed: {first.get('error')}",
                f"check the server at {args.url} (model {server['model']}, {path})",
            )

    def describe_levels(self) -> None:
        """What every level's result says of its prompts, and the draws of its arrivals."""
        args = self.args
        seed, dataset, dataset_path, workload, prepared, sampling, extra_body, headers = (
            self.seed,
            self.dataset,
            self.dataset_path,
            self.workload,
            self.prepared,
            self.sampling,
            self.extra_body,
            self.headers,
        )
        rng = random.Random(seed)
        # What each level's prompts were: the dataset, and for random prompts their lengths and range.
        data_meta: dict = {
            "dataset_name": dataset,
            "dataset_path": dataset_path,
            "output_len": args.output_len,
            **workload.level_meta(args, prepared),
        }
        if sampling or extra_body or headers:
            data_meta["request_extras"] = {
                **sampling,
                **({"extra_body": extra_body} if extra_body else {}),
                **({"headers": sorted(headers)} if headers else {}),
            }
        self.rng, self.data_meta = rng, data_meta

    def level_requests(self, concurrency: Optional[int], rate: Optional[float]) -> Optional[int]:
        """Requests a load sends: the run's count for it, as its workload takes it (a trace: its own length)."""
        return self.workload.requests(self.args, level_total(self.args, concurrency, rate), rate)

    def measure_level(self, index: int, meta: dict) -> Tuple[LevelRun, dict, List[dict], Optional[int]]:
        """One level run, with the server's counters, its state, the host's wake-up lag and the GPUs beside it."""
        args = self.args
        workload, data_meta, server, percentiles, slos, rng, endpoint, gpus_found, maker, path = (
            self.workload,
            self.data_meta,
            self.server,
            self.percentiles,
            self.slos,
            self.rng,
            self.endpoint,
            self.gpus_found,
            self.maker,
            self.path,
        )
        c: Any = meta.get("max_concurrency")
        rate = meta.get("request_rate")
        total, extra = workload.level_extra(args, self.level_requests(c, rate))
        meta.update(extra)
        meta = {
            **meta,
            "level": index,
            "api": args.api,
            **data_meta,
            "num_prompts": total,
            "duration_target_s": args.duration,
            "simulated": server["simulated"],
        }
        level = LevelRun(index, meta, total, args, percentiles, slos, lambda: self.run_start)
        # A workload whose n-th request is its n-th item (a trace) starts each level at a multiple of its length.
        self.id_base = -(-self.id_base // workload.period()) * workload.period()
        plans = build_plans(args, meta, total, self.id_base, rng, workload.arrivals)
        for plan in plans:
            plan["slow_client_s"] = max(0.0, args.slow_client_ms or 0.0) / 1000.0
        self.id_base += (total or 0) + 1_000_000
        before, _ = read_server_metrics(endpoint)
        events.emit(
            events.PROGRESS,
            done=0,
            total=total or 0,
            label=level.label(),
            message=f"{level.label()}: starting " f"({len(plans)} load-generator process{'es' if len(plans) > 1 else ''})",
        )
        wall0 = time.monotonic()
        if self.run_start is None:
            self.run_start = wall0
        # The server's queue, batch and KV cache over the level's seconds, on the requests' time axis.
        state = ServerStateSampler(endpoint, origin=self.run_start).start()
        # How late this host gives the load generator a CPU: the stamps of its reads are that late.
        wake = WakeLagSampler().start()
        gpus = (
            GpuSampler(args.gpu_sample_ms, origin=self.run_start, found=gpus_found).start()
            if gpus_found.get("vendor") == "nvidia"
            else None
        )
        if len(plans) == 1:
            # The bodies before the start time: a long prompt's making is not the first send's lag.
            bodies = request_bodies(plans[0], maker)
            plans[0]["start_at"] = level.started_at = time.monotonic()
            cpu = run_level_in_process(plans[0], endpoint, path, maker, level, args.request_timeout, self.cancel, bodies)
        else:
            cpu = run_level_workers(plans, args, path, maker, level, self.cancel)
        wall = time.monotonic() - wall0
        server_state = state.stop()
        wake_lag = wake.stop()
        if gpus is not None:
            gpus.stop()
        after, metrics_status = read_server_metrics(endpoint)
        server_metrics = metrics_cross_check(before, after, level.records, metrics_status)
        changed = trust_streamed_counts(server_metrics, level.records)
        changed = trust_estimated_prompts(server_metrics, level.records) or changed
        if changed:
            server_metrics = metrics_cross_check(before, after, level.records, metrics_status)
        summary = level.summary(partial=False)
        out_tokens = summary.get("total_output_tokens") or 0
        summary["client_cpu"] = {
            "workers": len(plans),
            "cpu_s": round(cpu, 4),
            "cpu_percent_of_one_core": round(100.0 * cpu / wall, 1) if wall > 0 else None,
            "us_per_output_token": round(1e6 * cpu / out_tokens, 2) if out_tokens else None,
        }
        summary["server_metrics"] = server_metrics
        summary["client_wake_lag_ms"] = wake_lag
        if gpus is not None:
            window = (wall0 - self.run_start, wall0 + wall - self.run_start)
            summary["gpu_telemetry"] = level_telemetry(gpus, out_tokens, window, level.label())
        if server_state["samples"]:
            summary["server_state"] = server_state
        summary["cancelled"] = self.cancel.requested
        summary = clean(summary)
        return level, summary, plans, total

    def warn_about_level(self, level: LevelRun, summary: dict, plans: List[dict], total: Optional[int], rate: Optional[float]) -> None:
        """What a level's numbers may not mean, said as warnings: a late client, a busy host, token counts that disagree."""
        args, path, server = self.args, self.path, self.server
        server_metrics = summary["server_metrics"]
        wake_lag = summary["client_wake_lag_ms"]
        lag = (summary.get("scheduling_lag_ms") or {}).get("p99")
        woke = wake_lag.get("p99")
        intended = summary.get("from_intended") or {}
        if intended.get("client_limited"):
            text, hint, remedies = client_limit(level.label(), intended, woke)
            events.log(text, "warn", hint=hint, remedies=remedies)
        elif isinstance(lag, (int, float)) and lag > 10 and rate is not None:
            events.log(
                f"{level.label()}: p99 scheduling lag {lag:.1f} ms: the client sent late",
                "warn",
                hint="consider raising {0}, or fewer levels at once",
                remedies=[events.flag("--workers")],
            )
        if isinstance(woke, (int, float)) and woke > 10:
            events.log(
                f"{level.label()}: the load generator waited up to {woke:.0f} ms (p99) for a CPU on this host: "
                "its TTFT, ITL and TPOT may read that much high",
                "warn",
                hint="free the host's cores (or run the load elsewhere)",
            )
        token_count = summary.get("token_count") or {}
        if token_count.get("usage_missing"):
            events.log(
                f"{level.label()}: the server sent no usage for {token_count.get('usage_missing')} request(s): their "
                "output tokens are the client's count of streamed chunks and their prompt tokens the prompt "
                "maker's estimate (ask the server for stream_options.include_usage to get exact counts)",
                "warn",
            )
        if token_count.get("usage_rejected"):
            events.log(
                f"{level.label()}: the server's usage could not be true for {token_count['usage_rejected']} "
                f"request(s) ({token_count.get('usage_problem')}): their token counts are the client's "
                "(streamed messages and the calibrated prompt length)",
                "warn",
            )
        elif server_metrics.get("available") and not server_metrics.get("generation_tokens_match"):
            events.log(
                f"{level.label()}: the server's /metrics counted {server_metrics['server_generation_tokens']:.0f} "
                f"generated tokens, the client {server_metrics['client_output_tokens']}: another client may be "
                "using the server, or its counts are wrong",
                "warn",
            )
        if not self.cancel.requested and total and len(level.records) < total and (summary.get("failures") or {}).get("stalled"):
            events.log(
                f"{level.label()}: requests stalled one after another, none completing between them and no stream "
                f"having a token for {args.stall_timeout:g} s, so the level stopped after {len(level.records)} of its "
                f"{total} requests: each further one would likely only have waited out the same silence",
                "warn",
            )
        bad_answers = (summary.get("failures") or {}).get("bad_response")
        if bad_answers:
            events.log(
                f"{level.label()}: {bad_answers} request(s) got an answer that is no OpenAI stream "
                f"({(summary.get('failure_examples') or {}).get('bad_response')}): the server, or a proxy in front of "
                "it, sent it; they count as failed and the rest are measured. To see a raw answer, on the host: "
                f"curl -N {args.url}{path} -H 'Content-Type: application/json' -d '{sample_body(args.api, server['model'])}'",
                "warn",
            )
        out_total = summary.get("total_output_tokens") or 0
        streamed_gap = token_count.get("client_vs_usage_abs_diff") or 0
        if out_total and streamed_gap > 0.01 * out_total:
            # Possible (several tokens a message under speculative decoding, special tokens with no text),
            # yet TPOT divides by usage while ITL follows the messages: say how far the two counts part.
            events.log(
                f"{level.label()}: usage counted {out_total} output tokens and the stream {out_total - streamed_gap} "
                f"token messages with text ({100.0 * streamed_gap / out_total:.0f}% apart): TPOT divides by usage, "
                "ITL is between messages, so the two disagree by as much",
                "warn",
            )
        per_core = summary["client_cpu"]["cpu_percent_of_one_core"]
        if per_core is not None and per_core / max(1, len(plans)) > 85:
            events.log(
                f"{level.label()}: the load generator used {per_core:.0f}% of a core per process: it may be limiting the numbers",
                "warn",
                hint="raise {0}",
                remedies=[events.flag("--workers")],
            )

    def record_level(self, index: int, level: LevelRun, summary: dict) -> bool:
        """The level's summary sent and kept; False when the server is gone and further levels would only wait on it."""
        args, schedule, result = self.args, self.schedule, self.result
        # The trials' intervals and the SLO verdict go on a load's last trial (and decide a search's next load).
        schedule.record(summary)
        events.emit(events.MACRO_LEVEL, level=index, partial=False, summary=summary)
        result["levels"].append(summary)
        failures = summary.get("failures") or {}
        if summary.get("completed") == 0 and failures and set(failures) <= {"connect_error"}:
            # The server went away: every further level would only count refused connections.
            result["stopped"] = f"no request of {level.label()} could connect to {args.url}"
            return False
        if summary.get("completed") == 0 and failures and set(failures) <= {"timeout", "stalled"} and not self.cancel.requested:
            # Connected, yet nothing came back in time: a frozen server would stall every further level the same way.
            # The silence bound is named only where it can end a request before the whole-request timeout.
            silent = args.stall_timeout and args.stall_timeout < args.request_timeout
            bound = f"silent over {args.stall_timeout:g} s or " if silent else ""
            result["stopped"] = f"every request of {level.label()} stalled: each was {bound}unfinished after {args.request_timeout:g} s"
            result["stalled"] = True
            return False
        return True

    def finish(self) -> int:
        """The result sent, and the exit status: cancelled, stalled, the server gone, or done."""
        args, schedule, result = self.args, self.schedule, self.result
        result["cancelled"] = self.cancel.requested
        if schedule.result() is not None:
            result["slo"] = schedule.result()
            events.log(f"SLO: {result['slo']['line']}")
        events.emit(events.RESULT, result=clean(result))
        if self.cancel.requested:
            events.error("cancelled", f"cancelled after {len(result['levels'])} level(s); the results so far are kept", "")
            return 130
        if result.get("stalled"):
            events.error(
                "server_stalled",
                f"The server accepted the requests but answered none in time: {result['stopped']}; " "the levels before are kept",
                f"Check the server on the host (its log; curl {args.url}/v1/models); if it is only slow under this "
                "load, raise {0} and {1} (seconds)",
                [events.flag("--stall-timeout"), events.flag("--request-timeout")],
            )
            return 2
        if result.get("stopped"):
            events.error(
                "server_down",
                f"The server stopped answering: {result['stopped']}; the levels before are kept",
                f"Check that it still runs (curl {args.url}/v1/models on the host), then run the phase again",
            )
            return 2
        return 0


def client_limit(label: str, intended: dict, wake_p99: Optional[float]) -> Tuple[str, str, List[events.Remedy]]:
    """The warning (message, hint, remedies) for a level whose client fell further and further behind its schedule:
    the client, not the server, is the limit; the wake-up lag says whether the host's CPUs or the client's own work
    held it, and so what to do."""
    d = intended["dispatch_delay_ms"]
    trend = intended.get("dispatch_delay_trend") or {}
    what = "arrival schedule" if intended.get("basis") == "arrival" else "free slots (queueing inside the client)"
    text = (
        f"{label}: the load generator fell behind its {what}: dispatch delay p50 {d['p50']:.1f} ms, p99 {d['p99']:.1f} ms, "
        f"max {d['max']:.1f} ms, growing from {trend.get('first_quarter_ms', 0):.1f} ms (first quarter of sends) to "
        f"{trend.get('last_quarter_ms', 0):.1f} ms (last); the client is the limit, not the server, and latency from the "
        f"intended send time (TTFT p99 {intended['ttft_ms'].get('p99') or 0:.0f} ms) counts that wait; "
    )
    if isinstance(wake_p99, (int, float)) and wake_p99 > 10:
        cause = f"it also waited up to {wake_p99:.0f} ms (p99) for a CPU on this host, so the host's cores are short"
        return text + cause, "free them, or run the load elsewhere", []
    return text + "its own work is the limit", "raise {0}", [events.flag("--workers")]


def trust_streamed_counts(server_metrics: dict, records: List[dict]) -> bool:
    """Where the server's /metrics disagrees with its usage yet agrees with the streamed token messages, the
    usage is wrong: the requests whose usage differs from what they streamed take the client's counts.
    Returns whether any record changed."""
    if not server_metrics.get("available") or server_metrics.get("generation_tokens_match"):
        return False
    streamed = sum(r.get("client_tokens") or 0 for r in records)
    generated = server_metrics["server_generation_tokens"]
    # A counter read as NaN compares false with everything: only a finite count can settle it.
    if not math.isfinite(generated) or abs(generated - streamed) > max(1.0, 0.001 * streamed):
        return False
    changed = False
    for r in records:
        if r.get("ok") and not r.get("usage_problem") and r.get("output_tokens") != r.get("client_tokens"):
            r["usage_problem"] = (
                f"usage.completion_tokens is {r.get('output_tokens')} where {r.get('client_tokens')} tokens streamed, "
                f"and the server's /metrics counted {generated:.0f} generated tokens in the level, as many as streamed"
            )
            r["output_tokens"] = r.get("client_tokens")
            r["prompt_tokens"] = r.get("est_prompt_tokens")
            r["prompt_estimated"] = True
            changed = True
    return changed


def trust_estimated_prompts(server_metrics: dict, records: List[dict]) -> bool:
    """The prompt side of trust_streamed_counts: where the successful requests' usage.prompt_tokens sum to more
    than twice what the server's own /metrics counted for every prompt of the level (failed requests' too),
    that usage cannot be true: those requests take the client's counts (the calibrated prompt length).
    One-sided, as the counter may count more than usage (preempted requests computed again) but not less.
    Returns whether any record changed."""
    counted = server_metrics.get("server_prompt_tokens") if server_metrics.get("available") else None
    if not isinstance(counted, (int, float)) or not math.isfinite(counted) or counted < 0:
        return False
    taken = [r for r in records if r.get("ok") and not r.get("usage_problem") and not r.get("prompt_estimated")]
    claimed = sum(r.get("prompt_tokens") or 0 for r in taken)
    if claimed <= 2 * counted + 16:
        return False
    for r in taken:
        r["usage_problem"] = (
            f"usage.prompt_tokens is {r.get('prompt_tokens')}, and such counts sum to {claimed} over the level where the "
            f"server's /metrics counted {counted:.0f} prompt tokens in all"
        )
        r["output_tokens"] = r.get("client_tokens")
        r["prompt_tokens"] = r.get("est_prompt_tokens")
        r["prompt_estimated"] = True
    return True


def sample_body(api: str, model: str) -> str:
    """A small streaming request for the user to send by hand (JSON for a shell's single quotes)."""
    body: dict = {"model": model, "max_tokens": 8, "stream": True}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": "hello"}]
    else:
        body["prompt"] = "hello"
    return json.dumps(body).replace("'", "'\\''")
