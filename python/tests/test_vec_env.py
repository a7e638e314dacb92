"""foxhunt.VectorEnv against the C environment, step by step, bit for bit.

The reference is tests/drivers/vec_env_driver (trace): it builds the market from the same
configuration and steps fh_vec_env (env.h) directly, not through the C API the package
calls, with the same random actions. Observations, final observations, rewards,
terminations and truncations must be equal to the bit, and the finished episodes' logs
(slot, length, return, final equity) equal in order. Cases cover truncations at the
horizon and terminations by ruin (ruin 0.98: equity below 98% of its start ends the
episode), on the training and test splits.
"""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
import foxhunt  # noqa: E402
import foxhunt.env  # noqa: E402
from conftest import SMALL, run  # noqa: E402

N_STATE = foxhunt.STATE_DIM
A = foxhunt.N_ACTIONS  # the first action outside [0, A)

CASES = [
    # (episodes, seed, split, steps, settings)
    (7, 11, "train", 200, {"horizon": 30}),
    (5, 3, "test", 150, {"horizon": 64, "ruin": 0.98}),
    (1, 0, "validation", 120, {"horizon": 40, "half_spread": 0.002}),
]


def read_trace(path, n: int, steps: int):
    """The driver's output: first obs, per step (obs, final, rewards, term, trunc), logs."""
    data = path.read_bytes()
    at = 0

    def take(dtype, count):
        nonlocal at
        a = np.frombuffer(data, dtype=dtype, count=count, offset=at)
        at += a.nbytes
        return a

    first = take(np.float32, n * N_STATE).reshape(n, N_STATE)
    per_step = []
    for _ in range(steps):
        obs = take(np.float32, n * N_STATE).reshape(n, N_STATE)
        final = take(np.float32, n * N_STATE).reshape(n, N_STATE)
        rewards = take(np.float32, n)
        term = take(np.uint8, n).astype(bool)
        trunc = take(np.uint8, n).astype(bool)
        per_step.append((obs, final, rewards, term, trunc))
    count = int(take(np.int64, 1)[0])
    logs = []
    for _ in range(count):
        slot, length = take(np.int32, 2)
        ret, equity = take(np.float64, 2)
        logs.append((int(slot), int(length), float(ret), float(equity)))
    assert at == len(data), "trace file longer than expected"
    return first, per_step, logs


def first_mismatch(a: np.ndarray, b: np.ndarray) -> str:
    """Where two arrays of one dtype first differ bitwise, for the failure message."""
    ua = a.reshape(a.shape or (1,)).view(np.uint8).reshape(*(a.shape or (1,)), a.itemsize)
    ub = b.reshape(b.shape or (1,)).view(np.uint8).reshape(*(b.shape or (1,)), b.itemsize)
    idx = tuple(int(k) for k in np.argwhere((ua != ub).any(axis=-1))[0])
    return f"at index {idx}: python {a[idx]!r} vs C {b[idx]!r}"


def assert_bits(python: np.ndarray, c: np.ndarray, what: str) -> None:
    assert python.dtype == c.dtype and python.shape == c.shape, \
        f"{what}: {python.dtype}{python.shape} vs C {c.dtype}{c.shape}"
    if python.tobytes() != c.tobytes():
        pytest.fail(f"{what} differs {first_mismatch(python, c)}")


@pytest.mark.parametrize("n,seed,split,steps,settings", CASES)
def test_matches_c_env_step_by_step(tmp_path, driver_bin, n, seed, split, steps, settings):
    rng = np.random.default_rng(1000 + seed)
    actions = rng.integers(0, foxhunt.N_ACTIONS, size=(steps, n), dtype=np.int32)
    (tmp_path / "actions.bin").write_bytes(actions.tobytes())
    all_settings = {**SMALL, **settings}
    run([driver_bin, "trace", tmp_path / "trace.bin", tmp_path / "actions.bin", n, seed, split,
         *[f"{k}={v}" for k, v in all_settings.items()]])
    first, per_step, c_logs = read_trace(tmp_path / "trace.bin", n, steps)

    env = foxhunt.VectorEnv(n, split=split, seed=seed, **all_settings)
    obs, info = env.reset(seed=seed)
    assert info == {}
    assert_bits(obs, first, "reset observation")
    py_logs = []
    n_term = n_trunc = 0
    for t in range(steps):
        obs, rewards, term, trunc, info = env.step(actions[t])
        c_obs, c_final, c_rewards, c_term, c_trunc = per_step[t]
        assert_bits(obs, c_obs, f"step {t}: observation")
        assert_bits(rewards, c_rewards, f"step {t}: reward")
        assert_bits(term, c_term, f"step {t}: termination")
        assert_bits(trunc, c_trunc, f"step {t}: truncation")
        done = term | trunc
        n_term += int(term.sum())
        n_trunc += int(trunc.sum())
        if done.any():
            assert np.array_equal(info["_final_obs"], done)
            assert np.array_equal(info["_final_info"], done)
            for i in np.flatnonzero(done):
                assert_bits(info["final_obs"][i], c_final[i], f"step {t} env {i}: final obs")
                fi = info["final_info"]
                py_logs.append((int(i), int(fi["length"][i]), float(fi["episode_return"][i]),
                                float(fi["final_equity"][i])))
            assert all(info["final_obs"][i] is None for i in np.flatnonzero(~done))
        else:
            assert info == {}
    assert py_logs == c_logs, "finished episodes' logs differ from the C env's"
    assert n_trunc > 0, "the case should truncate some episodes"
    if settings.get("ruin"):
        assert n_term > 0, "the ruin case should terminate some episodes"
    env.close()


def test_episode_log_layout_matches_the_library():
    assert foxhunt.env.EPISODE_LOG_DTYPE.itemsize == _lib_episode_log_size() == 80
    assert foxhunt.env.EPISODE_LOG_DTYPE.fields["episode_return"][1] == 40


def _lib_episode_log_size() -> int:
    from foxhunt._lib import lib
    return int(lib().fh_api_episode_log_size())


def test_reset_semantics():
    env = foxhunt.VectorEnv(4, seed=9, **SMALL, horizon=16)
    fresh, _ = env.reset()                # the constructor's episodes
    again, _ = env.reset(seed=9)          # re-seeded as a new env of seed 9
    assert fresh.tobytes() == again.tobytes()
    other, _ = env.reset(seed=10)
    assert other.tobytes() != fresh.tobytes()
    # without a seed: every slot resets from its stream as it stands (new start bars),
    # deterministically given the history
    a1, _ = env.reset(seed=9)
    b1, _ = env.reset()
    a2, _ = env.reset(seed=9)
    b2, _ = env.reset()
    assert a1.tobytes() == a2.tobytes() and b1.tobytes() == b2.tobytes()
    assert b1.tobytes() != a1.tobytes()
    env.close()


def test_bad_actions_are_refused_and_nothing_steps():
    env = foxhunt.VectorEnv(3, seed=1, **SMALL)
    obs0, _ = env.reset(seed=1)
    with pytest.raises(foxhunt.InputError, match=rf"action\[1\] = {A} is outside \[0, {A}\)"):
        env.step(np.array([0, A, 2]))
    with pytest.raises(foxhunt.InputError, match="shape"):
        env.step(np.array([0, 1]))
    with pytest.raises(foxhunt.InputError, match="dtype"):
        env.step(np.array([0.5, 1.0, 2.0]))
    # the refused steps moved nothing: the first step equals a fresh env's
    ref = foxhunt.VectorEnv(3, seed=1, **SMALL)
    ref.reset(seed=1)
    a = np.array([4, 40, 22])
    assert env.step(a)[0].tobytes() == ref.step(a)[0].tobytes()
    env.close()
    ref.close()


def test_actions_of_any_dtype_are_checked_not_wrapped():
    """Issue 32: int64 2**32 + 3 ran action 3 (a cast to int32 keeps the low bits). Every
    integer dtype is range-checked before the cast, the error names the index and the
    value, floats and bools are refused, and a refused step moves nothing."""
    env = foxhunt.VectorEnv(3, seed=1, **SMALL)
    env.reset(seed=1)
    bad = [
        (np.array([0, 2**32 + 3, 2], np.int64), rf"action\[1\] = 4294967299 is outside \[0, {A}\)"),
        (np.array([0, 1, -1], np.int64), r"action\[2\] = -1 is outside"),
        (np.array([2**63, 1, 2], np.uint64), r"action\[0\] = 9223372036854775808 is outside"),
        (np.array([0, 1, 2**8 - 1], np.uint8), r"action\[2\] = 255 is outside"),
        (np.array([0, 1, -3], np.int8), r"action\[2\] = -3 is outside"),
        ([0, 2**32 + 3, 2], r"action\[1\] = 4294967299 is outside"),
        ([0, 1, 2**70], r"action\[2\] = 1180591620717411303424 \(int"),
        (np.array([0.0, 3.5, 2.0]), r"action\[1\] = 3.5 \(float, dtype float64\); actions are "
                                    rf"integers in \[0, {A}\)"),
        (np.array([0.0, 3.0, 2.0]), r"action\[0\] = 0.0 \(float"),
        (np.array([0, np.nan, 2]), r"action\[1\] = nan"),
        (np.array([True, False, True]), r"action\[0\] = True \(bool"),
        (np.array(["0", "1", "2"]), r"action\[0\] = '0' \(str"),
    ]
    for actions, message in bad:
        with pytest.raises(foxhunt.InputError, match=message):
            env.step(actions)
    # every integer dtype in range steps as int32 does; nothing above moved the episodes
    ref = foxhunt.VectorEnv(3, seed=1, **SMALL)
    ref.reset(seed=1)
    a = np.array([4, 40, 22])
    for dtype in (np.int64, np.uint64, np.uint8, np.int16, ">i8", object):
        assert env.step(a.astype(dtype))[0].tobytes() == ref.step(a.astype(np.int32))[0].tobytes()
    env.close()
    ref.close()


def test_curiosity_params_must_be_finite():
    """Issue 32: NaN curiosity params were taken and made every reward NaN. The C API
    refuses a NaN or infinity naming the element and its tensor, and keeps the params it
    had; a float64 beyond float32's range is refused before the cast makes it infinite."""
    ck_params = np.random.default_rng(3).normal(0, 0.1, 4384).astype(np.float32)
    env = foxhunt.VectorEnv(2, seed=4, **SMALL, cur_coef=0.5)
    ref = foxhunt.VectorEnv(2, seed=4, **SMALL, cur_coef=0.5, curiosity=ck_params)
    env.set_curiosity(ck_params)
    # the layout: fc1.weight (64, 35) at 0, fc1.bias at 2240, fc2.weight (32, 64) at 2304,
    # fc2.bias at 4352
    for i, v, where in [(0, np.nan, r"fc1.weight\[0, 0\]"), (2241, np.nan, r"fc1.bias\[1\]"),
                        (2304 + 70, np.inf, r"fc2.weight\[1, 6\]"),
                        (4383, -np.inf, r"fc2.bias\[31\]")]:
        p = ck_params.copy()
        p[i] = v
        with pytest.raises(foxhunt.InputError,
                           match=rf"curiosity params: element {i} \({where}\) is {v}; every "
                                 "param must be finite"):
            env.set_curiosity(p)
    with pytest.raises(foxhunt.InputError, match=r"element 7 = 1e\+39 is beyond float32's range"):
        env.set_curiosity(np.where(np.arange(4384) == 7, 1e39, 0.0))
    with pytest.raises(foxhunt.InputError, match="curiosity params"):
        foxhunt.VectorEnv(2, seed=4, **SMALL, curiosity=np.full(4384, np.nan, np.float32))
    # the refused calls left the params set before: rewards equal an env given only those
    a = np.array([3, 30])
    for _ in range(5):
        got, want = env.step(a), ref.step(a)
        assert got[1].tobytes() == want[1].tobytes() and np.isfinite(got[1]).all()
    env.close()
    ref.close()


def test_bad_arguments_raise_with_the_reason():
    with pytest.raises(foxhunt.InputError, match="num_envs"):
        foxhunt.VectorEnv(0, **SMALL)
    # issue 32: ctypes keeps an int's low bits: 2**32 + 1 episodes made a 1-slot env
    with pytest.raises(foxhunt.InputError, match=r"num_envs = 4294967297 is outside \[1, "):
        foxhunt.VectorEnv(2**32 + 1, **SMALL)
    with pytest.raises(foxhunt.InputError, match=r"num_envs = 2.0 \(float\)"):
        foxhunt.VectorEnv(2.0, **SMALL)
    with pytest.raises(foxhunt.InputError, match=r"seed = -1 is outside \[0, "):
        foxhunt.VectorEnv(2, seed=-1, **SMALL)
    with pytest.raises(foxhunt.InputError, match=r"split 'train\\x00x' holds a NUL"):
        foxhunt.VectorEnv(2, split="train\0x", **SMALL)
    with pytest.raises(foxhunt.InputError, match="split"):
        foxhunt.VectorEnv(2, split="holdout", **SMALL)
    with pytest.raises(foxhunt.InputError, match="horizon"):
        foxhunt.VectorEnv(2, horizon=0, **SMALL)
    with pytest.raises(foxhunt.InputError, match="unknown configuration key"):
        foxhunt.VectorEnv(2, horizonn=5, **SMALL)
    with pytest.raises(foxhunt.InputError, match="seed"):
        foxhunt.VectorEnv(2, **SMALL).reset(seed=[1, 2])
    env = foxhunt.VectorEnv(2, **SMALL)
    with pytest.raises(foxhunt.InputError, match="curiosity params: 3 floats"):
        env.set_curiosity(np.zeros(3, np.float32))
    env.close()
    with pytest.raises(foxhunt.FoxhuntError, match="closed"):
        env.step(np.zeros(2, np.int32))


def test_threads_change_nothing_but_the_team():
    """threads= (issue 36): 1 by default; 2 and 0 (OpenMP's default) step the same
    episodes bit for bit; bad counts refused."""
    n, steps = 33, 120
    acts = np.random.default_rng(9).integers(0, A, (steps, n), dtype=np.int32)
    runs = {}
    for threads in (1, 2, 0):
        env = foxhunt.VectorEnv(n, seed=5, threads=threads, **SMALL, horizon=25)
        assert env.threads == threads
        seq = [env.reset(seed=5)[0]]
        for a in acts:
            obs, r, te, tr, _ = env.step(a)
            seq += [obs, r, te, tr]
        runs[threads] = seq
        env.close()
    for threads in (2, 0):
        for k, (x, y) in enumerate(zip(runs[threads], runs[1])):
            assert_bits(x, y, f"threads {threads}, output {k}")
    env = foxhunt.VectorEnv(2, **SMALL)
    assert env.threads == 1
    env.threads = 3
    assert env.threads == 3
    env.reset(seed=2)  # a re-seed keeps the count
    assert env.threads == 3
    for bad in (-1, 1025, 1.5, True):
        with pytest.raises(foxhunt.InputError, match="threads"):
            env.threads = bad
        with pytest.raises(foxhunt.InputError, match="threads"):
            foxhunt.VectorEnv(2, threads=bad, **SMALL)
    env.close()


THREAD_TICKS = """
import os, threading, time, numpy as np, foxhunt
main = threading.get_native_id()
def others():  # CPU ticks (utime + stime) of every thread but this one
    total = 0
    for t in os.listdir("/proc/self/task"):
        if int(t) != main:
            with open(f"/proc/self/task/{t}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total
env = foxhunt.VectorEnv(256, seed=1, synthetic_bars=3000)
env.reset(seed=1)
a = np.zeros(256, np.int32)
def run(seconds):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.step(a)
time.sleep(0.2)  # the market's feature loop's workers go to sleep
t0 = others()
run(0.5)
t1 = others()
env.threads = 2
run(0.5)
print(t1 - t0, others() - t1)
"""


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_one_thread_wakes_no_team():
    """The default steps on the caller's thread alone (before issue 36 every step woke a
    team of every core, OMP_NUM_THREADS unset), and threads=2 puts a worker to work:
    the CPU time of every other thread of a fresh process, from /proc/self/task, over
    0.5 s of steps each way."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    p = subprocess.run([sys.executable, "-c", THREAD_TICKS], capture_output=True, text=True,
                       env=env, check=True)
    one, two = map(int, p.stdout.split())
    assert one <= 1, f"threads=1: other threads ran {one} ticks"
    assert two >= 3, f"threads=2: the worker ran {two} ticks"
