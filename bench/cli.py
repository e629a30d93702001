"""Start-up of the command line and an idle node's memory, beside Python's own start in the same run.

    python bench/cli.py [--runs 15] [--settle 5] [--smoke]

Figures: ``python -c pass`` (the baseline); ``meshnode --version`` (median, and minus the
baseline: goal <= 0.15 s); ``meshnode status`` against a running node (median: goal <= 0.3 s);
the VmRSS of an idle node with the default configuration (A2A on), the web notebook on and no MCP
servers, after it printed its start-up lines and settled (goal <= 120 MB), and beside it that of the
same node with A2A off, for information. Each goal is printed as met or not met. The commands
run ``python -m meshnode`` of the meshnode on PYTHONPATH (this script's tree unless PYTHONPATH
names another) from an empty directory. ``--smoke``: few runs, no settle. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TREE / "tests"))

GOALS = {"version_over_python_s": 0.15, "status_s": 0.3, "idle_rss_mb": 120.0}
A2A_OFF = {"MESHNODE_A2A_ENABLED": "false"}


def timed(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> float:
    """Median wall-clock seconds of ``runs`` runs of ``argv`` (each must exit 0)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[2:])} failed: {result.stderr.strip()[-500:]}")
    return statistics.median(times)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def measure(runs: int, settle_s: float) -> dict:
    from meshharness import Node

    root = Path(tempfile.mkdtemp(prefix="clibench", dir="/tmp"))
    nodes = []
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        env.setdefault("PYTHONPATH", str(TREE))
        python = timed([sys.executable, "-c", "pass"], env, root, runs)
        version = timed([sys.executable, "-m", "meshnode", "--version"], env, root, runs)
        code = {"PYTHONPATH": env["PYTHONPATH"]}
        nodes = [Node(root, "idle", env=code), Node(root, "a2a-off", env={**code, **A2A_OFF})]  # web on, no MCP
        os.chdir(root)  # `python -m` puts the working directory first on the path
        for node in nodes:
            node.start(timeout=60)
        time.sleep(settle_s)  # settled: the first ticks and the web server's start are behind them
        rss, rss_a2a_off = (rss_mb(node.proc.pid) for node in nodes)
        status = timed([sys.executable, "-m", "meshnode", "--home", str(nodes[0].home), "status"], nodes[0].env,
                       root, runs)
    finally:
        for node in nodes:
            if node.proc is not None:
                node.kill()
        os.chdir(TREE)
        shutil.rmtree(root, ignore_errors=True)
    return {"runs": runs, "python_s": round(python, 4), "version_s": round(version, 4),
            "version_over_python_s": round(version - python, 4), "version_ratio": round(version / python, 2),
            "status_s": round(status, 4), "status_ratio": round(status / python, 2),
            "idle_rss_mb": round(rss, 1), "idle_rss_a2a_off_mb": round(rss_a2a_off, 1)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (the median is reported)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds the node idles before its RSS is read")
    parser.add_argument("--smoke", action="store_true", help="tiny: 3 runs, no settle")
    args = parser.parse_args(argv)
    runs, settle = (3, 0.0) if args.smoke else (args.runs, args.settle)
    result = measure(runs, settle)
    import meshnode  # which tree was measured (PYTHONPATH)

    tree = str(Path(meshnode.__file__).resolve().parent.parent)
    print(f"tree: {tree}")
    print(f"python -c pass:      {result['python_s']:.3f} s (median of {runs})")
    print(f"meshnode --version:  {result['version_s']:.3f} s, {result['version_over_python_s']:.3f} s over python"
          f" (x{result['version_ratio']})")
    print(f"meshnode status:     {result['status_s']:.3f} s against a running node (x{result['status_ratio']})")
    print(f"idle node VmRSS:     {result['idle_rss_mb']:.1f} MB (the default config: A2A on; web on, no MCP"
          f" servers); {result['idle_rss_a2a_off_mb']:.1f} MB with A2A off")
    met = {name: result[name] <= goal for name, goal in GOALS.items()}
    for name, goal in GOALS.items():
        print(f"goal {name} <= {goal:g}: {'met' if met[name] else 'not met'}")
    result = {"bench": "cli", "tree": tree, "smoke": args.smoke, **result,
              "goals": GOALS, "met": met}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
