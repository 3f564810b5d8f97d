package wire

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// The text rule at the HTTP edge (domain.TextProblem): a body, a form field
// or a header that is not valid UTF-8 or holds a NUL character is refused
// with 400 before any use case runs.

// errBodyNotUTF8 refuses a JSON body with bytes that are not UTF-8.
// encoding/json would quietly turn them into U+FFFD, storing something the
// sender never wrote.
var errBodyNotUTF8 = domain.Invalid("the request body must be valid UTF-8")

// CheckText applies the text rule to every string a decoded DTO holds,
// naming the first that breaks it by its JSON path. Decode runs it: invalid
// UTF-8 was refused on the raw body already, and what remains is NUL, which
// JSON can only carry escaped (\u0000), so it is found on the decoded
// values.
func CheckText(dst any) error {
	return walkText(reflect.ValueOf(dst), "")
}

func walkText(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walkText(v.Elem(), path)
	case reflect.String:
		return domain.ValidateText(fieldName(path), v.String())
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case f.Anonymous && name == "":
				name = "" // embedded: its fields are the parent's
			case name == "":
				name = f.Name
			}
			if err := walkText(v.Field(i), join(path, name)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw bytes (json.RawMessage) are not text
		}
		for i := range v.Len() {
			if err := walkText(v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			key := iter.Key()
			if key.Kind() == reflect.String {
				if err := domain.ValidateText(fieldName(path), key.String()); err != nil {
					return err
				}
			}
			if err := walkText(iter.Value(), join(path, key.String())); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, name string) string {
	switch {
	case name == "":
		return path
	case path == "":
		return name
	default:
		return path + "." + name
	}
}

func fieldName(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// Header returns a request header's value, copied (fasthttp reuses its
// memory after the handler), after applying the text rule to it: a header
// with a NUL or bytes that are not UTF-8 is a ValidationError naming it.
// Headers whose value is stored (Idempotency-Key) are read here; the
// identity headers are checked by their signature instead, and the payload
// they carry by the domain's text rule.
func Header(c *fiber.Ctx, name string) (string, error) {
	value := string(c.Request().Header.Peek(name))
	if err := domain.ValidateText(name, value); err != nil {
		return "", err
	}
	return value, nil
}
