"""Plain result objects: one attribute per key of the JSON object the C code
wrote, so that every field the C side reports reaches Python users without
a Python change (and nothing is renamed on the way)."""


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value):
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


class Record:
    """Attributes made from a JSON object; nested objects are Records too.
    `to_dict()` gives the object back; `r["key"]` works for any key."""

    def __init__(self, mapping=None, **fields):
        data = dict(mapping or {})
        data.update(fields)
        for key, value in data.items():
            self.__dict__[key] = _wrap(value)

    def to_dict(self):
        return {k: _unwrap(v) for k, v in self.__dict__.items()}

    def keys(self):
        return list(self.__dict__)

    def __getitem__(self, key):
        return self.__dict__[key]

    def __contains__(self, key):
        return key in self.__dict__

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __repr__(self):
        inner = ", ".join("%s=%r" % kv for kv in self.__dict__.items())
        return "%s(%s)" % (type(self).__name__, inner)
