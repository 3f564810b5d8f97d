// Package openapi holds Concierge's hand-written OpenAPI 3.1 description of
// its HTTP API. The YAML source is the single source of truth: the server
// serves it as JSON at GET /api/v2/openapi.json and contract tests validate
// real responses against it (see package openapitest).
package openapi

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/oasdiff/yaml"
)

//go:embed openapi.yaml
var source []byte

// documentJSON converts the YAML once per process: the source is embedded and
// immutable, so every caller can share the result.
var documentJSON = sync.OnceValues(func() ([]byte, error) {
	out, err := yaml.YAMLToJSON(source)
	if err != nil {
		return nil, fmt.Errorf("openapi: convert openapi.yaml to JSON: %w", err)
	}
	return out, nil
})

// Document returns the OpenAPI 3.1 description as JSON, ready to serve.
// Each call returns its own copy, so a caller may modify it freely.
func Document() ([]byte, error) {
	doc, err := documentJSON()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(doc), nil
}
