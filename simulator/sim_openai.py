"""The OpenAI-compatible bodies vLLM answers a generation with: each streamed chunk (completions and chat),
the usage chunk after the last, and the whole answer when not streaming. `created` is the server's start
time, as every body of one server carries it. Standard library only."""
from __future__ import annotations

from typing import Optional

from sim_request import SimRequest


def usage(r: SimRequest) -> dict:
    return {
        "prompt_tokens": r.prompt_tokens,
        "total_tokens": r.prompt_tokens + r.sent,
        "completion_tokens": r.sent,
        "prompt_tokens_details": None,
    }


def completion_chunk(r: SimRequest, created: int, token: str, finish: Optional[str]) -> dict:
    return {
        "id": r.rid,
        "object": "text_completion",
        "created": created,
        "model": r.model,
        "choices": [{"index": 0, "text": token, "logprobs": None, "finish_reason": finish, "stop_reason": None}],
    }


def chat_chunk(r: SimRequest, created: int, delta: dict, finish: Optional[str]) -> dict:
    return {
        "id": r.rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": r.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def usage_chunk(r: SimRequest, created: int) -> dict:
    """With stream_options.include_usage: a chunk with no choices, after the last token's."""
    obj = "chat.completion.chunk" if r.chat else "text_completion"
    return {"id": r.rid, "object": obj, "created": created, "model": r.model, "choices": [], "usage": usage(r)}


def full_response(r: SimRequest, created: int) -> dict:
    text = "".join(r.text)
    if r.chat:
        return {
            "id": r.rid,
            "object": "chat.completion",
            "created": created,
            "model": r.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": "length",
                    "stop_reason": None,
                }
            ],
            "usage": usage(r),
        }
    return {
        "id": r.rid,
        "object": "text_completion",
        "created": created,
        "model": r.model,
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None}],
        "usage": usage(r),
    }
