//! Errors that point into a model file: file, line, column, the line itself
//! and a caret under the offending text, formatted as rustc formats its own.

use std::fmt;

/// A byte range in a model file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// first byte
    pub start: usize,
    /// one past the last byte
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }
}

/// One error located in a model file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong, in a sentence.
    pub message: String,
    /// The file's path as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// The text of that line.
    pub line_text: String,
    /// Width of the caret run (at least 1).
    pub width: usize,
}

impl Diagnostic {
    /// Locates `span` in `source` (the text of `file`).
    pub fn new(file: &str, source: &str, span: Span, message: impl Into<String>) -> Self {
        // Spans may come from byte arithmetic (an error "at" a position covers the
        // next byte); widen them to character boundaries.
        let mut start = span.start.min(source.len());
        while !source.is_char_boundary(start) {
            start -= 1;
        }
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let mut end = span.end.clamp(start, line_end);
        while !source.is_char_boundary(end) {
            end += 1;
        }
        let width = source[start..end].chars().count().max(1);
        Diagnostic {
            message: message.into(),
            file: file.to_string(),
            line,
            column,
            line_text: source[line_start..line_end].trim_end_matches('\r').to_string(),
            width,
        }
    }

    /// An error about the file as a whole (for example: it cannot be read).
    pub fn whole_file(file: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            message: message.into(),
            file: file.to_string(),
            line: 0,
            column: 0,
            line_text: String::new(),
            width: 0,
        }
    }
}

impl Diagnostic {
    /// The message with its location, line and caret, without the leading
    /// `error: ` (for hosts such as rustc that print their own).
    pub fn located(&self) -> String {
        struct Located<'a>(&'a Diagnostic);
        impl fmt::Display for Located<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_located(f)
            }
        }
        Located(self).to_string()
    }

    fn fmt_located(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        if self.line == 0 {
            return write!(f, "  --> {}", self.file);
        }
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        writeln!(f, "{pad}--> {}:{}:{}", self.file, self.line, self.column)?;
        writeln!(f, "{pad} |")?;
        // A long line is shown as an excerpt around the error.
        let chars: Vec<char> = self.line_text.chars().collect();
        let (from, to) = if chars.len() > 2 * EXCERPT {
            let from = (self.column - 1).saturating_sub(EXCERPT / 2);
            (from, (from + EXCERPT).min(chars.len()))
        } else {
            (0, chars.len())
        };
        let (open, close) = (if from > 0 { "…" } else { "" }, if to < chars.len() { "…" } else { "" });
        let shown: String = chars[from..to].iter().collect();
        writeln!(f, "{num} | {open}{shown}{close}")?;
        let lead: String = open
            .chars()
            .chain(chars[from..(self.column - 1).min(to)].iter().copied())
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let width = self.width.min(to.saturating_sub(self.column - 1)).max(1);
        write!(f, "{pad} | {lead}{}", "^".repeat(width))
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: ")?;
        self.fmt_located(f)
    }
}

/// Characters of a long line shown around an error.
const EXCERPT: usize = 120;

/// All errors found in one model file (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_inside_multibyte_characters_do_not_panic() {
        // Regression (found by the front-end fuzzer): a syntax error right before `§`.
        let src = "model m {\n §6 }";
        let at = src.find('§').unwrap();
        let d = Diagnostic::new("m.hamel", src, Span::new(at, at + 1), "syntax error");
        assert_eq!((d.line, d.column, d.width), (2, 2, 1));
        let d = Diagnostic::new("m.hamel", src, Span::new(at + 1, at + 2), "inside");
        assert_eq!(d.column, 2);
        assert!(crate::load("m.hamel", src).is_err());
    }

    #[test]
    fn points_at_line_and_column() {
        let src = "model x {\n  lagrangian = foo + 1\n}\n";
        let at = src.find("foo").unwrap();
        let d = Diagnostic::new("m.hamel", src, Span::new(at, at + 3), "unknown name `foo`");
        assert_eq!((d.line, d.column, d.width), (2, 16, 3));
        let text = d.to_string();
        assert!(text.contains("--> m.hamel:2:16"), "{text}");
        assert!(text.ends_with("|                ^^^"), "{text}");
    }

    #[test]
    fn a_long_line_is_quoted_as_an_excerpt_with_the_caret_in_place() {
        let line = format!("{}bad{}", "x".repeat(10_000), "y".repeat(10_000));
        let src = format!("model m {{\n{line}\n}}");
        let start = src.find("bad").unwrap();
        let d = Diagnostic::new("m.hamel", &src, Span { start, end: start + 3 }, "here");
        let shown = d.to_string();
        assert!(shown.len() < 600, "{} characters", shown.len());
        let lines: Vec<&str> = shown.lines().collect();
        let text = lines.iter().find(|l| l.starts_with("2 | ")).unwrap();
        let caret = lines.last().unwrap();
        let at = caret.find('^').unwrap();
        assert_eq!(&text.chars().skip(at).take(3).collect::<String>(), "bad", "{shown}");
        assert!(shown.contains("m.hamel:2:10001"), "{shown}");
    }
}
