"""A value of the wrong type on the command line, said in plain words.

jsonargparse refuses ``--trainer.max_steps abc`` with its own wording, which names Python
types and every member of a union::

    Parser key "trainer.max_steps": Expected a <class 'int'>. Got value: abc
    Parser key "trainer.precision": Does not validate against any of the Union subtypes
    Subtypes: [typing.Literal[64, 32, 16], ..., <class 'NoneType'>] Errors: ... Given value: 17

:func:`plain_argument_error` turns those into the project's form, the setting, what it
takes and what was given::

    trainer.max_steps: expected an integer, got 'abc'
    trainer.precision: 17 is not valid; expected one of 64, 32, 16, '16-mixed', ..., or null
    model.position_kwargs: expected a mapping {option: value, ...} or null, got '{x:1}'
    (YAML needs a space after each key's colon: '{x: 1}')

A message of another shape (or a wording a later jsonargparse changes) is kept as it is,
on one line: the rewrite only ever replaces a message it fully understands.
"""

from __future__ import annotations

import ast
import re

from roformer_lit.errors import one_line

#: jsonargparse's refusal of one key's value, up to the value itself.
_KEY_EXPECTED = r'Parser key "(?P<key>[^"]+)": Expected a (?P<type>.+?)\. Got value:'
_EXPECTED = re.compile(rf"^{_KEY_EXPECTED}\s?(?P<value>.*)$")
_UNION = re.compile(
    r'^Parser key "(?P<key>[^"]+)": Does not validate against any of the Union subtypes '
    r"Subtypes: \[(?P<types>.*?)\] Errors: (?P<errors>.*) Given value type: .*? "
    r"Given value: (?P<value>.*)$"
)
#: An inner refusal of one key inside a union's errors (a data module chosen by class).
_INNER = re.compile(rf"{_KEY_EXPECTED} (?P<value>.*?)(?= - |$)")
_LITERAL = re.compile(r"typing\.Literal\[(?P<values>.*?)\]")
#: A union of a mapping and null (``model.position_kwargs``, ``model.attention_kwargs``).
_MAPPING = re.compile(r"^dict\[[^\]]*\](?P<null>, <class 'NoneType'>)?$")
#: A key of a YAML flow mapping written without the space after its colon (``{x:1}``).
_UNSPACED_KEY = re.compile(r"(?P<key>[{,]\s*[\w.-]+):(?=[^\s:])")

#: Python types as a command line's reader knows them.
_TYPE_WORDS = {
    "<class 'int'>": "an integer",
    "<class 'float'>": "a number",
    "<class 'bool'>": "true or false",
    "<class 'str'>": "a string",
    "<class 'NoneType'>": "null",
}


def plain_argument_error(exc: BaseException) -> str:
    """The one line for a command-line parsing error ``exc`` (see the module)."""
    message = one_line(exc)
    found = _EXPECTED.match(message)
    if found is not None:
        expected = _expected(found["type"])
        if expected is not None:
            return f"{found['key']}: expected {expected}, got {_shown(found['value'])}"
        return message
    union = _UNION.match(message)
    if union is None:
        return message
    inner = _INNER.search(union["errors"])
    if inner is not None and "class_path" in union["errors"]:  # a class's own setting
        expected = _expected(inner["type"])
        if expected is not None:
            key = f"{union['key']}.{inner['key']}"
            return f"{key}: expected {expected}, got {_shown(inner['value'])}"
        return message
    mapping = _MAPPING.match(union["types"])
    if mapping is not None:
        null = " or null" if mapping["null"] else ""
        return (
            f"{union['key']}: expected a mapping {{option: value, ...}}{null}, got "
            f"{_shown(union['value'])}{_spacing_hint(union['value'])}"
        )
    choices = _choices(union["types"])
    if choices is None:
        return message
    return f"{union['key']}: {_shown(union['value'])} is not valid; expected {choices}"


def _spacing_hint(value: str) -> str:
    """Where ``value`` is a flow mapping whose keys lack the space after their colon, which
    YAML reads as one string (``{initial_slope:0.5}``), the spelling that is a mapping."""
    if not (value.startswith("{") and value.endswith("}")):
        return ""
    spaced = _UNSPACED_KEY.sub(r"\g<key>: ", value)
    if spaced == value:
        return ""
    return f" (YAML needs a space after each key's colon: {spaced!r})"


def _expected(type_text: str) -> str | None:
    """``an integer``, ``one of 'cls', 'mean'``; None for a type of another shape."""
    if type_text in _TYPE_WORDS:
        return _TYPE_WORDS[type_text]
    literal = _LITERAL.fullmatch(type_text)
    return f"one of {literal['values']}" if literal is not None else None


def _choices(types_text: str) -> str | None:
    """The members of a union of literals, plain types and None as ``one of a, b, ...,
    or null`` (``true or false, or an integer`` where members are types); None when a
    member is of another shape (its values cannot be said)."""
    values: list[str] = []
    words: list[str] = []
    allows_null = False
    for part in re.split(r",\s*(?=typing\.Literal\[|<class )", types_text):
        part = part.strip()
        if part == "<class 'NoneType'>":
            allows_null = True
            continue
        literal = _LITERAL.fullmatch(part)
        if literal is not None:
            values += [value.strip() for value in literal["values"].split(",")]
        elif part in _TYPE_WORDS:
            words.append(_TYPE_WORDS[part])
        else:
            return None
    if not words:  # literals alone: one list of values
        if not values:
            return None
        unique = list(dict.fromkeys(values))
        return f"one of {', '.join(unique)}" + (", or null" if allows_null else "")
    if values:
        words.insert(0, f"one of {', '.join(dict.fromkeys(values))}")
    if allows_null:
        words.append("null")
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])}, or {words[-1]}"


def _shown(value: str) -> str:
    """The given value as the user wrote it: quoted if it is a word, as is if a number or a
    list."""
    try:
        ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return repr(value)
    return value
