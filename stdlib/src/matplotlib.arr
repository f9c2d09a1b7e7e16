# matplotlib.pyplot over arr's plotting builtins (plot, scatter, hist,
# imshow, subplots...): the calls a notebook makes draw with arr's figures.
# matplotlib's styling arguments (format strings, colours, line widths,
# limits, colour maps) are accepted and not drawn: arr's figures have one
# style. Loaded at the first `import matplotlib...`.

class _plt_Artist:
    """What a drawing call returns: an object named as matplotlib's."""

    def __init__(self, kind):
        self._kind = kind

    def __repr__(self):
        return "<" + self._kind + " at " + hex(id(self)) + ">"

def _plt_arrays(args):
    """The data arguments of a call, its format strings left out."""
    return [a for a in args if not isinstance(a, str)]

def _plt_plot(*args, label=None, **kwargs):
    """plt.plot(y), plot(x, y), plot(x, y, fmt, x2, y2, ...)."""
    data = _plt_arrays(args)
    lines = []
    if len(data) == 1:
        plot(data[0], label=label)
        lines.append(_plt_Artist("matplotlib.lines.Line2D"))
    for i in range(0, len(data) - 1, 2):
        plot(data[i], data[i + 1], label=label if i == 0 else None)
        lines.append(_plt_Artist("matplotlib.lines.Line2D"))
    return lines

def _plt_scatter(x, y, *args, label=None, **kwargs):
    scatter(x, y, label=label)
    return _plt_Artist("matplotlib.collections.PathCollection")

def _plt_hist(x, bins=10, *args, label=None, **kwargs):
    hist(x, bins=bins, label=label)

def _plt_imshow(a, *args, **kwargs):
    imshow(a)
    return _plt_Artist("matplotlib.image.AxesImage")

def _plt_title(text, *args, **kwargs):
    title(text)

def _plt_xlabel(text, *args, **kwargs):
    xlabel(text)

def _plt_ylabel(text, *args, **kwargs):
    ylabel(text)

def _plt_legend(*args, **kwargs):
    legend()

def _plt_show(*args, **kwargs):
    show()

def _plt_savefig(path, *args, **kwargs):
    savefig(path)

def _plt_ignored(*args, **kwargs):
    """A styling or layout call arr's figures have no use for."""
    return None

class _plt_Figure:
    def __init__(self, size, n_axes):
        self._size = size
        self._n = n_axes

    def add_subplot(self, *args, **kwargs):
        return _plt_Axes(1, 1, 1)

    def savefig(self, path, *args, **kwargs):
        savefig(path)

    def tight_layout(self, *args, **kwargs):
        return None

    def suptitle(self, text, *args, **kwargs):
        return None

    def __repr__(self):
        w, h = self._size
        return f"<Figure size {int(w * 100)}x{int(h * 100)} with {self._n} Axes>"

    def __str__(self):
        w, h = self._size
        return f"Figure({int(w * 100)}x{int(h * 100)})"

def _plt_figure(*args, figsize=None, **kwargs):
    size = tuple(figsize) if figsize is not None else (6.4, 4.8)
    figure(size=size)
    return _plt_Figure(size, 0)

class _plt_Axes:
    """One panel of a subplots grid: each call draws into it."""

    def __init__(self, nrows, ncols, index):
        self._grid = (nrows, ncols, index)

    def _select(self):
        if self._grid != (1, 1, 1):
            subplot(*self._grid)

    def plot(self, *args, **kwargs):
        self._select()
        return _plt_plot(*args, **kwargs)

    def scatter(self, *args, **kwargs):
        self._select()
        return _plt_scatter(*args, **kwargs)

    def hist(self, *args, **kwargs):
        self._select()
        return _plt_hist(*args, **kwargs)

    def imshow(self, *args, **kwargs):
        self._select()
        return _plt_imshow(*args, **kwargs)

    def set_title(self, text, *args, **kwargs):
        self._select()
        title(text)

    def set_xlabel(self, text, *args, **kwargs):
        self._select()
        xlabel(text)

    def set_ylabel(self, text, *args, **kwargs):
        self._select()
        ylabel(text)

    def legend(self, *args, **kwargs):
        self._select()
        legend()

    def set_xlim(self, *args, **kwargs):
        return None

    def set_ylim(self, *args, **kwargs):
        return None

    def axis(self, *args, **kwargs):
        return None

    def grid(self, *args, **kwargs):
        return None

    def text(self, *args, **kwargs):
        return None

    def __repr__(self):
        return "<Axes: >"

def _plt_subplots(nrows=1, ncols=1, *args, figsize=None, **kwargs):
    """(figure, axes): one Axes, a list of them for one row or column, else
    a list of rows, as matplotlib's squeezed array."""
    size = tuple(figsize) if figsize is not None else None
    subplots(nrows, ncols, size=size)
    fig = _plt_Figure(size if size is not None else (6.4, 4.8), nrows * ncols)
    axes = [[_plt_Axes(nrows, ncols, r * ncols + c + 1) for c in range(ncols)] for r in range(nrows)]
    if nrows == 1 and ncols == 1:
        return fig, axes[0][0]
    if nrows == 1:
        return fig, axes[0]
    if ncols == 1:
        return fig, [row[0] for row in axes]
    return fig, axes

def _plt_subplot(nrows, ncols, index, *args, **kwargs):
    subplot(nrows, ncols, index)
    return _plt_Axes(nrows, ncols, index)
