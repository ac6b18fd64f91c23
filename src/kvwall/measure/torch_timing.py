"""Timing torch calls: on CUDA captured once as a CUDA graph and timed by CUDA events around each replay (the GPU's
own clock, no launch per call in the time); on the CPU, where no graph exists, by the host clock around each call.

The calls run once on a side stream before the capture (torch.cuda.graph's warm-up), so the graph holds the kernels
they launch, not their first-call set-up.
"""

from __future__ import annotations

import time

from kvwall.measure.torch_decode import _torch, synchronize

#: How a run on CUDA is timed, and how one on the CPU is.
GRAPH_EVENTS = "one CUDA graph, timed by CUDA events around its replay"
HOST_CLOCK = "host clock (time.perf_counter) around each call, the call ending with a device synchronisation"


class Timer:
    """Times ``calls``, a function running some torch operations on ``device``."""

    def __init__(self, calls, device: str):
        torch = _torch()
        self.calls, self.device, self.graph = calls, device, None
        if device == "cuda":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.inference_mode():
                calls()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph), torch.inference_mode():
                calls()
            self.start, self.end = (torch.cuda.Event(enable_timing=True) for _ in range(2))

    @property
    def timing(self) -> str:
        return GRAPH_EVENTS if self.device == "cuda" else HOST_CLOCK

    def replay(self) -> None:
        """One run, untimed (a warm-up)."""
        if self.device == "cuda":
            self.graph.replay()
            synchronize("cuda")
        else:
            with _torch().inference_mode():
                self.calls()

    def __call__(self) -> float:
        """Seconds of one run."""
        if self.device == "cuda":
            self.start.record()
            self.graph.replay()
            self.end.record()
            self.end.synchronize()
            return self.start.elapsed_time(self.end) / 1e3
        with _torch().inference_mode():
            start = time.perf_counter()
            self.calls()
            synchronize(self.device)
            return time.perf_counter() - start

    def close(self) -> None:
        self.graph = None


class GraphReplay:
    """Every layer of one step captured as one CUDA graph (Timer), replayed whole;
    ``elapsed`` times a replay by CUDA events."""

    def __init__(self, step):
        self.step = step
        self.timer = Timer(step.layer_outputs, "cuda")

    def __call__(self) -> None:
        self.timer.replay()

    def elapsed(self) -> float:
        """Seconds of one replay, by the GPU's own clock."""
        return self.timer()

    def close(self) -> None:
        self.timer.close()
        self.step.close()
