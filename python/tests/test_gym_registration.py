"""Gymnasium registration and wrappers (issue 36; foxhunt/registration.py, env.py).

- gymnasium.make("foxhunt/Trading-v0") gives foxhunt.Env and gymnasium.make_vec(...,
  num_envs=N) foxhunt.VectorEnv through its vector entry point, both with the keys
  given: their episodes equal those of the classes built directly, bit for bit; the
  "sync" vectorization builds N foxhunt.Env; the "foxhunt:" module prefix works.
- next-step autoreset (Gymnasium's default, which NormalizeObservation requires) against
  same-step, the independent side being the same-step env of the same seed: slot by
  slot, the same transitions, with one held step after each finished episode that
  returns the next episode's first observation, reward 0 and no flags; its info's
  episode_return equals RecordEpisodeStatistics' "r".
- FlattenObservation, DtypeObservation and NormalizeObservation (vector versions)
  compose on make_vec's env; their observations equal the wrappers' formulas applied to
  the bare env's (running mean and variance recomputed here in float64).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.vector import AutoresetMode  # noqa: E402
from gymnasium.wrappers import vector as vw  # noqa: E402

import foxhunt  # noqa: E402
from conftest import SMALL  # noqa: E402

KW = dict(SMALL, horizon=20)


def rollout(env, actions, seed=4):
    """Every step's (obs, rewards, terminations, truncations) of a vector env."""
    out = [env.reset(seed=seed)[0]]
    for a in actions:
        obs, r, te, tr, _ = env.step(a)
        out.append((obs, r, te, tr))
    return out


def test_registered_ids():
    assert foxhunt.ENV_ID == "foxhunt/Trading-v0" and foxhunt.ENV_ID in gym.registry
    spec = gym.spec(foxhunt.ENV_ID)
    assert spec.entry_point == "foxhunt.env:Env"
    assert spec.vector_entry_point == "foxhunt.env:VectorEnv"
    env = gym.make("foxhunt:foxhunt/Trading-v0", **KW)  # Gymnasium's module:id form
    assert isinstance(env.unwrapped, foxhunt.Env)
    env.close()


def test_make_and_make_vec_equal_the_classes():
    n, steps = 5, 60
    acts = np.random.default_rng(0).integers(0, foxhunt.N_ACTIONS, (steps, n), dtype=np.int32)
    made = gym.make_vec(foxhunt.ENV_ID, num_envs=n, seed=4, **KW)
    assert type(made) is foxhunt.VectorEnv and made.num_envs == n
    assert made.spec.id == foxhunt.ENV_ID
    direct = foxhunt.VectorEnv(n, seed=4, **KW)
    for a, b in zip(rollout(made, acts), rollout(direct, acts)):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
    # gymnasium.make: one episode, slot 0 of the same env
    one = gym.make(foxhunt.ENV_ID, seed=4, **KW)
    obs, _ = one.reset(seed=4)
    assert np.array_equal(obs, foxhunt.VectorEnv(1, seed=4, **KW).reset(seed=4)[0][0])
    for e in (made, direct, one):
        e.close()


def test_make_vec_sync_with_single_env_wrappers():
    env = gym.make_vec(foxhunt.ENV_ID, num_envs=3, vectorization_mode="sync",
                       wrappers=[gym.wrappers.NormalizeObservation], **KW)
    assert isinstance(env, gym.vector.SyncVectorEnv)
    obs, _ = env.reset(seed=1)
    for _ in range(45):  # past the horizon: every slot autoresets once
        obs, r, te, tr, _ = env.step(np.zeros(3, np.int64))
        assert obs.shape == (3, foxhunt.STATE_DIM) and np.isfinite(obs).all()
    env.close()


def test_next_step_autoreset_against_same_step():
    n, steps = 6, 150  # horizon 20: every slot finishes several episodes
    rng = np.random.default_rng(3)
    per_slot = rng.integers(0, foxhunt.N_ACTIONS, (n, steps), dtype=np.int32)
    same = foxhunt.VectorEnv(n, seed=7, **KW)
    nxt = gym.make_vec(foxhunt.ENV_ID, num_envs=n, seed=7, autoreset_mode="next_step", **KW)
    assert nxt.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    # the reference: each slot's transitions under same-step
    ref = [[] for _ in range(n)]  # (obs shown after the step, reward, term, trunc, next first obs)
    same.reset(seed=7)
    for t in range(steps):
        obs, r, te, tr, info = same.step(per_slot[:, t])
        for i in range(n):
            done = te[i] or tr[i]
            shown = info["final_obs"][i] if done else obs[i]
            ref[i].append((shown, r[i], te[i], tr[i], obs[i] if done else None))
    # next-step: a held slot takes no action from its stream
    got = [[] for _ in range(n)]
    k = np.zeros(n, int)
    held = np.zeros(n, bool)
    nxt.reset(seed=7)
    rec = vw.RecordEpisodeStatistics(nxt)  # wraps the same env: it steps through rec
    finished_returns, rec_returns = [], []
    for _ in range(steps):
        a = np.where(held, 0, per_slot[np.arange(n), np.minimum(k, steps - 1)]).astype(np.int32)
        obs, r, te, tr, info = rec.step(a)
        for i in range(n):
            if held[i]:  # the new episode's first observation, nothing else
                assert r[i] == 0 and not te[i] and not tr[i]
                first = ref[i][k[i] - 1][4]
                assert np.array_equal(obs[i], first), f"slot {i}: held step's obs"
            elif k[i] < steps:
                got[i].append((obs[i], r[i], te[i], tr[i]))
                k[i] += 1
        done = te | tr
        if done.any():
            finished_returns += info["episode_return"][done].tolist()
            rec_returns += info["episode"]["r"][done].tolist()
            assert np.array_equal(info["_episode_return"], done)
        held = done
    for i in range(n):
        assert len(got[i]) > 0
        for t, (g, want) in enumerate(zip(got[i], ref[i])):
            assert np.array_equal(g[0], want[0]), f"slot {i} step {t}: obs"
            assert g[1:] == want[1:4], f"slot {i} step {t}: {g[1:]} != {want[1:4]}"
    assert len(finished_returns) >= n
    np.testing.assert_allclose(rec_returns, finished_returns, rtol=1e-6, atol=1e-9)
    same.close()
    nxt.close()


def test_observation_wrappers_compose():
    n, steps = 4, 70
    acts = np.random.default_rng(5).integers(0, foxhunt.N_ACTIONS, (steps, n), dtype=np.int32)
    bare = gym.make_vec(foxhunt.ENV_ID, num_envs=n, seed=2, autoreset_mode="next_step", **KW)
    raw = rollout(bare, acts, seed=2)
    env = gym.make_vec(foxhunt.ENV_ID, num_envs=n, seed=2, autoreset_mode="next_step", **KW)
    with warnings.catch_warnings():
        # Box's own cast of the float32 bounds (FLT_MAX) against float64's range
        warnings.filterwarnings("ignore", "overflow encountered in cast", RuntimeWarning)
        env = vw.DtypeObservation(vw.FlattenObservation(env), np.float64)
    env = vw.NormalizeObservation(env, epsilon=1e-8)
    obs, _ = env.reset(seed=2)
    # reference: Welford-style running moments in float64 as Gymnasium defines them
    # (count starts at 1e-4, batch updates), applied to the bare env's observations
    mean, var, count = np.zeros(foxhunt.STATE_DIM), np.ones(foxhunt.STATE_DIM), 1e-4

    def update(x):
        nonlocal mean, var, count
        bm, bv, bc = x.mean(0), x.var(0), x.shape[0]
        delta, tot = bm - mean, count + bc
        m2 = var * count + bv * bc + delta ** 2 * count * bc / tot
        mean, var, count = mean + delta * bc / tot, m2 / tot, tot

    x0 = raw[0].astype(np.float64)
    update(x0)
    np.testing.assert_allclose(obs, (x0 - mean) / np.sqrt(var + 1e-8), rtol=1e-4, atol=1e-4)
    for t, a in enumerate(acts):
        obs, r, te, tr, _ = env.step(a)
        x = raw[t + 1][0].astype(np.float64)
        update(x)
        assert obs.shape == (n, foxhunt.STATE_DIM)
        np.testing.assert_allclose(obs, (x - mean) / np.sqrt(var + 1e-8), rtol=1e-4, atol=1e-4)
        assert np.array_equal(r, raw[t + 1][1])
    env.close()


def test_bad_autoreset_mode():
    with pytest.raises(foxhunt.InputError, match="NEXT_STEP"):
        foxhunt.VectorEnv(2, autoreset_mode="disabled", **KW)
    with pytest.raises(foxhunt.InputError, match="NEXT_STEP"):
        foxhunt.VectorEnv(2, autoreset_mode="sometimes", **KW)
