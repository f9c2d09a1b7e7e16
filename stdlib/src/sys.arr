# sys's streams, written in arr: sys.stdout and sys.stderr as text streams over the
# output and standard error (print(..., file=sys.stderr) writes through them). Loaded at
# the first `import sys` (lib.rs's LIBRARIES).

class _TextStream:
    def __init__(self, fd, name):
        self._fd = fd
        self.name = name

    def write(self, s):
        return _stream_write(self._fd, s)

    def flush(self):
        pass

    def isatty(self):
        return False

    def __repr__(self):
        return f"<_io.TextIOWrapper name='{self.name}' mode='w' encoding='utf-8'>"

_sys_stdout = _TextStream(1, "<stdout>")
_sys_stderr = _TextStream(2, "<stderr>")
