package consumer

import (
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// defaultHTTPConns is HTTPClient's idle connections per host when given 0:
// the default consumer's 48 calls in flight (MaxReceiveConcurrency and
// DeleteConcurrency, 24 each), with room for its heartbeat's visibility
// changes, a Parker's sends and other clients of the same endpoint.
const defaultHTTPConns = 64

// HTTPClient returns the SDK's default HTTP client (the same timeouts, TLS
// settings and proxy from the environment) keeping up to maxConns idle
// connections per host instead of the SDK's 10, and at least as many in
// all: a consumer with its defaults keeps up to 48 SQS calls in flight, and
// with 10 idle connections per host every call past the tenth that
// finishes closes its connection, so the next call opens (and, with TLS,
// handshakes) a new one. maxConns 0 or less means 64; for a consumer tuned
// otherwise, pass at least MaxReceiveConcurrency + DeleteConcurrency. It
// does not cap the connections open at once. Plug it into the SDK's config
// or into one client:
//
//	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(consumer.HTTPClient(0)))
//	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = consumer.HTTPClient(0) })
func HTTPClient(maxConns int) *awshttp.BuildableClient {
	if maxConns <= 0 {
		maxConns = defaultHTTPConns
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = maxConns
		t.MaxIdleConns = max(t.MaxIdleConns, maxConns)
	})
}
