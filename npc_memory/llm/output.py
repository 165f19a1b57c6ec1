"""Reading a Messages API response: its text, a tool call's input, validation errors
said plainly. Duck-typed over the SDK's ``Message``, so importing this module never
imports ``anthropic``. Runs on the LLM worker thread."""

from __future__ import annotations

from typing import Any

import pydantic

from npc_memory.llm.errors import MalformedOutputError


def content_of(message: Any) -> list[Any]:
    """The content blocks of ``message``, or :class:`MalformedOutputError`."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        got = type(content).__name__ if hasattr(message, "content") else "no content"
        raise MalformedOutputError(f"the response has no content list (got {got})")
    return content


def text_of(message: Any) -> str:
    """The text of ``message``: its text blocks joined. A text block whose ``text`` is
    not a string, or no text at all, is :class:`MalformedOutputError`."""
    parts: list[str] = []
    for index, block in enumerate(content_of(message)):
        if getattr(block, "type", None) != "text":
            continue
        text = getattr(block, "text", None)
        if not isinstance(text, str):
            raise MalformedOutputError(f"content[{index}].text is not a string (got {type(text).__name__})")
        parts.append(text)
    if not parts:
        raise MalformedOutputError("no text block in the response")
    return "".join(parts)


def tool_input_of(message: Any, name: str) -> Any:
    """The input of the first call of tool ``name`` in ``message``."""
    for block in content_of(message):
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == name:
            return getattr(block, "input", None)
    raise MalformedOutputError(f"no tool_use block for {name!r} in the response")


def describe(error: pydantic.ValidationError) -> str:
    """The first problem of a validation error, said plainly, with its path in the
    answer (``memories[0].importance is not a finite number: 'very'``)."""
    problems = error.errors(include_url=False)
    first = problems[0]
    message = str(first["msg"])
    if first["type"] == "json_invalid":
        text = f"not JSON: {message.removeprefix('Invalid JSON: ')}"
    else:
        path = ""
        for part in first["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        message = message.removeprefix("Value error, ")
        text = f"{path} {message}" if path else message
    more = len(problems) - 1
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def validate_json(model: type[pydantic.BaseModel], text: str) -> Any:
    """``model`` validated from JSON ``text``, or :class:`MalformedOutputError`."""
    try:
        return model.model_validate_json(text)
    except pydantic.ValidationError as exc:
        raise MalformedOutputError(describe(exc)) from None


def validate_python(model: type[pydantic.BaseModel], value: Any) -> Any:
    """``model`` validated from a decoded value, or :class:`MalformedOutputError`."""
    try:
        return model.model_validate(value)
    except pydantic.ValidationError as exc:
        raise MalformedOutputError(describe(exc)) from None
