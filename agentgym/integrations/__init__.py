"""Adapters that put agentgym envs behind other frameworks' interfaces (SkyRL-Gym, verl, MCP).

Each adapter is its own module and imports its framework lazily: ``import agentgym.integrations`` costs
nothing, and a missing framework is a ``DependencyNotInstalled`` naming the install command.
"""
