package consumer

import (
	"context"
	"time"

	"github.com/sqskit/sqskit/internal/ctxkey"
)

// leaseCtx is the parent of a handler.Handler's ctx: the message's own ctx, which
// also answers handler.LeaseFrom with the message's visibility lease, read
// under the run's lock as the heartbeat moves it. It lives in the
// message's inflight record: no allocation of its own.
type leaseCtx struct {
	context.Context
	r *run
	t *inflight
}

func (l *leaseCtx) Value(key any) any {
	if _, ok := key.(ctxkey.Lease); ok {
		return l
	}
	return l.Context.Value(key)
}

// Until implements handler.Lease: when the message becomes visible again
// unless the heartbeat extends it.
func (l *leaseCtx) Until() time.Time {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.t.visibleUntil
}
