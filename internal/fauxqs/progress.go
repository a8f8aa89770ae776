package fauxqs

import (
	"sync"
	"time"
)

// Progress records when messages were done (sent, deleted). It is safe for
// concurrent use.
type Progress struct {
	mu sync.Mutex
	at []time.Time
}

// Add records k messages done now.
func (p *Progress) Add(k int) {
	now := time.Now()
	p.mu.Lock()
	for range k {
		p.at = append(p.at, now)
	}
	p.mu.Unlock()
}

// Steady returns the rate of the second half of the first n messages done:
// messages a second once a run is past its ramp (concurrency growing,
// connections opening, a quota's burst spent), or 0 when fewer than 4
// were recorded.
func (p *Progress) Steady(n int) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, len(p.at))
	if n < 4 {
		return 0
	}
	from, to := p.at[n/2], p.at[n-1]
	if !to.After(from) {
		return 0
	}
	return float64(n-1-n/2) / to.Sub(from).Seconds()
}
