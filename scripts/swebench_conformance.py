#!/usr/bin/env python3
"""Grade real SWE-bench records with `critic experiment grade` and compare
with the official verdicts: each instance's golden patch (must resolve), no
patch (must not), and a public leaderboard submission's prediction (must
get the verdict the official harness gave it).

The records are SWE-bench's own (no extra field), so critic builds each
environment from SWE-bench's specification (data/swebench-specs.json). The
repositories are clones (or bare mirrors) named `<owner>__<name>` under
--repos, holding the records' base and environment-setup commits.

    python3 scripts/swebench_conformance.py \\
        --instances lite.jsonl --predictions submission.jsonl \\
        --verdicts verdicts.json --repos repos/ --out conformance-out \\
        [--repo pallets/flask ...] [--workers 2] [--critic target/debug/critic]

--verdicts is a JSON object with `resolved` and `unresolved` lists of
instance ids (the form of a leaderboard submission's results). Prints one
line per (instance, prediction) that differs, then the counts; exits 1 when
anything differs. docs/experiments.md ("SWE-bench conformance") records the
figures of the last run and explains each difference.
"""

import argparse
import json
import pathlib
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", required=True)
    ap.add_argument("--predictions", required=True)
    ap.add_argument("--verdicts", required=True)
    ap.add_argument("--repos", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repo", action="append", default=[], help="only these repositories")
    ap.add_argument("--id", action="append", default=[], help="only these instances")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--critic", default="target/debug/critic")
    args = ap.parse_args()

    records = [json.loads(l) for l in open(args.instances) if l.strip()]
    if args.repo:
        records = [r for r in records if r["repo"] in args.repo]
    if args.id:
        records = [r for r in records if r["instance_id"] in args.id]
    verdicts = json.load(open(args.verdicts))
    official = {i: True for i in verdicts["resolved"]}
    official.update({i: False for i in verdicts["unresolved"]})
    submission = {}
    for line in open(args.predictions):
        if line.strip():
            p = json.loads(line)
            submission[p["instance_id"]] = p
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    inputs = out / "inputs"
    inputs.mkdir(exist_ok=True)
    expected = {}
    with open(inputs / "instances.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    with open(inputs / "predictions.jsonl", "w") as f:
        for r in records:
            iid = r["instance_id"]
            rows = [("gold", r["patch"], True), ("empty", "", False)]
            if iid in submission and iid in official:
                rows.append(("submission", submission[iid]["model_patch"] or "", official[iid]))
            for model, patch, resolves in rows:
                f.write(json.dumps({"instance_id": iid, "model_name_or_path": model,
                                    "model_patch": patch}) + "\n")
                expected[(iid, model)] = resolves
    run = subprocess.run(
        [args.critic, "experiment", "grade", str(out / "graded"),
         "--instances", str(inputs / "instances.jsonl"),
         "--predictions", str(inputs / "predictions.jsonl"),
         "--repos", args.repos, "--workers", str(args.workers)],
        stderr=subprocess.PIPE, text=True)
    (out / "grade.stderr").write_text(run.stderr)
    graded = {}
    results = out / "graded" / "results.jsonl"
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            graded[(r["instance_id"], r["arm"])] = r
    summary_file = out / "graded" / "summary.json"
    broken = {}
    if summary_file.exists():
        for b in json.loads(summary_file.read_text()).get("broken", []):
            broken[b.get("instance_id")] = b.get("reason", "")
    same = differ = 0
    for (iid, model), resolves in sorted(expected.items()):
        r = graded.get((iid, model))
        if r is None:
            why = broken.get(iid, "not graded (see grade.stderr)")
            print(f"DIFFERS {iid} {model}: expected {resolves}, not graded: {why[:300]}")
            differ += 1
        elif r.get("resolved") != resolves:
            print(f"DIFFERS {iid} {model}: expected {resolves}, got {r.get('resolved')} "
                  f"({r.get('grade_problem') or r.get('error') or ''})"[:600])
            differ += 1
        else:
            same += 1
    print(f"{same} of {same + differ} verdicts equal ({len(records)} instances, "
          f"{len(broken)} broken); critic exited {run.returncode}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
