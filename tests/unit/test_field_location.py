"""fulcrum.errors.at_the_field: a cross-field rule broken in a request body is located at the field
its message names, and nothing else is moved."""

from __future__ import annotations

from typing import Annotated, Any, Self

import pytest
from pydantic import AfterValidator, BaseModel, ValidationError, model_validator

from fulcrum.errors import at_the_field


def _refuse(value: str) -> str:
    raise ValueError(f"name: {value} is taken")  # a field's own message that starts like a path


class Inner(BaseModel):
    low: int
    high: int

    @model_validator(mode="after")
    def _order(self) -> Self:
        if self.low >= self.high:
            raise ValueError(f"low: {self.low} must be below high {self.high}")
        return self


class Outer(BaseModel):
    label: Annotated[str, AfterValidator(_refuse)] = "ok"
    ranges: list[Inner] = []
    other: int | None = None

    @model_validator(mode="after")
    def _other(self) -> Self:
        if self.other == 0:
            raise ValueError("missing: never given, so not placed there")
        return self


def errors_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(data)
    return [at_the_field(error) for error in caught.value.errors()]


def test_a_nested_models_rule_goes_to_the_field_it_names() -> None:
    [error] = errors_of({"ranges": [{"low": 1, "high": 2}, {"low": 5, "high": 3}]})
    assert error["loc"] == ["ranges", 1, "low"]
    assert error["msg"] == "5 must be below high 3"


def test_a_fields_own_message_and_an_absent_field_stay_where_pydantic_put_them() -> None:
    [error] = errors_of({"label": "x"})
    assert error["loc"] == ("label",)
    assert error["msg"] == "Value error, name: x is taken"
    [error] = errors_of({"other": 0})
    assert error["loc"] == ()
    assert error["msg"] == "Value error, missing: never given, so not placed there"
