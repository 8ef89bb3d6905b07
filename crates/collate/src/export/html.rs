//! `report.html`: the report in one self-contained file to send on —
//! `report.md` rendered (CommonMark with tables), every plot it names
//! inlined as SVG markup, no script, no external reference. A plot file
//! that is missing shows as a marked gap (`class="missing-plot"`), never
//! as a broken link.

use crate::report::Report;
use powerlab_samples::error::CollateError;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd, html};
use std::path::{Path, PathBuf};

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#111}\
h1{font-size:1.4em;border-bottom:2px solid #c33;padding-bottom:.3em}\
h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}\
th{background:#f3f3f3}\
figure.plot{margin:1em 0}figure.plot svg{max-width:100%;height:auto}\
.missing-plot{color:#c33;font-weight:bold}\
code{background:#f5f5f5;padding:0 3px}";

/// Renders `<dir>/report.md` into `<dir>/report.html`, inlining the SVG
/// plots it names (relative to `dir`).
///
/// # Errors
///
/// [`CollateError::Io`] when `report.md` cannot be read or
/// `report.html` cannot be written.
pub fn write_html(dir: &Path, title: &str) -> Result<PathBuf, CollateError> {
    let md_path = dir.join(powerlab_rundir::ReportFile::ReportMd.file_name());
    let md = std::fs::read_to_string(&md_path).map_err(|e| CollateError::io(&md_path, e))?;
    let body = render(&md, dir);
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        escape(title)
    );
    let path = dir.join(powerlab_rundir::ReportFile::ReportHtml.file_name());
    std::fs::write(&path, page).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// Markdown → HTML, each image replaced by its SVG file's markup, its alt
/// text the figure's caption.
fn render(md: &str, dir: &Path) -> String {
    let mut events = Vec::new();
    // The image being read: its link and alt text so far.
    let mut image: Option<(String, String)> = None;
    // Where the last figure was pushed (0: none yet).
    let mut lone_figure = 0;
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Image { dest_url, .. }) => {
                image = Some((dest_url.to_string(), String::new()));
            }
            Event::End(TagEnd::Image) => {
                if let Some((src, alt)) = image.take() {
                    events.push(Event::Html(figure(dir, &src, &alt).into()));
                    lone_figure = events.len() - 1;
                }
            }
            // A paragraph that holds only a figure is the figure: a
            // `<figure>` inside a `<p>` is not HTML (a browser closes the
            // paragraph before it and leaves an empty one after).
            Event::End(TagEnd::Paragraph)
                if lone_figure + 1 == events.len()
                    && lone_figure >= 1
                    && matches!(events[lone_figure - 1], Event::Start(Tag::Paragraph)) =>
            {
                events.remove(lone_figure - 1);
            }
            Event::Text(t) | Event::Code(t) if image.is_some() => {
                if let Some((_, alt)) = image.as_mut() {
                    alt.push_str(&t);
                }
            }
            // Anything else inside the alt text is dropped.
            _ if image.is_some() => {}
            // Raw HTML in the Markdown is passed on only where it is the
            // report's own folding (`<details>`, `<summary>`); anything
            // else (a tag that came in with a name) is shown as text.
            Event::Html(h) if !is_own_markup(&h) => events.push(Event::Text(h)),
            Event::InlineHtml(h) if !is_own_markup(&h) => events.push(Event::Text(h)),
            other => events.push(other),
        }
    }
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}

/// The only tags the report's Markdown writes itself: `<details>` and
/// `<summary>`, opening and closing, without attributes. Raw HTML that
/// holds any other `<` is not the report's own.
fn is_own_markup(html: &str) -> bool {
    let mut rest = html.to_string();
    for tag in ["<details>", "</details>", "<summary>", "</summary>"] {
        rest = rest.replace(tag, "");
    }
    !rest.contains('<')
}

/// An inline SVG plot in a figure captioned with its alt text (its file
/// where it has none), or a marked gap.
fn figure(dir: &Path, src: &str, alt: &str) -> String {
    let safe =
        !src.contains("..") && !src.starts_with('/') && powerlab_rundir::PlotFile::is_svg_link(src);
    let svg = safe
        .then(|| std::fs::read_to_string(dir.join(src)).ok())
        .flatten()
        .and_then(|t| t.find("<svg").map(|i| t[i..].to_string()));
    match svg {
        Some(svg) => format!(
            "<figure class=\"plot\" data-src=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
            escape(src),
            escape(if alt.is_empty() { src } else { alt })
        ),
        None => format!(
            "<p class=\"missing-plot\" data-src=\"{}\">plot {} is missing from this report</p>",
            escape(src),
            escape(src)
        ),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `report.html`, rendered from the `report.md` written before it.
pub struct Html;

impl super::Exporter for Html {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        Ok(vec![write_html(dir, &report.title)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inlines_the_plots_and_marks_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(
            dir.path()
                .join(powerlab_rundir::ReportFile::Plots.file_name()),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("plots/a.svg"),
            "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\"><rect width=\"5\" height=\"5\"/></svg>",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(powerlab_rundir::ReportFile::ReportMd.file_name()),
            "# Run <x>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![first](plots/a.svg)\n\n![second](plots/b.svg)\n",
        )
        .unwrap();
        let p = write_html(dir.path(), "run <x>").unwrap();
        let h = std::fs::read_to_string(p).unwrap();
        assert!(h.contains("<title>run &lt;x&gt;</title>"), "{h}");
        assert!(h.contains("<table>") && h.contains("<td>2</td>"), "{h}");
        assert!(
            h.contains("<figure class=\"plot\" data-src=\"plots/a.svg\"><svg width"),
            "{h}"
        );
        assert!(h.contains("<figcaption>first</figcaption>"), "{h}");
        assert!(!h.contains("<?xml"), "{h}");
        assert!(
            h.contains("class=\"missing-plot\" data-src=\"plots/b.svg\""),
            "{h}"
        );
        assert!(!h.contains("<img"), "no external image: {h}");
    }

    /// Issue 31, defect 10: raw HTML that reached `report.md` (a name
    /// with a tag, from a manifest edited by hand) became live tags.
    #[test]
    fn defect10_only_the_reports_own_folding_passes_as_html() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(powerlab_rundir::ReportFile::ReportMd.file_name()),
            "# Run <script>alert(1)</script>\n\n| a | b |\n|---|---|\n| x<img src=x onerror=alert(2)> | 2 |\n\n<script>alert(3)</script>\n\n<details><summary>Every GPU (2 rows)</summary>\n\n| c |\n|---|\n| 1 |\n\n</details>\n\n<details><script>alert(4)</script>\n",
        )
        .unwrap();
        let h = std::fs::read_to_string(write_html(dir.path(), "t").unwrap()).unwrap();
        assert!(!h.contains("<script"), "{h}");
        assert!(!h.contains("<img"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)"), "{h}");
        assert!(
            h.contains("<details><summary>Every GPU (2 rows)</summary>"),
            "{h}"
        );
        assert!(h.contains("</details>"), "{h}");
    }
}
