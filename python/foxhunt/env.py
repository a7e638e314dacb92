"""The CPU trading environment as Gymnasium environments: :class:`VectorEnv` (N episodes
stepped together by the C vector env, ``fh_vec_env``) and :class:`Env` (one episode, for
Gymnasium's own checker and single-env code).

Autoreset: the C env resets a finished episode inside the step that finished it (as
training does), which is Gymnasium's ``AutoresetMode.SAME_STEP``: the observation
returned for a finished slot is the first of its next episode; ``info["final_obs"]``
(an object array, ``None`` for slots that did not finish, mask ``info["_final_obs"]``)
holds its last, and ``info["final_info"]`` (mask ``info["_final_info"]``) the C env's log
of the episode: ``episode_return`` (the sum of its rewards), ``length``,
``log_growth``, ``final_equity``, ``costs``, ``turnover``, ``reversals``,
``barrier_hits`` (4 counters: unused, profit-take, stop-loss, time limit),
``terminal``, ``truncated``, ``start_bar``. See docs/PYTHON.md.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made
from .config import Config
from .data import N_ACTIONS, STATE_DIM, Market
from .errors import FoxhuntError, InputError
from .nets import float32_values

# fh_api_episode_log (capi.h): ten int32, then five float64; 80 bytes, no padding
EPISODE_LOG_DTYPE = np.dtype([
    ("slot", "<i4"), ("start_bar", "<i4"), ("length", "<i4"), ("terminal", "<i4"),
    ("truncated", "<i4"), ("reversals", "<i4"), ("barrier_hits", "<i4", (4,)),
    ("episode_return", "<f8"), ("log_growth", "<f8"), ("final_equity", "<f8"),
    ("costs", "<f8"), ("turnover", "<f8")])


MAX_THREADS = 1024  # capi.h: FH_API_MAX_THREADS


def observation_bounds() -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of an observation, 54 each (capi.h: fh_api_observation_bounds)."""
    low = np.empty(STATE_DIM, np.float32)
    high = np.empty(STATE_DIM, np.float32)
    _lib.raise_for(lib().fh_api_observation_bounds(low.ctypes.data, high.ctypes.data),
                   "observation bounds")
    return low, high


class _CVecEnv(Handle):
    """The C handle of a vector env (fh_api_vec_env_*)."""

    _free = "fh_api_vec_env_free"


class VectorEnv(gym.vector.VectorEnv):
    """N trading episodes stepped by foxhunt's C environment.

    ``VectorEnv(128)`` trades the synthetic market's training split with ``foxhunt
    train``'s defaults; ``market=`` gives the data (a :class:`foxhunt.Market`; else one
    is built from ``csv`` and the configuration keys given), ``split=`` which part
    ("train", "validation", "test", "all"), ``seed=`` the episodes' seed (slot i's
    random stream is (seed, i), as in training), and configuration keys the
    environment's coefficients (``horizon=128``, ``half_spread=2e-4``, ...).
    ``curiosity=`` (4,384 floats, a checkpoint's curiosity params) adds its bonus to
    each reward as training does; by default rewards leave it out. ``threads=`` is the
    OpenMP threads of each step: 1 by default (a step takes microseconds; a team of
    every core costs more than it saves, above all on a busy machine: docs/PYTHON.md),
    0 for every core (or OMP_NUM_THREADS).

    Observations (N, 54) float32; actions (N,) in [0, 45); rewards (N,) float32;
    terminations (ruin) and truncations (horizon, end of the split) (N,) bool.
    Autoreset is same-step (module docstring) by default, as training steps;
    ``autoreset_mode=AutoresetMode.NEXT_STEP`` (or ``"next_step"``) gives Gymnasium's
    default instead, which its stateful vector wrappers (``NormalizeObservation``)
    require: a finished slot returns its last observation, with the episode's log in
    ``info`` (each key with its ``_key`` mask), and is held for the next step (its action
    ignored, reward 0, no flags), which returns its new episode's first observation. The
    episodes are the same in both modes.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 128, *, market: Optional[Market] = None,
                 split: str = "train", seed: int = 0,
                 csv: Optional[str | os.PathLike[str]] = None,
                 config: Optional[Config] = None,
                 curiosity: Optional[np.ndarray] = None, threads: int = 1,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 **values: Any) -> None:
        mode = _autoreset_mode(autoreset_mode)
        num_envs = _lib.integer(num_envs, "num_envs", 1, _lib.INT_MAX)
        threads = _lib.integer(threads, "threads", 0, MAX_THREADS)
        if market is None:
            market = Market(csv, config=config, **values)
            env_config = None  # the market's own
        else:
            if csv is not None:
                raise InputError("VectorEnv: market= is the data already; csv= names other")
            env_config = (config or market.config).copy(**values) if (config or values) else None
        self.market = market  # the C env holds a reference too; this keeps the Python one
        self.split = split
        err = err_buffer()
        h = lib().fh_api_vec_env_create(market.handle,
                                        env_config.handle if env_config else None,
                                        encode(split, "split"), num_envs, _seed(seed), err,
                                        _lib.ERR_CAP)
        self._env = _CVecEnv(made(h, err, "vector env"))
        self.num_envs = num_envs
        low, high = observation_bounds()
        self.single_observation_space = spaces.Box(low, high, (STATE_DIM,), np.float32)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space,
                                                              self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space,
                                                         self.num_envs)
        self._fresh = True  # the constructor seeded and reset every episode
        self._c_step = lib().fh_api_vec_env_step_active
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._next_step = mode == AutoresetMode.NEXT_STEP
        self._held = np.zeros(num_envs, np.uint8)  # next-step: slots that finished last step
        check(lib().fh_api_vec_env_set_threads(self._env.handle, threads), self._env.handle)
        if curiosity is not None:
            self.set_curiosity(curiosity)

    # ---- Gymnasium's VectorEnv API ----
    def reset(self, *, seed: Optional[int | Sequence[int]] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[np.ndarray, dict[str, Any]]:
        """``seed`` given: every slot re-seeded with (seed, i) and reset, exactly as a
        new env of that seed. Without: the first call returns the episodes the
        constructor started; later calls reset every slot from its stream as it stands."""
        if options:
            raise InputError(f"reset: options {sorted(options)} are not supported")
        if seed is not None:
            super().reset(seed=_seed(seed))
        obs = np.empty((self.num_envs, STATE_DIM), np.float32)
        h = self._env.handle
        if seed is not None:
            check(lib().fh_api_vec_env_seed(h, _seed(seed), obs.ctypes.data), h)
        elif self._fresh:
            check(lib().fh_api_vec_env_observe(h, obs.ctypes.data), h)
        else:
            check(lib().fh_api_vec_env_reset(h, obs.ctypes.data), h)
        self._fresh = False
        self._held[:] = 0
        self._take_logs()  # episodes a reset cut short are not reported
        return obs, {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        a = _actions(actions, self.num_envs)
        n = self.num_envs
        # one fresh buffer a step (no returned array is ever reused): obs | final_obs |
        # rewards | terminations | truncations, its address taken once (each .ctypes
        # costs about a microsecond: bench_vec_env.py measures the binding)
        obs_bytes = n * STATE_DIM * 4
        buf = np.empty(2 * obs_bytes + 6 * n, np.uint8)
        base = buf.ctypes.data
        h = self._env.handle
        held = self._next_step and self._held.any()
        check(self._c_step(h, a.ctypes.data, (1 - self._held).ctypes.data if held else None,
                           base, base + 2 * obs_bytes,
                           base + 2 * obs_bytes + 4 * n, base + 2 * obs_bytes + 5 * n,
                           base + obs_bytes), h)
        obs = buf[:obs_bytes].view(np.float32).reshape(n, STATE_DIM)
        final = buf[obs_bytes:2 * obs_bytes].view(np.float32).reshape(n, STATE_DIM)
        rewards = buf[2 * obs_bytes:2 * obs_bytes + 4 * n].view(np.float32)
        terminations = buf[2 * obs_bytes + 4 * n:2 * obs_bytes + 5 * n].view(np.bool_)
        truncations = buf[2 * obs_bytes + 5 * n:].view(np.bool_)
        self._fresh = False
        done = terminations | truncations
        info: dict[str, Any] = {}
        if self._next_step:
            self._held = done.astype(np.uint8)
        if done.any():  # the C env logs an episode exactly when it finishes
            fields = self._log_fields(done, self._take_logs())
            if self._next_step:  # the episode's last observation now, its next one later
                obs[done] = final[done]
                info = fields
            else:
                info = self._final_info(done, final, fields)
        return obs, rewards, terminations, truncations, info

    def close_extras(self, **kwargs: Any) -> None:
        self._env.close()

    # ---- beyond Gymnasium ----
    def set_curiosity(self, params: Optional[np.ndarray]) -> None:
        """The curiosity model's flat params (4,384 float32: fc1.weight, fc1.bias,
        fc2.weight, fc2.bias) whose bonus each reward gets, or None for none."""
        h = self._env.handle
        if params is None:
            check(lib().fh_api_vec_env_set_curiosity(h, None, 0), h)
            return
        # a NaN or infinity is refused by the C API, naming the element and its tensor
        p = float32_values(params, "curiosity params").reshape(-1)
        check(lib().fh_api_vec_env_set_curiosity(h, p.ctypes.data, p.size), h)

    @property
    def threads(self) -> int:
        """The OpenMP threads of each step (0: OpenMP's default, every core)."""
        return int(lib().fh_api_vec_env_threads(self._env.handle))

    @threads.setter
    def threads(self, n: int) -> None:
        n = _lib.integer(n, "threads", 0, MAX_THREADS)
        check(lib().fh_api_vec_env_set_threads(self._env.handle, n), self._env.handle)

    def portfolio(self) -> dict[str, np.ndarray]:
        """Each slot's equity, exposure, bar (in the split) and step in its episode."""
        n = self.num_envs
        out = {"equity": np.empty(n, np.float64), "exposure": np.empty(n, np.float64),
               "bar": np.empty(n, np.int32), "step": np.empty(n, np.int32)}
        h = self._env.handle
        check(lib().fh_api_vec_env_portfolio(h, out["equity"].ctypes.data,
                                             out["exposure"].ctypes.data,
                                             out["bar"].ctypes.data, out["step"].ctypes.data), h)
        return out

    def _take_logs(self) -> np.ndarray:
        h = self._env.handle
        logs = np.empty(self.num_envs, EPISODE_LOG_DTYPE)
        got = lib().fh_api_vec_env_take_logs(h, logs.ctypes.data, len(logs))
        if got < 0:
            check(_lib.STATUS_INPUT, h)
        return logs[:got]

    def _final_info(self, done: np.ndarray, final: np.ndarray,
                    final_info: dict[str, Any]) -> dict[str, Any]:
        """Gymnasium's same-step info: final_obs and final_info for the finished slots."""
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(done):
            final_obs[i] = final[i]
        return {"final_obs": final_obs, "_final_obs": done.copy(),
                "final_info": final_info, "_final_info": done.copy()}

    def _log_fields(self, done: np.ndarray, logs: np.ndarray) -> dict[str, Any]:
        """The finished episodes' logs as Gymnasium's vector info: each field an (N,)
        array with its ``_field`` mask."""
        slots = logs["slot"]
        if not np.array_equal(np.sort(slots), np.flatnonzero(done)):
            raise FoxhuntError(f"vector env: episodes logged in slots {slots.tolist()} but "
                               f"done in {np.flatnonzero(done).tolist()}; this is a bug")
        n = self.num_envs
        fields: dict[str, Any] = {}
        for name in ("episode_return", "log_growth", "final_equity", "costs", "turnover"):
            fields[name] = np.zeros(n, np.float64)
        for name in ("length", "reversals", "start_bar"):
            fields[name] = np.zeros(n, np.int64)
        for name in ("terminal", "truncated"):
            fields[name] = np.zeros(n, np.bool_)
        fields["barrier_hits"] = np.zeros((n, 4), np.int64)
        for name, arr in list(fields.items()):
            arr[slots] = logs[name]
        out: dict[str, Any] = {}
        for name, arr in fields.items():  # each key with its mask, as Gymnasium nests them
            out[name] = arr
            out["_" + name] = done.copy()
        return out


class Env(gym.Env):
    """One trading episode at a time: a :class:`VectorEnv` of one slot behind
    Gymnasium's single-env API (no autoreset: after a done, call reset()). Its episodes
    are the vector env's slot 0, in the same order: reset() after a done returns the
    episode the C env already started. Arguments as :class:`VectorEnv`'s."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: Optional[str] = None, **kwargs: Any) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise InputError(f"render_mode = {render_mode!r}; foxhunt.Env renders \"ansi\" "
                             "(a line of text: step, bar, equity, exposure) or nothing (None)")
        self.render_mode = render_mode
        self._vec = VectorEnv(1, **kwargs)
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self._next_obs: Optional[np.ndarray] = None  # the episode begun at the last done

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None and self._next_obs is not None:
            obs = self._next_obs
        else:
            obs, _ = self._vec.reset(seed=seed, options=options)
            obs = obs[0]
        self._next_obs = None
        return obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, r, term, trunc, info = self._vec.step(_actions(action, None))
        info_out: dict[str, Any] = {}
        if term[0] or trunc[0]:
            self._next_obs = obs[0]
            obs = info["final_obs"][0][None]
            info_out = {k: v[0] for k, v in info["final_info"].items() if not k.startswith("_")}
        return obs[0], float(r[0]), bool(term[0]), bool(trunc[0]), info_out

    def render(self) -> Optional[str]:
        """render_mode "ansi": the episode's state as one line of text (its step, the bar
        in the split, the equity and the exposure); None without a render mode."""
        if self.render_mode != "ansi":
            return None
        p = self._vec.portfolio()
        return (f"step {int(p['step'][0])} bar {int(p['bar'][0])} equity "
                f"{float(p['equity'][0]):.2f} exposure {float(p['exposure'][0]):+.2f}\n")

    def close(self) -> None:
        self._vec.close()


def _actions(actions: Any, n: Optional[int]) -> np.ndarray:
    """actions as the C env's int32 array, (n,) or, for n None, one action as (1,): every
    one an integer in [0, N_ACTIONS) of any integer dtype, else the InputError naming the
    first that is not. A cast alone would wrap: int64 2**32 + 3 is int32 3 (issue 32)."""
    if hasattr(actions, "detach"):  # a torch tensor, on any device
        actions = actions.detach().cpu().numpy()
    a = np.asarray(actions)
    if n is None:
        if a.ndim != 0:
            raise InputError(f"step: an action of shape {a.shape}; expected one integer in "
                             f"[0, {N_ACTIONS})")
        a = a.reshape(1)
    elif a.shape != (n,):
        raise InputError(f"step: actions of shape {a.shape}; expected ({n},)")
    if a.dtype == np.int32:  # the C env checks the range itself, naming the first bad one
        return np.ascontiguousarray(a)
    if a.dtype.kind in "iu":
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        # one reduction (a step's binding costs ~7 us; this adds ~4): as unsigned, a
        # negative action is huge, so the largest is below N_ACTIONS exactly when all are
        if int(np.maximum.reduce(a.view(f"u{a.dtype.itemsize}"))) < N_ACTIONS:
            return a.astype(np.int32)
        i = int(np.argmax((a < 0) | (a >= N_ACTIONS)))
        at = "" if n is None else f"[{i}]"
        raise InputError(f"step: action{at} = {int(a[i])} is outside [0, {N_ACTIONS})")
    # anything else: an object array (Python ints beyond 64 bits among them) holding only
    # integers in range is taken; floats, even whole ones, and bools are refused, named by
    # the first element that is not a whole number in range (else the first)
    values = a.tolist()
    in_range = [isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) and
                0 <= v < N_ACTIONS and float(v).is_integer() for v in values]
    if a.dtype.kind == "O" and all(in_range) and all(
            isinstance(v, numbers.Integral) for v in values):
        return np.array(values, np.int32)
    i = in_range.index(False) if False in in_range else 0
    at = "" if n is None else f"[{i}]"
    raise InputError(f"step: action{at} = {values[i]!r} ({type(values[i]).__name__}, dtype "
                     f"{a.dtype}); actions are integers in [0, {N_ACTIONS}): pass an integer "
                     "array (a policy's argmax or sample)")


def _autoreset_mode(mode: Any) -> AutoresetMode:
    """SAME_STEP or NEXT_STEP: the enum, its value ("SameStep") or its name
    ("same_step", any case)."""
    m = None
    if isinstance(mode, AutoresetMode):
        m = mode
    elif isinstance(mode, str):
        m = next((a for a in AutoresetMode
                  if mode in (a.value, a.name) or mode.upper() == a.name), None)
    if m not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
        raise InputError(f"autoreset_mode = {mode!r}; expected AutoresetMode.SAME_STEP "
                         "(training's) or AutoresetMode.NEXT_STEP (Gymnasium's default)")
    return m


def _seed(seed: Any) -> int:
    """A seed as the C env's uint64 (one int for all slots: slot i streams (seed, i))."""
    if isinstance(seed, (list, tuple, np.ndarray)):
        s = list(seed)
        if s and all(int(v) == int(s[0]) + i for i, v in enumerate(s)):
            raise InputError("reset: one int seeds every slot (slot i's stream is (seed, "
                             "i)); pass seed=" + str(int(s[0])))
        raise InputError("reset: one int seeds every slot (slot i's stream is (seed, i)); "
                         "per-slot seeds are not supported")
    return _lib.integer(seed, "seed", 0, _lib.UINT64_MAX)
