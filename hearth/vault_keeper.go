package hearth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory/vault"
)

// DefaultVaultRetry is how the vault keeper retries git after a failed
// commit (a held index.lock, a corrupt repository): from 2 s to 5 min.
func DefaultVaultRetry() backoff.Policy {
	return backoff.Policy{Initial: 2 * time.Second, Max: 5 * time.Minute, JitterBelow: 0.2, JitterAbove: 0.2}
}

// VaultHealth is the vault's commit state: the writes saved whose git
// commit failed and waits for a retry, and why the last attempt failed.
type VaultHealth struct {
	// Uncommitted counts the saved writes git has not committed yet (the
	// owner's edits count as one); from New, those an earlier hearth left,
	// until the keeper's first pass commits them.
	Uncommitted int
	Failing     string    // why git fails; "" when it does not
	Since       time.Time // when it started failing
}

// vaultKeeper is the vault's background work on the commit path: the
// owner's edits committed once serving started, and failed commits
// retried until git takes them. Its state is guarded by mu; the work
// itself runs under vaultMu.
type vaultKeeper struct {
	wake chan struct{} // a write failed to commit: retry

	mu          sync.Mutex
	ownerFailed bool // the owner's edits could not be committed
	health      VaultHealth
}

// startVaultKeeper commits the owner's hand edits in the background, off
// the start-up path, and then retries every failed commit with backoff
// until it commits. The returned channel is closed when it stops (ctx
// ended).
func (h *Hearth) startVaultKeeper(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if h.cfg.Vault == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		h.keepVault(ctx)
	}()
	return done
}

func (h *Hearth) keepVault(ctx context.Context) {
	retry := h.cfg.VaultRetry
	if retry.Initial <= 0 {
		retry = DefaultVaultRetry()
	}
	// The first pass completes even when hearth stops at once: what the
	// owner edited while it was stopped is committed before it exits.
	first, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	h.resumeForget(first) // a forget a stop cut short reaches the vault
	h.vaultPass(first, true)
	cancel()
	// The repository is kept small now and then, off the write path:
	// at start (a crash loop restarts often) and every vaultMaintainEvery.
	h.maintainVault(ctx)
	maintain := time.NewTicker(vaultMaintainEvery)
	defer maintain.Stop()
	for attempt := 0; ; {
		if !h.vaultPending() {
			attempt = 0
			select {
			case <-ctx.Done():
				return
			case <-h.keeper.wake:
				continue
			case <-maintain.C:
				h.maintainVault(ctx)
				continue
			}
		}
		attempt++
		t := time.NewTimer(retry.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-maintain.C:
			t.Stop()
			h.maintainVault(ctx)
			attempt-- // not a retry
			continue
		case <-t.C:
		}
		h.vaultPass(ctx, false)
	}
}

// vaultMaintainEvery is how often the keeper asks the vault to pack its
// loose objects (it does once they are many: vault.PackThreshold).
const vaultMaintainEvery = 10 * time.Minute

// maintainVault packs the vault's loose objects when they are many; a
// failure is logged (the repository only stays larger) and tried again
// at the next turn.
func (h *Hearth) maintainVault(ctx context.Context) {
	m, err := h.cfg.Vault.Maintain(ctx, 0)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("vault: could not pack the repository", "err", err)
		}
		return
	}
	if m.Pack != "" {
		h.log.Debug("vault: repository packed", "objects", m.Packed, "took", m.Took)
	}
}

// vaultPass commits what waits (failed commits, then the owner's edits),
// under vaultMu, and says so (VaultSettled) when nothing waits any more:
// after the first pass (start), or when git works again.
func (h *Hearth) vaultPass(ctx context.Context, start bool) {
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	was := h.vaultPending()
	h.ownerEditsLocked(ctx)
	if (start || was) && !h.vaultPending() {
		if was && !start {
			h.log.Info("vault: git commits again; every saved change is committed")
		}
		h.publish(&VaultSettled{})
	}
}

// VaultSettled says nothing waits for a vault commit: the owner's edits
// made while hearth was stopped are committed, or writes whose commit had
// failed are. (Protocol v1 does not carry it; health_report shows the
// state.)
type VaultSettled struct{}

func (*VaultSettled) Class() Class { return ClassNotices }

// vaultPending reports whether saved writes wait for a commit.
func (h *Hearth) vaultPending() bool {
	h.keeper.mu.Lock()
	defer h.keeper.mu.Unlock()
	return h.keeper.health.Uncommitted > 0
}

// vaultFailed records a failed commit (err) with n writes waiting, and
// tells every subscriber once, when git starts failing.
func (h *Hearth) vaultFailed(n int, err error) {
	h.keeper.mu.Lock()
	first := h.keeper.health.Failing == ""
	h.keeper.health.Uncommitted = n
	why := failingReason(err)
	h.keeper.health.Failing = why
	if first {
		h.keeper.health.Since = time.Now()
	}
	h.keeper.mu.Unlock()
	if first {
		h.publish(&Notice{Code: CodeInternal, Message: "a memory change is saved but git could not commit it (" + why + "); hearth retries until it commits, and chat goes on"})
	}
	select {
	case h.keeper.wake <- struct{}{}:
	default:
	}
}

// countSaved counts, before Run, the writes an earlier hearth saved whose
// commit waits (a crash cut it short, or git failed): health says they
// wait from the first request on, not only once the keeper's first pass
// has failed to commit them.
func (h *Hearth) countSaved() {
	if h.cfg.Vault == nil {
		return
	}
	if n, err := h.cfg.Vault.Pending(); err == nil {
		h.keeper.health.Uncommitted = n
	}
}

// vaultCaughtUp records that nothing waits for a commit.
func (h *Hearth) vaultCaughtUp() {
	h.keeper.mu.Lock()
	defer h.keeper.mu.Unlock()
	h.keeper.health = VaultHealth{}
}

// vaultHealth is the keeper's state for Health; nil without a vault.
func (h *Hearth) vaultHealth() *VaultHealth {
	if h.cfg.Vault == nil {
		return nil
	}
	h.keeper.mu.Lock()
	defer h.keeper.mu.Unlock()
	v := h.keeper.health
	return &v
}

// failingReason says why git fails, safe to show: no paths beyond the
// memory root's own files.
func failingReason(err error) string {
	if errors.Is(err, vault.ErrIndexLocked) {
		return "another git process holds the memory root's .git/index.lock"
	}
	return "the memory root's git repository cannot be written; see hearth's log"
}
