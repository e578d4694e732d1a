//! A small document model rendered to Markdown and to a self-contained HTML
//! page (the report's index).

/// One block of a document.
#[derive(Clone, Debug)]
pub enum Block {
    /// heading of level 1–3
    Heading(u8, String),
    /// a paragraph (inline `code` allowed)
    Para(String),
    /// header and rows
    Table(Vec<String>, Vec<Vec<String>>),
    /// images: (path of the PNG relative to the index, caption); SVGs sit beside them
    Figures(Vec<(String, String)>),
    /// preformatted text
    Code(String),
}

/// A document.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    /// its blocks, in order
    pub blocks: Vec<Block>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Inline `code` spans to `<code>`.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in esc(s).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

impl Doc {
    /// Appends a block.
    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }

    /// Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        for b in &self.blocks {
            match b {
                Block::Heading(l, t) => s.push_str(&format!("{} {t}\n\n", "#".repeat(*l as usize))),
                Block::Para(t) => s.push_str(&format!("{t}\n\n")),
                Block::Table(h, rows) => {
                    let cell = |c: &String| c.replace('|', "\\|");
                    let line = |r: &[String]| r.iter().map(cell).collect::<Vec<_>>().join(" | ");
                    s.push_str(&format!("| {} |\n", line(h)));
                    s.push_str(&format!("|{}\n", "---|".repeat(h.len())));
                    for r in rows {
                        s.push_str(&format!("| {} |\n", line(r)));
                    }
                    s.push('\n');
                }
                Block::Figures(f) => {
                    for (png, cap) in f {
                        let svg = png.replace(".png", ".svg");
                        s.push_str(&format!("![{cap}]({png})\n*{cap}* ([SVG]({svg}))\n\n"));
                    }
                }
                Block::Code(t) => s.push_str(&format!("```text\n{t}\n```\n\n")),
            }
        }
        s
    }

    /// A self-contained HTML page.
    pub fn html(&self, title: &str) -> String {
        let mut s = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\n\
             body {{ font-family: sans-serif; max-width: 1000px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }}\n\
             table {{ border-collapse: collapse; margin: 1em 0; }} td, th {{ border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }}\n\
             td:first-child, th:first-child {{ text-align: left; }} th {{ background: #f0f0f0; }}\n\
             figure {{ margin: 1em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }} figcaption {{ font-size: 0.9em; color: #555; }}\n\
             code, pre {{ background: #f6f6f6; }} pre {{ padding: 0.6em; overflow-x: auto; }}\n\
             </style></head><body>\n",
            esc(title)
        );
        for b in &self.blocks {
            match b {
                Block::Heading(l, t) => s.push_str(&format!("<h{l}>{}</h{l}>\n", inline(t))),
                Block::Para(t) => s.push_str(&format!("<p>{}</p>\n", inline(t))),
                Block::Table(h, rows) => {
                    s.push_str("<table><tr>");
                    for c in h {
                        s.push_str(&format!("<th>{}</th>", inline(c)));
                    }
                    s.push_str("</tr>\n");
                    for r in rows {
                        s.push_str("<tr>");
                        for c in r {
                            s.push_str(&format!("<td>{}</td>", inline(c)));
                        }
                        s.push_str("</tr>\n");
                    }
                    s.push_str("</table>\n");
                }
                Block::Figures(f) => {
                    for (png, cap) in f {
                        let svg = png.replace(".png", ".svg");
                        s.push_str(&format!(
                            "<figure><a href=\"{svg}\"><img src=\"{png}\" alt=\"{c}\"></a><figcaption>{c} (click for SVG)</figcaption></figure>\n",
                            c = esc(cap)
                        ));
                    }
                }
                Block::Code(t) => s.push_str(&format!("<pre>{}</pre>\n", esc(t))),
            }
        }
        s.push_str("</body></html>\n");
        s
    }
}
