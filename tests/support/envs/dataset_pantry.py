"""A small ORS environment whose task specs carry dict fields, for the dataset-column tests.

Written the way published environments are: a task is a recipe, and its `pantry` maps each
ingredient to grams, so its keys are data and differ from task to task (one pantry is empty).
`steps` is a list of dicts whose keys differ too. `chef` has one fixed shape on every task (its
`country` may be null), so it fits one Arrow struct. The model names the ingredient the recipe
needs most of.
"""

from __future__ import annotations

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

RECIPES = [
    {
        "title": "pancakes",
        "pantry": {"flour": 200, "milk": 300, "eggs": 2},
        "steps": [{"whisk": 2}, {"rest": 30, "covered": True}],
        "chef": {"name": "Ana", "country": "PT"},
    },
    {
        "title": "risotto",
        "pantry": {"rice": 150, "stock": 900},
        "steps": [{"toast": 3}, {"stir": 18}],
        "chef": {"name": "Bo", "country": None},
    },
    {
        "title": "water",
        "pantry": {},
        "steps": [{"pour": 1}],
        "chef": {"name": "Cy", "country": "NZ"},
    },
    {
        "title": "salad",
        "pantry": {"lettuce": 120, "oil": 15, "salt": 1, "lemon": 30},
        "steps": [],
        "chef": {"name": "Di", "country": "FR"},
    },
]


class NameParams(BaseModel):
    ingredient: str


class Pantry(Environment):
    """Name the ingredient the task's recipe uses the most of."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [dict(recipe) for recipe in RECIPES]

    def get_prompt(self):
        return [TextBlock(text=f"Which ingredient does {self.task_spec['title']} need most of?")]

    @tool
    def name_ingredient(self, params: NameParams) -> ToolOutput:
        """Name the ingredient the recipe needs most of.

        Args:
            ingredient: The ingredient's name.
        """
        pantry = self.task_spec["pantry"]
        most = max(pantry, key=pantry.get) if pantry else None
        won = params.ingredient.lower() == most
        return ToolOutput(blocks=[TextBlock(text="right" if won else "wrong")], reward=float(won), finished=True)
