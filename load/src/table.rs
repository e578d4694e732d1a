//! The text files hosts hand to a run besides the model (input schedules,
//! ensemble members): one guarded reader and one CSV reader, so that every
//! host refuses the same files with the same words.

use std::io::Read;
use std::path::Path;

/// Largest CSV file read (input schedules, member lists), in bytes.
pub const MAX_TABLE_BYTES: u64 = 64 << 20;

/// Reads a text file of at most `max` bytes. Refuses, before reading, what is
/// not a regular file (a FIFO would block, `/dev/zero` never ends) and files
/// larger than `max`; reads at most `max + 1` bytes in case the file grows
/// meanwhile. The error is the reason, without the path.
pub fn read_text(path: &Path, max: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!("{} bytes, more than such a file may have ({max})", meta.len()));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(|e| e.to_string())?
        .take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > max {
        return Err(format!("more than {max} bytes"));
    }
    Ok(text)
}

/// A CSV table as hosts give them: a header row naming the columns, then
/// rows of as many cells. Cells are trimmed; a cell in double quotes loses
/// them (no quoted commas); blank lines and lines starting with `#` are
/// skipped; a UTF-8 byte-order mark is ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// the file as errors name it
    pub file: String,
    /// column names, in order
    pub columns: Vec<String>,
    /// line number of the header (1-based)
    pub header_line: usize,
    /// rows: line number and cells
    pub rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    /// Reads the CSV file `path` (at most [`MAX_TABLE_BYTES`], a regular file).
    pub fn read(path: &Path) -> Result<Table, String> {
        let shown = path.display().to_string();
        let text = read_text(path, MAX_TABLE_BYTES).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
        Table::parse(&shown, &text)
    }

    /// Parses CSV text; `file` is how errors name it. Refuses a text with no
    /// header, a header naming a column twice, and rows whose number of
    /// cells is not the header's, naming the file and line.
    pub fn parse(file: &str, text: &str) -> Result<Table, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (header_line, header) = lines
            .next()
            .ok_or_else(|| format!("`{file}` is empty (no header row)"))?;
        let columns = cells(header);
        if columns.len() == 1 {
            // `t;tau` or `t<TAB>tau`: another separator than the comma
            if let Some((sep, name)) = [(';', "semicolons"), ('\t', "tabs")]
                .into_iter()
                .find(|(c, _)| columns[0].contains(*c))
            {
                return Err(format!(
                    "{file}:{header_line}: the header `{}` is one column holding {name}: columns are separated by commas (`{}`)",
                    columns[0].escape_debug(),
                    columns[0].split(sep).map(str::trim).collect::<Vec<_>>().join(",")
                ));
            }
        }
        for (j, c) in columns.iter().enumerate() {
            if let Some(i) = columns[..j].iter().position(|p| p == c) {
                return Err(format!(
                    "{file}:{header_line}: column `{c}` appears twice (columns {} and {})",
                    i + 1,
                    j + 1
                ));
            }
        }
        let mut rows = Vec::new();
        for (line, row) in lines {
            let cells = cells(row);
            if cells.len() != columns.len() {
                return Err(format!(
                    "{file}:{line}: {} cell(s), the header has {}",
                    cells.len(),
                    columns.len()
                ));
            }
            rows.push((line, cells));
        }
        Ok(Table {
            file: file.to_string(),
            columns,
            header_line,
            rows,
        })
    }

    /// `file:line`, for messages.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.file)
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The cell of a row as a finite number; the error names the file, line
    /// and column.
    pub fn number(&self, line: usize, column: usize, cell: &str) -> Result<f64, String> {
        cell.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| {
            format!(
                "{}: column `{}`: `{cell}` is not a finite number",
                self.at(line),
                self.columns[column]
            )
        })
    }
}

/// The cells of a line: split at commas, trimmed, surrounding double quotes removed.
fn cells(line: &str) -> Vec<String> {
    line.split(',')
        .map(|c| {
            let c = c.trim();
            c.strip_prefix('"')
                .and_then(|c| c.strip_suffix('"'))
                .unwrap_or(c)
                .trim()
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_separators_than_the_comma_are_named() {
        let e = Table::parse("f.csv", "t;tau\n0;1\n").unwrap_err();
        assert_eq!(
            e,
            "f.csv:1: the header `t;tau` is one column holding semicolons: columns are separated by commas (`t,tau`)"
        );
        let e = Table::parse("f.csv", "t\ttau\n0\t1\n").unwrap_err();
        assert!(e.contains("holding tabs"), "{e}");
    }

    #[test]
    fn tables_are_read_with_their_lines_and_refused_with_file_and_line() {
        let t = Table::parse("f.csv", "\u{feff}# note\n\"t\", a\n\n0, 1\n# skip\n2,\"3\"\n").unwrap();
        assert_eq!(t.columns, ["t", "a"]);
        assert_eq!(t.header_line, 2);
        assert_eq!(
            t.rows,
            [(4, vec!["0".into(), "1".into()]), (6, vec!["2".into(), "3".into()])]
        );
        assert_eq!(
            t.number(6, 1, "x").unwrap_err(),
            "f.csv:6: column `a`: `x` is not a finite number"
        );
        assert_eq!(
            Table::parse("f.csv", "# only\n").unwrap_err(),
            "`f.csv` is empty (no header row)"
        );
        assert_eq!(
            Table::parse("f.csv", "g,g\n1,2\n").unwrap_err(),
            "f.csv:1: column `g` appears twice (columns 1 and 2)"
        );
        assert_eq!(
            Table::parse("f.csv", "t,a\n1\n").unwrap_err(),
            "f.csv:2: 1 cell(s), the header has 2"
        );
    }

    #[test]
    fn what_is_not_a_regular_file_or_too_large_is_refused_before_reading() {
        assert_eq!(read_text(Path::new("/dev/zero"), 10).unwrap_err(), "not a regular file");
        assert_eq!(read_text(Path::new("/tmp"), 10).unwrap_err(), "not a regular file");
        let f = std::env::temp_dir().join(format!("hamel-table-{}", std::process::id()));
        std::fs::write(&f, "0123456789ab").unwrap();
        assert!(read_text(&f, 10).unwrap_err().contains("12 bytes, more than"));
        assert_eq!(read_text(&f, 12).unwrap(), "0123456789ab");
        std::fs::remove_file(&f).unwrap();
    }
}
