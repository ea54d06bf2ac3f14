"""The server's API key, and keeping secrets out of everything the agent reports.

vLLM and SGLang started with `--api-key KEY` answer 401 unless a request carries
`Authorization: Bearer KEY`: vLLM guards the `/v1/*` routes only (the authentication middleware in
vllm/entrypoints/openai/api_server.py, later vllm/entrypoints/serve/middleware/authenticate.py);
SGLang guards every route but `/health` (and, in newer versions, `/metrics`:
`add_api_key_middleware` in python/sglang/srt/utils.py). So the key goes on every request.
`vllm bench serve` reads the key from OPENAI_API_KEY; we read INFBENCH_API_KEY first, then that.

The agent prints the server's command line and environment (probe) and rebuilds them into advice
(profile), and people share run folders and findings documents: every flag, variable and URL that
can hold a secret is redacted before it is emitted.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Dict, Iterable, List, Optional

from infbench_agent import events

REDACTED = "REDACTED"
API_KEY_ENV = ("INFBENCH_API_KEY", "OPENAI_API_KEY")
# An error's hint when the server wants a key, `{0}` being KEY_REMEDIES' flag, which each front end words its own way.
KEY_HINT = "give the key the server was started with: {0} (or $INFBENCH_API_KEY, or $OPENAI_API_KEY as vllm bench serve reads it)"
KEY_REMEDIES = [events.flag("--api-key", "KEY")]
# The same in words for both front ends, where no remedy can go along (the probe's report of the server).
HOW_TO_GIVE_KEY = KEY_HINT.format("infbench --api-key KEY") + '; in VS Code, the command "Inference Bench: Set Server API Key..."'

# A flag or variable name that holds a secret: --api-key, --hf-token, HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...
# ("keyfile"/"key-file" name a path, not a secret).
_SECRET_NAME = re.compile(r"(^|[-_])(api[-_]?key|key|token|secret|password|passwd|pass|credentials?)$|secret|password", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)([^@/\s]+)(@)")
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',]+", re.IGNORECASE)
# Values that look like secrets whatever flag carries them: OpenAI-style and Hugging Face tokens.
_TOKEN_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,})\b")


def resolve_api_key(args: argparse.Namespace) -> Optional[str]:
    """The key from stdin, the flag or the environment, in that order; also stored back on args.api_key."""
    key = None
    if getattr(args, "api_key_stdin", False):
        key = sys.stdin.readline().strip() or None
    key = key or getattr(args, "api_key", None)
    for name in API_KEY_ENV:
        key = key or os.environ.get(name) or None
    args.api_key = key
    return key


def auth_headers(api_key: Optional[str]) -> Dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def unauthorized_message(what: str, status: int, key_given: bool) -> str:
    if key_given:
        return (
            f"{what} answered HTTP {status}: the server refused the API key given. "
            f"Check that it is the key the server was started with (--api-key or VLLM_API_KEY)."
        )
    return f"{what} answered HTTP {status}: this server wants an API key."


def is_secret_name(name: str) -> bool:
    bare = name.lstrip("-")
    if bare.lower().endswith(("file", "path", "dir")):
        return False
    return bool(_SECRET_NAME.search(bare))


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Passwords in URLs, bearer tokens, token-like values and the given secrets, replaced."""
    out = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    out = _BEARER.sub(lambda m: m.group(1) + REDACTED, out)
    out = _TOKEN_VALUE.sub(REDACTED, out)
    for s in secrets:
        if s and len(s) >= 4:
            out = out.replace(s, REDACTED)
    return out


def redact_argv(argv: List[str]) -> List[str]:
    """A command line with the value of every secret flag (`--api-key X`, `--hf-token=X`) redacted."""
    out: List[str] = []
    secrets: List[str] = []
    redact_next = False
    for arg in argv:
        if redact_next:
            redact_next = False
            if not arg.startswith("-"):
                secrets.append(arg)
                out.append(REDACTED)
                continue
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            if is_secret_name(name):
                secrets.append(value)
                out.append(f"{name}={REDACTED}")
                continue
        elif arg.startswith("--") or (arg.startswith("-") and len(arg) > 2 and not arg[1].isdigit()):
            if is_secret_name(arg):
                redact_next = True
        out.append(arg)
    return [redact_text(a, secrets) for a in out]


def redact_env(env: Dict[str, str]) -> Dict[str, str]:
    return {k: (REDACTED if is_secret_name(k) else redact_text(v)) for k, v in env.items()}
