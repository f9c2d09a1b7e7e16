# inspect, written in arr: the signatures of functions written in arr
# (`inspect.signature(f).parameters`, as Flax's `nnx.view` and user code read
# them) and the type predicates. Loaded at the first `import inspect`
# (lib.rs's LIBRARIES).

class _inspect_empty:
    """Parameter.empty: the marker of a parameter without a default."""

class _inspect_Parameter:
    POSITIONAL_ONLY = "POSITIONAL_ONLY"
    POSITIONAL_OR_KEYWORD = "POSITIONAL_OR_KEYWORD"
    VAR_POSITIONAL = "VAR_POSITIONAL"
    KEYWORD_ONLY = "KEYWORD_ONLY"
    VAR_KEYWORD = "VAR_KEYWORD"
    empty = _inspect_empty

    def __init__(self, name, kind, *, default=_inspect_empty, annotation=_inspect_empty):
        self.name = name
        self.kind = kind
        self.default = default
        self.annotation = annotation

    def __str__(self):
        if self.kind == "VAR_POSITIONAL":
            return "*" + self.name
        if self.kind == "VAR_KEYWORD":
            return "**" + self.name
        if self.default is _inspect_empty:
            return self.name
        return f"{self.name}={self.default!r}"

    def __repr__(self):
        return f'<Parameter "{self}">'

class _inspect_Signature:
    empty = _inspect_empty

    def __init__(self, parameters=None, return_annotation=_inspect_empty):
        self.parameters = {p.name: p for p in (parameters or [])}
        self.return_annotation = return_annotation

    def __str__(self):
        parts = []
        star = False
        for p in self.parameters.values():
            if p.kind == "VAR_POSITIONAL":
                star = True
            elif p.kind == "KEYWORD_ONLY" and not star:
                parts.append("*")
                star = True
            parts.append(str(p))
        return "(" + ", ".join(parts) + ")"

    def __repr__(self):
        return f"<Signature {self}>"

    def bind(self, *args, **kwargs):
        raise NotImplementedError("inspect.Signature.bind is not supported in arr")

def _inspect_signature(f):
    """inspect.signature: the parameters of a function written in arr (a
    bound method's without its first; a class's are its __init__'s)."""
    if isinstance(f, type):
        f = f.__init__
        params = _function_parameters(f)[1:]
    elif hasattr(f, "__wrapped__"):
        return _inspect_signature(f.__wrapped__)
    else:
        params = _function_parameters(f)
    annotations = getattr(f, "__annotations__", {})
    out = []
    for name, kind, has_default, default in params:
        out.append(_inspect_Parameter(name, kind, default=default if has_default else _inspect_empty,
                                      annotation=annotations.get(name, _inspect_empty)))
    return _inspect_Signature(out, annotations.get("return", _inspect_empty))

def _inspect_cleandoc(doc):
    """inspect.cleandoc: a docstring without the indentation of its second
    and later lines, and without blank lines at either end."""
    lines = doc.expandtabs().split("\n")
    margins = [len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()]
    margin = min(margins) if margins else 0
    lines = [lines[0].lstrip()] + [l[margin:] for l in lines[1:]]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)

def _inspect_getdoc(f):
    """inspect.getdoc: f's docstring, cleaned (None without one)."""
    doc = getattr(f, "__doc__", None)
    return None if not isinstance(doc, str) else _inspect_cleandoc(doc)

def _inspect_isclass(x):
    return isinstance(x, type)

def _inspect_isfunction(x):
    return type(x).__name__ == "function"

def _inspect_ismethod(x):
    return type(x).__name__ == "method"
