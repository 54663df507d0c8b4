"""The airline tools' argument types: money, flight references, passengers and payments, with inlined schemas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AllowInfNan,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictFloat,
    StrictInt,
    TypeAdapter,
)
from pydantic_core import CoreSchema, core_schema
from typing_extensions import TypedDict

from domains.airline._modes import lenient_items

__all__ = ["Cabin", "FlightRef", "FlightRefs", "Money", "Passenger", "Passengers", "Payment", "Payments"]


def _inline_schema(tp: Any) -> dict[str, Any]:
    """Return ``tp``'s JSON schema with ``$ref``s resolved and titles dropped (one self-contained schema)."""
    schema = TypeAdapter(tp).json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: resolve(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


class _Declared:
    """Base of argument types that validate as ``__validate_as__`` and show its self-contained JSON schema.

    The tool decorator reads parameter types with ``typing.get_type_hints``, which drops ``Annotated``
    metadata, so these classes carry the pydantic behaviour themselves (validated values are plain lists and
    numbers). The schema is ``__json_schema__`` when set, else that of ``__validate_as__`` with its
    ``$ref``s inlined (some model APIs accept no ``$defs`` in tool parameters).
    """

    __validate_as__: ClassVar[Any]
    __json_schema__: ClassVar[dict[str, Any] | None] = None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Validate as ``__validate_as__``."""
        return handler.generate_schema(cls.__validate_as__)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """Show ``__json_schema__``, or the inlined schema of ``__validate_as__``."""
        return dict(cls.__json_schema__ or _inline_schema(cls.__validate_as__))


class Money(float, _Declared):
    """A JSON number of dollars, kept as given (``250`` stays an int).

    Booleans, strings, NaN and infinities are refused.
    """

    __validate_as__ = StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
    __json_schema__ = {"type": "number"}  # noqa: RUF012 - read-only declaration


_FORBID_EXTRA = ConfigDict(extra="forbid")


class FlightRef(TypedDict):
    """One flight of an itinerary."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    flight_number: Annotated[str, Field(description="Flight number, such as 'HAT001'.")]
    date: Annotated[str, Field(description="Date of the flight, 'YYYY-MM-DD', such as '2024-05-01'.")]


class Passenger(TypedDict):
    """A traveller."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    first_name: Annotated[str, Field(description="First name, such as 'Noah'.")]
    last_name: Annotated[str, Field(description="Last name, such as 'Brown'.")]
    dob: Annotated[str, Field(description="Date of birth, 'YYYY-MM-DD', such as '1990-01-01'.")]


class Payment(TypedDict):
    """One payment of a booking."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    payment_id: Annotated[str, Field(description="Payment method id from the user's profile, such as "
                                                 "'credit_card_7815826' or 'gift_card_7815826'.")]
    amount: Annotated[Money, Field(description="Amount paid with this method, in dollars.")]


class _Items(_Declared):
    """Base of the argument lists whose items are objects (:class:`FlightRef`, :class:`Passenger`, ...).

    In mode ``tausim`` an item with a key its type does not declare is refused. In mode ``tau-bench`` such keys
    are dropped before validation, as the peer does: it reads the keys it needs from each item and ignores or
    overwrites the others (an agent that copies a flight's ``origin``, ``destination`` and ``price`` into
    ``update_reservation_flights`` gets its change). The mode is read from the validation context, which
    :meth:`simulator.world.tools.Toolbox.dispatch` sets to the trial's domain options (no context: mode ``tausim``).
    Missing or mistyped declared keys are refused in both modes.
    """

    __item__: ClassVar[Any]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Validate as ``__validate_as__``, after dropping undeclared item keys in mode ``tau-bench``."""
        declared = frozenset(cls.__item__.__required_keys__ | cls.__item__.__optional_keys__)

        def lenient(value: Any, info: core_schema.ValidationInfo) -> Any:
            options = info.context if isinstance(info.context, Mapping) else {}
            if not lenient_items(options) or not isinstance(value, list):
                return value
            return [{k: v for k, v in item.items() if k in declared} if isinstance(item, dict) else item
                    for item in value]

        return core_schema.with_info_before_validator_function(lenient, handler.generate_schema(cls.__validate_as__))


class FlightRefs(list[FlightRef], _Items):
    """A list of :class:`FlightRef`."""

    __validate_as__ = list[FlightRef]
    __item__ = FlightRef


class Passengers(list[Passenger], _Items):
    """A list of :class:`Passenger`."""

    __validate_as__ = list[Passenger]
    __item__ = Passenger


class Payments(list[Payment], _Items):
    """A list of :class:`Payment`."""

    __validate_as__ = list[Payment]
    __item__ = Payment


Cabin = Literal["basic_economy", "economy", "business"]
"""A cabin class."""

