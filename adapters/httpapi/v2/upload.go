package v2

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/core/domain"
)

// fileSource reads a multipart upload as it arrives: the fields type (which
// must be "file") and name (optional), and exactly one file part named file.
// The body is never in memory as a whole; the file is, once, within its
// 20 MiB.
func fileSource(c *fiber.Ctx) (domain.Source, error) {
	_, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || params["boundary"] == "" {
		return domain.Source{}, errInvalidMultipart
	}
	body, err := bodylimit.Stream(c)
	if err != nil {
		return domain.Source{}, err
	}
	up, err := decodeFileUpload(body, params["boundary"], domain.MaxSourceFileBytes, c.Request().Header.ContentLength())
	if err != nil {
		return domain.Source{}, err
	}
	return domain.Source{Type: domain.SourceFile, Name: up.name, Filename: up.filename, File: up.content}, nil
}

var errInvalidMultipart = domain.Invalid("invalid multipart/form-data body")

// maxUploadFieldBytes bounds the value of an upload's type and name fields.
const maxUploadFieldBytes = 4 << 10

// fileUpload is the decoded body of a file upload.
type fileUpload struct {
	name     string
	filename string
	content  []byte
}

// decodeFileUpload reads a multipart/form-data body with the given
// boundary: the fields type (which must be "file") and name (optional),
// and exactly one file part named file of at most maxFile bytes. sizeHint,
// when positive, is the body's declared length, which the file cannot
// exceed; it sizes the file's buffer.
//
// It stops at the first part it refuses, without reading further;
// otherwise it reads the body to its end. A read
// error of r is returned as it is (the body limit's ErrTooLarge among
// them); a file over maxFile is bodylimit.ErrTooLarge; anything malformed
// is a validation error.
func decodeFileUpload(r io.Reader, boundary string, maxFile, sizeHint int) (fileUpload, error) {
	src := &errorRecorder{r: r}
	mr := multipart.NewReader(src, boundary)
	var up fileUpload
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fileUpload{}, src.cause(err)
		}
		field := part.FormName()
		switch {
		case field == "":
			return fileUpload{}, domain.Invalid("invalid multipart/form-data body: every part needs a form-data name")
		case part.FileName() != "":
			if field != "file" {
				return fileUpload{}, domain.InvalidField(field, "unknown file part; send the document as the part named file")
			}
			if seen[field] {
				return fileUpload{}, domain.InvalidField("file", "exactly one file is required")
			}
			seen[field] = true
			up.filename = part.FileName()
			if up.content, err = readFile(part, maxFile, sizeHint); err != nil {
				return fileUpload{}, src.cause(err)
			}
		case field == "type" || field == "name":
			if seen[field] {
				return fileUpload{}, domain.InvalidField(field, "must be sent once")
			}
			seen[field] = true
			value, err := readField(part, field)
			if err != nil {
				return fileUpload{}, src.cause(err)
			}
			if field == "type" && value != string(domain.SourceFile) {
				return fileUpload{}, errNotFileType
			}
			if field == "name" {
				up.name = value
			}
		default:
			return fileUpload{}, domain.InvalidField(field, "unknown field; a file upload has the fields type, name and file")
		}
	}
	// Read what follows the form (an epilogue, normally nothing) to the end
	// of the body, so a body over its limit is refused even there and the
	// connection can serve the next request.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return fileUpload{}, src.cause(err)
	}
	if !seen["type"] {
		return fileUpload{}, errNotFileType
	}
	if !seen["file"] {
		return fileUpload{}, domain.InvalidField("file", "exactly one file is required")
	}
	return up, nil
}

var errNotFileType = domain.InvalidField("type", "must be file for a multipart upload; other types are sent as JSON")

// readField reads a form field's value, at most maxUploadFieldBytes.
func readField(part *multipart.Part, field string) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(part, maxUploadFieldBytes+1))
	if err != nil {
		return "", err
	}
	if len(raw) > maxUploadFieldBytes {
		return "", domain.InvalidField(field, "is too long")
	}
	return string(raw), nil
}

// readFile reads a file part, refusing it past max bytes. With a size hint
// it reads into one buffer of that size; without one (a chunked body) into
// blocks that grow to 1 MiB, copied together once at the end, so a file
// refused for its size costs its bytes once and no garbage of a growing
// slice's copies.
func readFile(r io.Reader, max, sizeHint int) ([]byte, error) {
	size := 32 << 10
	if sizeHint > 0 {
		size = sizeHint
	}
	var blocks [][]byte
	total := 0
	for {
		block := make([]byte, min(size, max+1-total))
		n, err := io.ReadFull(r, block)
		total += n
		if n > 0 {
			blocks = append(blocks, block[:n])
		}
		if total > max {
			return nil, bodylimit.ErrTooLarge
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, 1<<20)
	}
	switch len(blocks) {
	case 0:
		return nil, nil
	case 1:
		return blocks[0], nil
	}
	file := make([]byte, 0, total)
	for _, b := range blocks {
		file = append(file, b...)
	}
	return file, nil
}

// errorRecorder remembers the first error its reader returned other than
// io.EOF, so a failure of the body (over its limit, the client gone) is
// reported as such rather than as a malformed form.
type errorRecorder struct {
	r   io.Reader
	err error
}

func (e *errorRecorder) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

// cause is the error to report for err, met while decoding.
func (e *errorRecorder) cause(err error) error {
	var verr *domain.ValidationError
	switch {
	case e.err != nil:
		return e.err
	case errors.Is(err, bodylimit.ErrTooLarge), errors.As(err, &verr):
		return err
	}
	return errInvalidMultipart
}
