package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conciergehq/concierge/core/domain"
)

// dbError wraps an unexpected database error for the caller. Failures to reach
// the server become domain.ErrUnavailable so the edges answer 503 and workers
// retry; anything else stays an internal error with its cause in the chain for
// the logs. Expected outcomes (not found, conflicts) are mapped by the callers
// before they get here.
func dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	if isConnectionError(err) {
		return domain.Unavailable("postgres: "+op, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// isConnectionError reports whether err means the server could not be reached
// or dropped the connection, as opposed to a query the server refused.
func isConnectionError(err error) bool {
	// A cancelled or timed-out request is the caller's decision, not an outage.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", // admin_shutdown
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now (starting up, in recovery)
			pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// uniqueViolation reports whether err is a unique violation and on which constraint.
func uniqueViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// foreignKeyViolation reports whether err is a foreign key violation, which for
// inserts means the parent (workspace, agent, conversation) does not exist in
// the row's workspace.
func foreignKeyViolation(err error) bool {
	return pgCode(err) == codeForeignKeyViolation
}
