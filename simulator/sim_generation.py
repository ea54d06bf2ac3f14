"""Generation, as the simulated server runs it: a /v1/completions or /v1/chat/completions request read and
checked as vLLM does, handed to what makes its tokens, and each token written to its client as it comes,
up to the answer's end. Standard library only."""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import List, Optional, Set

import sim_http
import sim_openai
from sim_http import error_body, respond_json, send_event
from sim_metrics import ServerMetrics
from sim_pacing import PacedStreams, emit_all_at_once
from sim_prefix_cache import PrefixCache
from sim_request import (
    TOKEN_RE,
    BadRequest,
    Fault,
    SimRequest,
    chat_template_tokens,
    pick_fault,
    read_max_tokens,
    read_prompt,
)

# The words a simulated model answers with, one a token, over and over.
VOCAB = [
    " the",
    " model",
    " serves",
    " tokens",
    " quickly",
    " and",
    " every",
    " step",
    " is",
    " simulated",
    " by",
    " a",
    " timing",
    " model",
    " of",
    " continuous",
    " batching",
    ".",
    " It",
    " runs",
]


class Generation:
    """A part of the server (vllm_sim.Simulator): its generation requests from arrival to their last token.
    Of the server it takes the attributes below and enqueue (its scheduler's)."""

    loop: Optional[asyncio.AbstractEventLoop]
    served_name: str
    created: int
    zero_cost: bool
    paced: Optional[PacedStreams]
    unbatched: Set[str]
    faults: List[Fault]
    natural_len: Optional[int]
    generation_count: int
    prefix_cache: Optional[PrefixCache]
    metrics: ServerMetrics

    def emit_token(self, r: SimRequest, index: int) -> None:
        """Token `index` of `r` as the step (or the pace) that made it ends: timed, written to its client,
        and the request finished after its last (or dropped where its fault cuts it)."""
        now = time.monotonic()
        metrics = self.metrics
        if r.first_token_at is None:
            r.first_token_at = now
            metrics.h_ttft.observe(now - r.arrival)
        else:
            metrics.h_itl.observe(now - (r.last_token_at or now))
        r.last_token_at = now
        metrics.generation_tokens_total += 1
        token = VOCAB[(index - 1) % len(VOCAB)]
        r.text.append(token)
        last = index >= r.max_tokens
        cut = r.fault is not None and r.fault.kind == "cut" and index >= r.fault.after and not last
        if r.stream and r.writer is not None:
            if not self.stream_token(r, r.writer, index, token, last, cut):
                return
        elif cut:
            r.aborted = True
            if r.writer is not None:
                r.writer.transport.abort()
            self.finish(r, ok=False)
            return
        if last:
            self.finish(r, ok=True)

    def stream_token(self, r: SimRequest, w: asyncio.StreamWriter, index: int, token: str, last: bool, cut: bool) -> bool:
        """The token's SSE message (the role's first, in a chat; the usage chunk and [DONE] after the last);
        False when the stream ended here instead: its client gone, or its fault cutting it."""
        if w.is_closing():
            r.aborted = True
            self.finish(r, ok=False)
            return False
        finish = "length" if last else None
        if r.chat:
            if index == 1:
                send_event(w, sim_openai.chat_chunk(r, self.created, {"role": "assistant", "content": ""}, None))
            send_event(w, sim_openai.chat_chunk(r, self.created, {"content": token}, finish))
        else:
            send_event(w, sim_openai.completion_chunk(r, self.created, token, finish))
        if cut:
            # A stream cut mid-way: the connection drops with no final chunk, as when a worker dies.
            r.aborted = True
            w.transport.abort()
            self.finish(r, ok=False)
            return False
        if last:
            if r.include_usage:
                send_event(w, sim_openai.usage_chunk(r, self.created))
            sim_http.end_event_stream(w)
        return True

    def finish(self, r: SimRequest, ok: bool) -> None:
        self.unbatched.discard(r.rid)
        if ok and self.prefix_cache is not None and r.cache_tokens:
            # The last token sampled was never fed back: its KV was not computed, so it is not cached.
            self.prefix_cache.insert(r.cache_tokens + TOKEN_RE.findall("".join(r.text))[: max(0, r.sent - 1)])
        if ok:
            self.metrics.success_total += 1
            self.metrics.h_e2e.observe(time.monotonic() - r.arrival)
            if r.sent > 1 and r.first_token_at is not None and r.last_token_at is not None:
                # TPOT as the server sent it, so a benchmark can tell the client's error from the server's lag.
                self.metrics.sent_tpot_sum += (r.last_token_at - r.first_token_at) / (r.sent - 1)
                self.metrics.sent_tpot_count += 1
        if r.done is not None and not r.done.done():
            r.done.set_result(ok)

    async def generate(self, body: dict, chat: bool, writer: asyncio.StreamWriter, fault_header: Optional[str]) -> None:
        """/v1/completions or /v1/chat/completions: the request read and checked as vLLM does, run, and answered."""
        model = body.get("model") or self.served_name
        if model != self.served_name:
            missing = {"message": f"The model `{model}` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}
            await respond_json(writer, 404, {"error": missing})
            return
        try:
            text, prompt_tokens = read_prompt(body, chat)
            max_tokens = read_max_tokens(body)
        except BadRequest as exc:
            await respond_json(writer, 400, error_body(str(exc), 400))
            return
        if not body.get("ignore_eos") and self.natural_len:
            max_tokens = min(max_tokens, self.natural_len)
        self.generation_count += 1
        try:
            fault = pick_fault(self.faults, self.generation_count, fault_header, text)
        except ValueError as exc:
            await respond_json(writer, 400, error_body(str(exc), 400))
            return
        if fault and fault.kind in ("error500", "error429"):
            code = 500 if fault.kind == "error500" else 429
            msg = (
                "simulated internal server error (fault injection)"
                if code == 500
                else "simulated overload: too many requests (fault injection)"
            )
            await respond_json(writer, code, error_body(msg, code))
            return
        r = self.new_request(body, chat, model, text, prompt_tokens, max_tokens, writer, fault)
        if r.stream:
            sim_http.start_event_stream(writer)
        if fault and fault.kind == "slow":
            await asyncio.sleep(fault.ms / 1000.0)
        await self.run_request(r)
        try:
            ok = await r.done
        except asyncio.CancelledError:
            r.aborted = True
            raise
        if not r.stream and ok:
            payload = sim_openai.full_response(r, self.created)
            await respond_json(writer, 200, payload)
        elif r.stream and ok:
            await writer.drain()

    def new_request(
        self,
        body: dict,
        chat: bool,
        model: str,
        text: str,
        prompt_tokens: int,
        max_tokens: int,
        writer: asyncio.StreamWriter,
        fault: Optional[Fault],
    ) -> SimRequest:
        """The request as it arrives: counted, and its prompt looked up in the prefix cache."""
        opts = body.get("stream_options") or {}
        r = SimRequest(
            rid=("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex,
            prompt_tokens=prompt_tokens,
            max_tokens=max_tokens,
            arrival=time.monotonic(),
            chat=chat,
            include_usage=bool(opts.get("include_usage")),
            stream=bool(body.get("stream")),
            model=model,
            writer=writer,
            fault=fault,
        )
        assert self.loop is not None
        r.done = self.loop.create_future()
        self.metrics.prompt_tokens_total += prompt_tokens
        if self.prefix_cache is not None:
            r.cache_tokens = chat_template_tokens(body["messages"]) if chat else TOKEN_RE.findall(text)
            r.cached_tokens = self.prefix_cache.lookup_and_insert(r.cache_tokens, prompt_tokens)
        return r

    async def run_request(self, r: SimRequest) -> None:
        """Hands the request to what makes its tokens: the pace, zero cost, or the scheduler's batch."""
        if self.paced is not None:
            self.unbatched.add(r.rid)
            self.paced.start(r)
        elif self.zero_cost:
            self.unbatched.add(r.rid)
            await emit_all_at_once(r, self.emit_token)
        else:
            self.enqueue(r)
