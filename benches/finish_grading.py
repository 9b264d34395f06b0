"""What grading every finish costs (issue 43's target: an experiment that
grades each finish's judged patch takes at most 1.15x one that grades only
the final patch).

The experiment is N instances of the demo experiment's `textutil` package
(as in `benches/experiment.py`) and the shipped FIX-only arm. The agent is
a `command` agent whose turn takes TURN seconds (a stand-in for a model's
turn): its first finish changes nothing (FIX-only rejects it), its second
applies the fix. So each run has one finish more than its final patch, and
grading every finish costs one more grading pytest run per run. The same
experiment runs with `--final-only` and without, alternately, REPS times
each, into fresh output directories; the medians are compared.

    cargo build --release && python3 benches/finish_grading.py [N] [TURN] [REPS]
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from experiment import ROOT, setup, timed_run  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    turn = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory(dir=ROOT / "target", prefix="bench-finishes-") as d:
        dir = Path(d)
        setup(dir, n)
        sed = "s/join(words)/join(w.lower() for w in words)/"
        script = (f"sleep {turn}; [ \"$CRITIC_ROUND\" = 1 ] || "
                  f"sed -i '{sed}' textutil/__init__.py")
        text = (dir / "exp.yaml").read_text()
        start, end = text.index("agent:"), text.index("arms:")
        (dir / "exp.yaml").write_text(
            text[:start] + f"agent:\n  command: [sh, -c, {json.dumps(script)}]\n" + text[end:]
        )
        final_only, every = [], []
        timed_run(dir, "warm")
        for i in range(reps):
            final_only.append(timed_run(dir, f"final-{i}", "--final-only"))
            every.append(timed_run(dir, f"every-{i}"))
    f, e = statistics.median(final_only), statistics.median(every)
    print(f"{n} runs of 2 finishes, {turn} s a turn, --workers 2, median of {reps}")
    print(f"final patch only: {f:.2f} s; every finish: {e:.2f} s; "
          f"{e / f:.3f}x (target at most 1.15x)")


if __name__ == "__main__":
    main()
