//! Draws what `o2g-compare` measured (its CSV: `label,rep,mops`) as an SVG
//! bar chart: the median Mop/s of each label, with a line from the
//! slowest to the fastest repetition.
//!
//! ```text
//! o2g-plot --csv results/<date>/is.csv --title "NAS-IS-style class A, 4 ranks" --out is.svg
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;
use plotters::prelude::*;

#[derive(Parser)]
#[command(about = "Bar chart (SVG) of o2g-compare's CSV")]
struct Args {
    /// The CSV o2g-compare wrote.
    #[arg(long)]
    csv: PathBuf,
    /// Chart title.
    #[arg(long, default_value = "NAS-IS-style integer sort")]
    title: String,
    /// Where to write the SVG.
    #[arg(long)]
    out: PathBuf,
}

/// Measurements per label, in the order the labels first appear.
fn read(text: &str) -> Result<Vec<(String, Vec<f64>)>, String> {
    let mut order = Vec::new();
    let mut by_label: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let [label, _rep, value] = fields[..] else {
            return Err(format!("line {}: expected label,rep,mops", n + 1));
        };
        let v: f64 = value
            .parse()
            .map_err(|_| format!("line {}: {value:?} is not a number", n + 1))?;
        if !by_label.contains_key(label) {
            order.push(label.to_owned());
        }
        by_label.entry(label.to_owned()).or_default().push(v);
    }
    Ok(order
        .into_iter()
        .map(|l| {
            let v = by_label.remove(&l).unwrap_or_default();
            (l, v)
        })
        .collect())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-plot", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let data = read(&std::fs::read_to_string(&args.csv)?)?;
    if data.is_empty() {
        return Err(format!("{}: no measurements", args.csv.display()).into());
    }
    let top = data
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        * 1.15;
    let n = data.len() as i32;
    let root = SVGBackend::new(&args.out, (720, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&args.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d((0..n).into_segmented(), 0.0..top.max(1e-9))?;
    let names: Vec<String> = data.iter().map(|(l, _)| l.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("Mop/s (median; line: min to max)")
        .x_labels(data.len())
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(
        Histogram::vertical(&chart)
            .style(RGBColor(70, 110, 170).filled())
            .margin(24)
            .data(
                data.iter()
                    .enumerate()
                    .map(|(i, (_, v))| (i as i32, median(v))),
            ),
    )?;
    for (i, (_, v)) in data.iter().enumerate() {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        let x = SegmentValue::CenterOf(i as i32);
        chart.draw_series(LineSeries::new(
            [(x.clone(), lo), (x, hi)],
            BLACK.stroke_width(2),
        ))?;
    }
    root.present()?;
    println!("wrote {}", args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_labels_in_order() {
        let d = read("label,rep,mops\nb,1,2\na,1,3\nb,2,4\n").unwrap();
        assert_eq!(
            d,
            vec![("b".into(), vec![2.0, 4.0]), ("a".into(), vec![3.0])]
        );
        assert!(read("label,rep,mops\nx,1\n").is_err());
        assert!(read("label,rep,mops\nx,1,y\n").is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0]), 1.5);
    }
}
