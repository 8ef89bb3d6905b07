"""What the shape scripts (`by-hand.py`, `circles.py`) read of a Rust
source file: its code without `#[cfg(test)]` items and without comments,
line numbers kept."""
import re


def without_tests(text):
    """Blanks every `#[cfg(test)]` item: a `mod x;` line, or the braced
    item that follows (braces counted; enough for test modules)."""
    out, i = [], 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            return "".join(out) + text[i:]
        out.append(text[i:j])
        k = j + len("#[cfg(test)]")
        semi, brace = text.find(";", k), text.find("{", k)
        if semi >= 0 and (brace < 0 or semi < brace):
            end = semi + 1
        else:
            depth, end = 0, brace
            while end < len(text):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
                if depth == 0:
                    break
        out.append("\n" * text.count("\n", j, end))
        i = end


def code_lines(text):
    """The code of a file, lines kept: test items and comments blanked."""
    text = without_tests(text)
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return [re.sub(r"//.*", "", l) for l in text.splitlines()]
