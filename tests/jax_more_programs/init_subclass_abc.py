# Class header keywords go to the parent's __init_subclass__ (plain or classmethod, through super() to object's); metaclass=ABCMeta; abc.ABC and abstractmethod.
class Registry:
    subclasses = []
    def __init_subclass__(cls, tag=None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.tag = tag
        Registry.subclasses.append(cls.__name__)

class A(Registry, tag="a"):
    pass

class B(A):
    pass

print(A.tag, B.tag, Registry.subclasses)

class C:
    @classmethod
    def __init_subclass__(cls, flag=False):
        cls.flag = flag

class D(C, flag=True):
    pass
print(D.flag)

try:
    class E(object, color="red"):
        pass
except TypeError as e:
    print("TypeError", "takes no keyword arguments" in str(e))

import abc
class F(metaclass=abc.ABCMeta):
    x = 1
print(F.x)
from abc import ABC, abstractmethod
class Shape(ABC):
    @abstractmethod
    def area(self):
        ...
class Sq(Shape):
    def __init__(self, s):
        self.s = s
    def area(self):
        return self.s ** 2
print(Sq(3).area(), isinstance(Sq(2), Shape))
