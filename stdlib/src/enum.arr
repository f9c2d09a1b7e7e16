# enum, written in arr: Enum, IntEnum, StrEnum, auto and unique. A subclass's
# public class attributes become its members when the class is made
# (`__init_subclass__`): instances holding `name` and `value`, set back as the
# class's attributes; the metaclass gives the class itself iteration, `len`,
# `Color['RED']`, `Color(1)` and membership. Loaded at the first
# `import enum` (lib.rs's LIBRARIES).

class _enum_auto:
    """enum.auto(): the member's value is chosen by _generate_next_value_."""

    def __repr__(self):
        return "auto()"

class _enum_EnumType:
    """The enum metaclass: protocols of the class, over its members."""

    def __iter__(cls):
        return iter(cls._member_list_)

    def __repr__(cls):
        return f"<enum {cls.__name__!r}>"

    def __reversed__(cls):
        return reversed(cls._member_list_)

    def __len__(cls):
        return len(cls._member_list_)

    def __getitem__(cls, name):
        return cls._member_map_[name]

    def __contains__(cls, item):
        if isinstance(item, cls):
            return item in cls._member_list_
        return any(m._value_ == item for m in cls._member_list_)

    def __call__(cls, value):
        if isinstance(value, cls):
            return value
        for m in cls._member_list_:
            if m._value_ == value:
                return m
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")

def _enum_is_member(name, value):
    """Whether a class attribute becomes a member: public, not a function,
    class or descriptor."""
    if name.startswith("_"):
        return False
    if isinstance(value, _enum_auto):
        return True
    return not (callable(value) or type(value).__name__ in ("classmethod", "staticmethod", "property"))

class _enum_EnumBase(metaclass=_enum_EnumType):
    """Enum: a class whose members are its named constant instances."""

    _member_list_ = []
    _member_map_ = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        members = []
        for name, value in list(vars(cls).items()):
            if not _enum_is_member(name, value):
                continue
            if cls._member_list_:
                raise TypeError(f"{cls!r} cannot extend {cls.__bases__[0]!r}")
            if isinstance(value, _enum_auto):
                value = cls._generate_next_value_(name, 1, len(members), [m._value_ for m in members])
            if type(value) == tuple and "__init__" in vars(cls):
                args = value
            else:
                args = (value,)
            same = [m for m in members if m._value_ == value]
            if same:
                # An alias: the name refers to the first member of that value.
                setattr(cls, name, same[0])
                cls._member_map_[name] = same[0]
                continue
            member = object.__new__(cls)
            member._name_ = name
            member._value_ = cls._coerce_(value)
            if "__init__" in vars(cls):
                cls.__init__(member, *args)
            setattr(cls, name, member)
            members.append(member)
            if len(members) == 1:
                cls._member_map_ = {}
            cls._member_map_[name] = member
        cls._member_list_ = members
        cls.__members__ = dict(cls._member_map_) if members else {}

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        for v in reversed(last_values):
            if isinstance(v, int):
                return v + 1
        return start

    @classmethod
    def _coerce_(cls, value):
        return value

    @property
    def name(self):
        return self._name_

    @property
    def value(self):
        return self._value_

    def __repr__(self):
        return f"<{type(self).__name__}.{self._name_}: {self._value_!r}>"

    def __str__(self):
        return f"{type(self).__name__}.{self._name_}"

    def __format__(self, spec):
        return format(str(self), spec)

    def __hash__(self):
        return hash(self._name_)

_enum_Enum = type("Enum", (_enum_EnumBase,), {})

class _enum_IntEnumBase(_enum_Enum):
    """IntEnum: members that are also integers (they compare and compute as
    their values; as dict keys they are equal when their values are)."""

    __hash_attribute__ = "_value_"

    @classmethod
    def _coerce_(cls, value):
        return int(value)

    def __str__(self):
        return str(self._value_)

    def __format__(self, spec):
        return format(self._value_, spec)

    def __hash__(self):
        return hash(self._value_)

    def __eq__(self, other):
        return self._value_ == (other._value_ if isinstance(other, _enum_EnumBase) else other)

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self._value_ < int(other)

    def __le__(self, other):
        return self._value_ <= int(other)

    def __gt__(self, other):
        return self._value_ > int(other)

    def __ge__(self, other):
        return self._value_ >= int(other)

    def __int__(self):
        return self._value_

    def __index__(self):
        return self._value_

    def __float__(self):
        return float(self._value_)

    def __bool__(self):
        return self._value_ != 0

    def __add__(self, other):
        return self._value_ + other

    def __radd__(self, other):
        return other + self._value_

    def __sub__(self, other):
        return self._value_ - other

    def __rsub__(self, other):
        return other - self._value_

    def __mul__(self, other):
        return self._value_ * other

    def __rmul__(self, other):
        return other * self._value_

_enum_IntEnum = type("IntEnum", (_enum_IntEnumBase,), {})

class _enum_StrEnumBase(_enum_Enum):
    """StrEnum: members that are also strings; auto() gives the lower-case
    name."""

    __hash_attribute__ = "_value_"

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return name.lower()

    @classmethod
    def _coerce_(cls, value):
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a string")
        return value

    def __str__(self):
        return self._value_

    def __format__(self, spec):
        return format(self._value_, spec)

    def __hash__(self):
        return hash(self._value_)

    def __eq__(self, other):
        return self._value_ == (other._value_ if isinstance(other, _enum_EnumBase) else other)

    def __ne__(self, other):
        return not self == other

    def __add__(self, other):
        return self._value_ + other

    def __radd__(self, other):
        return other + self._value_

    def __len__(self):
        return len(self._value_)

_enum_StrEnum = type("StrEnum", (_enum_StrEnumBase,), {})

def _enum_unique(enumeration):
    """@enum.unique: the class, checked to have no aliases."""
    aliases = [name for name, m in enumeration._member_map_.items() if m._name_ != name]
    if aliases:
        raise ValueError(f"duplicate values found in {enumeration!r}: " + ", ".join(
            f"{a} -> {enumeration._member_map_[a]._name_}" for a in aliases))
    return enumeration
