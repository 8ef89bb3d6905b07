//! Counts in words for messages and reports: `1 GPU`, `8 GPUs`; text
//! from a file made safe to print on a terminal ([`shown`]).

/// A count of GPUs in words: `1 GPU`, `8 GPUs`.
pub fn gpus(n: usize) -> String {
    if n == 1 {
        "1 GPU".into()
    } else {
        format!("{n} GPUs")
    }
}

/// `text` as a terminal may print it: every control character (C0, DEL,
/// C1) and every character that reorders or hides text (bidirectional
/// overrides and isolates, zero-width joiners, the BOM) written as an
/// escape (`\r`, `\u{1b}`, `\u{202e}`), and a backslash doubled, so that
/// what is printed is what the file holds, and a carriage return or an
/// ANSI sequence cannot paint one command over another.
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hides(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// A character that is not itself printed, or moves or hides others.
fn hides(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x2069 | 0xfeff | 0xfff9..=0xfffb
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_and_reordering_characters_are_escaped() {
        assert_eq!(super::shown("python3 train.py"), "python3 train.py");
        assert_eq!(
            super::shown("a\rb\u{1b}[2Kc\u{202e}d\\e\u{0}"),
            "a\\rb\\u{1b}[2Kc\\u{202e}d\\\\e\\u{0}"
        );
        assert_eq!(super::shown("naïve µs"), "naïve µs");
    }

    #[test]
    fn one_gpu_is_singular() {
        assert_eq!(super::gpus(1), "1 GPU");
        assert_eq!(super::gpus(0), "0 GPUs");
        assert_eq!(super::gpus(8), "8 GPUs");
    }
}
