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
//
// Files come from outside and may be built to expand: a few hundred kB can
// inflate to gigabytes of XML, PDF operators or HTML elements. Extraction
// reads every format as a stream and checks its caps while reading, so it
// stops at the first cap a file goes over, refusing the file whole (the
// text is never cut short): the extracted text (MaxTextBytes, checked as
// it is produced), the decompressed bytes of a .docx (MaxUnzippedBytes) and
// of each PDF stream (MaxPDFStreamBytes), one XML token and the nesting of
// a .docx, a PDF's objects, pages and the values of one object, an HTML
// file's elements and visible text, a .csv row, and the time (Timeout).
// What an extraction holds is then a few times the text cap at most. The
// text is valid UTF-8 without NULs or other control characters but tabs
// and newlines.
package ingest
