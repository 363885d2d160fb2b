"""One side of an A/B: a recipe file, or a record standing for its sealed recipe (its
resolved identity taking the place of what the recipe declares)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen
from registry.formats.display import short_id
from registry.formats.identity import ResolvedIdentity
from registry.recipe.schema import Recipe
from registry.store.home import Home


class Side(Frozen):
    """What one side runs."""

    label: str = Field(description="A or B")
    given: str = Field(description="as the command line named it")
    recipe: Recipe
    recipe_file: str | None = Field(None, description="the recipe file, when one was given")
    record: str | None = Field(None, description="the record that stands for its recipe")
    identity: ResolvedIdentity | None = Field(None, description="the record's, when a record")


def load_side(home: Home | None, label: str, given: str) -> Side:
    """A path to an existing file is a recipe; anything else a record id or prefix."""
    from registry.errors import NotFound
    from registry.recipe import load_recipe

    path = Path(given)
    if path.is_file():
        return Side(label=label, given=given, recipe=load_recipe(path), recipe_file=str(path))
    if home is None:
        raise NotFound(f"{given}: no such recipe file, and no home to find a record in",
                       hint="give a recipe file, or run `registry init`")
    from registry.store.query import sealed_statement

    rid, statement = sealed_statement(home, given)
    if statement.predicate.recipe is None:
        from registry.errors import InvalidInput

        raise InvalidInput(f"record {short_id(rid)} carries no recipe to run",
                           hint="give its recipe file instead")
    return Side(label=label, given=given, recipe=Recipe.model_validate(statement.predicate.recipe),
                record=rid, identity=statement.predicate.identity)


@contextmanager
def recipe_folder(home: Home, side: Side) -> Iterator[Path]:
    """Where a side's run reads its suites: beside its recipe file, else the suites its
    record sealed (found in the object store by their pinned digests)."""
    from registry.reproduce import stored_suites, suite_folder

    if side.recipe_file is not None:
        yield Path(side.recipe_file).parent
        return
    with suite_folder(stored_suites(home, side.recipe), None) as folder:
        yield folder
