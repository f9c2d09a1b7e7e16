# logging, written in arr: records at or above the level (WARNING unless basicConfig
# says otherwise) go to standard error as LEVEL:logger:message. Loaded at the first
# `import logging` (lib.rs's LIBRARIES).

_logging_state = {"level": 30, "loggers": {}}

class _logging_Logger:
    def __init__(self, name):
        self.name = name
        self.level = 0

    def setLevel(self, level):
        self.level = _logging_level(level)

    def getEffectiveLevel(self):
        return self.level if self.level else _logging_state["level"]

    def isEnabledFor(self, level):
        return level >= self.getEffectiveLevel()

    def log(self, level, msg, *args, **kwargs):
        if self.isEnabledFor(level):
            text = str(msg) % args if args else str(msg)
            _stream_write(2, f"{_logging_names[level] if level in _logging_names else 'Level ' + str(level)}:{self.name}:{text}\n")

    def debug(self, msg, *args, **kwargs):
        self.log(10, msg, *args)

    def info(self, msg, *args, **kwargs):
        self.log(20, msg, *args)

    def warning(self, msg, *args, **kwargs):
        self.log(30, msg, *args)

    def error(self, msg, *args, **kwargs):
        self.log(40, msg, *args)

    def exception(self, msg, *args, **kwargs):
        self.log(40, msg, *args)

    def critical(self, msg, *args, **kwargs):
        self.log(50, msg, *args)

_logging_names = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}

def _logging_level(level):
    if isinstance(level, str):
        for k, v in _logging_names.items():
            if v == level.upper():
                return k
        raise ValueError(f"Unknown level: '{level}'")
    return level

def _logging_getLogger(name=None):
    """logging.getLogger: the logger of this name (the root logger without one)."""
    name = "root" if name is None else name
    loggers = _logging_state["loggers"]
    if name not in loggers:
        loggers[name] = _logging_Logger(name)
    return loggers[name]

def _logging_basicConfig(level=None, **kwargs):
    """logging.basicConfig: the level of the loggers that set none (format and handlers are not kept)."""
    if level is not None:
        _logging_state["level"] = _logging_level(level)

def _logging_debug(msg, *args, **kwargs):
    _logging_getLogger().debug(msg, *args)

def _logging_info(msg, *args, **kwargs):
    _logging_getLogger().info(msg, *args)

def _logging_warning(msg, *args, **kwargs):
    _logging_getLogger().warning(msg, *args)

def _logging_error(msg, *args, **kwargs):
    _logging_getLogger().error(msg, *args)

def _logging_critical(msg, *args, **kwargs):
    _logging_getLogger().critical(msg, *args)
