package postgres

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.UserStore           = (*Store)(nil)
	_ ports.MemberStore         = (*Store)(nil)
	_ ports.ConsoleSessionStore = (*Store)(nil)
	_ ports.InvitationStore     = (*Store)(nil)
	_ ports.ResetStore          = (*Store)(nil)
	_ ports.AccountSweepStore   = (*Store)(nil)
)

// sessionTouchInterval is how stale last_seen_at must be before
// TouchConsoleSession writes it again (see account's touchEvery).
const sessionTouchInterval = time.Minute

type userRow struct {
	ID           string    `gorm:"column:id;primaryKey"`
	Email        string    `gorm:"column:email"`
	Name         string    `gorm:"column:name"`
	PasswordHash string    `gorm:"column:password_hash"`
	CreatedAt    time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt    time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (userRow) TableName() string { return "users" }

func userFromDomain(u domain.User) userRow {
	return userRow{ID: u.ID, Email: u.Email, Name: u.Name, PasswordHash: u.PasswordHash,
		CreatedAt: dbTime(u.CreatedAt), UpdatedAt: dbTime(u.UpdatedAt)}
}

func (r userRow) toDomain() domain.User {
	return domain.User{ID: r.ID, Email: r.Email, Name: r.Name, PasswordHash: r.PasswordHash,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// memberRow is a membership joined with its user's email and name.
type memberRow struct {
	WorkspaceID string    `gorm:"column:workspace_id"`
	UserID      string    `gorm:"column:user_id"`
	Email       string    `gorm:"column:email"`
	Name        string    `gorm:"column:name"`
	Role        string    `gorm:"column:role"`
	Available   bool      `gorm:"column:available"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (r memberRow) toDomain() domain.Member {
	return domain.Member{WorkspaceID: r.WorkspaceID, UserID: r.UserID, Email: r.Email, Name: r.Name,
		Role: domain.MemberRole(r.Role), Available: r.Available, CreatedAt: r.CreatedAt.UTC()}
}

const memberSelect = `SELECT m.workspace_id, m.user_id, u.email, u.name, m.role, m.available, m.created_at
	FROM memberships m JOIN users u ON u.id = m.user_id`

type consoleSessionRow struct {
	ID         string    `gorm:"column:id;primaryKey"`
	UserID     string    `gorm:"column:user_id"`
	TokenHash  string    `gorm:"column:token_hash"`
	CSRFToken  string    `gorm:"column:csrf_token"`
	IP         string    `gorm:"column:ip"`
	UserAgent  string    `gorm:"column:user_agent"`
	CreatedAt  time.Time `gorm:"column:created_at;autoCreateTime:false"`
	LastSeenAt time.Time `gorm:"column:last_seen_at"`
	ExpiresAt  time.Time `gorm:"column:expires_at"`
}

func (consoleSessionRow) TableName() string { return "console_sessions" }

func consoleSessionFromDomain(s domain.ConsoleSession) consoleSessionRow {
	return consoleSessionRow{ID: s.ID, UserID: s.UserID, TokenHash: s.TokenHash, CSRFToken: s.CSRFToken, IP: s.IP,
		UserAgent: s.UserAgent, CreatedAt: dbTime(s.CreatedAt), LastSeenAt: dbTime(s.LastSeenAt), ExpiresAt: dbTime(s.ExpiresAt)}
}

func (r consoleSessionRow) toDomain() domain.ConsoleSession {
	return domain.ConsoleSession{ID: r.ID, UserID: r.UserID, TokenHash: r.TokenHash, CSRFToken: r.CSRFToken, IP: r.IP,
		UserAgent: r.UserAgent, CreatedAt: r.CreatedAt.UTC(), LastSeenAt: r.LastSeenAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
}

type invitationRow struct {
	ID          string     `gorm:"column:id;primaryKey"`
	WorkspaceID string     `gorm:"column:workspace_id"`
	Email       string     `gorm:"column:email"`
	Role        string     `gorm:"column:role"`
	InvitedBy   *string    `gorm:"column:invited_by"`
	TokenHash   string     `gorm:"column:token_hash"`
	CreatedAt   time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	ExpiresAt   time.Time  `gorm:"column:expires_at"`
	AcceptedAt  *time.Time `gorm:"column:accepted_at"`
}

func (invitationRow) TableName() string { return "invitations" }

func invitationFromDomain(inv domain.Invitation) invitationRow {
	return invitationRow{ID: inv.ID, WorkspaceID: inv.WorkspaceID, Email: inv.Email, Role: string(inv.Role),
		InvitedBy: nullString(inv.InvitedBy), TokenHash: inv.TokenHash, CreatedAt: dbTime(inv.CreatedAt),
		ExpiresAt: dbTime(inv.ExpiresAt), AcceptedAt: dbTimePtr(&inv.AcceptedAt)}
}

func (r invitationRow) toDomain() domain.Invitation {
	inv := domain.Invitation{ID: r.ID, WorkspaceID: r.WorkspaceID, Email: r.Email, Role: domain.MemberRole(r.Role),
		InvitedBy: deref(r.InvitedBy), TokenHash: r.TokenHash, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
	if r.AcceptedAt != nil {
		inv.AcceptedAt = r.AcceptedAt.UTC()
	}
	return inv
}

type passwordResetRow struct {
	ID        string     `gorm:"column:id;primaryKey"`
	UserID    string     `gorm:"column:user_id"`
	TokenHash string     `gorm:"column:token_hash"`
	CreatedAt time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	ExpiresAt time.Time  `gorm:"column:expires_at"`
	UsedAt    *time.Time `gorm:"column:used_at"`
}

func (passwordResetRow) TableName() string { return "password_resets" }

// CreateUser stores a new user. Returns domain.ErrConflict if a user with
// the email (or id) exists.
func (s *Store) CreateUser(ctx context.Context, u domain.User) error {
	return createUser(s.db.WithContext(ctx), u)
}

func createUser(db *gorm.DB, u domain.User) error {
	row := userFromDomain(u)
	if err := db.Create(&row).Error; err != nil {
		if _, ok := uniqueViolation(err); ok {
			return domain.Conflict("a user with the email %s already exists", u.Email)
		}
		return dbError("create user", err)
	}
	return nil
}

// GetUser returns domain.ErrNotFound if no user has the id.
func (s *Store) GetUser(ctx context.Context, id string) (domain.User, error) {
	var row userRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.User{}, notFoundOr(err, "user", "get user")
	}
	return row.toDomain(), nil
}

// FindUserByEmail returns domain.ErrNotFound if no user has the email.
func (s *Store) FindUserByEmail(ctx context.Context, email string) (domain.User, error) {
	var row userRow
	if err := s.db.WithContext(ctx).Where("email = ?", email).Take(&row).Error; err != nil {
		return domain.User{}, notFoundOr(err, "user", "find user")
	}
	return row.toDomain(), nil
}

// SetPassword stores the new hash and deletes the user's other sessions in
// one transaction. Returns domain.ErrNotFound if no user has the id.
func (s *Store) SetPassword(ctx context.Context, userID, hash, keepSessionID string, at time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, hash, dbTime(at), userID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("user")
		}
		return tx.Exec(`DELETE FROM console_sessions WHERE user_id = ? AND id <> ?`, userID, keepSessionID).Error
	})
	return txError("set password", err)
}

// txError passes the domain errors a transaction's function returned (and
// the callbacks it ran) through unchanged and wraps database errors.
func txError(op string, err error) error {
	for _, kind := range []error{domain.ErrNotFound, domain.ErrConflict, domain.ErrForbidden, domain.ErrInvalidInput,
		domain.ErrUnauthorized, domain.ErrRateLimited, domain.ErrUnavailable} {
		if errors.Is(err, kind) {
			return err
		}
	}
	return dbError(op, err)
}

// Memberships returns the user's memberships, oldest first.
func (s *Store) Memberships(ctx context.Context, userID string) ([]domain.Member, error) {
	return s.members(ctx, "list memberships", memberSelect+` WHERE m.user_id = ? ORDER BY m.created_at, m.workspace_id`, userID)
}

// ListMembers returns the workspace's members, oldest first.
func (s *Store) ListMembers(ctx context.Context, workspaceID string) ([]domain.Member, error) {
	return s.members(ctx, "list members", memberSelect+` WHERE m.workspace_id = ? ORDER BY m.created_at, m.user_id`, workspaceID)
}

func (s *Store) members(ctx context.Context, op, query string, args ...any) ([]domain.Member, error) {
	var rows []memberRow
	if err := s.db.WithContext(ctx).Raw(query, args...).Scan(&rows).Error; err != nil {
		return nil, dbError(op, err)
	}
	out := make([]domain.Member, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.toDomain())
	}
	return out, nil
}

// GetMember returns domain.ErrNotFound if the user is not a member of the workspace.
func (s *Store) GetMember(ctx context.Context, workspaceID, userID string) (domain.Member, error) {
	return getMember(s.db.WithContext(ctx), workspaceID, userID, "")
}

func getMember(db *gorm.DB, workspaceID, userID, lock string) (domain.Member, error) {
	var rows []memberRow
	if err := db.Raw(memberSelect+` WHERE m.workspace_id = ? AND m.user_id = ?`+lock, workspaceID, userID).Scan(&rows).Error; err != nil {
		return domain.Member{}, dbError("get member", err)
	}
	if len(rows) == 0 {
		return domain.Member{}, domain.NotFound("member")
	}
	return rows[0].toDomain(), nil
}

// ChangeMemberRole sets a member's role; see changeMember for how the last
// owner is kept.
func (s *Store) ChangeMemberRole(ctx context.Context, workspaceID, userID string, role domain.MemberRole, allow func(domain.Member) error) (domain.Member, error) {
	var out domain.Member
	err := s.changeMember(ctx, workspaceID, userID, role != domain.MemberOwner, allow, func(tx *gorm.DB, m domain.Member) error {
		if err := tx.Exec(`UPDATE memberships SET role = ? WHERE workspace_id = ? AND user_id = ?`, string(role), workspaceID, userID).Error; err != nil {
			return err
		}
		m.Role = role
		out = m
		return nil
	})
	return out, err
}

// RemoveMember deletes a membership; see changeMember.
// The user's sessions go too when it was their last membership: in the
// same transaction, so no request of theirs slips in between. So do the
// conversation.assigned deliveries of the conversations it unassigns, as
// ChangeAssignee writes them for one.
func (s *Store) RemoveMember(ctx context.Context, workspaceID, userID string, allow func(domain.Member) error,
	report func(unassigned domain.Conversation) []domain.Delivery) ([]domain.Conversation, []domain.Delivery, error) {
	var (
		unassigned []domain.Conversation
		deliveries []domain.Delivery
	)
	err := s.changeMember(ctx, workspaceID, userID, true, allow, func(tx *gorm.DB, _ domain.Member) error {
		if err := tx.Exec(`DELETE FROM memberships WHERE workspace_id = ? AND user_id = ?`, workspaceID, userID).Error; err != nil {
			return err
		}
		// Nothing stays assigned to someone who is no longer a member; the
		// conversations' status is left as is, for another member to take.
		rows, err := tx.Raw(`UPDATE conversations AS c SET assignee_id = NULL WHERE c.workspace_id = ? AND c.assignee_id = ?
			RETURNING `+conversationListColumns, workspaceID, userID).Rows()
		if err != nil {
			return err
		}
		unassigned, err = scanConversationRows(rows, workspaceID, 0, false)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if report != nil {
			for _, c := range unassigned {
				deliveries = append(deliveries, report(c)...)
			}
		}
		if err := insertDeliveries(ctx, gormQuerier{tx.Statement.ConnPool}, deliveries); err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM console_sessions WHERE user_id = ?
			AND NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = ?)`, userID, userID).Error
	})
	if err != nil {
		return nil, nil, err
	}
	return unassigned, deliveries, nil
}

// changeMember runs one change to a membership under the last-owner rule.
// It first locks the workspace's owner rows, in a fixed order, then the
// member's row: every change that could take an owner away queues behind
// the others on those locks, and the owners it counts are the ones that
// remain when it runs, so two concurrent demotions of the last two owners
// cannot both pass. allow sees the member as stored, under the lock.
func (s *Store) changeMember(ctx context.Context, workspaceID, userID string, dropsOwner bool, allow func(domain.Member) error,
	apply func(*gorm.DB, domain.Member) error) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var owners []string
		if err := tx.Raw(`SELECT user_id FROM memberships WHERE workspace_id = ? AND role = 'owner' ORDER BY user_id FOR UPDATE`,
			workspaceID).Scan(&owners).Error; err != nil {
			return err
		}
		m, err := getMember(tx, workspaceID, userID, ` FOR UPDATE OF m`)
		if err != nil {
			return err
		}
		if allow != nil {
			if err := allow(m); err != nil {
				return err
			}
		}
		if m.Role == domain.MemberOwner && dropsOwner && len(owners) <= 1 {
			return domain.ErrLastOwner
		}
		return apply(tx, m)
	})
	return txError("change member", err)
}

// CreateConsoleSession stores a session. Returns domain.ErrNotFound if the
// user does not exist.
func (s *Store) CreateConsoleSession(ctx context.Context, cs domain.ConsoleSession) error {
	row := consoleSessionFromDomain(cs)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		if foreignKeyViolation(err) {
			return domain.NotFound("user")
		}
		return dbError("create console session", err)
	}
	return nil
}

// FindConsoleSession returns domain.ErrNotFound if no session has the hash.
func (s *Store) FindConsoleSession(ctx context.Context, tokenHash string) (domain.ConsoleSession, error) {
	var row consoleSessionRow
	if err := s.db.WithContext(ctx).Where("token_hash = ?", tokenHash).Take(&row).Error; err != nil {
		return domain.ConsoleSession{}, notFoundOr(err, "console session", "find console session")
	}
	return row.toDomain(), nil
}

// TouchConsoleSession moves last_seen_at forward with one conditional
// UPDATE that writes only when the stored time is over a minute older, so
// concurrent requests never move it backwards and a busy console costs one
// write a minute.
func (s *Store) TouchConsoleSession(ctx context.Context, id string, at time.Time) error {
	at = dbTime(at)
	err := s.db.WithContext(ctx).Exec(`UPDATE console_sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?`,
		at, id, at.Add(-sessionTouchInterval)).Error
	return dbError("touch console session", err)
}

// ListConsoleSessions returns the user's sessions, most recently used first.
func (s *Store) ListConsoleSessions(ctx context.Context, userID string) ([]domain.ConsoleSession, error) {
	var rows []consoleSessionRow
	if err := s.db.WithContext(ctx).Where("user_id = ?", userID).Order("last_seen_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, dbError("list console sessions", err)
	}
	out := make([]domain.ConsoleSession, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.toDomain())
	}
	return out, nil
}

// DeleteConsoleSessions deletes the named sessions of the user, or all but
// keepID when none are named, and returns how many it deleted.
func (s *Store) DeleteConsoleSessions(ctx context.Context, userID, keepID string, ids ...string) (int, error) {
	var res *gorm.DB
	if len(ids) > 0 {
		res = s.db.WithContext(ctx).Exec(`DELETE FROM console_sessions WHERE user_id = ? AND id <> ? AND id IN ?`, userID, keepID, ids)
	} else {
		res = s.db.WithContext(ctx).Exec(`DELETE FROM console_sessions WHERE user_id = ? AND id <> ?`, userID, keepID)
	}
	if res.Error != nil {
		return 0, dbError("delete console sessions", res.Error)
	}
	return int(res.RowsAffected), nil
}

// CreateInvitation stores an invitation after deleting any pending one of
// the same email to the same workspace, in one transaction. Returns
// domain.ErrNotFound if the workspace (or the inviting user) does not exist.
func (s *Store) CreateInvitation(ctx context.Context, inv domain.Invitation) error {
	row := invitationFromDomain(inv)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM invitations WHERE workspace_id = ? AND email = ? AND accepted_at IS NULL`,
			inv.WorkspaceID, inv.Email).Error; err != nil {
			return err
		}
		if err := tx.Create(&row).Error; err != nil {
			if foreignKeyViolation(err) {
				return domain.NotFound("workspace")
			}
			if _, ok := uniqueViolation(err); ok {
				// Another invitation of the same address committed between
				// our DELETE and INSERT.
				return domain.Conflict("%s was invited at the same moment by someone else; try again", inv.Email)
			}
			return err
		}
		return nil
	})
	return txError("create invitation", err)
}

// PendingInvitations returns the workspace's invitations not yet accepted,
// newest first.
func (s *Store) PendingInvitations(ctx context.Context, workspaceID string) ([]domain.Invitation, error) {
	var rows []invitationRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND accepted_at IS NULL", workspaceID).
		Order("created_at DESC, id DESC").Find(&rows).Error
	if err != nil {
		return nil, dbError("list invitations", err)
	}
	out := make([]domain.Invitation, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.toDomain())
	}
	return out, nil
}

// DeleteInvitation deletes a pending invitation. Returns domain.ErrNotFound
// unless the workspace has such a pending invitation.
func (s *Store) DeleteInvitation(ctx context.Context, workspaceID, id string) error {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM invitations WHERE workspace_id = ? AND id = ? AND accepted_at IS NULL`, workspaceID, id)
	if res.Error != nil {
		return dbError("delete invitation", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("invitation")
	}
	return nil
}

// FindInvitation returns domain.ErrNotFound if no invitation has the hash.
func (s *Store) FindInvitation(ctx context.Context, tokenHash string) (domain.Invitation, error) {
	var row invitationRow
	if err := s.db.WithContext(ctx).Where("token_hash = ?", tokenHash).Take(&row).Error; err != nil {
		return domain.Invitation{}, notFoundOr(err, "invitation", "find invitation")
	}
	return row.toDomain(), nil
}

// AcceptInvitation uses the invitation once: its conditional UPDATE claims
// it (only one of racing transactions finds it pending; the others wait for
// its row lock and then find it accepted), and the user and membership are
// written in the same transaction, so a failure leaves the link usable.
func (s *Store) AcceptInvitation(ctx context.Context, tokenHash string, user domain.User, newUser bool, at time.Time) (domain.Member, error) {
	var out domain.Member
	at = dbTime(at)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var claimed []invitationRow
		if err := tx.Raw(`UPDATE invitations SET accepted_at = ?
			WHERE token_hash = ? AND accepted_at IS NULL AND expires_at > ?
			RETURNING id, workspace_id, email, role, invited_by, token_hash, created_at, expires_at, accepted_at`,
			at, tokenHash, at).Scan(&claimed).Error; err != nil {
			return err
		}
		if len(claimed) == 0 {
			return domain.NotFound("invitation")
		}
		inv := claimed[0]
		if newUser {
			if err := createUser(tx, user); err != nil {
				return err
			}
		}
		if err := tx.Exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (workspace_id, user_id) DO NOTHING`, inv.WorkspaceID, user.ID, inv.Role, at).Error; err != nil {
			if foreignKeyViolation(err) {
				return domain.NotFound("user")
			}
			return err
		}
		m, err := getMember(tx, inv.WorkspaceID, user.ID, "")
		out = m
		return err
	})
	return out, txError("accept invitation", err)
}

// CreateReset stores a reset. Returns domain.ErrNotFound if the user does not exist.
func (s *Store) CreateReset(ctx context.Context, r domain.PasswordReset) error {
	row := passwordResetRow{ID: r.ID, UserID: r.UserID, TokenHash: r.TokenHash, CreatedAt: dbTime(r.CreatedAt),
		ExpiresAt: dbTime(r.ExpiresAt), UsedAt: dbTimePtr(&r.UsedAt)}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		if foreignKeyViolation(err) {
			return domain.NotFound("user")
		}
		return dbError("create password reset", err)
	}
	return nil
}

// UseReset claims the reset with a conditional UPDATE, then sets the
// password and deletes every session of the user, in one transaction.
// Returns domain.ErrNotFound if the reset is unknown, used or expired.
func (s *Store) UseReset(ctx context.Context, tokenHash, passwordHash string, at time.Time) (string, error) {
	var userID string
	at = dbTime(at)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Raw(`UPDATE password_resets SET used_at = ?
			WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id`,
			at, tokenHash, at).Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return domain.NotFound("password reset")
		}
		userID = ids[0]
		if err := tx.Exec(`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, passwordHash, at, userID).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM console_sessions WHERE user_id = ?`, userID).Error
	})
	if err != nil {
		return "", txError("use password reset", err)
	}
	return userID, nil
}

// DeleteEndedSessions deletes up to limit ended console sessions. FOR
// UPDATE SKIP LOCKED lets sweeps on several pods each take different rows
// instead of queueing behind one another.
func (s *Store) DeleteEndedSessions(ctx context.Context, now, idleSince time.Time, limit int) (int, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM console_sessions WHERE id IN (
		SELECT id FROM console_sessions WHERE expires_at <= ? OR last_seen_at < ?
		LIMIT ? FOR UPDATE SKIP LOCKED)`, dbTime(now), dbTime(idleSince), limit)
	if res.Error != nil {
		return 0, dbError("delete ended console sessions", res.Error)
	}
	return int(res.RowsAffected), nil
}

// DeleteOldLinks deletes up to limit old invitations and up to limit old
// password resets, as DeleteEndedSessions does.
func (s *Store) DeleteOldLinks(ctx context.Context, before time.Time, limit int) (int, error) {
	at := dbTime(before)
	inv := s.db.WithContext(ctx).Exec(`DELETE FROM invitations WHERE id IN (
		SELECT id FROM invitations WHERE expires_at < ?
		LIMIT ? FOR UPDATE SKIP LOCKED)`, at, limit)
	if inv.Error != nil {
		return 0, dbError("delete old invitations", inv.Error)
	}
	resets := s.db.WithContext(ctx).Exec(`DELETE FROM password_resets WHERE id IN (
		SELECT id FROM password_resets WHERE expires_at < ?
		LIMIT ? FOR UPDATE SKIP LOCKED)`, at, limit)
	if resets.Error != nil {
		return int(inv.RowsAffected), dbError("delete old password resets", resets.Error)
	}
	return int(inv.RowsAffected + resets.RowsAffected), nil
}
