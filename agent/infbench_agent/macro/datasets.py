"""Macro phase: prompts from dataset files as `vllm bench serve --dataset-name sharegpt` reads them (the sharegpt
workload, macro/workloads/sharegpt.py)."""
from __future__ import annotations

import json
import random
from typing import Callable, Dict, List, Optional

from infbench_agent import events

# vllm/benchmarks/datasets.py (0056b87f) seeds its shuffle with --seed, 0 unless given.
SHAREGPT_DEFAULT_SEED = 0


def is_valid_sequence(
    prompt_len: int,
    output_len: int,
    min_len: int = 4,
    max_prompt_len: int = 1024,
    max_total_len: int = 2048,
    skip_min_output_len_check: bool = False,
) -> Optional[str]:
    """Why vllm/benchmarks/dataset_utils.py's is_valid_sequence (5c92be24) drops a conversation, or None when it
    keeps it: the same rules and defaults, told apart so that the result can count each."""
    if prompt_len < min_len:
        return "prompt_too_short"
    if not skip_min_output_len_check and output_len < min_len:
        return "output_too_short"
    if prompt_len > max_prompt_len:
        return "prompt_too_long"
    if prompt_len + output_len > max_total_len:
        return "total_too_long"
    return None


def load_sharegpt(path: str, seed: int, wanted: int, count_tokens: Callable[[str], int], output_len: Optional[int] = None) -> Dict:
    """Samples as vllm/benchmarks/datasets.py's ShareGPTDataset (0056b87f) makes them: entries with two turns or
    more, shuffled with random.seed(seed) (the same order vLLM sends for the same seed), the first turn the prompt
    and the second turn's token count the output length unless `output_len` is given, filtered by
    is_valid_sequence, until `wanted` are kept. Returns {"samples": [...], "stats": {...}}; each sample is a
    prompt item ({"prompt", "prompt_len", "output_len"}) as a JSONL line would be."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise events.AgentError(
            "bad_prompts_file",
            f"cannot read the ShareGPT file {path}: {exc.strerror}",
            "the path is read on the server's host; copy the file there first",
        )
    except ValueError as exc:
        raise events.AgentError(
            "bad_prompts_file",
            f"the ShareGPT file {path} is not JSON: {exc}",
            'ShareGPT is one JSON list of {"conversations": [{"from": "human", "value": ...}, ...]}',
        )
    if not isinstance(data, list):
        raise events.AgentError(
            "bad_prompts_file",
            f"the ShareGPT file {path} is not a JSON list",
            'ShareGPT is one JSON list of {"conversations": [{"from": "human", "value": ...}, ...]}; for one prompt per line use {0}',
            [events.flag("--dataset-name", "jsonl")],
        )
    entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("conversations"), list) and len(e["conversations"]) >= 2]
    # random.seed + random.shuffle as vLLM, on a generator of our own: the same permutation.
    random.Random(seed).shuffle(entries)
    samples: List[dict] = []
    dropped: Dict[str, int] = {}
    tokenized = 0
    for entry in entries:
        if len(samples) >= wanted:
            break
        first, second = entry["conversations"][0], entry["conversations"][1]
        prompt = first.get("value") if isinstance(first, dict) else None
        completion = second.get("value") if isinstance(second, dict) else None
        if not isinstance(prompt, str) or not isinstance(completion, str):
            dropped["no_text"] = dropped.get("no_text", 0) + 1
            continue
        tokenized += 1
        prompt_len = count_tokens(prompt)
        # vLLM tokenizes the second turn even when --sharegpt-output-len replaces its length; this does not.
        new_output_len = count_tokens(completion) if output_len is None else output_len
        why = is_valid_sequence(prompt_len, new_output_len, skip_min_output_len_check=output_len is not None)
        if why:
            dropped[why] = dropped.get(why, 0) + 1
            continue
        samples.append({"prompt": prompt, "prompt_len": prompt_len, "output_len": new_output_len})
    if not samples:
        raise events.AgentError(
            "bad_prompts_file",
            f"no conversation of the ShareGPT file {path} passed vLLM's filter "
            f"({len(data)} entries, {len(entries)} with two turns; dropped: "
            f"{', '.join(f'{k} {v}' for k, v in sorted(dropped.items())) or 'none'})",
            "vLLM keeps a first turn of 4 to 1024 tokens whose second turn has 4 tokens or more and "
            "both together at most 2048; {0} lifts the second turn's rules",
            [events.flag("--sharegpt-output-len", "N")],
        )
    stats = {
        "entries": len(data),
        "with_two_turns": len(entries),
        "tokenized": tokenized,
        "kept": len(samples),
        "dropped": dropped,
        "shuffle_seed": seed,
    }
    return {"samples": samples, "stats": stats}
