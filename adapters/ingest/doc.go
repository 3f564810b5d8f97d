// Package ingest turns uploaded files and web pages into Markdown-like text
// (domain.Document) and splits documents into token-bounded chunks under
// their heading paths (domain.ChunkDraft).
//
// Extractor reads, by extension:
//   - .md, .markdown: as written; YAML front matter is dropped (its title:
//     names the document).
//   - .txt: as written. Text files in UTF-8, UTF-16 with a byte-order mark
//     or Windows-1252 are accepted; binary data is refused.
//   - .html, .htm: readability's article when it has some text, else the
//     page's <main> or <body>, without scripts, styles, navigation, asides,
//     page headers and footers, images and forms; converted to CommonMark
//     with ATX headings and GFM tables. HTMLDocument is the same path for
//     the website crawler.
//   - .pdf: poppler's pdftotext when installed (reading order, no headings),
//     else a pure-Go reader that rebuilds lines and spaces from glyph
//     positions and marks lines set in larger type as headings.
//   - .docx: WordprocessingML read directly: heading and Title styles
//     become '#' headings, numbered and bulleted paragraphs list items,
//     tables Markdown tables; tracked deletions, field codes and
//     compatibility fallbacks are skipped. Headers, footers, footnotes and
//     comments are not read.
//   - .csv: one "header: value" paragraph per row.
//
// Every failure that is the file's fault is a domain.ValidationError on
// field "file" with a message the uploader can act on.
package ingest
