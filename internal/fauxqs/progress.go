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

// Steady returns the steady-state rate of the first n messages done:
// messages a second from the one at n/2 to the one at 95 % of n, past the
// ramp (concurrency growing, connections opening, a quota's burst spent)
// and before the run's end, where the queue runs dry (receives come back
// short and the last deletes wait out their linger). It returns 0 when
// fewer than 20 were recorded.
func (p *Progress) Steady(n int) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, len(p.at))
	if n < 20 {
		return 0
	}
	first, last := n/2, n-1-n/20
	from, to := p.at[first], p.at[last]
	if !to.After(from) {
		return 0
	}
	return float64(last-first) / to.Sub(from).Seconds()
}
