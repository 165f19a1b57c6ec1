"""Headless world simulations that show the plugin at work (``npc-memory demo``)."""

from npc_memory.demo.simulation import DemoResult
from npc_memory.demo.story import Story
from npc_memory.demo.town import run_town
from npc_memory.demo.village import run_village

__all__ = ["DemoResult", "Story", "run_town", "run_village"]
