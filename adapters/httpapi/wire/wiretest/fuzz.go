// Package wiretest holds what the HTTP handler packages' tests share about
// the wire format.
package wiretest

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// DecodeHolds is what every fuzz target of a request DTO checks, for any
// body the fuzzer makes: Decode never panics, refuses with a
// domain.ValidationError (400) or a 415, and what it accepts holds only text
// under the text rule. The handler packages' fuzz targets call it for their
// own DTOs (newDTO returns a fresh pointer to one).
func DecodeHolds(d *wire.Decoder, body []byte, contentType string, newDTO func() any) error {
	dst := newDTO()
	err := d.DecodeBytes(body, contentType, dst, false)
	var verr *domain.ValidationError
	var ferr *fiber.Error
	switch {
	case err == nil:
		if terr := wire.CheckText(dst); terr != nil {
			return fmt.Errorf("accepted %q holding text the rule refuses: %w", body, terr)
		}
	case errors.As(err, &verr):
		if verr.Message == "" {
			return fmt.Errorf("a refusal of %q without a message", body)
		}
	case errors.As(err, &ferr) && ferr.Code == fiber.StatusUnsupportedMediaType:
	default:
		return fmt.Errorf("decoding %q failed with %T %v, not a 400 or a 415", body, err, err)
	}
	return nil
}
