# enum (Enum, IntEnum, StrEnum, auto, unique), a metaclass's protocols on a
# class, object.__new__, generic aliases in annotations, min/max default=,
# and a bound method's __self__ / __func__.
import enum
from enum import Enum, IntEnum, auto


class Color(Enum):
    RED = 1
    GREEN = 2
    BLUE = 3

    def describe(self):
        return f"{self.name} is {self.value}"

    @classmethod
    def default(cls):
        return cls.GREEN


print(Color.RED, repr(Color.GREEN), Color.BLUE.name, Color.BLUE.value)
print(Color(2) is Color.GREEN, Color['BLUE'] is Color.BLUE)
print([c.name for c in Color], len(Color), list(Color)[0])
print(Color.RED in Color, Color.RED == Color.RED, Color.RED == 1, Color.RED != Color.GREEN)
print(Color.RED.describe(), Color.default())
print(isinstance(Color.RED, Color), type(Color.RED).__name__, isinstance(Color.RED, Enum))
print({Color.RED: 'r', Color.BLUE: 'b'}[Color.BLUE])
print(f"{Color.RED}", str(Color.GREEN))
print(list(Color.__members__))
try:
    Color(7)
except ValueError as e:
    print("ValueError:", e)
try:
    Color['PINK']
except KeyError as e:
    print("KeyError")


class AxisType(enum.Enum):
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


print(AxisType.Auto, AxisType.Explicit.value, AxisType.Manual.value, [a.value for a in AxisType])


class Shape(Enum):
    SQUARE = 2
    DIAMOND = 1
    CIRCLE = 3
    ALIAS_FOR_SQUARE = 2


print(Shape.ALIAS_FOR_SQUARE is Shape.SQUARE, len(Shape), [s.name for s in Shape])
print(Shape(2).name)
try:
    @enum.unique
    class Mistake(Enum):
        ONE = 1
        TWO = 2
        THREE = 2
except ValueError as e:
    print("ValueError:", e)


class Priority(IntEnum):
    LOW = 1
    MEDIUM = 5
    HIGH = 10


print(Priority.HIGH > Priority.LOW, Priority.MEDIUM == 5, Priority.LOW + 1, sorted([Priority.HIGH, Priority.LOW]))
print(int(Priority.MEDIUM), str(Priority.HIGH), repr(Priority.LOW), [10, 20, 30, 40, 50, 60][Priority.MEDIUM])


class Planet(Enum):
    MERCURY = (3.303e+23, 2.4397e6)
    EARTH = (5.976e+24, 6.37814e6)

    def __init__(self, mass, radius):
        self.mass = mass
        self.radius = radius

    @property
    def surface_gravity(self):
        return 6.673e-11 * self.mass / (self.radius * self.radius)


print(round(Planet.EARTH.surface_gravity, 3), Planet.MERCURY.value)

try:
    class MoreColor(Color):
        PINK = 17
except TypeError as e:
    print("TypeError:", e)


class Base(Enum):
    def hello(self):
        return "hello " + self.name


class Greeting(Base):
    A = 1
    B = 2


print(Greeting.A.hello(), len(Greeting))


# A metaclass's methods give a class its protocols.
class Registry(type):
    def __iter__(cls):
        return iter(cls.items)

    def __len__(cls):
        return len(cls.items)

    def __getitem__(cls, i):
        return cls.items[i] * 10


class Things(metaclass=Registry):
    items = [1, 2, 3]


print(list(Things), len(Things), Things[1], 2 in list(Things))


class Point:
    def __init__(self, x):
        self.x = x


p = object.__new__(Point)
print(type(p).__name__, hasattr(p, 'x'))

# Generic aliases in annotations.
LayerParam = tuple[float, float]
ParamsList = list[LayerParam]
Table = dict[str, list[int]]


def total(params: ParamsList) -> float:
    return sum(a * b for a, b in params)


print(total([(1.0, 2.0), (3.0, 4.0)]))

# min and max with default=.
print(max([], default=0), min([], default=None), max([3, 1, 2], default=9))
print(max((x for x in range(0)), default=-1), min((x * x for x in [3, -1, 2]), default=5))
print(max([], key=len, default='none'), max(['a', 'abc', 'ab'], key=len, default=''))
try:
    max(1, 2, default=0)
except TypeError as e:
    print("TypeError")

# A bound method knows its object and function.
class Counter:
    def step(self):
        return 1


c = Counter()
m = c.step
print(m.__self__ is c, m.__func__ is Counter.step, m.__name__)
