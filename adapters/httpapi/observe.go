package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// RequestObserver hears each request once it is answered: its route
// template (never the request's path), method, status and time.
type RequestObserver interface {
	ObserveRequest(route, method string, code int, elapsed time.Duration)
}

// UnmatchedRoute labels requests no route matched: one label for every
// unknown path, so a scan of random URLs adds no series.
const UnmatchedRoute = "unmatched"

// observeRequests reports every request after the handlers (and the access
// log's ErrorHandler call) ran. It reads nothing of the body: a stream's
// handler returns once its headers are set, so a stream is counted then,
// with the time to its headers, and is never buffered.
func observeRequests(o RequestObserver) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		if err != nil {
			// Errors below the access log (none today) are answered here so
			// the status is known.
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		o.ObserveRequest(routeLabel(c), c.Method(), c.Response().StatusCode(), time.Since(start))
		return nil
	}
}

// routeLabel is the template of the route that answered. When only
// middleware ran (Use routes), no route matched: a 404 is UnmatchedRoute,
// anything else (a refused key, a cross-origin POST) the middleware's
// mount prefix, which is a template too.
func routeLabel(c *fiber.Ctx) string {
	r := c.Route()
	if r.Method == "USE" {
		if c.Response().StatusCode() == fiber.StatusNotFound || r.Path == "/" {
			return UnmatchedRoute
		}
	}
	return r.Path
}
