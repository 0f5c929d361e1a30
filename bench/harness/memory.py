"""Section 5, memory: the pubsub_go pull loop paced for a long run in its
own process (bench/peers/pgdrift.py) -- the stand-in for the executor's
Python worker -- sampled for RSS drift. It runs in the background while
the other sections run, stopped (SIGSTOP, its time not counted) while the
Spark end-to-end and hand-off sections run, so that no background load
skews their figures; peak RSS at full rate comes from section 1 and Spark's Python
workers are sampled in section 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time

from .log import say
from .plan import Plan
from .procs import Build, LoadServer, create, py


class Drift:
    def __init__(self, build: Build, plan: Plan) -> None:
        self.plan = plan
        self.server = LoadServer(build, 1024)
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        try:
            sub = "projects/bench/subscriptions/drift"
            create(build, self.server, "projects/bench/topics/drift", [sub])
            self.cmd = py("pgdrift.py", "--emulator-host", self.server.host, "--subscription", sub,
                          "--seconds", str(plan.drift_seconds), "--rate", str(plan.drift_rate))
            self.proc = subprocess.Popen(self.cmd, stdout=self.out, stderr=self.err, env=build.env(),
                                         start_new_session=True)
        except Exception:
            self.server.stop()
            raise
        self.paused = 0.0
        self._paused_at: float | None = None
        say(f"5/5 memory drift started in the background: {plan.drift_seconds:.0f} s at "
            f"{plan.drift_rate:,} msg/s (pid {self.proc.pid})")

    def pause(self) -> None:
        """Stops the drift loop and its server until resume()."""
        if self.proc.poll() is None and self._paused_at is None:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            self.server.proc.send_signal(signal.SIGSTOP)
            self._paused_at = time.monotonic()
            say("5/5 memory drift paused")

    def resume(self) -> None:
        if self._paused_at is not None:
            self.server.proc.send_signal(signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGCONT)
            self.paused += time.monotonic() - self._paused_at
            self._paused_at = None
            say("5/5 memory drift resumed")

    def finish(self) -> dict:
        try:
            self.resume()
            left = self.plan.drift_seconds + self.paused + 120
            say("5/5 memory drift: waiting for the background run to end")
            try:
                self.proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
                raise RuntimeError("the drift run did not end in time") from None
            self.out.seek(0)
            self.err.seek(0)
            lines = [ln for ln in self.out.read().decode().splitlines() if ln.startswith("{")]
            if self.proc.returncode != 0 or not lines:
                raise RuntimeError(f"drift run exited {self.proc.returncode}: "
                                   f"{self.err.read().decode(errors='replace')[-2000:]}")
            d = json.loads(lines[-1])
            d["command"] = " ".join(self.cmd)
            d.update(analyse(d["samples"]))
            say(f"5/5 memory drift: RSS {d['rss_start_mb']:.0f} -> {d['rss_end_mb']:.0f} MB "
                f"(max {d['rss_max_mb']:.0f}), slope {d['slope_mb_per_min']:+.2f} MB/min over "
                f"{d['messages']:,} messages")
            return d
        finally:
            self.stop()

    def stop(self) -> None:
        self.resume()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.server.stop()
        self.out.close()
        self.err.close()


def analyse(samples: list[list[float]]) -> dict:
    """RSS after a warm-up (the first 10% or 30 s), at the end, the max,
    and the least-squares slope of RSS over time after the warm-up."""
    if not samples:
        return {}
    t_end = samples[-1][0]
    warm = min(30.0, 0.1 * t_end)
    body = [s for s in samples if s[0] >= warm] or samples
    n = len(body)
    mt = sum(s[0] for s in body) / n
    mr = sum(s[1] for s in body) / n
    var = sum((s[0] - mt) ** 2 for s in body)
    slope = sum((s[0] - mt) * (s[1] - mr) for s in body) / var if var else 0.0
    return {"rss_start_mb": body[0][1], "rss_end_mb": body[-1][1], "rss_max_mb": max(s[1] for s in samples),
            "slope_mb_per_min": slope * 60, "warmup_seconds": warm}
