"""Macro phase: the prompts, random and different for every request and every run (or read from a file), and
their calibration to the server's tokenizer. Datasets read from files (ShareGPT) are in macro/datasets.py."""
from __future__ import annotations

import json
import math
import random
from typing import Any, Callable, Dict, List, Optional, Tuple

from infbench_agent import events
from infbench_agent.http import BadResponse, Endpoint, simple_request
from infbench_agent.macro.metrics import json_reply, usage_count

WORDS = (
    "time year people way day man thing woman life child world school state family student group country "
    "problem hand part place case week company system program question work government number night point "
    "home water room mother area money story fact month lot right study book eye job word business issue "
    "side kind head house service friend father power hour game line end member law car city community name "
    "president team minute idea kid body information back parent face others level office door health person "
    "art war history party result change morning reason research girl guy moment air teacher force education "
    "foot boy age policy music market sense nation plan college interest death experience effect class control "
    "care field development role effort rate heart drug show leader light voice wife police mind price report "
    "decision son view relationship town road arm difference value building action model season society tax "
    "director position player record paper space ground form event official matter center couple site project "
    "activity star table need court oil situation cost industry figure street image phone data picture practice "
    "piece land product doctor wall patient worker news test movie north love support technology step baby "
    "computer type attention film tree source organization hair window evidence population site truth"
).split()


class PromptSource:
    """A workload's own prompts (macro/workloads/): each request's lengths and text from its number alone, so that
    every worker process makes the same; `to_json` carries it to them, with its workload's name."""

    def lengths(self, maker: "PromptMaker", index: int) -> Tuple[int, int]:
        raise NotImplementedError

    def text(self, maker: "PromptMaker", index: int) -> str:
        raise NotImplementedError

    def to_json(self) -> dict:
        raise NotImplementedError


def length_range(length: int, ratio: float) -> Tuple[int, int]:
    """The lengths a request may draw, as vllm/benchmarks/datasets.py's RandomDataset.get_sampling_params bounds them
    for --random-range-ratio: floor(len * (1 - r)) to ceil(len * (1 + r)), both included, never below 1 (vLLM
    keeps only the output's low bound at 1 and refuses an empty prompt; here a prompt is at least one word). The
    prompt's bounds hold for its length as the server counts it; vLLM bounds the tokens past its special ones."""
    return max(1, math.floor(length * (1 - ratio))), max(1, math.ceil(length * (1 + ratio)))


class PromptMaker:
    """Random prompts of about `input_len` tokens, different for every request and every run; with a range ratio,
    each request's prompt and output lengths are its own, drawn uniformly from length_range."""

    def __init__(
        self,
        api: str,
        model: str,
        input_len: int,
        output_len: int,
        ignore_eos: bool,
        seed: int,
        tokens_per_word: float = 1.0,
        overhead: float = 0.0,
        file_prompts: Optional[List[dict]] = None,
        dropped_fields: Optional[List[str]] = None,
        range_ratio: float = 0.0,
        prefix: Optional[dict] = None,
        sampling: Optional[dict] = None,
        extra_body: Optional[dict] = None,
        multi_turn: Optional[dict] = None,
        source: Optional[PromptSource] = None,
    ) -> None:
        self.api, self.model, self.input_len, self.output_len = api, model, input_len, output_len
        self.ignore_eos, self.seed = ignore_eos, seed
        self.tokens_per_word, self.overhead = tokens_per_word, overhead
        self.file_prompts = file_prompts
        # Fields the server refused (HTTP 400 in the warm-up), left out of every request.
        self.dropped_fields = dropped_fields or []
        self.range_ratio = range_ratio
        # prefix_repetition: {"prefix_len", "suffix_len", "num_prefixes"} tokens (see text()).
        self.prefix = prefix
        # temperature, top_p, top_k, min_p as given (temperature 0 unless given, as vllm bench serve sends).
        self.sampling = sampling or {}
        self.extra_body = extra_body or {}
        # multi_turn: {"turns"}; each user turn adds input_len tokens and each answer output_len (see conversation_body()).
        self.multi_turn = multi_turn
        # A workload's own prompts (a trace's lengths and shared blocks), where it makes them.
        self.source = source

    def to_json(self) -> dict:
        return {
            "api": self.api,
            "model": self.model,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "ignore_eos": self.ignore_eos,
            "seed": self.seed,
            "tokens_per_word": self.tokens_per_word,
            "overhead": self.overhead,
            "file_prompts": self.file_prompts,
            "dropped_fields": self.dropped_fields,
            "range_ratio": self.range_ratio,
            "prefix": self.prefix,
            "sampling": self.sampling,
            "extra_body": self.extra_body,
            "multi_turn": self.multi_turn,
            "source": self.source.to_json() if self.source else None,
        }

    def lengths(self, index: int) -> Tuple[int, int]:
        """Request `index`'s prompt and output tokens. vLLM draws every request's pair up front from one numpy
        generator; here each is drawn from the seed and the request's index, so that every worker process draws
        the same for the same request."""
        if self.source:
            return self.source.lengths(self, index)
        if self.prefix:
            return self.prefix["prefix_len"] + self.prefix["suffix_len"], self.output_len
        if not self.range_ratio:
            return self.input_len, self.output_len
        rng = random.Random(f"{self.seed}:lengths:{index}")
        return (rng.randint(*length_range(self.input_len, self.range_ratio)), rng.randint(*length_range(self.output_len, self.range_ratio)))

    @staticmethod
    def from_json(d: dict, source_from_json: Optional[Callable[[dict], PromptSource]] = None) -> "PromptMaker":
        """The maker `to_json` wrote; a workload's own source is rebuilt by `source_from_json` (macro/workloads)."""
        fields: Dict[str, Any] = dict(d)
        source = fields.pop("source", None)
        return PromptMaker(**fields, source=source_from_json(source) if source and source_from_json else None)

    def words_for(self, tokens: int) -> int:
        return max(1, int(round((tokens - self.overhead) / max(self.tokens_per_word, 1e-6))))

    def text(self, index: int, words: Optional[int] = None) -> str:
        if self.source and words is None:
            return self.source.text(self, index)
        if self.prefix and words is None:
            return self.prefixed_text(index)
        rng = random.Random(f"{self.seed}:{index}")
        n = words if words is not None else self.words_for(self.lengths(index)[0])
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def prefix_group(self, index: int) -> int:
        """Which shared prefix request `index` carries. vLLM gives each prefix num_requests // num_prefixes
        prompts and shuffles them; here the groups take turns, so every worker process agrees on a request's
        group and the groups stay the same size in any level."""
        assert self.prefix
        return index % self.prefix["num_prefixes"]

    def prefixed_text(self, index: int) -> str:
        """prefix_repetition as vllm/benchmarks/datasets.py's PrefixRepetitionRandomDataset makes it: the group's
        prefix of prefix_len tokens, then the request's own random suffix of suffix_len tokens. The prefix is
        drawn from the seed and the group alone: every level of the run shares it, as a server's system prompts
        are shared over a day; the calibration's overhead falls in the suffix."""
        assert self.prefix
        group = random.Random(f"{self.seed}:prefix:{self.prefix_group(index)}")
        prefix_words = max(1, int(round(self.prefix["prefix_len"] / max(self.tokens_per_word, 1e-6))))
        own = random.Random(f"{self.seed}:{index}")
        suffix_words = self.words_for(self.prefix["suffix_len"])
        return " ".join([group.choice(WORDS) for _ in range(prefix_words)] + [own.choice(WORDS) for _ in range(suffix_words)])

    def estimated_prompt_tokens(self, index: int) -> int:
        """The prompt's length in tokens as calibrated, for when the server reports no usage."""
        if self.file_prompts:
            item = self.file_prompts[index % len(self.file_prompts)]
            if item.get("prompt_len"):
                # A dataset's own count (ShareGPT's, from /tokenize).
                return int(item["prompt_len"])
            text = item.get("prompt") or item.get("text") or " ".join(str(m.get("content", "")) for m in item.get("messages") or [])
            return max(1, int(round(len(str(text).split()) * self.tokens_per_word + self.overhead)))
        return self.lengths(index)[0]

    def max_output_tokens(self, index: int) -> int:
        """The max_tokens request `index` asks for: no honest usage.completion_tokens exceeds it."""
        if self.file_prompts:
            item = self.file_prompts[index % len(self.file_prompts)]
            return int(item.get("output_len") or item.get("max_tokens") or self.lengths(index)[1])
        return self.lengths(index)[1]

    def body(self, index: int) -> bytes:
        if self.multi_turn:
            # A conversation's first turn (the warm-up sends these, each its own conversation).
            return self.conversation_body(index, [])
        out_len = self.max_output_tokens(index)
        messages = None
        prompt = None
        if self.file_prompts:
            item = self.file_prompts[index % len(self.file_prompts)]
            messages = item.get("messages")
            prompt = item.get("prompt") or item.get("text")
        else:
            prompt = self.text(index)
        if self.api != "chat" and prompt is None and messages:
            prompt = "\n".join(str(m.get("content", "")) for m in messages)
        return self.payload(out_len, prompt, messages)

    def payload(self, out_len: int, prompt: Optional[str], messages: Optional[List[dict]] = None) -> bytes:
        """The request body for a prompt (or chat messages): sampling, usage in the stream, --extra-body last."""
        if self.api == "chat":
            payload = {"model": self.model, "messages": messages or [{"role": "user", "content": prompt}], "max_completion_tokens": out_len}
        else:
            payload = {"model": self.model, "prompt": prompt, "max_tokens": out_len}
        payload.update({"temperature": 0.0, **self.sampling, "stream": True, "stream_options": {"include_usage": True}})
        if self.ignore_eos:
            payload["ignore_eos"] = True
        # vllm bench serve merges --extra-body over what it built; so does this.
        payload.update(self.extra_body)
        for name in self.dropped_fields:
            payload.pop(name, None)
        return json.dumps(payload).encode()

    def user_turn(self, conversation: int, turn: int) -> str:
        """The user's words at `turn` (1 = the first) of the conversation keyed `conversation`: random, drawn from the
        seed, the conversation and the turn alone, so that any worker process writes the same. The first turn is as
        long as a random prompt of input_len tokens (the calibrated template overhead taken off); each later one
        adds input_len tokens."""
        rng = random.Random(f"{self.seed}:turn:{conversation}:{turn}")
        words = self.words_for(self.input_len) if turn == 1 else max(1, int(round(self.input_len / max(self.tokens_per_word, 1e-6))))
        return " ".join(rng.choice(WORDS) for _ in range(words))

    def conversation_body(self, conversation: int, answers: List[str]) -> bytes:
        """The next turn of a conversation whose earlier turns the server answered with `answers`: the whole history
        each time, so the context grows turn by turn. Chat sends it as messages, the user's and the server's actual
        answers in turn, as vLLM's benchmarks/multi_turn/benchmark_serving_multi_turn.py (send_turn) does;
        completions as one text, each answer right after the prompt it answered, as SGLang's
        benchmark/hicache/bench_multiturn.py appends its history, so that every turn's prompt starts with the
        previous turn's prompt and answer: what a prefix cache can reuse."""
        turn = len(answers) + 1
        users = [self.user_turn(conversation, k) for k in range(1, turn + 1)]
        if self.api == "chat":
            messages: List[dict] = []
            for user, answer in zip(users, answers):
                messages += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
            messages.append({"role": "user", "content": users[-1]})
            return self.payload(self.output_len, None, messages)
        text = "".join(f"{user}{answer}\n" for user, answer in zip(users, answers)) + users[-1]
        return self.payload(self.output_len, text)

    def estimated_turn_tokens(self, turn: int) -> int:
        """A turn's prompt length as calibrated, for when the server reports no usage: its users' turns and the
        answers before it (each output_len tokens at most)."""
        return turn * self.input_len + (turn - 1) * self.output_len


def load_prompts_file(path: str) -> List[dict]:
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    raise events.AgentError(
                        "bad_prompts_file", f"{path} line {n} is not JSON: {exc}", 'each line must be an object such as {"prompt": "..."}'
                    )
                if isinstance(item, str):
                    item = {"prompt": item}
                if not isinstance(item, dict) or not (item.get("prompt") or item.get("text") or item.get("messages")):
                    raise events.AgentError(
                        "bad_prompts_file", f"{path} line {n} has no prompt", 'each line needs "prompt" (or "text", or "messages")'
                    )
                out.append(item)
    except OSError as exc:
        raise events.AgentError(
            "bad_prompts_file",
            f"cannot read the prompts file {path}: {exc.strerror}",
            "the path is read on the server's host; copy the file there first",
        )
    if not out:
        raise events.AgentError("bad_prompts_file", f"the prompts file {path} holds no prompts", "")
    return out


# Seconds /tokenize has to answer, the whole reply.
TOKENIZE_TIMEOUT_S = 10.0
# The first unreadable /tokenize reply, said once: ShareGPT asks /tokenize for every conversation.
_TOKENIZE_WARNED: List[str] = []


def tokenize_count(endpoint: Endpoint, body: dict) -> Optional[int]:
    """The server's /tokenize count for `body` ({"model", "prompt"} or {"model", "messages"}), or None."""
    try:
        status, raw = simple_request(endpoint, "POST", "/tokenize", body, timeout=TOKENIZE_TIMEOUT_S)
    except OSError:
        return None
    if status != 200:
        return None
    try:
        reply = json_reply(raw, "/tokenize")
    except BadResponse as exc:
        if not _TOKENIZE_WARNED:
            _TOKENIZE_WARNED.append(str(exc))
            events.log(f"{exc}; prompt lengths are not counted with it", "warn")
        return None
    if not isinstance(reply, dict):
        return None
    count, problem = usage_count(reply, "count")
    return None if problem else count


def token_counter(endpoint: Endpoint, model: str, use_tokenize: bool) -> Tuple[Callable[[str], int], str]:
    """A text's length in tokens by the server's /tokenize ('tokenize'; special tokens included, as vLLM's
    benchmark tokenizer(prompt) counts them), or in words where the server has none or --no-tokenize ('words')."""

    def words(text: str) -> int:
        return len(text.split())

    if not use_tokenize or tokenize_count(endpoint, {"model": model, "prompt": "hello"}) is None:
        return words, "words"

    def tokens(text: str) -> int:
        n = tokenize_count(endpoint, {"model": model, "prompt": text})
        return words(text) if n is None else n

    return tokens, "tokenize"


def calibrate(endpoint: Endpoint, maker: PromptMaker) -> dict:
    """Measures tokens per word (and the chat template's overhead) with the server's /tokenize."""

    def count(words: int) -> Optional[int]:
        text = maker.text(-1, words)
        body = (
            {"model": maker.model, "messages": [{"role": "user", "content": text}]}
            if maker.api == "chat"
            else {"model": maker.model, "prompt": text}
        )
        return tokenize_count(endpoint, body)

    small, large = count(50), count(250)
    if small is None or large is None or large <= small:
        return {
            "calibrated": False,
            "tokens_per_word": maker.tokens_per_word,
            "overhead": maker.overhead,
            "note": "the server has no usable /tokenize; prompt lengths are estimates (usage.prompt_tokens is exact)",
        }
    per_word = (large - small) / 200.0
    overhead = small - 50 * per_word
    return {"calibrated": True, "tokens_per_word": per_word, "overhead": overhead}
