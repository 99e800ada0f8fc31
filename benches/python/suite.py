"""The benchmark suite: every preset x Gymnasium env x seed of docs/results.toml.

    python benches/python/suite.py [--list] [--only TEXT] [--seeds 0 1 ...] [--no-tables]

Each `[[gymnasium]]` row of docs/results.toml names a preset, a Gymnasium
env id, the settings it runs with, a budget in env steps, how many seeds
(0, 1, ...), the published figure it stands beside, and the CSV file its
results are kept in (`data`). This trains every seed that file does not
hold yet, one after another, appending one row per run
(`mujoco_table.COLUMNS`: the final evaluation, wall seconds, machine,
matrix kernels, commit), then regenerates the tables that quote them
(docs/benchmarks.md and docs/python.md, through `SHOAL_BLESS=1 cargo test
--test docs_results`, which computes each median and range from the
CSV). A file's rows are the record: delete a row to run that seed again.

`--list` prints what is missing and trains nothing; `--only TEXT` keeps the
rows whose preset or env contains TEXT; `--seeds` runs those seeds only.
Two cores: run two suites with disjoint `--only` or `--seeds`, one per core.
Needs the package built from this checkout and the MuJoCo extra
(docs/python.md).
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import subprocess
import tomllib

import mujoco_table

ROOT = pathlib.Path(__file__).resolve().parents[2]


def benchmarks() -> list[dict]:
    """The `[[gymnasium]]` rows of docs/results.toml."""
    with (ROOT / "docs/results.toml").open("rb") as f:
        return tomllib.load(f).get("gymnasium", [])


def done_seeds(bench: dict) -> set[int]:
    """Seeds of `bench` its data file already holds."""
    path = ROOT / bench["data"]
    if not path.exists():
        return set()
    with path.open(newline="") as f:
        return {
            int(row["seed"])
            for row in csv.DictReader(f)
            if row["preset"] == bench["preset"]
            and row["env"] == bench["env"]
            and row.get("settings", "") == " ".join(bench.get("settings", []))
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the missing runs only")
    parser.add_argument("--only", help="rows whose preset or env contains this text")
    parser.add_argument("--seeds", type=int, nargs="+", help="these seeds only")
    parser.add_argument("--no-tables", action="store_true", help="do not regenerate the tables")
    args = parser.parse_args()

    missing = []
    for bench in benchmarks():
        if args.only and args.only not in bench["preset"] and args.only not in bench["env"]:
            continue
        seeds = args.seeds if args.seeds is not None else range(bench["seeds"])
        done = done_seeds(bench)
        missing += [(bench, seed) for seed in seeds if seed not in done]
    for bench, seed in missing:
        settings = "".join(f" {s}" for s in bench.get("settings", []))
        print(f"{bench['preset']} on {bench['env']}{settings}, seed {seed}: "
              f"{bench['budget']} env steps -> {bench['data']}")
    if args.list or not missing:
        return

    os.chdir(ROOT)
    for bench, seed in missing:
        row = mujoco_table.train_row(
            bench["preset"], bench["env"], bench["budget"], seed, bench.get("settings", [])
        )
        mujoco_table.append_row(ROOT / bench["data"], row)
        print(row, flush=True)
    if not args.no_tables:
        subprocess.run(
            ["cargo", "test", "--test", "docs_results", "generated_tables_are_the_data"],
            env={**os.environ, "SHOAL_BLESS": "1"},
            check=True,
        )


if __name__ == "__main__":
    main()
