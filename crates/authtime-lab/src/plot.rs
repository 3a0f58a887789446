//! Line plots, as SVG (no font needed) and PNG (with the DejaVu font that
//! Debian's `fonts-dejavu-core` installs; nothing is bundled).

use std::path::Path;

use plotters::prelude::*;

/// One line of a plot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Series {
    /// Legend.
    pub name: String,
    /// Points (x, y); non-positive values are skipped on log axes.
    pub points: Vec<(f64, f64)>,
}

/// A plot: several series over shared axes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plot {
    /// File name without extension.
    pub stem: String,
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Registers the DejaVu font with plotters once; `None` when it is not installed.
pub fn load_font() -> Option<()> {
    static LOADED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *LOADED.get_or_init(|| {
        let Some(bytes) = FONT_PATHS.iter().find_map(|p| std::fs::read(p).ok()) else {
            return false;
        };
        // plotters keeps fonts for the life of the process: leak the one copy.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
    });
    ok.then_some(())
}

impl Plot {
    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| {
                x.is_finite()
                    && y.is_finite()
                    && (!self.log_x || *x > 0.0)
                    && (!self.log_y || *y > 0.0)
            });
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            return ((1.0, 10.0), (1.0, 10.0));
        }
        let pad = |lo: f64, hi: f64, log: bool| {
            if log {
                (lo / 1.5, hi * 1.5)
            } else {
                (lo.min(0.0), hi + (hi - lo).abs() * 0.1 + 1e-9)
            }
        };
        (pad(x0, x1, self.log_x), pad(y0, y1, self.log_y))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("plot {}: {e:?}", self.stem);
        root.fill(&WHITE).map_err(err)?;
        let ((x0, x1), (y0, y1)) = self.bounds();
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70);
        let colors = [
            &BLUE,
            &RED,
            &GREEN,
            &MAGENTA,
            &CYAN,
            &BLACK,
            &RGBColor(230, 140, 0),
            &RGBColor(120, 60, 160),
        ];
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label.as_str())
                    .y_desc(self.y_label.as_str())
                    .draw()
                    .map_err(err)?;
                for (i, s) in self.series.iter().enumerate() {
                    let color = colors[i % colors.len()];
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|(x, y)| (!self.log_x || *x > 0.0) && (!self.log_y || *y > 0.0))
                        .collect();
                    chart
                        .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                        .map_err(err)?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                        });
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(err)?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(err)?;
            }};
        }
        match (self.log_x, self.log_y) {
            (true, true) => body!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                    .map_err(err)?
            ),
            (true, false) => body!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                    .map_err(err)?
            ),
            (false, true) => body!(
                builder
                    .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                    .map_err(err)?
            ),
            (false, false) => body!(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?),
        }
        root.present().map_err(err)
    }

    /// Writes `<stem>.svg` into `dir`; returns the file name.
    ///
    /// # Errors
    /// A message when drawing or writing fails.
    pub fn write_svg(&self, dir: &Path) -> Result<String, String> {
        let name = format!("{}.svg", self.stem);
        let path = dir.join(&name);
        self.draw(SVGBackend::new(&path, (900, 560)).into_drawing_area())?;
        Ok(name)
    }

    /// Writes `<stem>.png` into `dir` (needs [`load_font`]); returns the file name.
    ///
    /// # Errors
    /// A message when drawing or writing fails.
    pub fn write_png(&self, dir: &Path) -> Result<String, String> {
        let name = format!("{}.png", self.stem);
        let path = dir.join(&name);
        self.draw(BitMapBackend::new(&path, (900, 560)).into_drawing_area())?;
        Ok(name)
    }
}
