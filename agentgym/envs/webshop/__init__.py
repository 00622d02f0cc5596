"""WebShop: a shop to search and buy in, in text mode and in a real browser."""

from agentgym.envs.webshop.env import WebShopEnv, WebShopFormat

__all__ = ["WebShopEnv", "WebShopFormat"]
