"""Wall time per stage of one export, as data: ``ONNXProgram.stage_seconds`` and, with ``enable_log()``, one log
line. The benchmark divides the export's time by its floor (capture plus one serialization) with these figures."""

from __future__ import annotations

import contextlib
import time


class StageTimes:
    """Seconds per stage, in the order the stages first ran (a stage entered twice adds up)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def move(self, seconds: float, source: str, target: str) -> None:
        """Count ``seconds`` of stage ``source`` under stage ``target`` instead (work one stage did for another; while
        ``source`` runs, too)."""
        if seconds:
            self.seconds[source] = self.seconds.get(source, 0.0) - seconds
            self.seconds[target] = self.seconds.get(target, 0.0) + seconds

    def summary(self) -> str:
        total = sum(self.seconds.values())
        parts = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self.seconds.items())
        return f"export stages ({total:.3f} s): {parts}"

