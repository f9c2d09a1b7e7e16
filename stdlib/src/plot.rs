//! Plots: `figure`, `plot`, `scatter`, `hist`, `imshow`, `title`, `xlabel`,
//! `ylabel`, `legend`, `savefig`, `show`, drawn with `plotters` as PNG (text
//! from the DejaVu Sans font shipped in `stdlib/fonts/`, so no system font
//! lookup) and SVG.
//!
//! As in matplotlib's pyplot there is one current figure per thread; calls
//! add to it. `show()` hands it to the front end as an image (PNG and SVG)
//! and starts a new one; front ends call `show_pending` after each cell or
//! entry, so a cell that plots shows its plot without `show()`.

use crate::args::{f64_arg, float_arg, int_arg, str_arg};
use crate::Registry;
use arr_runtime::{Error, ErrorKind, Interp, Result, RichOutput, Value};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::cell::RefCell;

const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
/// Pixels per inch of `figure(size=(w, h))` (matplotlib's default dpi).
const DPI: f64 = 100.0;
/// matplotlib's default colour cycle (tab10), so plots look familiar.
const CYCLE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

enum Series {
    Line(Vec<(f64, f64)>),
    Scatter(Vec<(f64, f64)>),
    /// Bars as (left, right, count).
    Hist(Vec<(f64, f64, f64)>),
}

/// One panel of a figure: what `plot`, `title`, `imshow`... draw into.
#[derive(Default)]
struct Axes {
    title: Option<String>,
    xlabel: Option<String>,
    ylabel: Option<String>,
    legend: bool,
    series: Vec<(Series, Option<String>)>,
    /// imshow's values, row-major, with (rows, cols).
    image: Option<(Vec<f64>, usize, usize)>,
}

struct Figure {
    size: (u32, u32),
    /// Panels in a grid of (rows, columns), row-major; `current` is drawn into.
    grid: (usize, usize),
    axes: Vec<Axes>,
    current: usize,
    /// Whether anything was drawn since the figure began.
    drawn: bool,
}

impl Default for Figure {
    fn default() -> Figure {
        Figure {
            size: (640, 480),
            grid: (1, 1),
            axes: vec![Axes::default()],
            current: 0,
            drawn: false,
        }
    }
}

impl Figure {
    fn ax(&mut self) -> &mut Axes {
        &mut self.axes[self.current]
    }

    /// A new figure of this size with a grid of empty panels.
    fn with_grid(size: (u32, u32), rows: usize, cols: usize) -> Figure {
        Figure {
            size,
            grid: (rows, cols),
            axes: (0..rows * cols).map(|_| Axes::default()).collect(),
            current: 0,
            drawn: false,
        }
    }
}

thread_local! {
    static FIGURE: RefCell<Figure> = RefCell::new(Figure::default());
}

fn with_figure<T>(f: impl FnOnce(&mut Figure) -> T) -> T {
    FIGURE.with(|fig| f(&mut fig.borrow_mut()))
}

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "figure(size=(6.4, 4.8))",
        "Start a new figure of size (width, height) in inches (100 pixels per inch).",
        figure,
    );
    r.effect_func(
        "plot(x, y=None, label=None)",
        "Line plot of y against x, or of x against its indices when y is None.",
        plot,
    );
    r.effect_func(
        "scatter(x, y, label=None)",
        "Scatter plot of the points (x[i], y[i]).",
        scatter,
    );
    r.effect_func(
        "hist(x, bins=10, label=None)",
        "Histogram of the values of x in `bins` equal-width bins.",
        hist,
    );
    r.effect_func(
        "imshow(a)",
        "Show a 2-D array as an image (viridis colours from its minimum to its maximum).",
        imshow,
    );
    r.effect_func(
        "subplots(nrows=1, ncols=1, size=None)",
        "Start a new figure with a grid of nrows x ncols panels (size in inches, as \
         figure's); drawing goes to the first panel until subplot selects another.",
        subplots,
    );
    r.effect_func(
        "subplot(nrows, ncols, index)",
        "Draw into panel index (1-based, row by row) of an nrows x ncols grid, starting \
         that grid on the current figure if it has another.",
        subplot,
    );
    r.effect_func("title(text)", "The title of the current panel.", title);
    r.effect_func(
        "xlabel(text)",
        "The x axis label of the current figure.",
        xlabel,
    );
    r.effect_func(
        "ylabel(text)",
        "The y axis label of the current figure.",
        ylabel,
    );
    r.effect_func("legend()", "Show a legend of the labelled series.", legend);
    r.effect_func(
        "savefig(path)",
        "Write the current figure to path: PNG for .png, SVG for .svg.",
        savefig,
    );
    r.effect_func(
        "show()",
        "Show the current figure (in a notebook as a cell output; in a terminal as a file whose path is printed) and start a new one.",
        show,
    );
}

fn values(name: &str, v: &Value) -> Result<Vec<f64>> {
    let t = float_arg(v)?;
    let a = t.concrete()?;
    if a.ndim() > 1 {
        return Err(Error::value_error(format!(
            "{name} must be 1-D, got shape {:?}",
            a.shape()
        )));
    }
    Ok(a.to_f64_vec()?)
}

fn label_arg(v: &Value) -> Result<Option<String>> {
    match v {
        Value::None => Ok(None),
        other => Ok(Some(str_arg("label", other)?.to_string())),
    }
}

fn points(x: &Value, y: &Value) -> Result<Vec<(f64, f64)>> {
    let (xs, ys) = match y {
        Value::None => {
            let ys = values("x", x)?;
            ((0..ys.len()).map(|i| i as f64).collect(), ys)
        }
        y => (values("x", x)?, values("y", y)?),
    };
    if xs.len() != ys.len() {
        return Err(Error::shape_error(format!(
            "x and y must have the same length, got {} and {}",
            xs.len(),
            ys.len()
        )));
    }
    Ok(xs.into_iter().zip(ys).collect())
}

fn add(series: Series, label: Option<String>) {
    with_figure(|f| {
        f.ax().series.push((series, label));
        f.drawn = true;
    });
}

fn figure(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let size = arr_runtime::numpy::sequence_items(&a[0])?;
    let [w, h] = size.as_slice() else {
        return Err(Error::value_error("figure: size must be (width, height)"));
    };
    let px = |v: &Value, name: &str| -> Result<u32> {
        let inches = f64_arg(name, v)?;
        if !(0.5..=50.0).contains(&inches) {
            return Err(Error::value_error(format!(
                "figure: {name} must be between 0.5 and 50 inches, got {inches}"
            )));
        }
        Ok((inches * DPI).round() as u32)
    };
    let size = (px(w, "width")?, px(h, "height")?);
    with_figure(|f| {
        *f = Figure {
            size,
            ..Figure::default()
        }
    });
    Ok(Value::None)
}

fn grid_arg(rows: &Value, cols: &Value) -> Result<(usize, usize)> {
    let (r, c) = (int_arg("nrows", rows)?, int_arg("ncols", cols)?);
    if !(1..=16).contains(&r) || !(1..=16).contains(&c) {
        return Err(Error::value_error(format!(
            "subplots: nrows and ncols must be between 1 and 16, got {r} and {c}"
        )));
    }
    Ok((r as usize, c as usize))
}

fn subplots(i: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (rows, cols) = grid_arg(&a[0], &a[1])?;
    if !matches!(a[2], Value::None) {
        figure(i, vec![a[2].clone()])?;
    }
    with_figure(|f| *f = Figure::with_grid(f.size, rows, cols));
    Ok(Value::None)
}

fn subplot(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (rows, cols) = grid_arg(&a[0], &a[1])?;
    let index = int_arg("index", &a[2])?;
    if index < 1 || index as usize > rows * cols {
        return Err(Error::value_error(format!(
            "subplot: index {index} is outside 1..{} of a {rows}x{cols} grid",
            rows * cols
        )));
    }
    with_figure(|f| {
        if f.grid != (rows, cols) {
            let drawn = f.drawn;
            *f = Figure::with_grid(f.size, rows, cols);
            f.drawn = drawn;
        }
        f.current = index as usize - 1;
    });
    Ok(Value::None)
}

fn plot(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    add(Series::Line(points(&a[0], &a[1])?), label_arg(&a[2])?);
    Ok(Value::None)
}

fn scatter(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    add(Series::Scatter(points(&a[0], &a[1])?), label_arg(&a[2])?);
    Ok(Value::None)
}

fn hist(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let xs: Vec<f64> = values("x", &a[0])?
        .into_iter()
        .filter(|x| x.is_finite())
        .collect();
    let bins = int_arg("bins", &a[1])?;
    if !(1..=10_000).contains(&bins) {
        return Err(Error::value_error("hist: bins must be between 1 and 10000"));
    }
    let bins = bins as usize;
    let (lo, hi) = range_of(xs.iter().copied());
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0.0; bins];
    for x in &xs {
        let i = (((x - lo) / width) as usize).min(bins - 1);
        counts[i] += 1.0;
    }
    let bars = counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| (lo + i as f64 * width, lo + (i + 1) as f64 * width, c))
        .collect();
    add(Series::Hist(bars), label_arg(&a[2])?);
    Ok(Value::None)
}

fn imshow(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let t = float_arg(&a[0])?;
    let arr = t.concrete()?;
    let [rows, cols] = *arr.shape() else {
        return Err(Error::value_error(format!(
            "imshow needs a 2-D array, got shape {:?}",
            arr.shape()
        )));
    };
    if rows == 0 || cols == 0 || rows * cols > 4_000_000 {
        return Err(Error::value_error(
            "imshow: the array must be non-empty and at most 4M elements",
        ));
    }
    let data = arr.to_f64_vec()?;
    with_figure(|f| {
        f.ax().image = Some((data, rows, cols));
        f.drawn = true;
    });
    Ok(Value::None)
}

fn set_text(a: &[Value], set: impl FnOnce(&mut Figure, String)) -> Result<Value> {
    let text = arr_runtime::display::str(&a[0]);
    with_figure(|f| set(f, text));
    Ok(Value::None)
}

fn title(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    set_text(&a, |f, t| f.ax().title = Some(t))
}

fn xlabel(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    set_text(&a, |f, t| f.ax().xlabel = Some(t))
}

fn ylabel(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    set_text(&a, |f, t| f.ax().ylabel = Some(t))
}

fn legend(_: &mut Interp, _: Vec<Value>) -> Result<Value> {
    with_figure(|f| f.ax().legend = true);
    Ok(Value::None)
}

fn savefig(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let path = str_arg("path", &a[0])?;
    let lower = path.to_ascii_lowercase();
    let bytes = if lower.ends_with(".png") {
        with_figure(|f| render_png(f))?
    } else if lower.ends_with(".svg") {
        with_figure(|f| render_svg(f))?.into_bytes()
    } else {
        return Err(Error::value_error(format!(
            "savefig: '{path}' must end in .png or .svg"
        )));
    };
    std::fs::write(path, bytes)
        .map_err(|e| Error::new(ErrorKind::IOError, format!("cannot write '{path}': {e}")))?;
    Ok(Value::None)
}

fn show(interp: &mut Interp, _: Vec<Value>) -> Result<Value> {
    let image = with_figure(|f| -> Result<_> {
        let formats = vec![
            ("image/png", render_png(f)?),
            ("image/svg+xml", render_svg(f)?.into_bytes()),
        ];
        *f = Figure::default();
        Ok(formats)
    })?;
    interp.emit(RichOutput::Image {
        formats: image,
        display_id: None,
        update: false,
    });
    Ok(Value::None)
}

/// Show the current figure if anything was drawn on it since the last
/// `show()`: front ends call this after each cell or entry.
pub fn show_pending(interp: &mut Interp) -> Result<()> {
    if with_figure(|f| f.drawn) {
        show(interp, Vec::new())?;
    }
    Ok(())
}

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::RuntimeError, format!("plot: {e}"))
}

fn render_png(f: &Figure) -> Result<Vec<u8>> {
    static FONT_ONCE: std::sync::Once = std::sync::Once::new();
    FONT_ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let (w, h) = f.size;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(f, &root)?;
        root.present().map_err(plot_error)?;
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header().map_err(plot_error)?;
    writer.write_image_data(&rgb).map_err(plot_error)?;
    writer.finish().map_err(plot_error)?;
    Ok(png_bytes)
}

fn render_svg(f: &Figure) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, f.size).into_drawing_area();
        draw(f, &root)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// The smallest and largest finite value, widened when they are equal.
fn range_of(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return (0.0, 1.0);
    }
    if lo == hi {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

/// A little margin around the data, as matplotlib leaves.
fn padded((lo, hi): (f64, f64)) -> std::ops::Range<f64> {
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// A tick label: short (`2`, `0.25`, `1.5e+06`), and never `-0` (which a
/// padded range produces for ticks at zero).
fn tick(v: f64) -> String {
    let a = v.abs();
    if a < 1e-12 {
        return "0".into();
    }
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.2e}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Viridis, by linear interpolation between five of its colours.
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x as usize).min(STOPS.len() - 2);
    let u = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * u).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn draw<DB: DrawingBackend>(fig: &Figure, root: &DrawingArea<DB, Shift>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(plot_error)?;
    for (area, axes) in root.split_evenly(fig.grid).iter().zip(&fig.axes) {
        draw_axes(axes, area)?;
    }
    Ok(())
}

fn draw_axes<DB: DrawingBackend>(f: &Axes, root: &DrawingArea<DB, Shift>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56);
    if let Some(t) = &f.title {
        builder.caption(t, ("sans-serif", 20));
    }
    if let Some((data, rows, cols)) = &f.image {
        let (rows, cols) = (*rows, *cols);
        let mut chart = builder
            .build_cartesian_2d(0.0..cols as f64, rows as f64..0.0)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(f.xlabel.clone().unwrap_or_default())
            .y_desc(f.ylabel.clone().unwrap_or_default())
            .draw()
            .map_err(plot_error)?;
        let (lo, hi) = range_of(data.iter().copied());
        chart
            .draw_series((0..rows).flat_map(|r| {
                (0..cols).map(move |c| {
                    let t = (data[r * cols + c] - lo) / (hi - lo);
                    Rectangle::new(
                        [(c as f64, r as f64), (c as f64 + 1.0, r as f64 + 1.0)],
                        viridis(t).filled(),
                    )
                })
            }))
            .map_err(plot_error)?;
        return Ok(());
    }
    let xs = f.series.iter().flat_map(|(s, _)| match s {
        Series::Line(p) | Series::Scatter(p) => p.iter().map(|p| p.0).collect::<Vec<_>>(),
        Series::Hist(b) => b.iter().flat_map(|b| [b.0, b.1]).collect(),
    });
    let ys = f.series.iter().flat_map(|(s, _)| match s {
        Series::Line(p) | Series::Scatter(p) => p.iter().map(|p| p.1).collect::<Vec<_>>(),
        Series::Hist(b) => b.iter().flat_map(|b| [0.0, b.2]).collect(),
    });
    let mut chart = builder
        .build_cartesian_2d(padded(range_of(xs)), padded(range_of(ys)))
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        // One light grid line per tick, no minor lines: readable, and small files.
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT)
        .x_desc(f.xlabel.clone().unwrap_or_default())
        .y_desc(f.ylabel.clone().unwrap_or_default())
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(plot_error)?;
    for (i, (series, label)) in f.series.iter().enumerate() {
        let color = CYCLE[i % CYCLE.len()];
        let drawn =
            match series {
                Series::Line(p) => chart
                    .draw_series(LineSeries::new(
                        p.iter()
                            .copied()
                            .filter(|p| p.0.is_finite() && p.1.is_finite()),
                        color.stroke_width(2),
                    ))
                    .map_err(plot_error)?,
                Series::Scatter(p) => chart
                    .draw_series(
                        p.iter()
                            .filter(|p| p.0.is_finite() && p.1.is_finite())
                            .map(|&p| Circle::new(p, 3, color.filled())),
                    )
                    .map_err(plot_error)?,
                Series::Hist(bars) => chart
                    .draw_series(bars.iter().map(|&(l, r, c)| {
                        Rectangle::new([(l, 0.0), (r, c)], color.mix(0.75).filled())
                    }))
                    .map_err(plot_error)?,
            };
        if let Some(label) = label {
            drawn.label(label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if f.legend && f.series.iter().any(|(_, l)| l.is_some()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(plot_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1x2 grid: each panel draws its own series in its own half.
    #[test]
    fn subplots_draw_each_panel_in_its_cell() {
        let line = |k: f64| Axes {
            series: vec![(
                Series::Line((0..20).map(|i| (i as f64, k * i as f64)).collect()),
                None,
            )],
            ..Axes::default()
        };
        let mut f = Figure::with_grid((640, 320), 1, 2);
        f.axes = vec![line(1.0), Axes::default()];
        let svg_one = render_svg(&f).unwrap();
        f.axes = vec![line(1.0), line(-1.0)];
        let svg_two = render_svg(&f).unwrap();
        // Each panel's first series takes the first colour of the cycle.
        let lines = |svg: &str| svg.to_ascii_uppercase().matches("#1F77B4").count();
        assert_eq!(lines(&svg_two), 2 * lines(&svg_one), "{svg_two}");
        assert!(render_png(&f).unwrap().starts_with(b"\x89PNG"));
    }

    #[test]
    fn a_png_has_its_size_and_colours() {
        let f = Figure {
            axes: vec![Axes {
                title: Some("sine".into()),
                series: vec![(
                    Series::Line(
                        (0..50)
                            .map(|i| (i as f64, (i as f64 / 5.0).sin()))
                            .collect(),
                    ),
                    Some("sin".into()),
                )],
                legend: true,
                ..Axes::default()
            }],
            ..Figure::default()
        };
        let png_bytes = render_png(&f).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (640, 480));
        let pixels: std::collections::HashSet<&[u8]> = buf.chunks(3).collect();
        assert!(
            pixels.len() > 10,
            "a plot has many colours, got {}",
            pixels.len()
        );
        assert!(
            pixels.contains([31u8, 119, 180].as_slice()),
            "the line's colour"
        );
        assert_eq!(
            [
                tick(-0.0),
                tick(-1e-17),
                tick(2.0),
                tick(0.25),
                tick(1.5e6),
                tick(-0.5)
            ],
            ["0", "0", "2", "0.25", "1.50e6", "-0.5"]
        );
        let svg = render_svg(&f).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("sine"));
    }
}
