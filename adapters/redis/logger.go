package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// RouteLibraryLogs sends go-redis's internal messages (dial retries, pool
// events) to log at debug level instead of the process's stderr, where they
// would break the one-line startup errors and bypass structured logging.
// go-redis keeps this logger in a package variable, so call it once, from the
// process's wiring, before the first client is made.
func RouteLibraryLogs(log *slog.Logger) {
	goredis.SetLogger(libraryLogger{log: log})
}

type libraryLogger struct{ log *slog.Logger }

func (l libraryLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "source", "go-redis")
}
