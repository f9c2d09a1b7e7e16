# pathlib's Path, written in arr: a path as an object (`dir / "name"`,
# `.name`, `.exists()`); the operating system's work is os's builtins
# (system.rs), which take a Path wherever they take a string (it holds its
# text in `_path`). Loaded at the first `import pathlib` (lib.rs's LIBRARIES).

def _pathlib_strip(text):
    """text without trailing slashes (the root keeps its one)."""
    while len(text) > 1 and text.endswith("/"):
        text = text[:-1]
    return text

class _pathlib_PathBase:
    """A filesystem path (pathlib.Path)."""

    def __init__(self, *parts):
        text = ""
        for part in parts:
            part = str(part)
            if part.startswith("/") or text == "":
                text = part
            else:
                text = _pathlib_strip(text) + "/" + part
        if text == "":
            text = "."
        self._path = _pathlib_strip(text)

    def __truediv__(self, other):
        return _pathlib_Path(self._path, other)

    def __rtruediv__(self, other):
        return _pathlib_Path(other, self._path)

    def __str__(self):
        return self._path

    def __fspath__(self):
        return self._path

    def __repr__(self):
        return f"PosixPath('{self._path}')"

    def __eq__(self, other):
        return isinstance(other, _pathlib_PathBase) and other._path == self._path

    @property
    def name(self):
        return _os_path_basename(self._path)

    @property
    def parent(self):
        d = _os_path_dirname(self._path)
        return _pathlib_Path(d if d else ".")

    @property
    def suffix(self):
        return _os_path_splitext(self.name)[1]

    @property
    def stem(self):
        return _os_path_splitext(self.name)[0]

    @property
    def parts(self):
        return tuple(p for p in self._path.split("/") if p)

    def as_posix(self):
        return self._path

    def exists(self):
        return _os_path_exists(self._path)

    def is_dir(self):
        return _os_path_isdir(self._path)

    def is_file(self):
        return _os_path_isfile(self._path)

    def mkdir(self, mode=511, parents=False, exist_ok=False):
        if parents:
            _os_makedirs(self._path, exist_ok=exist_ok)
        elif not (exist_ok and self.is_dir()):
            _os_mkdir(self._path)

    def iterdir(self):
        return [self / name for name in _os_listdir(self._path)]

    def resolve(self):
        return _pathlib_Path(_os_path_abspath(self._path))

    def absolute(self):
        return self.resolve()

    def joinpath(self, *parts):
        return _pathlib_Path(self._path, *parts)

    def unlink(self):
        _os_remove(self._path)

_pathlib_Path = type("PosixPath", (_pathlib_PathBase,), {})
