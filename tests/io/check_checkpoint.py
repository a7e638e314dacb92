"""check_checkpoint.py — loads a checkpoint written by test_checkpoint_python with the
`safetensors` package (numpy backend) and checks every key, dtype, shape and value of
the fixture in tests/io/ckpt_fixture.h. Exit 0 on success, 1 on a mismatch, 77 when the
package is missing.

check_checkpoint.py --actor-only ACTOR FULL: ACTOR (`foxhunt export --actor` of FULL)
holds exactly the actor's six tensors and norm.mean, norm.std, each dtype, shape and bit
equal to FULL's; its metadata says kind "actor", FULL's format, config and data.*, and
export.iteration = FULL's run.iteration (docs/CHECKPOINTS.md)."""
import json
import sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as e:  # pragma: no cover
    print(f"SKIP: python safetensors/numpy not importable: {e}")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def finish(n):
    for f in failures:
        print("FAIL:", f)
    print(f"{n} tensors checked, {len(failures)} failures")
    sys.exit(1 if failures else 0)


def check_actor_only(actor_path, full_path):
    a, full = load_file(actor_path), load_file(full_path)
    with safe_open(actor_path, framework="numpy") as f:
        am = f.metadata()
    with safe_open(full_path, framework="numpy") as f:
        fm = f.metadata()
    shapes = {"policy_layer_0.weight": (128, 54), "policy_layer_0.bias": (128,),
              "policy_layer_1.weight": (64, 128), "policy_layer_1.bias": (64,),
              "policy_output.weight": (45, 64), "policy_output.bias": (45,),
              "norm.mean": (51,), "norm.std": (51,)}
    check(set(a) == set(shapes), f"keys {sorted(set(a) ^ set(shapes))} differ from the actor-only layout")
    for key, shape in shapes.items():
        if key not in a:
            continue
        check(a[key].dtype == np.float32 and a[key].shape == shape, f"{key}: {a[key].dtype} {a[key].shape}")
        check(key in full and a[key].tobytes() == full[key].tobytes(), f"{key} is not bit-equal to the full file's")
    check(am.get("kind") == "actor" and "kind" not in fm, f"kind {am.get('kind')!r}, full {fm.get('kind')!r}")
    for key in ("format", "format_version", "config", "data.source", "data.bars", "data.first_time",
                "data.last_time", "data.hash"):
        check(am.get(key) == fm.get(key) and key in am, f"metadata {key}: {am.get(key)!r} != {fm.get(key)!r}")
    json.loads(am["config"])
    check(am.get("export.iteration") == str(int(full["run.iteration"][0])),
          f"export.iteration {am.get('export.iteration')!r}")
    finish(len(a))


if len(sys.argv) == 4 and sys.argv[1] == "--actor-only":
    check_actor_only(sys.argv[2], sys.argv[3])

path = sys.argv[1]
t = load_file(path)


nets = [
    ("actor", [("policy_layer_0", 128, 54), ("policy_layer_1", 64, 128), ("policy_output", 45, 64)]),
    ("critic", [("value_layer_0", 512, 54), ("value_layer_1", 384, 512), ("value_layer_2", 256, 384),
                ("value_layer_3", 128, 256), ("value_layer_4", 64, 128), ("value_output", 1, 64)]),
    ("curiosity", [("fc1", 64, 35), ("fc2", 32, 64)]),
]
expected_keys = set()
for n, (net, layers) in enumerate(nets):
    for b, prefix in enumerate(["", "adam.m.", "adam.v."]):
        flat = []
        for name, o, i in layers:
            for suffix, shape in ((".weight", (o, i)), (".bias", (o,))):
                key = prefix + name + suffix
                expected_keys.add(key)
                check(key in t, f"missing {key}")
                if key in t:
                    check(t[key].dtype == np.float32, f"{key} dtype {t[key].dtype}")
                    check(t[key].shape == shape, f"{key} shape {t[key].shape} != {shape}")
                    flat.append(t[key].reshape(-1))
        if flat:
            got = np.concatenate(flat)
            k = np.arange(got.size, dtype=np.float64)
            want = ((k % 1000) * 0.25 - 100.0 + n * 1000.0 + b * 0.125).astype(np.float32)
            check(np.array_equal(got, want), f"{net} buffer {b} values differ")
    key = f"adam.step.{net}"
    expected_keys.add(key)
    check(key in t and t[key].dtype == np.int64 and t[key].shape == (1,) and t[key][0] == 1000 + n,
          f"{key}")

for key, want in (("norm.mean", np.arange(51, dtype=np.float32) * 0.5),
                  ("norm.std", 1.0 + np.arange(51, dtype=np.float32))):
    expected_keys.add(key)
    check(key in t and t[key].dtype == np.float32 and np.array_equal(t[key], want), key)
expected_keys |= {"run.seed", "run.iteration", "rng.episodes", "ppo.lr_frac"}
check(t["run.seed"].dtype == np.uint64 and int(t["run.seed"][0]) == 0xFEDCBA9876543210, "run.seed")
check(t["run.iteration"].dtype == np.int64 and int(t["run.iteration"][0]) == 42, "run.iteration")
rng = t["rng.episodes"]
want_rng = [(0x9E3779B97F4A7C15 * (i + 1)) & 0xFFFFFFFFFFFFFFFF for i in range(256)]
check(rng.dtype == np.uint64 and rng.shape == (128, 2) and [int(v) for v in rng.reshape(-1)] == want_rng,
      "rng.episodes")
check(t["ppo.lr_frac"].dtype == np.float64 and list(t["ppo.lr_frac"]) == [0.75, 1.0 / 3.0], "ppo.lr_frac")
check(set(t.keys()) == expected_keys, f"unexpected keys {sorted(set(t.keys()) ^ expected_keys)}")

with safe_open(path, framework="numpy") as f:
    meta = f.metadata()
check(meta.get("format") == "foxhunt.checkpoint" and meta.get("format_version") == "1", f"metadata {meta}")
cfg = json.loads(meta.get("config", "null"))
check(cfg == {"algo": "ppo", "episodes": 128, "lr": 0.0003, "note": 'q"uote'}, f"config {cfg}")

finish(len(t))
