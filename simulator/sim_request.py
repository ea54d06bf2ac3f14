"""A generation request as the simulator takes it: its prompt counted as the simulator's tokenizer counts,
the fault it asks for, and its state from arrival to its last token. Standard library only."""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
FAULT_MARKER = re.compile(r"\[\[sim-fault:([^\]]+)\]\]")


def chat_template_tokens(messages: list) -> List[str]:
    """A chat prompt as a template renders it (ChatML's shape: <|im_start|>role ... <|im_end|> around each message,
    then the assistant's opening): three template tokens a message and two at the end, in the order of the
    messages, so a conversation's next turn starts with this turn's prompt and its answer, as with a real template."""
    out: List[str] = []
    for m in messages:
        if isinstance(m, dict):
            out += ["<|im_start|>", f"<|{m.get('role')}|>"] + TOKEN_RE.findall(str(m.get("content", ""))) + ["<|im_end|>"]
    return out + ["<|im_start|>", "<|assistant|>"]


def count_tokens(text: str) -> int:
    """The simulator's tokenizer: words and punctuation marks are one token each."""
    return len(TOKEN_RE.findall(text))


class BadRequest(Exception):
    """A generation request vLLM refuses with 400; the message is vLLM's."""


def read_prompt(body: dict, chat: bool) -> Tuple[str, int]:
    """The prompt's text and its token count, as /v1/chat/completions or /v1/completions takes it."""
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        return text, count_tokens(text) + 3 * len(messages) + 2  # a chat template's few extra tokens
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return "", len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0], count_tokens(prompt[0])
    if isinstance(prompt, str):
        return prompt, count_tokens(prompt)
    raise BadRequest("'prompt' must be a string or a list of token ids")


def read_max_tokens(body: dict) -> int:
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 16))
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest("max_tokens must be a positive integer")
    return max_tokens


@dataclass
class Fault:
    kind: str  # error500 | error429 | cut | slow
    every: int = 1  # applies to every N-th generation request (1 = all)
    after: int = 1  # cut: tokens sent before the connection drops
    ms: float = 1000.0  # slow: extra delay before the request joins the batch

    @staticmethod
    def parse(text: str) -> "Fault":
        parts = [p for p in re.split(r"[:;,\s]+", text.strip()) if p]
        if not parts or parts[0] not in ("error500", "error429", "cut", "slow"):
            raise ValueError(
                f"unknown fault {text!r}: use error500, error429, cut or slow, " "with options such as every=5, after=3, ms=500"
            )
        fault = Fault(parts[0])
        for p in parts[1:]:
            key, _, value = p.partition("=")
            if key == "every":
                fault.every = max(1, int(value))
            elif key == "after":
                fault.after = max(0, int(value))
            elif key == "ms":
                fault.ms = float(value)
            else:
                raise ValueError(f"unknown fault option {p!r} in {text!r}")
        return fault


def pick_fault(faults: List[Fault], count: int, header: Optional[str], prompt_text: str) -> Optional[Fault]:
    """The fault the `count`-th generation request meets: its X-Sim-Fault header's, its prompt's
    [[sim-fault:...]] marker's, else the first --fault whose `every` it falls on."""
    if header:
        return Fault.parse(header)
    marker = FAULT_MARKER.search(prompt_text)
    if marker:
        return Fault.parse(marker.group(1))
    for f in faults:
        if count % f.every == 0:
            return f
    return None


@dataclass
class SimRequest:
    rid: str
    prompt_tokens: int
    max_tokens: int
    arrival: float
    chat: bool
    include_usage: bool
    stream: bool
    model: str
    writer: Optional[asyncio.StreamWriter] = None
    fault: Optional[Fault] = None
    sent: int = 0
    queued_at: float = 0.0
    pace_base: float = 0.0
    first_token_at: Optional[float] = None
    last_token_at: Optional[float] = None
    aborted: bool = False
    done: Optional[asyncio.Future] = None
    text: List[str] = field(default_factory=list)
    # Prompt tokens found in the prefix cache: their prefill is skipped.
    cached_tokens: int = 0
    # The prompt as the prefix cache sees it (template tokens included), for caching its answer's blocks too.
    cache_tokens: List[str] = field(default_factory=list)
