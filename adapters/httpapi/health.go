package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/ports"
)

func healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz checks every dependency concurrently with a short timeout, so a pod
// whose PostgreSQL or Redis is gone is taken out of the load balancer.
func readyz(checks map[string]ports.HealthChecker) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			results = make(map[string]string, len(checks))
			ready   = true
		)
		for name, check := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status := "ok"
				if err := check.Ping(ctx); err != nil {
					status = "unreachable"
				}
				mu.Lock()
				defer mu.Unlock()
				results[name] = status
				ready = ready && status == "ok"
			}()
		}
		wg.Wait()
		if !ready {
			return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "checks": results})
		}
		return c.JSON(fiber.Map{"status": "ready", "checks": results})
	}
}
