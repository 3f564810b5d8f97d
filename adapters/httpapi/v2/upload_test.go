package v2

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/core/domain"
)

const testBoundary = "xYzBoundary"

type formPart struct {
	field, filename, content string
}

// form encodes parts as multipart/form-data with testBoundary.
func form(t testing.TB, parts ...formPart) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(testBoundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		var (
			pw  io.Writer
			err error
		)
		if p.filename != "" {
			pw, err = w.CreateFormFile(p.field, p.filename)
		} else {
			pw, err = w.CreateFormField(p.field)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(pw, p.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeFileUpload(t *testing.T) {
	const maxFile = 1000
	typeFile := formPart{field: "type", content: "file"}
	doc := formPart{field: "file", filename: "guide.md", content: "# Guide\nRefunds take five days."}
	tests := []struct {
		name  string
		body  []byte
		field string // the field a validation error names; "" for none
		err   error  // the error kind wanted; nil for success
		want  fileUpload
	}{
		{"type and file", form(t, typeFile, doc), "", nil, fileUpload{filename: "guide.md", content: []byte(doc.content)}},
		{"with a name, file first", form(t, doc, formPart{field: "name", content: "Guide"}, typeFile), "", nil,
			fileUpload{name: "Guide", filename: "guide.md", content: []byte(doc.content)}},
		{"file at the limit", form(t, typeFile, formPart{field: "file", filename: "a.txt", content: strings.Repeat("a", maxFile)}), "", nil,
			fileUpload{filename: "a.txt", content: bytes.Repeat([]byte("a"), maxFile)}},
		{"file over the limit", form(t, typeFile, formPart{field: "file", filename: "a.txt", content: strings.Repeat("a", maxFile+1)}), "", bodylimit.ErrTooLarge, fileUpload{}},
		{"no file", form(t, typeFile), "file", domain.ErrInvalidInput, fileUpload{}},
		{"two files", form(t, typeFile, doc, doc), "file", domain.ErrInvalidInput, fileUpload{}},
		{"no type", form(t, doc), "type", domain.ErrInvalidInput, fileUpload{}},
		{"wrong type", form(t, formPart{field: "type", content: "text"}, doc), "type", domain.ErrInvalidInput, fileUpload{}},
		{"type twice", form(t, typeFile, typeFile, doc), "type", domain.ErrInvalidInput, fileUpload{}},
		{"unknown field", form(t, typeFile, formPart{field: "colour", content: "red"}, doc), "colour", domain.ErrInvalidInput, fileUpload{}},
		{"file under another name", form(t, typeFile, formPart{field: "document", filename: "a.md", content: "x"}), "document", domain.ErrInvalidInput, fileUpload{}},
		{"name too long", form(t, typeFile, formPart{field: "name", content: strings.Repeat("n", maxUploadFieldBytes+1)}, doc), "name", domain.ErrInvalidInput, fileUpload{}},
		{"empty body", nil, "", domain.ErrInvalidInput, fileUpload{}},
		{"not multipart", []byte(`{"type":"file"}`), "", domain.ErrInvalidInput, fileUpload{}},
		{"cut short", form(t, typeFile, doc)[:60], "", domain.ErrInvalidInput, fileUpload{}},
		{"part without a name", []byte("--" + testBoundary + "\r\nContent-Disposition: form-data\r\n\r\nx\r\n--" + testBoundary + "--\r\n"), "", domain.ErrInvalidInput, fileUpload{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, hint := range []int{len(tt.body), -1} {
				got, err := decodeFileUpload(bytes.NewReader(tt.body), testBoundary, maxFile, hint)
				if tt.err == nil {
					if err != nil {
						t.Fatalf("hint %d: %v", hint, err)
					}
					if got.name != tt.want.name || got.filename != tt.want.filename || !bytes.Equal(got.content, tt.want.content) {
						t.Fatalf("hint %d: got %+v, want %+v", hint, got, tt.want)
					}
					continue
				}
				if !errors.Is(err, tt.err) {
					t.Fatalf("hint %d: error %v, want %v", hint, err, tt.err)
				}
				var verr *domain.ValidationError
				if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
					t.Fatalf("hint %d: error %v does not name the field %s", hint, err, tt.field)
				}
			}
		})
	}
}

// A failure of the body itself (over its limit, the client gone) is
// reported as such, not as a malformed form, wherever it happens.
func TestDecodeFileUploadReportsBodyErrors(t *testing.T) {
	body := form(t, formPart{field: "type", content: "file"}, formPart{field: "file", filename: "a.md", content: strings.Repeat("a", 5000)})
	gone := errors.New("connection reset")
	for _, cut := range []int{0, 10, 150, 3000, len(body) - 5} {
		for _, cause := range []error{bodylimit.ErrTooLarge, gone} {
			r := io.MultiReader(bytes.NewReader(body[:cut]), iotest.ErrReader(cause))
			if _, err := decodeFileUpload(r, testBoundary, 1<<20, -1); !errors.Is(err, cause) {
				t.Errorf("cut at %d by %v: error %v", cut, cause, err)
			}
		}
	}
	// The form ends, then the body goes on past its limit.
	r := io.MultiReader(bytes.NewReader(body), strings.NewReader("epilogue"), iotest.ErrReader(bodylimit.ErrTooLarge))
	if _, err := decodeFileUpload(r, testBoundary, 1<<20, -1); !errors.Is(err, bodylimit.ErrTooLarge) {
		t.Errorf("over the limit after the form: error %v", err)
	}
}

// Files of unknown size are read into blocks and joined once; the result
// is the file whatever the reads' sizes.
func TestReadFile(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789"), 300_000) // 3 MB: several blocks
	for _, hint := range []int{-1, len(content), len(content) + 100} {
		got, err := readFile(iotest.HalfReader(bytes.NewReader(content)), len(content), hint)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("hint %d: %d bytes, %v", hint, len(got), err)
		}
		if _, err := readFile(bytes.NewReader(content), len(content)-1, hint); !errors.Is(err, bodylimit.ErrTooLarge) {
			t.Fatalf("hint %d, one byte over: %v", hint, err)
		}
	}
	if got, err := readFile(strings.NewReader(""), 10, -1); err != nil || len(got) != 0 {
		t.Fatalf("empty file: %q, %v", got, err)
	}
}

// FuzzDecodeFileUpload feeds arbitrary bodies to the upload decoder: it
// never panics, only ever accepts a file within the limit with type=file,
// and refuses everything else with a validation error or ErrTooLarge.
func FuzzDecodeFileUpload(f *testing.F) {
	f.Add(form(f, formPart{field: "type", content: "file"}, formPart{field: "file", filename: "a.md", content: "# A"}), 64)
	f.Add(form(f, formPart{field: "name", content: "N"}, formPart{field: "file", filename: "b.pdf", content: "%PDF"}, formPart{field: "type", content: "file"}), -1)
	f.Add(form(f, formPart{field: "type", content: "file"}, formPart{field: "file", filename: "a.md", content: strings.Repeat("x", 100)}), 0)
	f.Add([]byte("--"+testBoundary+"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../etc/passwd\"\r\n\r\nroot\r\n--"+testBoundary+"--\r\n"), 10)
	f.Add([]byte("--"+testBoundary+"\r\nContent-Disposition: form-data; name=type\r\n\r\nfile\r\n--"+testBoundary+"\r\n"), 5)
	f.Add([]byte("preamble\r\n--"+testBoundary+"--\r\nepilogue"), 1)
	f.Add([]byte("--"+testBoundary+"\r\nContent-Disposition: form-data; name=type\r\n\r\nfile\r\n--"+testBoundary+
		"\r\nContent-Disposition: form-data; name=file; filename=a.md\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nA=3DB\r\n--"+testBoundary+"--\r\n"), -1)
	f.Add([]byte{}, -1)
	const maxFile = 64
	f.Fuzz(func(t *testing.T, body []byte, hint int) {
		up, err := decodeFileUpload(bytes.NewReader(body), testBoundary, maxFile, hint)
		if err != nil {
			var verr *domain.ValidationError
			if !errors.As(err, &verr) && !errors.Is(err, bodylimit.ErrTooLarge) {
				t.Fatalf("error %v is neither a validation error nor ErrTooLarge", err)
			}
			return
		}
		if len(up.content) > maxFile {
			t.Fatalf("accepted a file of %d bytes over the limit of %d", len(up.content), maxFile)
		}
		if up.filename == "" {
			t.Fatal("accepted a file part without a file name")
		}
		if len(up.name) > maxUploadFieldBytes {
			t.Fatalf("accepted a name of %d bytes", len(up.name))
		}
		// Not always a substring of the body: multipart decodes a part sent
		// as quoted-printable. Never longer than the body, though.
		if len(up.content) > len(body) {
			t.Fatalf("a file of %d bytes out of a body of %d", len(up.content), len(body))
		}
	})
}

// FuzzFileUploadRoundTrip encodes arbitrary fields as a client would and
// checks the decoder gives them back.
func FuzzFileUploadRoundTrip(f *testing.F) {
	f.Add("Guide", "guide.md", []byte("# Guide"))
	f.Add("", "report.pdf", []byte("%PDF-1.7\r\n--boundary\r\n"))
	f.Add("naïve \"quoted\" name", "dir/file name.txt", []byte{0, 1, 2, '\r', '\n'})
	const maxFile = 1 << 10
	f.Fuzz(func(t *testing.T, name, filename string, content []byte) {
		// A client picks a boundary its content does not hold; control
		// characters are not allowed in a header (the decoder refuses them
		// as a malformed body).
		if len(content) > maxFile || len(name) > maxUploadFieldBytes || strings.ContainsAny(filename, "\"\\") ||
			strings.ContainsFunc(filename, func(r rune) bool { return r < 0x20 || r == 0x7f }) ||
			strings.Contains(name+string(content), testBoundary) {
			t.Skip()
		}
		parts := []formPart{{field: "type", content: "file"}}
		if name != "" {
			parts = append(parts, formPart{field: "name", content: name})
		}
		body := form(t, append(parts, formPart{field: "file", filename: filename, content: string(content)})...)
		up, err := decodeFileUpload(bytes.NewReader(body), testBoundary, maxFile, len(body))
		if err != nil {
			var verr *domain.ValidationError
			// A file name that reads as none (blank, or only a directory)
			// is a part without a file: type and name are then missing
			// their file.
			if errors.As(err, &verr) && verr.Fields["file"] != "" {
				return
			}
			t.Fatalf("decoding %q: %v", body, err)
		}
		if up.name != name || !bytes.Equal(up.content, content) {
			t.Fatalf("got name %q, %d bytes; want %q, %d bytes", up.name, len(up.content), name, len(content))
		}
	})
}
