"""How late the load generator's process gets a CPU: a thread that sleeps a short, known time over and
over and keeps how much longer each sleep took. On a host whose cores are taken (the server's own
threads, another job), every read of the client waits that long for a CPU too, and each token it
stamps (the first one's TTFT, ITL, TPOT) is stamped that much late. The requests' send lag does not
show it in a closed loop: the next request is sent as soon as the previous one's end is read, and that
end was stamped late already."""

import threading
import time
from typing import Callable, List, Optional

# Short enough for a few hundred samples in a level of seconds; long enough that the thread costs the
# load generator nothing it would notice.
PERIOD_S = 0.01


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class WakeLagSampler:
    """Measures oversleep on a thread of its own until stopped; `stop()` gives the level's figures in ms."""

    def __init__(
        self,
        period_s: float = PERIOD_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.period_s = period_s
        self.clock = clock
        self.sleep = sleep
        self.lags_ms: List[float] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "WakeLagSampler":
        self._thread = threading.Thread(target=self.run, name="wake-lag", daemon=True)
        self._thread.start()
        return self

    def run(self, rounds: Optional[int] = None) -> None:
        """Sleeps and measures until stopped (or `rounds` times, for a test)."""
        n = 0
        while not self._stop.is_set() and (rounds is None or n < rounds):
            before = self.clock()
            self.sleep(self.period_s)
            self.lags_ms.append(max(0.0, (self.clock() - before - self.period_s) * 1000.0))
            n += 1

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        return self.figures()

    def figures(self) -> dict:
        lags = list(self.lags_ms)
        if not lags:
            return {"samples": 0, "period_ms": self.period_s * 1000.0, "p99": None, "max": None}
        return {
            "samples": len(lags),
            "period_ms": self.period_s * 1000.0,
            "p99": round(percentile(lags, 99), 3),
            "max": round(max(lags), 3),
        }
