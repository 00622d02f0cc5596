"""ALFWorld on TextWorld's PDDL engine: env, fast player, seeded game generator, game loaders."""

from agentgym.envs.alfworld.env import ALFWorldEnv, ALFWorldFormat

__all__ = ["ALFWorldEnv", "ALFWorldFormat"]
