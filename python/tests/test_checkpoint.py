"""Checkpoints between C and Python: foxhunt.load_checkpoint / Checkpoint.save.

- C -> Python -> C: a checkpoint `foxhunt train` wrote, loaded and saved unchanged, is
  the same file byte for byte; every array Python holds equals the file's bytes as an
  independent reader (safetensors_ref.py) sees them.
- An edited checkpoint (random noise on the actor) is written with exactly those bits,
  every other tensor unchanged, and `foxhunt eval` and `foxhunt train --resume` accept
  it; resuming the rewritten unchanged file gives the same networks, bit for bit, as
  resuming the original.
- Actor-only checkpoints (`foxhunt export --actor`) round-trip too.
- A bad save (NaN, wrong shape, part of a network, a bad kind, Adam state in an
  actor-only file) is refused, naming the fault, and leaves the target untouched.
- Issue 32: a NUL character in a tensor name, a metadata key or value or a path is
  refused on writing (the C strings would end at it: "a\\0b" was written as "a"), and a
  file whose header holds one (\\u0000) is refused on reading.
"""

from __future__ import annotations

import numpy as np
import pytest

import foxhunt
import foxhunt.nets
from conftest import run
from safetensors_ref import parse, write


def test_round_trip_is_byte_identical(checkpoint, tmp_path):
    ck = foxhunt.load_checkpoint(checkpoint)
    assert not ck.actor_only and ck.iteration == 2
    assert ck.config["run"]["episodes"] == 8
    ref, ref_meta, _ = parse(checkpoint)
    assert set(ck.tensors) == set(ref) and ck.metadata == ref_meta
    for k, v in ref.items():
        assert ck.tensors[k].dtype == v.dtype and ck.tensors[k].shape == v.shape, k
        assert ck.tensors[k].tobytes() == v.tobytes(), f"{k}: bytes differ from the file's"
    out = tmp_path / "rt.safetensors"
    ck.save(out)
    assert out.read_bytes() == checkpoint.read_bytes()


def test_edited_checkpoint_is_read_by_eval_and_resume(checkpoint, tmp_path, foxhunt_bin):
    ck = foxhunt.load_checkpoint(checkpoint)
    rng = np.random.default_rng(21)
    edited = ck.copy()
    for key in ("policy_layer_0.weight", "policy_output.bias"):
        edited.tensors[key] = (edited.tensors[key] +
                               rng.normal(0, 0.01, edited.tensors[key].shape)).astype(np.float32)
    path = tmp_path / "edited.safetensors"
    edited.save(path)
    got, meta, _ = parse(path)
    assert meta == ck.metadata
    for k in ck.tensors:
        want = edited.tensors[k]
        assert got[k].tobytes() == want.tobytes(), f"{k} not written as given"
    assert got["policy_layer_0.weight"].tobytes() != ck.tensors["policy_layer_0.weight"].tobytes()

    run([foxhunt_bin, "eval", "--checkpoint", path, "--json", tmp_path / "eval.json"])
    run([foxhunt_bin, "train", "--resume", path, "--iterations", "3", "--threads", "1",
         "--out", tmp_path / "resumed_edited"])
    assert foxhunt.load_checkpoint(tmp_path / "resumed_edited" / "final.safetensors").iteration == 3


def test_resume_of_the_rewritten_file_is_bit_identical(checkpoint, tmp_path, foxhunt_bin):
    rewritten = tmp_path / "rewritten.safetensors"
    foxhunt.load_checkpoint(checkpoint).save(rewritten)
    finals = []
    for name, src in (("a", checkpoint), ("b", rewritten)):
        run([foxhunt_bin, "train", "--resume", src, "--iterations", "3", "--threads", "1",
             "--out", tmp_path / name])
        finals.append(parse(tmp_path / name / "final.safetensors")[0])
    a, b = finals
    assert set(a) == set(b)
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), f"{k} differs after resuming the rewritten file"


def test_actor_only_round_trip_and_eval(checkpoint, tmp_path, foxhunt_bin):
    actor = tmp_path / "actor.safetensors"
    run([foxhunt_bin, "export", "--checkpoint", checkpoint, "--actor", "--out", actor])
    ck = foxhunt.load_checkpoint(actor)
    assert ck.actor_only and set(ck.tensors) == {
        "policy_layer_0.weight", "policy_layer_0.bias", "policy_layer_1.weight",
        "policy_layer_1.bias", "policy_output.weight", "policy_output.bias", "norm.mean",
        "norm.std"}
    out = tmp_path / "actor2.safetensors"
    ck.save(out)
    assert out.read_bytes() == actor.read_bytes()
    run([foxhunt_bin, "eval", "--checkpoint", out])
    # Adam state in an actor-only file is refused
    bad = ck.copy()
    bad.tensors["adam.m.policy_output.bias"] = np.zeros(foxhunt.N_ACTIONS, np.float32)
    with pytest.raises(foxhunt.InputError, match="actor-only"):
        bad.save(tmp_path / "bad.safetensors")


def test_a_fresh_optimizer_is_written_as_zeros_and_resumes(checkpoint, tmp_path, foxhunt_bin):
    ck = foxhunt.load_checkpoint(checkpoint)
    for k in [k for k in ck.tensors if k.startswith("adam.") and "policy" in k] + ["adam.step.actor"]:
        del ck.tensors[k]
    path = tmp_path / "fresh_adam.safetensors"
    ck.save(path)
    got, _, _ = parse(path)
    assert not got["adam.m.policy_layer_0.weight"].any() and got["adam.step.actor"][0] == 0
    assert got["adam.step.critic"][0] > 0
    run([foxhunt_bin, "train", "--resume", path, "--iterations", "3", "--threads", "1",
         "--out", tmp_path / "r"])


def test_a_checkpoint_made_in_python_is_evaluated(tmp_path, foxhunt_bin):
    """An actor trained elsewhere (random weights here), with a market's normalisation
    and configuration, saved as an actor-only checkpoint: what examples/python/
    ppo_cleanrl.py writes. `foxhunt eval` and foxhunt.eval read it alike."""
    market = foxhunt.Market(synthetic_bars=3000)
    rng = np.random.default_rng(2)
    tensors = {t.key: rng.normal(0, 0.1, t.shape).astype(np.float32)
               for t in foxhunt.nets.net_tensors("actor")}
    tensors["norm.mean"], tensors["norm.std"] = market.norm
    path = tmp_path / "scratch.safetensors"
    foxhunt.Checkpoint(tensors, {"kind": "actor", "config": market.config.to_json()}).save(path)
    run([foxhunt_bin, "eval", "--checkpoint", path, "--json", tmp_path / "e.json"])
    res = foxhunt.eval(path)
    assert res.policies[0] == "greedy" and len(res["time"]) == 480
    missing = foxhunt.Checkpoint(dict(tensors), {"kind": "actor"})
    with pytest.raises(foxhunt.FoxhuntError, match="config"):
        missing.save(tmp_path / "no_config.safetensors")


def test_bad_saves_are_refused_and_write_nothing(checkpoint, tmp_path):
    target = tmp_path / "t.safetensors"
    target.write_bytes(b"previous")
    ck = foxhunt.load_checkpoint(checkpoint)

    nan = ck.copy()
    nan.tensors["value_layer_2.bias"][5] = np.nan
    with pytest.raises(foxhunt.FoxhuntError, match=r'"value_layer_2.bias": element 5 is nan'):
        nan.save(target)
    shape = ck.copy()
    shape.tensors["policy_layer_0.weight"] = shape.tensors["policy_layer_0.weight"].T.copy()
    with pytest.raises(foxhunt.InputError,
                       match=r'"policy_layer_0.weight" is F32 \[54, 128\]; expected F32 \[128, 54\]'):
        shape.save(target)
    partial = ck.copy()
    del partial.tensors["value_output.bias"]
    with pytest.raises(foxhunt.InputError, match='missing tensor "value_output.bias"'):
        partial.save(target)
    kind = ck.copy()
    kind.metadata["kind"] = "critic"
    with pytest.raises(foxhunt.InputError, match='kind "critic"'):
        kind.save(target)
    fmt = ck.copy()
    fmt.metadata["format"] = "foxhunt.collection"
    with pytest.raises(foxhunt.InputError, match="format"):
        fmt.save(target)
    dtype = ck.copy()
    dtype.tensors["norm.mean"] = dtype.tensors["norm.mean"].astype(np.float16)
    with pytest.raises(foxhunt.InputError, match="float16"):
        dtype.save(target)
    extras = ck.copy()
    for i in range(16):
        extras.tensors[f"extra.{i}"] = np.zeros(1, np.float32)
    with pytest.raises(foxhunt.InputError, match="at most 16 extras"):
        extras.save(target)
    assert target.read_bytes() == b"previous"


def test_load_refuses_what_foxhunt_refuses(checkpoint, tmp_path):
    with pytest.raises(foxhunt.InputError, match="missing.safetensors"):
        foxhunt.load_checkpoint(tmp_path / "missing.safetensors")
    foxhunt.write_safetensors(tmp_path / "plain.safetensors", {"x": np.zeros(3, np.float32)},
                              {"format": "something"})
    with pytest.raises(foxhunt.InputError, match="not a foxhunt checkpoint"):
        foxhunt.load_checkpoint(tmp_path / "plain.safetensors")
    data = bytearray(checkpoint.read_bytes())
    (tmp_path / "cut.safetensors").write_bytes(bytes(data[:len(data) // 2]))
    with pytest.raises(foxhunt.InputError, match="cut.safetensors"):
        foxhunt.load_checkpoint(tmp_path / "cut.safetensors")


def test_generic_safetensors_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    tensors = {
        "f32": rng.normal(size=(3, 4)).astype(np.float32),
        "f64": rng.normal(size=(2,)),
        "i32": rng.integers(-9, 9, size=(2, 2, 2), dtype=np.int32),
        "i64": np.array([1 << 40, -3], np.int64),
        "u64": np.array([(1 << 64) - 1], np.uint64),
        "u8": rng.integers(0, 255, size=(5,), dtype=np.uint8),
        "big_endian": np.arange(4, dtype=">f4"),
        "scalar": np.float32(2.5),
    }
    path = tmp_path / "x.safetensors"
    foxhunt.write_safetensors(path, tensors, {"note": "ünïcode"})
    ref, meta, order = parse(path)
    assert order == list(tensors) and meta == {"note": "ünïcode"}
    got, got_meta = foxhunt.read_safetensors(path)
    for k, v in tensors.items():
        v = np.asarray(v)
        assert np.array_equal(ref[k], v) and ref[k].shape == v.shape, k
        assert np.array_equal(got[k], v) and got[k].dtype.kind == v.dtype.kind, k
    assert got_meta == meta


def test_a_nul_in_a_name_or_path_is_refused_not_cut(checkpoint, tmp_path):
    target = tmp_path / "t.safetensors"
    x = np.zeros(2, np.float32)
    for tensors, metadata, message in [
            ({"a\0b": x}, {}, r"tensor name 'a\\x00b' holds a NUL character at byte 1; .* "
                               r"would read 'a'"),
            ({"a": x}, {"k\0": "v"}, r"metadata key 'k\\x00' holds a NUL"),
            ({"a": x}, {"k": "v\0w"}, r"metadata 'k': value 'v\\x00w' holds a NUL")]:
        with pytest.raises(foxhunt.InputError, match=message):
            foxhunt.write_safetensors(target, tensors, metadata)
        assert not target.exists()
    with pytest.raises(foxhunt.InputError, match=r"path .* holds a NUL character"):
        foxhunt.write_safetensors(str(target) + "\0.bak", {"a": x})
    assert not target.exists()
    ck = foxhunt.load_checkpoint(checkpoint)
    ck.tensors["extra\0.x"] = x
    with pytest.raises(foxhunt.InputError, match=r"tensor name 'extra\\x00.x' holds a NUL"):
        ck.save(target)
    assert not target.exists()
    with pytest.raises(foxhunt.InputError, match=r"path .* holds a NUL character"):
        foxhunt.load_checkpoint(str(checkpoint) + "\0junk")
    # files holding one (written by another tool) are refused on reading, naming the file
    for name, tensors, metadata in [("name", {"a\0b": x}, {}),
                                    ("meta", {"a": x}, {"k": "v\0w"})]:
        path = tmp_path / f"{name}.safetensors"
        write(path, tensors, metadata)
        assert b"\\u0000" in path.read_bytes()
        with pytest.raises(foxhunt.InputError, match=rf"{name}.safetensors: the header holds a "
                                                     r"NUL character"):
            foxhunt.read_safetensors(path)
    # an escaped backslash before "u0000" is no NUL: that name reads back whole
    write(tmp_path / "ok.safetensors", {"a\\u0000b": x}, {})
    assert list(foxhunt.read_safetensors(tmp_path / "ok.safetensors")[0]) == ["a\\u0000b"]
