"""Loading persona files: the shipped ones (``personas/data/*.json``) by name, any other by path."""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.agents.kit import Persona
from simulator.errors import PersonaError
from simulator.types.jsonfile import decode_file_text

__all__ = ["PersonaError", "available_personas", "load_persona", "load_personas", "parse_persona"]





def _data_dir() -> Traversable:
    return resources.files("personas") / "data"


def _value(v: Any) -> str:
    return json.dumps(v, default=str)[:80]


def parse_persona(data: Any, source: str = "<persona>", expected_name: str | None = None) -> Persona:
    """Validate a decoded persona document.

    Args:
        data: the decoded JSON document.
        source: file name used in error messages.
        expected_name: when given, the persona's ``name`` must equal it (the file's stem).

    Raises:
        PersonaError: the document is not an object or a field is invalid (file, field and value named).
    """
    if not isinstance(data, dict):
        raise PersonaError(f"{source}: expected a JSON object (a persona), got {type(data).__name__}")
    try:
        persona = Persona.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(persona)"
            if err["type"] == "extra_forbidden":
                problems.append(f"field {field}: unknown field (value: {_value(err.get('input'))}; known fields: "
                                f"{', '.join(Persona.model_fields)})")
            else:
                msg = err["msg"].removeprefix("Value error, ")
                problems.append(f"field {field}: {msg} (value: {_value(err.get('input'))})")
        raise PersonaError(f"{source}: " + "; ".join(problems)) from e
    if expected_name is not None and persona.name != expected_name:
        raise PersonaError(f"{source}: field name: {persona.name!r} does not match the file name "
                           f"(expected {expected_name!r}; a persona file is named NAME.json)")
    return persona


def _read(path: Path | Traversable, source: str) -> Persona:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise PersonaError(f"{source}: cannot read persona file: no such file") from e
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise PersonaError(f"{source}: cannot read persona file: {reason}") from e
    data = decode_file_text(text, source, PersonaError)  # as a task file's (simulator.types.tasks.load_tasks)
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else None
    return parse_persona(data, source, expected_name=stem)


def load_persona(path: str | Path) -> Persona:
    """Load and validate one persona file.

    A file named ``NAME.json`` must hold the persona called ``NAME``.

    Raises:
        PersonaError: the file is missing, not JSON, or malformed (the message names file, field and value).
    """
    p = Path(path)
    if p.is_dir():
        raise PersonaError(f"{p}: is a directory, not a persona file")
    return _read(p, str(p))


def available_personas() -> list[str]:
    """Names of the shipped personas, sorted."""
    return sorted(f.name[: -len(".json")] for f in _data_dir().iterdir()
                  if f.name.endswith(".json") and f.is_file())


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or "/" in name or "\\" in name


def load_personas(names: list[str] | str) -> list[Persona]:
    """Load personas by name (shipped ones) or by path (a ``.json`` file elsewhere).

    Args:
        names: a list of names or paths; ``"all"`` stands for every shipped persona (sorted by name). A
            comma-separated string is split. Repeated names are loaded once, in first-seen order.

    Returns:
        The personas, in the order given.

    Raises:
        PersonaError: a name is unknown, no name is given, two entries share a persona name, or a file is
            malformed.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    wanted = [n for n in names if n]
    if not wanted:
        raise PersonaError(f"no persona given (available: {', '.join(available_personas())}, or all)")
    wanted = [w for n in wanted for w in (available_personas() if n == "all" else [n])]
    out: list[Persona] = []
    seen: dict[str, str] = {}
    for entry in wanted:
        if entry in seen:
            continue
        if _looks_like_path(entry):
            persona = load_persona(entry)
        else:
            file = _data_dir() / f"{entry}.json"
            if not file.is_file():
                raise PersonaError(f"unknown persona {entry!r} (available: {', '.join(available_personas())}, "
                                   "all, or a path to a persona .json file)")
            persona = _read(file, f"personas/data/{entry}.json")
        if persona.name in seen.values():
            raise PersonaError(f"{entry}: persona name {persona.name!r} is given twice")
        seen[entry] = persona.name
        out.append(persona)
    return out
