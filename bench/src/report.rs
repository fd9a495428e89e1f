//! The output every sweep benchmark gives: a table on stdout, the same
//! numbers as CSV, and an SVG line chart.
//!
//! A [`Report`] is a set of named series of (x, y) points that share one
//! x axis (message size, connection count, dirty bytes, ranks...). The CSV
//! is long-form, `series,<x name>,<y name>`, so any tool can pivot it.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

/// One named line of measurements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend label, e.g. `"BOTF"`.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// Series sharing one x axis, with the labels a table and a chart need.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Chart title and the table's heading.
    pub title: String,
    /// What x is, e.g. `"bytes"`; also the CSV column name.
    pub x_name: String,
    /// What y is, e.g. `"MB/s"`; also the CSV column name.
    pub y_name: String,
    /// Draw x on a log2 scale (message-size sweeps).
    pub log_x: bool,
    /// Draw y on a log10 scale (latencies spanning decades); points at or
    /// below zero are left out of the chart (not of the table or CSV).
    pub log_y: bool,
    /// The measurements.
    pub series: Vec<Series>,
}

impl Report {
    /// An empty report.
    pub fn new(title: &str, x_name: &str, y_name: &str, log_x: bool) -> Self {
        Self {
            title: title.into(),
            x_name: x_name.into(),
            y_name: y_name.into(),
            log_x,
            log_y: false,
            series: Vec::new(),
        }
    }

    /// Adds a point to the series `name`, creating it on first use.
    pub fn push(&mut self, name: &str, x: f64, y: f64) {
        match self.series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((x, y)),
            None => self.series.push(Series {
                name: name.into(),
                points: vec![(x, y)],
            }),
        }
    }

    /// The table: one row per x, one column per series.
    pub fn table(&self) -> String {
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let mut out = format!("# {} ({})\n{:>12}", self.title, self.y_name, self.x_name);
        for s in &self.series {
            let _ = write!(out, " {:>14}", s.name);
        }
        out.push('\n');
        for x in xs {
            let _ = write!(out, "{:>12}", trim(x));
            for s in &self.series {
                match s.points.iter().find(|p| p.0 == x) {
                    Some(p) => {
                        let _ = write!(out, " {:>14.2}", p.1);
                    }
                    None => {
                        let _ = write!(out, " {:>14}", "-");
                    }
                }
            }
            out.push('\n');
        }
        out
    }

    /// The long-form CSV: `series,<x>,<y>` then one line per point.
    pub fn csv(&self) -> String {
        let mut out = format!("series,{},{}\n", self.x_name, self.y_name);
        for s in &self.series {
            for &(x, y) in &s.points {
                let _ = writeln!(out, "{},{},{}", s.name, trim(x), (y * 1e3).round() / 1e3);
            }
        }
        out
    }

    /// Appends the CSV lines to `path`, with the header only if the file
    /// is new or empty: runs of one benchmark (one per transport, say) add
    /// their series to one file.
    ///
    /// # Errors
    ///
    /// Opening or writing the file failed.
    pub fn append_csv(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let csv = self.csv();
        let body = if f.metadata()?.len() == 0 {
            csv.as_str()
        } else {
            csv.split_once('\n').map_or("", |(_, rest)| rest)
        };
        f.write_all(body.as_bytes())
    }

    /// Reads what [`Report::csv`] (or several [`Report::append_csv`])
    /// wrote; the axis names come from the header.
    ///
    /// # Errors
    ///
    /// A missing header or a line that is not `series,number,number`.
    pub fn from_csv(title: &str, log_x: bool, text: &str) -> Result<Self, String> {
        let mut lines = text.lines();
        let header = lines.next().ok_or("empty CSV")?;
        let [_, x_name, y_name] = header.split(',').collect::<Vec<_>>()[..] else {
            return Err(format!("header {header:?} is not series,<x>,<y>"));
        };
        let mut r = Self::new(title, x_name, y_name, log_x);
        for (n, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(',').collect();
            let parsed = match fields[..] {
                [name, x, y] => x
                    .parse()
                    .ok()
                    .zip(y.parse().ok())
                    .map(|(x, y)| (name, x, y)),
                _ => None,
            };
            let (name, x, y) = parsed.ok_or_else(|| format!("line {}: {line:?}", n + 2))?;
            r.push(name, x, y);
        }
        Ok(r)
    }

    /// Prints the table and, when `prefix` is given, writes
    /// `<prefix>.csv` and `<prefix>.svg`.
    ///
    /// # Errors
    ///
    /// Writing either file failed.
    pub fn emit(&self, prefix: Option<&Path>) -> Result<(), Box<dyn std::error::Error>> {
        print!("{}", self.table());
        if let Some(prefix) = prefix {
            let csv = prefix.with_extension("csv");
            std::fs::write(&csv, self.csv())?;
            let svg = prefix.with_extension("svg");
            self.draw(&svg)?;
            println!("wrote {} and {}", csv.display(), svg.display());
        }
        Ok(())
    }

    /// Draws the series as lines with markers into an SVG file.
    ///
    /// # Errors
    ///
    /// There is nothing to draw, or writing the file failed.
    pub fn draw(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let log_y = self.log_y;
        let drawn = |p: &(f64, f64)| !log_y || p.1 > 0.0;
        let points = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().copied())
                .filter(drawn)
        };
        if points().next().is_none() {
            return Err(format!("{}: nothing to draw", self.title).into());
        }
        let fx = |x: f64| if self.log_x { x.max(1.0).log2() } else { x };
        let fy = |y: f64| if log_y { y.log10() } else { y };
        let (x_lo, x_hi) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(fx(p.0)), hi.max(fx(p.0)))
        });
        let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
        let (y_lo, y_hi) = if log_y {
            let (lo, hi) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(fy(p.1)), hi.max(fy(p.1)))
            });
            (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
        } else {
            (
                0.0,
                (points().map(|p| p.1).fold(0.0f64, f64::max) * 1.1).max(1e-9),
            )
        };
        let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
        let log_x = self.log_x;
        let x_desc = if log_x {
            format!("{} (log2 scale)", self.x_name)
        } else {
            self.x_name.clone()
        };
        let y_desc = if log_y {
            format!("{} (log10 scale)", self.y_name)
        } else {
            self.y_name.clone()
        };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .y_label_formatter(&|y| {
                if log_y {
                    format!("{}", 10f64.powf(*y))
                } else {
                    format!("{y}")
                }
            })
            .x_label_formatter(&|x| {
                if log_x {
                    trim(2f64.powf(*x).round())
                } else {
                    trim(*x)
                }
            })
            .draw()?;
        for (i, s) in self.series.iter().enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            let line: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| drawn(p))
                .map(|&(x, y)| (fx(x), fy(y)))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour));
            chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, colour.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }
}

/// `1024` rather than `1024.0`; fractions kept.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new("t", "bytes", "MB/s", true);
        r.push("a", 8.0, 1.5);
        r.push("b", 8.0, 2.0);
        r.push("a", 1024.0, 10.0);
        r
    }

    #[test]
    fn csv_is_long_form() {
        assert_eq!(
            sample().csv(),
            "series,bytes,MB/s\na,8,1.5\na,1024,10\nb,8,2\n"
        );
    }

    #[test]
    fn table_has_a_column_per_series_and_dashes_for_gaps() {
        let t = sample().table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[1].contains('a') && lines[1].contains('b'));
        assert!(
            lines[3].starts_with("        1024") && lines[3].ends_with('-'),
            "{t}"
        );
    }

    #[test]
    fn appended_runs_read_back_as_one_report() {
        let path = std::env::temp_dir().join(format!("o2g-report-{}.csv", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut a = Report::new("t", "bytes", "MB/s", true);
        a.push("a", 8.0, 1.5);
        let mut b = Report::new("t", "bytes", "MB/s", true);
        b.push("b", 8.0, 2.0);
        a.append_csv(&path).unwrap();
        b.append_csv(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let back = Report::from_csv("t", true, &text).unwrap();
        assert_eq!(back.series.len(), 2);
        assert_eq!(back.csv(), "series,bytes,MB/s\na,8,1.5\nb,8,2\n");
        assert!(Report::from_csv("t", true, "series,x,y\na,1\n").is_err());
        assert!(Report::from_csv("t", true, "").is_err());
    }

    #[test]
    fn draws_an_svg_with_the_legend() {
        let path = std::env::temp_dir().join(format!("o2g-report-{}.svg", std::process::id()));
        sample().draw(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(svg.starts_with("<svg") && texts.contains(&"a") && texts.contains(&"b"));
        assert!(Report::new("e", "x", "y", false).draw(&path).is_err());
        let mut log = sample();
        log.log_y = true;
        log.push("a", 2048.0, 0.0);
        log.draw(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.contains("(log10 scale)"));
    }
}
