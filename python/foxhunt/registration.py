"""Gymnasium ids for foxhunt's environment (issue 36), registered when ``foxhunt`` is
imported, as Gymnasium's guide to custom environments does it (a ``register`` call in
the package; ``gymnasium.make("foxhunt:foxhunt/Trading-v0")`` imports the package
first):

- ``gymnasium.make("foxhunt/Trading-v0", **keys)``: :class:`foxhunt.Env`, one episode;
- ``gymnasium.make_vec("foxhunt/Trading-v0", num_envs=N, **keys)``: :class:`foxhunt.VectorEnv`
  through its vector entry point (N episodes stepped together by the C env);
  ``vectorization_mode="sync"`` builds N ``Env`` instead (any single-env wrappers).

Keys are the environment's and the data's configuration keys (``horizon=128``,
``csv="spy.csv"``, ``split="test"``, ``seed=3``, ...), as the classes take them.
"""

from __future__ import annotations

ENV_ID = "foxhunt/Trading-v0"


def register_envs() -> None:
    """Registers ENV_ID once (a second import, or a reload, leaves it as it is)."""
    import gymnasium as gym
    if ENV_ID in gym.registry:
        return
    gym.register(id=ENV_ID, entry_point="foxhunt.env:Env",
                 vector_entry_point="foxhunt.env:VectorEnv")
