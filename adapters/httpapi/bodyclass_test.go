package httpapi

import (
	"io"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
)

// bodyClass decides the body limit before routing, so it must agree with
// the routes: only the source upload route gets the upload limit.
func TestBodyClass(t *testing.T) {
	const multipartType = "multipart/form-data; boundary=x"
	tests := []struct {
		method, path, contentType string
		want                      bodylimit.Class
	}{
		{"GET", "/healthz", "", bodylimit.Other},
		{"GET", "/readyz", "", bodylimit.Other},
		{"GET", "/chat/support", "", bodylimit.Other},
		{"POST", "/chat/support", "application/json", bodylimit.Other},
		{"GET", "/api/v2/agents", "application/json", bodylimit.Other},
		{"DELETE", "/api/v2/agents/support", "application/json", bodylimit.Other},
		{"POST", "/api/v2/agents", "application/json", bodylimit.JSON},
		{"PATCH", "/api/v2/agents/support", "application/json", bodylimit.JSON},
		{"PUT", "/api/v2/integrations", "application/json", bodylimit.JSON},
		{"POST", "/api/webhooks/inbound", "application/json", bodylimit.JSON},
		{"POST", "/api/chat/ses_x/message", "application/json", bodylimit.JSON},
		{"POST", "/api/v2/agents/support/sources", "application/json", bodylimit.JSON},
		{"POST", "/api/v2/agents/support/sources", multipartType, bodylimit.Upload},
		{"POST", "/API/V2/Agents/support/Sources/", multipartType, bodylimit.Upload},
		{"POST", "/api/v2/agents//sources", multipartType, bodylimit.JSON},
		{"POST", "/api/v2/agents/support/sources/src_1/reindex", multipartType, bodylimit.JSON},
		{"POST", "/api/v2/agents/support/sources/extra", multipartType, bodylimit.JSON},
		{"POST", "/api/chat/ses_x/sources", multipartType, bodylimit.JSON},
		{"GET", "/api/v2/agents/support/sources", multipartType, bodylimit.Other},
		{"GET", "/console/w/ws_1/agents", "", bodylimit.Other},
		{"POST", "/console/sign-in", "application/x-www-form-urlencoded", bodylimit.JSON},
		{"POST", "/console/w/ws_1/agents/support", "application/x-www-form-urlencoded", bodylimit.JSON},
		// Knowledge: the console's file uploads.
		{"POST", "/console/w/ws_1/agents/support/knowledge/files", multipartType, bodylimit.Upload},
		{"POST", "/Console/W/ws_1/Agents/support/Knowledge/Files/", multipartType, bodylimit.Upload},
		{"POST", "/console/w/ws_1/agents/support/knowledge/files", "application/x-www-form-urlencoded", bodylimit.JSON},
		{"POST", "/console/w/ws_1/agents/support/knowledge/sources", multipartType, bodylimit.JSON},
		{"POST", "/console/w//agents/support/knowledge/files", multipartType, bodylimit.JSON},
		{"POST", "/console/w/ws_1/agents/support/knowledge/files/x", multipartType, bodylimit.JSON},
		{"GET", "/console/w/ws_1/agents/support/knowledge/files", multipartType, bodylimit.Other},
	}
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(int(bodyClass(c)))) })
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.contentType, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if got, _ := strconv.Atoi(string(raw)); bodylimit.Class(got) != tt.want {
				t.Fatalf("class %s, want %d", raw, tt.want)
			}
		})
	}
}
