// Package wire holds what every HTTP handler package shares about the wire
// format: strict JSON decoding with the one validator, the list envelope and
// its opaque cursors, time formatting, and the authenticated caller.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// TimeFormat is RFC 3339 in UTC with milliseconds, as every response uses.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time formats t for a response, as TimeFormat would. Lists format two times
// per item, and time.Format's layout interpretation showed up at 12 % of the
// list handler's CPU, so the fixed layout is written directly.
func Time(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	var b [24]byte
	put := func(i, v, width int) {
		for j := i + width - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	if year < 0 || year > 9999 {
		return t.Format(TimeFormat)
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/int(time.Millisecond), 3)
	b[23] = 'Z'
	return string(b[:])
}

// OptionalString returns nil for "" so responses show null instead of "".
func OptionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Decoder decodes request bodies strictly and validates them with the single
// shared validator, reporting fields by their JSON names.
type Decoder struct {
	validate *validator.Validate
	names    sync.Map // reflect.Type -> map[string]bool
}

// NewDecoder returns a Decoder with its validator. Build it once per process.
func NewDecoder() *Decoder {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	return &Decoder{validate: v}
}

// ErrEmptyBody is returned by Decode for an empty body when one is required.
var errEmptyBody = domain.Invalid("request body is required")

// Decode reads the JSON body into dst, rejecting unknown fields, trailing data
// and non-JSON content types, then validates dst. An empty body decodes as {}
// when allowEmpty is set (for endpoints whose fields are all optional).
func (d *Decoder) Decode(c *fiber.Ctx, dst any, allowEmpty bool) error {
	// The raw body: c.Body() would inflate a Content-Encoding, which the
	// body-limit middleware refuses before this runs anyway.
	return d.DecodeBytes(c.Request().Body(), c.Get(fiber.HeaderContentType), dst, allowEmpty)
}

// contentTypeRefusal is the 415 of a body that is not JSON. A structured
// syntax suffix (RFC 6839: application/merge-patch+json) is JSON too.
const contentTypeRefusal = "Content-Type must be application/json (or another JSON type, such as application/merge-patch+json)"

// DecodeBytes is Decode on a body and its Content-Type header as received.
func (d *Decoder) DecodeBytes(body []byte, contentType string, dst any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if !allowEmpty {
			return errEmptyBody
		}
		body = []byte("{}")
	} else if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil || (mt != fiber.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json")) {
			return fiber.NewError(fiber.StatusUnsupportedMediaType, contentTypeRefusal)
		}
	}
	if !utf8.Valid(body) {
		return errBodyNotUTF8
	}
	if err := d.checkFieldNames(body, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return domain.Invalid("invalid JSON: unexpected data after the JSON object")
	}
	if err := CheckText(dst); err != nil {
		return err
	}
	return d.Validate(dst)
}

// checkFieldNames rejects keys that are not exactly a field's JSON name.
// encoding/json matches names case-insensitively, so without this check
// "sessionID" would silently fill sessionId, contradicting the documented
// rule that unknown fields are refused. Bodies that are not objects are left
// to the decoder's own error.
func (d *Decoder) checkFieldNames(body []byte, dst any) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) != nil {
		return nil
	}
	known := d.fieldNames(reflect.TypeOf(dst))
	for k := range keys {
		if !known[k] {
			return &domain.ValidationError{Message: fmt.Sprintf("unknown field %q", k), Fields: map[string]string{k: "is not a known field"}}
		}
	}
	return nil
}

// fieldNames returns the JSON names of a DTO's fields, computed once per type.
func (d *Decoder) fieldNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if cached, ok := d.names.Load(t); ok {
		return cached.(map[string]bool)
	}
	names := map[string]bool{}
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				collect(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names[name] = true
		}
	}
	if t.Kind() == reflect.Struct {
		collect(t)
	}
	d.names.Store(t, names)
	return names
}

// Validate runs the validator on a DTO and converts its report.
func (d *Decoder) Validate(dst any) error {
	err := d.validate.Struct(dst)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return domain.Invalid("invalid request")
	}
	fields := make(map[string]string, len(verrs))
	var first string
	for _, fe := range verrs {
		name := fieldPath(fe.Namespace())
		reason := describe(fe)
		fields[name] = reason
		if first == "" {
			first = name + " " + reason
		}
	}
	return &domain.ValidationError{Message: first, Fields: fields}
}

// fieldPath drops the DTO's type name from a validator namespace.
func fieldPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "max":
		return "must " + bound("at most", fe)
	case "min":
		return "must " + bound("at least", fe)
	case "oneof":
		return "must be one of " + strings.ReplaceAll(fe.Param(), " ", ", ")
	default:
		return "is invalid (" + fe.Tag() + ")"
	}
}

// bound says what a min or max limit counts: entries of a list,
// characters of a string, or the value of a number.
func bound(side string, fe validator.FieldError) string {
	unit := ""
	switch fe.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return "have " + side + " " + fe.Param() + " " + plural(fe.Param(), "entry", "entries")
	case reflect.String:
		unit = " " + plural(fe.Param(), "character", "characters")
	}
	return "be " + side + " " + fe.Param() + unit
}

func plural(n, one, many string) string {
	if n == "1" {
		return one
	}
	return many
}

func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return domain.Invalid("invalid JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return domain.Invalid("invalid JSON: the body must be a JSON object")
		}
		return domain.InvalidField(field, "must be a "+jsonKind(typeErr.Type))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("invalid JSON: the body ends too early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &domain.ValidationError{Message: fmt.Sprintf("unknown field %q", name), Fields: map[string]string{name: "is not a known field"}}
	default:
		return domain.Invalid("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return "number"
	}
}

// IsMultipart reports whether the request body is multipart/form-data.
func IsMultipart(c *fiber.Ctx) bool {
	mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	return err == nil && mt == fiber.MIMEMultipartForm
}
