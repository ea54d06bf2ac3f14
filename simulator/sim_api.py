"""vLLM's HTTP API as the simulated server answers it: each connection's requests routed to their endpoint,
the mimicked version's own answers first (its profiler endpoints, server info, an API key it guards).
Standard library only."""
from __future__ import annotations

import asyncio
import json
from typing import Dict, Optional

import sim_http
import sim_mimic
import sim_timing as tm
from sim_http import MalformedRequestLine, error_body, read_request, respond, respond_json
from sim_request import count_tokens


class ApiRoutes:
    """A part of the server (vllm_sim.Simulator): its endpoints. A subclass may answer one in its own way
    (bench/gpu_server.py's /version) and hand the rest to route. Of the server it takes the attributes
    below and the endpoints' answers: generate, models_body, metrics_text and the profiler's."""

    preset: tm.Preset
    mimic: Optional[sim_mimic.Mimic]
    flags: Optional[sim_mimic.ServerFlags]

    async def handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    request = await read_request(reader)
                except MalformedRequestLine:
                    await respond_json(writer, 400, error_body("malformed request line", 400))
                    return
                if request is None:
                    return
                keep = await self.route(request.method, request.path, request.raw, request.headers, writer)
                if not keep or request.headers.get("connection", "").lower() == "close" or writer.is_closing():
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # shutting down with streams open: they end with the connection
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the peer may be gone already
                pass

    async def route(self, method: str, path: str, raw: bytes, headers: Dict[str, str], writer: asyncio.StreamWriter) -> bool:
        """Answers one request; returns whether the connection can carry another."""
        if path == f"/{sim_http.OWNED_BY}/state":
            # The simulator's own (not a server's): whether a profile is left running, for tests.
            await respond_json(
                writer, 200, {"profiling": self.profiling, "profile_starts": self.profile_starts, "profile_stops": self.profile_stops}
            )
            return True
        if self.refuses_key(method, path, headers):
            await respond_json(writer, 401, {"error": "Unauthorized"})
            return True
        try:
            if not (self.mimic and await self.route_mimic(self.mimic, method, path, raw, writer)):
                return await self.route_vllm(method, path, raw, headers, writer)
        except (ValueError, json.JSONDecodeError) as exc:
            await respond_json(writer, 400, error_body(f"bad request body: {exc}", 400))
        return True

    def refuses_key(self, method: str, path: str, headers: Dict[str, str]) -> bool:
        """Under --mimic with --api-key: a request the version guards that lacks the key."""
        m = self.mimic
        return bool(
            m
            and self.flags
            and self.flags.api_key
            and sim_mimic.needs_key(m, path)
            and method != "OPTIONS"
            and headers.get("authorization") != "Bearer " + self.flags.api_key
        )

    async def route_mimic(self, m: sim_mimic.Mimic, method: str, path: str, raw: bytes, writer: asyncio.StreamWriter) -> bool:
        """The endpoints where the mimicked version answers in its own way; False for the others."""
        if path in ("/start_profile", "/stop_profile") and method == "POST":
            await (self.start_profile_mimic(raw, writer) if path == "/start_profile" else self.stop_profile_mimic(writer))
        elif path == "/version" and m.server == "sglang":
            await respond_json(writer, 404, {"detail": "Not Found"})  # SGLang has no /version
        elif path in m.server_info_paths:
            await respond_json(
                writer,
                200,
                {
                    "version": f"{m.version}+{sim_http.OWNED_BY}",
                    "tp_size": self.flags.tp if self.flags else 1,
                    "simulator": sim_http.OWNED_BY,
                },
            )
        elif path == "/metrics" and m.metrics_need_flag and not (self.flags and self.flags.enable_metrics):
            await respond_json(writer, 404, {"detail": "Not Found"})
        else:
            return False
        return True

    async def route_vllm(self, method: str, path: str, raw: bytes, headers: Dict[str, str], writer: asyncio.StreamWriter) -> bool:
        """vLLM's endpoints; returns whether the connection can carry another request."""

        def body() -> dict:
            if not raw:
                return {}
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError("the body must be a JSON object")
            return value

        if path == "/health":
            await respond(writer, 200, b"", "application/json")
        elif path in ("/v1/models", "/models"):
            await respond_json(writer, 200, self.models_body())
        elif path == "/version":
            await respond_json(writer, 200, {"version": f"{self.mimic.version if self.mimic else '0.0.0'}+{sim_http.OWNED_BY}"})
        elif path == "/metrics":
            await respond(writer, 200, self.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/tokenize" and method == "POST":
            await respond_json(writer, 200, self.tokenize_body(body()))
        elif path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
            await self.generate(body(), path.endswith("chat/completions"), writer, headers.get("x-sim-fault"))
            return not writer.is_closing()
        elif path in ("/start_profile", "/stop_profile") and method == "POST":
            await self.profile_endpoint(path, writer)
        else:
            await respond_json(writer, 404, {"detail": "Not Found"})
        return True

    def tokenize_body(self, b: dict) -> dict:
        if "messages" in b:
            msgs = b["messages"]
            n = count_tokens(" ".join(str(m.get("content", "")) for m in msgs)) + 3 * len(msgs) + 2
        else:
            n = count_tokens(str(b.get("prompt", "")))
        return {"count": n, "max_model_len": self.preset.max_model_len, "tokens": list(range(1000, 1000 + n)), "token_strs": None}
