#!/usr/bin/env python3
"""fuzz_sweep_space.py — atheris (libFuzzer for Python) harness of `foxhunt sweep`'s
space file (python/foxhunt/sweep.py, issue 32): the C harnesses beside it cannot reach a
Python parser.

For any bytes as the space JSON (beside it a base INI, base.ini, and quickstart.ini so
that the shipped configs/sweep_*.json seeds reach the param checks), load_space either
raises SweepError with a one-line message naming the file, or returns a Space whose:

- params are each a known key (the keys given) and either a non-empty list of distinct
  choices (finite numbers, booleans, or strings the INI holds as they are) or a finite
  range low < high that Optuna accepts (its distributions built as the trial's are);
- trial INI (render_config of the base with each param's first choice or low) has the
  base's sections and, for each param, exactly one `key = value` line: nothing a space
  holds adds a line, a section or another key.

Any other exception is a finding (atheris prints it and the input). Usage:
    fuzz_sweep_space.py --seconds N --workdir DIR [libFuzzer flags]
Exit 77 (ctest: skipped) when atheris or optuna is missing.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

try:
    import atheris
except ImportError:
    print("SKIP: atheris is not installed (scripts/setup.sh installs it; or pip install "
          "atheris)")
    sys.exit(77)
try:
    import optuna
except ImportError:
    print("SKIP: optuna is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

with atheris.instrument_imports():
    from foxhunt import sweep

# the keys the checks know: those of the shipped space plus a string, a choice and a
# boolean setting (foxhunt train --help has them all; the sweep reads them from it)
KEYS = {"lr": "ppo", "ent_coef": "ppo", "gamma": "ppo", "gae_lambda": "ppo", "clip": "ppo",
        "epochs": "ppo", "minibatch": "ppo", "anneal_lr": "ppo", "episodes": "run",
        "steps": "run", "iterations": "run", "data": "run", "algo": "run",
        "reward_scale": "env", "horizon": "env"}
SPACE: Path
INI_LINE = re.compile(r"^(\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_]*\s*[=:].*|[#;].*|)$")


def check_space(space: "sweep.Space") -> None:
    assert space.params and space.seeds
    values = {}
    for p in space.params:
        assert p.name in KEYS and p.name not in sweep.SET_BY_SWEEP, p.name
        if p.choices is not None:
            assert p.choices and p.low is None
            for c in p.choices:
                if isinstance(c, str):
                    assert sweep.ini_text_problem(c) is None, c
                else:
                    assert isinstance(c, (bool, int, float)) and math.isfinite(c), c
            values[p.name] = p.choices[0]
            optuna.distributions.CategoricalDistribution(p.choices)
        else:
            assert math.isfinite(p.low) and math.isfinite(p.high) and p.low < p.high
            values[p.name] = p.low
            # the distribution Param.suggest asks for: Optuna must accept it
            p.suggest(optuna.trial.FixedTrial({p.name: p.low}))
    text = sweep.render_config(space.base_text, values, "fuzz", space.sections)
    lines = text.split("\n")
    base_sections = {l.strip() for l in space.base_text.split("\n")
                     if l.strip().startswith("[")}
    for line in lines:
        assert INI_LINE.match(line.strip()), line
        if line.startswith("["):
            assert line in base_sections or line.replace(" ", "") in base_sections, line
    for k, v in values.items():
        n = sum(1 for l in lines if re.match(rf"{k}\s*[=:]", l))
        assert n >= 1 and f"{k} = {sweep._format(v)}" in lines, (k, v)


def test_one_input(data: bytes) -> None:
    SPACE.write_bytes(data)
    try:
        space = sweep.load_space(SPACE, KEYS)
    except sweep.SweepError as e:
        msg = str(e)
        assert msg.startswith(str(SPACE)) and "\n" not in msg and "\r" not in msg, msg
        return
    check_space(space)


def main() -> int:
    global SPACE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--workdir", required=True, help="scratch folder (corpus, space file)")
    a, rest = ap.parse_known_args()
    work = Path(a.workdir)
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in sorted((REPO / "configs").glob("sweep_*.json")):
        shutil.copy(seed, corpus / seed.name)
    for name in ("quickstart.ini",):
        shutil.copy(REPO / "configs" / name, work / name)
    (work / "base.ini").write_text("[run]\nepisodes = 64\n[ppo]\nlr = 0.001\n")
    (corpus / "small.json").write_text(
        '{"base": "base.ini", "seeds": [1], "params": {"lr": {"low": 1e-4, "high": 1e-2, '
        '"log": true}, "algo": {"choices": ["ppo", "pqn"]}, "epochs": {"low": 1, "high": '
        '9, "step": 2}, "anneal_lr": {"choices": [true, false]}}}')
    SPACE = work / "space.json"
    args = [sys.argv[0], f"-max_total_time={a.seconds}", "-timeout=20",
            "-rss_limit_mb=2048", "-print_final_stats=1",
            f"-dict={REPO / 'tests' / 'fuzz' / 'dict' / 'sweep_space.dict'}"] + rest + [
            str(corpus)]
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
