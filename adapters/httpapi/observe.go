package httpapi

import (
	"sync"
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
	var routes routeTemplates
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
		o.ObserveRequest(routes.label(c), c.Method(), c.Response().StatusCode(), time.Since(start))
		return nil
	}
}

// routeTemplates tells the app's routes from its middleware. fiber leaves
// the last route a request matched in c.Route(), and that is a middleware
// (Use) route when no route matched; fiber does not say which kind it is,
// but a route's handlers are its own (their first handler's address tells
// it apart), so the routes are listed once, on the first request, when
// every route is registered.
type routeTemplates struct {
	once   sync.Once
	routes map[*fiber.Handler]bool
}

// label is the template of the route that answered. When only middleware
// ran, a 404 (an unknown path) is UnmatchedRoute, anything else (a refused
// key, a cross-origin POST) the middleware's mount prefix, a template too.
func (t *routeTemplates) label(c *fiber.Ctx) string {
	t.once.Do(func() {
		t.routes = map[*fiber.Handler]bool{}
		for _, r := range c.App().GetRoutes(true) {
			if len(r.Handlers) > 0 {
				t.routes[&r.Handlers[0]] = true
			}
		}
	})
	r := c.Route()
	if len(r.Handlers) > 0 && t.routes[&r.Handlers[0]] {
		return r.Path
	}
	if c.Response().StatusCode() == fiber.StatusNotFound || r.Path == "/" || r.Path == "" {
		return UnmatchedRoute
	}
	return r.Path
}
