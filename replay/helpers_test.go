package replay_test

import (
	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/replay"
)

// newReplayer builds a Replayer for dlq escalating to operator.
func newReplayer(api replay.API, dlq, operator string, fns ...func(*replay.Options)) (*replay.Replayer, error) {
	return replay.New(api, dlq, operator, fns...)
}

func receiveBackoff(s backoff.Strategy) func(*replay.Options) {
	return func(o *replay.Options) { o.ReceiveBackoff = s }
}

// sequential moves one batch at a time.
func sequential() func(*replay.Options) { return func(o *replay.Options) { o.Concurrency = 1 } }
