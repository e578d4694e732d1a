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
        writeln!(f, "{num} | {}", self.line_text)?;
        let lead: String = self
            .line_text
            .chars()
            .take(self.column - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{pad} | {lead}{}", "^".repeat(self.width))
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: ")?;
        self.fmt_located(f)
    }
}

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
}
