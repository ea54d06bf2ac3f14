"""vLLM's automatic prefix caching, as the simulator keeps it: which prompt blocks a request finds cached,
so their prefill is skipped. Standard library only."""
from __future__ import annotations

import collections
from typing import List


class PrefixCache:
    """vLLM's automatic prefix caching, as its V1 KV-cache manager does it (vllm/v1/core/kv_cache_utils.py,
    hash_block_tokens; vllm/v1/core/kv_cache_manager.py, get_computed_blocks): a prompt's full blocks of
    `block_size` tokens are hashed in a chain (each block's hash covers every token before it); a request's
    hits are its leading blocks already cached, never the whole prompt (the last token is always computed);
    its blocks are cached as it is scheduled, so a later request with the same prefix hits them. Least
    recently used blocks go first when the cache is full. Counted as vLLM counts them: queries are prompt
    tokens, hits cached tokens (vllm:prefix_cache_queries / vllm:prefix_cache_hits)."""

    def __init__(self, capacity_blocks: int, block_size: int = 16) -> None:
        self.capacity, self.block_size = capacity_blocks, block_size
        self.blocks: "collections.OrderedDict[int, None]" = collections.OrderedDict()
        self.queries = 0
        self.hits = 0

    def lookup_and_insert(self, tokens: List[str], prompt_tokens: int) -> int:
        """The request's cached tokens; its full blocks are cached from now on."""
        hashes = self.block_hashes(tokens, max(0, min(len(tokens), prompt_tokens - 1)))
        hit_blocks = 0
        for h in hashes:
            if h not in self.blocks:
                break
            hit_blocks += 1
        self.insert_hashes(hashes)
        cached = hit_blocks * self.block_size
        self.queries += prompt_tokens
        self.hits += cached
        return cached

    def insert(self, tokens: List[str]) -> None:
        """Caches the full blocks of a finished request's tokens, prompt and answer: vLLM's KV-cache manager caches
        a block once its tokens are computed (kv_cache_manager.py, allocate_slots -> cache_blocks), decoded
        tokens too, so the next turn of a conversation, whose prompt is this one's and its answer, hits them."""
        self.insert_hashes(self.block_hashes(tokens, len(tokens)))

    def block_hashes(self, tokens: List[str], usable: int) -> List[int]:
        hashes: List[int] = []
        h = 0
        for start in range(0, usable - usable % self.block_size, self.block_size):
            h = hash((h, tuple(tokens[start : start + self.block_size])))
            hashes.append(h)
        return hashes

    def insert_hashes(self, hashes: List[int]) -> None:
        for h in hashes:
            self.blocks[h] = None
            self.blocks.move_to_end(h)
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)
