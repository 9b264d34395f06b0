"""`critic eliminate` on a 200-line function with 10 uncovered lines,
process included (issue 14's target: <= 5 ms).

The function is generated: 200 lines of nested `if`/`elif`/`else`, loops and
`try` blocks; the uncovered lines are spread over it. Also reports the slice
sizes of the seed's worked example's function (flutils' `bump_version`) if
`target/eliminate-venv` holds it (the test suite installs it).

    cargo build --release && python3 benches/eliminate.py [RUNS]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC = ROOT / "target/release/critic"


def generated(lines=200):
    out = ["def big(x, ys):", "    total = 0"]
    i = 0
    while len(out) + 12 < lines - 1:
        out += [
            f"    if x == {i}:",
            f"        total += {i}",
            f"    elif x > {i} and total < {i * 3}:",
            f"        for y in ys:",
            f"            if y == {i}:",
            f"                break",
            f"            total += y",
            f"    else:",
            f"        try:",
            f"            total //= x - {i}",
            f"        except ZeroDivisionError:",
            f"            total = -{i}",
        ]
        i += 1
    out += ["    total += 1"] * (lines - 1 - len(out)) + ["    return total"]
    return "\n".join(out) + "\n"


def timed(args, runs):
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        walls.append((time.perf_counter() - start) * 1000)
    return statistics.median(walls), min(walls)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    if not CRITIC.exists():
        sys.exit(f"{CRITIC} not found: run `cargo build --release` first")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.py"
        source = generated()
        path.write_text(source)
        statements = [n for n, line in enumerate(source.splitlines(), 1)
                      if line.strip().startswith(("total", "break"))]
        uncovered = statements[5::len(statements) // 10][:10]
        args = [str(CRITIC), "eliminate", str(path), "--function", "big",
                "--uncovered", ",".join(map(str, uncovered))]
        result = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        median, fastest = timed(args, runs)
        spawn, _ = timed(["/bin/true"], runs)
        report = {
            "function_lines": len(source.splitlines()),
            "uncovered": len(uncovered),
            "statements": [result["original_statements"], result["slice_statements"]],
            "eliminate_ms_median": round(median, 2),
            "eliminate_ms_fastest": round(fastest, 2),
            "spawn_floor_ms": round(spawn, 2),
        }
    site = next((ROOT / "target/eliminate-venv/lib").glob("python3*/site-packages/flutils/packages.py"), ROOT / "none")
    if site.exists():
        # The function of the seed's Appendix A (lines of flutils 0.7).
        sizes = {}
        for lines in ([224], [224, 246], [246, 262], [275]):
            out = subprocess.run([str(CRITIC), "eliminate", str(site), "--function", "bump_version",
                                  "--uncovered", ",".join(map(str, lines))], capture_output=True, text=True)
            if out.returncode == 0:
                r = json.loads(out.stdout)
                sizes[",".join(map(str, lines))] = [r["original_statements"], r["slice_statements"],
                                                    len(r["slice"].splitlines())]
        report["bump_version_statements_slice_lines"] = sizes
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
