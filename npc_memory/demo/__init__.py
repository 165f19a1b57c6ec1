"""Headless world simulations that show the plugin at work (``npc-memory demo``)."""

from npc_memory.demo.village import DemoResult, run_village

__all__ = ["DemoResult", "run_village"]
