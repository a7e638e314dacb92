"""foxhunt's environments against Gymnasium's API and its own checks.

- foxhunt.Env (one episode), made by gymnasium.make("foxhunt/Trading-v0"), passes
  gymnasium.utils.env_checker.check_env with every warning turned into an error, its
  render checks included (render_mode "ansi": one line of text, checked against the
  portfolio). Registration, make_vec, the wrappers and next-step autoreset:
  test_gym_registration.py.
- foxhunt.VectorEnv has no checker in Gymnasium 1.x; it gets the same checks applied
  to the batch: spaces hold what reset and step return, dtypes and shapes, seeded
  determinism of reset and step (gymnasium.utils.env_checker.data_equivalence on
  obs, rewards, flags and infos), fresh arrays on every call (data_shares_objects),
  the same-step autoreset metadata, and Gymnasium's own RecordEpisodeStatistics
  wrapper run on it, whose episode returns and lengths must equal the C env's logs.
- foxhunt.Env's episodes are the vector env's slot 0, in order.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env, data_equivalence  # noqa: E402
from gymnasium.utils.passive_env_checker import data_shares_objects  # noqa: E402

import foxhunt  # noqa: E402
from conftest import SMALL  # noqa: E402

ENV_KW = dict(SMALL, horizon=20)


def test_single_env_passes_gymnasium_check_env():
    # through gymnasium.make, so that the env has the spec the render checks remake it
    # from (check_env wants the unwrapped env: make adds Gymnasium's own checker)
    env = gym.make(foxhunt.ENV_ID, seed=3, **ENV_KW).unwrapped
    assert isinstance(env, foxhunt.Env) and env.spec is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)
    env.close()


def test_single_env_renders_ansi():
    env = foxhunt.Env(seed=3, render_mode="ansi", **ENV_KW)
    env.reset(seed=3)
    for a in (44, 44, 0):
        env.step(a)
    p = env._vec.portfolio()
    text = env.render()
    assert text == (f"step {p['step'][0]} bar {p['bar'][0]} equity {p['equity'][0]:.2f} "
                    f"exposure {p['exposure'][0]:+.2f}\n")
    assert int(p["step"][0]) == 3
    assert foxhunt.Env(seed=3, **ENV_KW).render() is None
    with pytest.raises(foxhunt.InputError, match="ansi"):
        foxhunt.Env(render_mode="human", **ENV_KW)


def test_vector_env_spaces_and_types():
    n = 6
    env = foxhunt.VectorEnv(n, seed=2, **ENV_KW)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    assert env.num_envs == n
    assert env.single_observation_space.shape == (foxhunt.STATE_DIM,)
    assert env.single_observation_space.dtype == np.float32
    assert env.single_action_space == gym.spaces.Discrete(foxhunt.N_ACTIONS)
    assert env.observation_space.shape == (n, foxhunt.STATE_DIM)
    assert env.action_space == gym.spaces.MultiDiscrete(np.full(n, foxhunt.N_ACTIONS))
    obs, info = env.reset(seed=2)
    assert isinstance(info, dict)
    assert obs in env.observation_space
    env.action_space.seed(7)
    for _ in range(60):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert obs in env.observation_space, "an observation left the observation space"
        assert r.shape == (n,) and r.dtype == np.float32 and np.isfinite(r).all()
        assert term.dtype == np.bool_ and trunc.dtype == np.bool_
        assert term.shape == trunc.shape == (n,)
        assert isinstance(info, dict)
    env.close()


def rollout(seed: int, steps: int, n: int = 5):
    env = foxhunt.VectorEnv(n, seed=seed, **ENV_KW)
    out = [env.reset(seed=seed)]
    env.action_space.seed(seed)
    for _ in range(steps):
        out.append(env.step(env.action_space.sample()))
    env.close()
    return out


def test_vector_env_is_deterministic_for_a_seed():
    a, b = rollout(4, 50), rollout(4, 50)
    assert data_equivalence(a, b, exact=True)
    c = rollout(5, 50)
    assert not data_equivalence(a, c, exact=True)


def test_vector_env_returns_fresh_data():
    env = foxhunt.VectorEnv(3, seed=1, **ENV_KW)
    prev = env.reset(seed=1)
    for _ in range(40):
        cur = env.step(env.action_space.sample())
        assert not data_shares_objects(prev, cur), "step reused an array it returned before"
        prev = cur
    env.close()


def test_record_episode_statistics_agrees_with_the_c_logs():
    n = 4
    env = gym.wrappers.vector.RecordEpisodeStatistics(foxhunt.VectorEnv(n, seed=8, **ENV_KW))
    env.reset(seed=8)
    env.action_space.seed(8)
    seen = 0
    for _ in range(100):
        _, _, term, trunc, info = env.step(env.action_space.sample())
        done = term | trunc
        if done.any():
            mask = info["_episode"]
            assert np.array_equal(mask, done)
            fi = info["final_info"]
            # the wrapper sums the float32 rewards in float64, as the C env does
            assert np.array_equal(info["episode"]["r"][mask], fi["episode_return"][mask])
            assert np.array_equal(info["episode"]["l"][mask], fi["length"][mask])
            seen += int(done.sum())
    assert seen >= n * 4, "100 steps at horizon 20 should finish every slot's episodes"
    env.close()


def test_single_env_follows_slot_zero_of_the_vector_env():
    single = foxhunt.Env(seed=6, **ENV_KW)
    vec = foxhunt.VectorEnv(1, seed=6, **ENV_KW)
    obs, _ = single.reset(seed=6)
    vobs, _ = vec.reset(seed=6)
    assert obs.tobytes() == vobs[0].tobytes()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(90):
        a = int(rng.integers(0, foxhunt.N_ACTIONS))
        obs, r, term, trunc, info = single.step(a)
        vobs, vr, vterm, vtrunc, vinfo = vec.step(np.array([a]))
        assert r == float(vr[0]) and term == vterm[0] and trunc == vtrunc[0]
        if term or trunc:
            episodes += 1
            assert obs.tobytes() == vinfo["final_obs"][0].tobytes()
            assert info["episode_return"] == vinfo["final_info"]["episode_return"][0]
            obs, _ = single.reset()
        assert obs.tobytes() == vobs[0].tobytes()
    assert episodes >= 3
    single.close()
    vec.close()


def test_single_env_refuses_what_is_not_an_action():
    """Issue 32: one action of any integer type is range-checked before it becomes int32
    (np.int64 2**32 + 3 is not action 3); bools, floats and arrays are refused, and a
    refused step moves nothing."""
    env = foxhunt.Env(seed=2, **ENV_KW)
    ref = foxhunt.Env(seed=2, **ENV_KW)
    env.reset(seed=2)
    ref.reset(seed=2)
    A = foxhunt.N_ACTIONS  # the first action outside [0, A)
    for action, message in [(np.int64(2**32 + 3), rf"action = 4294967299 is outside \[0, {A}\)"),
                            (np.uint64(2**64 - 1), r"action = 18446744073709551615 is outside"),
                            (-1, r"action = -1 is outside"), (A, rf"action = {A} is outside"),
                            (2**70, r"action = 1180591620717411303424 \(int"),
                            (True, r"action = True \(bool"), (3.0, r"action = 3.0 \(float"),
                            (np.array([3]), r"an action of shape \(1,\)")]:
        with pytest.raises(foxhunt.InputError, match=message):
            env.step(action)
    for action in (3, np.int64(3), np.uint8(3), np.array(3)):
        got, want = env.step(action), ref.step(3)
        assert got[0].tobytes() == want[0].tobytes() and got[1] == want[1]
    env.close()
    ref.close()
