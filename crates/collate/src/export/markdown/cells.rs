//! Table cells of the Markdown reports: figures with one decimal, a
//! figure with its confidence half-width or its interval, a signed difference, and a dash
//! where there is no figure.

/// A figure with one decimal, or a dash for none.
pub fn o(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
}

/// A figure ± its half-width, one decimal each.
pub fn pm(v: Option<f64>, ci: Option<f64>) -> String {
    match (v, ci) {
        (Some(v), Some(c)) => format!("{v:.1} ± {c:.1}"),
        (Some(v), None) => format!("{v:.1}"),
        (None, _) => "–".into(),
    }
}

/// A figure with its 95 % interval, `1547.9 [1480.2, 1601.0]`: one decimal
/// each, the figure alone where it has no interval.
pub fn within(v: Option<f64>, ci: Option<powerlab_analysis::cycle::Bounds>) -> String {
    match (v, ci) {
        (Some(v), Some(b)) => format!("{v:.1} [{:.1}, {:.1}]", b.lo, b.hi),
        (v, _) => o(v),
    }
}

/// A signed difference ± its half-width.
pub fn signed(v: Option<f64>, ci: Option<f64>) -> String {
    match (v, ci) {
        (Some(v), Some(c)) => format!("{v:+.1} ± {c:.1}"),
        (Some(v), None) => format!("{v:+.1}"),
        (None, _) => "–".into(),
    }
}

/// A count of GPUs in words: `1 GPU`, `8 GPUs`.
pub use powerlab_core::words::gpus;

/// Text the run brought (a rung label, a phase, campaign or host name, a
/// GPU's model or UUID, a fault's words) made safe for a Markdown table
/// cell or running text: a control character (a newline would end the
/// table row) becomes a space; `|` (a cell boundary) and the characters
/// that start markup (`\`, `` ` ``, `*`, `[`, `]`) are backslash-escaped;
/// `<`, `>` and `&` become entities, so that no tag or entity in the text
/// reaches a Markdown viewer or `report.html` as markup.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if c.is_control() => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' | '\\' | '`' | '*' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text the run brought, for the inside of a code span (`` `label` ``),
/// where Markdown shows every character as it is: a control character
/// becomes a space, a backtick (which would close the span) a `'`, and `|`
/// is escaped (a code span in a table cell still ends at a bare `|`).
pub fn code(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            c if c.is_control() => " ".to_string(),
            '`' => "'".to_string(),
            '|' => "\\|".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// `w` with its first letter in upper case.
pub fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31, defect 10: names went raw into the reports.
    #[test]
    fn defect10_text_from_the_run_cannot_split_a_cell_or_open_a_tag() {
        let hostile = "a|b\nc<script>alert(1)</script>&amp;`x`*y*[z]";
        let t = text(hostile);
        assert_eq!(
            t,
            "a\\|b c&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;\\`x\\`\\*y\\*\\[z\\]"
        );
        let c = code(hostile);
        assert_eq!(c, "a\\|b c<script>alert(1)</script>&amp;'x'*y*[z]");
        // Plain labels pass unchanged.
        assert_eq!(text("sweep/p500ms/in_phase/r2"), "sweep/p500ms/in_phase/r2");
        assert_eq!(code("idle/no-context"), "idle/no-context");
        // A table row keeps its columns, and renders no tag, either way.
        let md = format!(
            "| a | b | c |\n|---|---|---|\n| {} | `{}` | 1 |\n",
            text(hostile),
            code(hostile)
        );
        let mut html = String::new();
        pulldown_cmark::html::push_html(
            &mut html,
            pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES),
        );
        assert_eq!(html.matches("<td>").count(), 3, "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }
}
