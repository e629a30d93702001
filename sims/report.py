"""What a run prints and draws: a progress bar, a summary table, PNG plots."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from sims.consensus import Result


class ProgressBar:
    """A one-line bar on stderr, redrawn when the count changes (on a terminal; elsewhere,
    one line per tenth of the way, so logs stay readable)."""

    def __init__(self, stream=sys.stderr, width: int = 30, unit: str = "decisions"):
        self.stream, self.width, self.unit = stream, width, unit
        self.tty = stream.isatty()
        self._tenth = -1

    def __call__(self, done: int, total: int, sim_ms: int) -> None:
        if not self.tty:
            tenth = 10 * done // max(total, 1)
            if tenth != self._tenth:
                self._tenth = tenth
                self.stream.write(f"{done}/{total} {self.unit}, sim time {sim_ms / 1000:.1f} s\n")
            return
        filled = self.width * done // max(total, 1)
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {self.unit}"
                          f"  sim time {sim_ms / 1000:.1f} s ")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def summary(r: Result) -> dict:
    o = r.options
    lat = r.latencies_ms or [0]
    rtt = 2 * o.latency_ms
    decisions = max(r.decided_heights, 1)
    lag = sorted(r.client_lag_ms) or [0]
    return {
        "scenario": "consensus", "seed": o.seed, "nodes": o.nodes, "validators": r.validators,
        "clients": r.clients, "byzantine": round(r.validators * o.byzantine),
        "byzantine_weight": round(r.byzantine_weight, 3),
        "behaviour": o.behaviour if o.byzantine else "none", "sybils": o.sybils,
        "decisions": r.decided_heights, "asked": o.heights, "values_decided": r.decided_values,
        "values_per_decision_max": max(r.values_per_height or [0]), "safe": r.safe, "violation": r.violation,
        "latency_p50_ms": statistics.median(lat), "latency_max_ms": max(lat),
        "latency_p50_rtt": round(statistics.median(lat) / rtt, 2),
        "client_decisions": r.client_decisions, "client_decisions_expected": r.clients * r.decided_heights,
        "client_lag_p50_ms": lag[len(lag) // 2], "client_lag_max_ms": lag[-1],
        "commits_refused": r.commits_refused,
        "broadcasts_per_decision": round(sum(r.messages_per_height) / decisions, 1),
        "sends_per_decision": round(r.sent / decisions, 1),
        "sends_per_decision_per_node": round(r.sent / decisions / o.nodes, 1),
        "sends_suppressed": r.suppressed,
        "rounds_max": max(r.rounds_per_height or [0]), "equivocators_exposed": r.evidence,
        "emergencies": r.emergencies, "no_quorum": r.no_quorum, "rejected_inputs": r.rejected, "dropped": r.dropped,
        "sim_seconds": round(r.sim_time_ms / 1000, 2), "events": r.steps, "wall_seconds": round(r.wall_seconds, 2),
        "peak_rss_mb": peak_rss_mb(),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def table(rows: dict) -> str:
    width = max(len(k) for k in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows.items())


def plots(r: Result, out: Path) -> list[Path]:
    """decision latency, messages per decision, trust over time: one PNG each, into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    heights = list(range(len(r.latencies_ms)))

    def save(fig, name: str) -> None:
        written.append(save_figure(fig, out / name))

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(heights, r.latencies_ms, marker="o")
    ax.set(xlabel="height", ylabel="decision latency (simulated ms)", title="Decision latency")
    save(fig, "decision_latency.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(heights, r.messages_per_height)
    ax.set(xlabel="height", ylabel="messages broadcast", title="Messages per decision")
    save(fig, "messages_per_decision.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    times = [t / 1000 for t, _, _ in r.trust]
    ax.plot(times, [h for _, h, _ in r.trust], label="honest validators")
    if r.options.byzantine:
        ax.plot(times, [b for _, _, b in r.trust], label="byzantine validators")
    ax.set(xlabel="simulated time (s)", ylabel="mean trust (one honest node's view)", title="Trust over time",
           ylim=(0, 1))
    ax.legend()
    save(fig, "trust_over_time.png")
    return written


def save_figure(fig, path: Path) -> Path:
    """Write one plot as a PNG and free it (matplotlib keeps every open figure in memory)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
