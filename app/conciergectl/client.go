package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxResponseBytes bounds what the client reads, so a misbehaving server or
// proxy cannot exhaust memory; a page of 100 items is far below it.
const maxResponseBytes = 32 << 20

// apiClient is the little of the v2 API this binary needs: authenticated GETs
// of list pages. It holds no business logic.
type apiClient struct {
	base      *url.URL // absolute, path ending in /api/v2, no trailing slash
	apiKey    string
	userAgent string
	timeout   time.Duration
	http      *http.Client
}

func newAPIClient(base *url.URL, apiKey, userAgent string, timeout time.Duration) *apiClient {
	return &apiClient{
		base:      base,
		apiKey:    apiKey,
		userAgent: userAgent,
		timeout:   timeout,
		http:      &http.Client{Timeout: timeout},
	}
}

// listPage is one page of any v2 list; items stay raw so --json can print
// them exactly as the server sent them.
type listPage struct {
	Data []json.RawMessage `json:"data"`
	Meta *listMeta         `json:"meta"`
}

type listMeta struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

// apiError is an error answer of the server, as its error body describes it.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Message + " (" + e.Code + ")" }

// networkError means the server could not be reached or did not answer in time.
type networkError struct {
	URL     string
	Timeout time.Duration // set when the request timed out
	Err     error
}

func (e *networkError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("no answer from %s within %s (NETWORK)", e.URL, e.Timeout)
	}
	return fmt.Sprintf("cannot reach %s: %v (NETWORK)", e.URL, e.Err)
}

func (e *networkError) Unwrap() error { return e.Err }

// badResponseError is a success status with a body that is not what the API
// documents, typically a proxy or a wrong CONCIERGE_API_URL.
type badResponseError struct {
	URL    string
	Reason string
}

func (e *badResponseError) Error() string {
	return fmt.Sprintf("unexpected response from %s: %s (BAD_RESPONSE)", e.URL, e.Reason)
}

// list GETs one page of the list at path (relative to the base URL) and
// returns it decoded and as the raw body.
func (c *apiClient) list(ctx context.Context, path string, query url.Values) (listPage, []byte, error) {
	endpoint := c.base.JoinPath(path)
	shown := endpoint.String() // error messages name the URL without the query
	endpoint.RawQuery = query.Encode()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return listPage{}, nil, &badResponseError{URL: shown, Reason: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)

	resp, err := c.http.Do(req)
	if err != nil {
		return listPage{}, nil, c.transportError(ctx, shown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return listPage{}, nil, c.transportError(ctx, shown, err)
	}

	if resp.StatusCode >= 400 {
		return listPage{}, nil, decodeAPIError(resp, body)
	}
	if resp.StatusCode != http.StatusOK {
		return listPage{}, nil, &badResponseError{URL: shown, Reason: "status " + resp.Status}
	}
	var page listPage
	if err := json.Unmarshal(body, &page); err != nil {
		return listPage{}, nil, &badResponseError{URL: shown, Reason: "body is not a JSON list page"}
	}
	if page.Data == nil || page.Meta == nil {
		return listPage{}, nil, &badResponseError{URL: shown, Reason: `body lacks "data" or "meta"`}
	}
	return page, body, nil
}

// transportError turns a failed round trip into what the user can act on:
// interrupted by the user, timed out, or unreachable.
func (c *apiClient) transportError(ctx context.Context, shown string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return &networkError{URL: shown, Timeout: c.timeout, Err: err}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // the URL is already in the message
	}
	return &networkError{URL: shown, Err: err}
}

// decodeAPIError reads the API's error body; anything else (an HTML page of a
// proxy, say) still yields a readable message and an HTTP_<status> code.
func decodeAPIError(resp *http.Response, body []byte) *apiError {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		return &apiError{
			Status:  resp.StatusCode,
			Code:    fmt.Sprintf("HTTP_%d", resp.StatusCode),
			Message: "server answered " + resp.Status,
		}
	}
	msg := strings.TrimSpace(e.Error.Message)
	if msg == "" {
		msg = "server answered " + resp.Status
	}
	return &apiError{Status: resp.StatusCode, Code: e.Error.Code, Message: msg}
}
