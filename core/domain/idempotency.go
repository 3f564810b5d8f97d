package domain

// MaxIdempotencyKeyLength bounds the Idempotency-Key header.
const MaxIdempotencyKeyLength = 255

// ValidateIdempotencyKey checks an Idempotency-Key header's value: empty
// (none sent), or text under the text rule of at most
// MaxIdempotencyKeyLength bytes. The webhook and the chat routes share it.
func ValidateIdempotencyKey(key string) error {
	if err := ValidateText("Idempotency-Key", key); err != nil {
		return err
	}
	if len(key) > MaxIdempotencyKeyLength {
		return InvalidField("Idempotency-Key", "must be at most 255 characters")
	}
	return nil
}
