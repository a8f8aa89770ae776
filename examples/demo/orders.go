package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sqskit/sqskit/handler"
)

// behaviour is what the handler does with an order: the flaky part of the
// story. Each order's behaviour is drawn from the seed.
type behaviour int

const (
	succeeds behaviour = iota // handled at once
	flaky                     // fails its first one or two calls: retried in place
	outage                    // fails through one or two lives on its queue: dead-lettered, replayed, then handled
	poison                    // always fails: escalated once its replays run out
	forged                    // always fails, and its producer forged the replay counter
)

func (b behaviour) String() string {
	return [...]string{"succeeds", "flaky", "outage", "poison", "forged counter"}[b]
}

// failure is the error the handler returns for each behaviour.
func (b behaviour) failure() error {
	switch b {
	case flaky:
		return errors.New("payment gateway timed out")
	case outage:
		return errors.New("inventory service unavailable")
	}
	return errors.New("unknown SKU")
}

// order is one message of the story, and everything that happened to it.
type order struct {
	ID       string // "#07"
	Customer string // the FIFO group
	SKU      string
	flow     *flow
	kind     behaviour
	fails    int // the handler fails its first fails calls; -1: always

	// What happened, guarded by the ledger's mutex.
	calls     int // handler calls
	handled   int // handler successes
	deleted   int // deletes after a success
	replays   int // replays sent
	escalated string
	heldFor   int  // the replay it was last held in the DLQ for
	found     bool // found in the operator queue at the end, with its reason
}

func (o *order) describe() string {
	switch o.kind {
	case flaky, outage:
		return fmt.Sprintf("fails %d×", o.fails)
	case poison:
		return "always fails"
	case forged:
		return "always fails; forged counter"
	}
	return "succeeds"
}

// event is an order's body on the queue.
type event struct {
	Order    string `json:"order"`
	Customer string `json:"customer"`
	SKU      string `json:"sku"`
	Amount   int    `json:"amount"`
}

var customers = []string{"alice", "bob", "carol", "dave"}

// makeOrders draws n orders from seed, alternating between the flows: about
// half succeed, a fifth are flaky, a sixth have an outage, one in ten is
// poison and one in twenty carries a forged counter, with at least one of
// each kind of failure from six orders up.
func makeOrders(n int, seed uint64, flows []*flow) []*order {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	kinds := make([]behaviour, n)
	counts := []struct {
		b     behaviour
		share float64
	}{{flaky, 0.2}, {outage, 0.15}, {poison, 0.1}, {forged, 0.05}}
	i := 0
	for _, c := range counts {
		k := int(float64(n)*c.share + 0.5)
		if n >= 6 {
			k = max(k, 1)
		}
		for ; k > 0 && i < n; k-- {
			kinds[i] = c.b
			i++
		}
	}
	rng.Shuffle(n, func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })

	width := len(fmt.Sprint(n))
	orders := make([]*order, n)
	for i := range orders {
		o := &order{
			ID:       fmt.Sprintf("#%0*d", width, i+1),
			Customer: customers[rng.IntN(len(customers))],
			SKU:      fmt.Sprintf("SKU-%03d", rng.IntN(1000)),
			flow:     flows[i%len(flows)],
			kind:     kinds[i],
		}
		switch o.kind {
		case flaky:
			o.fails = 1 + rng.IntN(2)
		case outage:
			o.fails = o.flow.maxReceives + rng.IntN(o.flow.maxReceives+1)
		case poison, forged:
			o.fails = -1
		}
		orders[i] = o
	}
	return orders
}

// handler is flow f's consumer's handler: it looks the order up and fails
// or succeeds as its behaviour says, as a service whose dependencies
// misbehave would.
func (s *story) handler(f *flow) handler.Handler {
	return handler.JSON(func(ctx context.Context, e event, m *handler.Message) (err error) {
		o := s.orders[e.Order]
		if o == nil {
			return fmt.Errorf("no such order %q", e.Order)
		}
		defer func() { s.st.handlerReturns(ctx, f.consumerAPI, m.ReceiptHandle, err == nil, s.log) }()
		if call := s.ledger.called(o, m.ReceiptHandle); o.fails < 0 || call <= o.fails {
			return o.kind.failure()
		}
		s.ledger.handled(o)
		return nil
	})
}

// orderIDs lists orders by id, compactly: "#01 #04 #07".
func orderIDs(os []*order) string {
	ids := make([]string, len(os))
	for i, o := range os {
		ids[i] = o.ID
	}
	return strings.Join(ids, " ")
}
